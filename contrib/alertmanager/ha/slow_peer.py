"""dbwatch's send() to a 2-peer Alertmanager cluster whose peer listed first is the cluster's
second (position 1) and slow to answer (a proxy forwards at once, answers 3.4-4.4 s later).
Run with PYTHONPATH=<tree>. Prints notifications per alert."""

import threading
import time
import urllib.request
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import dbwatch.alerts.delivery as dl
from amcluster import cluster
from dbwatch.alerts.delivery import send
from dbwatch.config import AlertConfig
from dbwatch.records import AlertMessage

DELAYS = [3.4, 3.6, 3.8, 4.0, 4.2, 4.4]


def slow_proxy(upstream: str, delay: list[float]) -> ThreadingHTTPServer:
    """Forwards a POST to `upstream` at once and answers `delay[0]` seconds later."""

    class Slow(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = urllib.request.Request(
                upstream + self.path, data=body, headers={"Content-Type": "application/json"}
            )
            r = urllib.request.urlopen(request, timeout=5)
            code = r.status
            r.read()
            time.sleep(delay[0])
            self.send_response(code)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def main() -> None:
    print("tree:", dl.__file__, "parallel:", hasattr(dl, "_post_all"))
    delay = [4.5]
    with cluster("alertname, target, subject", "target") as ((p0, p1), got):
        slow = slow_proxy(p1, delay)
        proxy = f"http://127.0.0.1:{slow.server_address[1]}"
        cfg = AlertConfig(kind="alertmanager", url=proxy, urls=(proxy, p0), name="am", timeout=10.0)
        for i, dly in enumerate(DELAYS):
            delay[0] = dly
            msg = AlertMessage.from_json(
                {"kind": "finding", "status": "firing", "fingerprint": f"f{i}", "rule": "PG501",
                 "severity": "warning", "target": f"t{i}", "subject": "setting statement_timeout",
                 "summary": "", "fix": "", "starts_at": time.time(), "ends_at": None}
            )
            t0 = time.time()
            out = send(cfg, msg)
            print(f"send t{i} (first peer answers after {dly}s): ok={out.ok} took {time.time() - t0:.1f}s")
        time.sleep(10)
        c = Counter(t for _, _, ts in got for t in ts)
        print("notifications per alert:", dict(sorted(c.items())))
        slow.shutdown()


if __name__ == "__main__":
    main()
