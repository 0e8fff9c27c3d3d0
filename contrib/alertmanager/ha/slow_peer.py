"""dbwatch's send() to a 2-peer Alertmanager cluster whose peer listed first is the cluster's
second (position 1) and slow to answer (a proxy forwards at once, answers 4.5 s later).
Run with PYTHONPATH=<tree>. Prints notifications per alert."""
import json, socket, subprocess, sys, tempfile, threading, time, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from dbwatch.alerts.delivery import send
from dbwatch.config import AlertConfig
from dbwatch.records import AlertMessage
import dbwatch.alerts.delivery as dl
print("tree:", dl.__file__, "parallel:", hasattr(dl, "_post_all"))
AM = "/usr/bin/prometheus-alertmanager"
got = []
DELAY = [4.5]
DELAYS = [3.4, 3.6, 3.8, 4.0, 4.2, 4.4]
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        d = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        got.append((time.time(), d["externalURL"], [a["labels"]["target"] for a in d["alerts"]]))
        self.send_response(200); self.end_headers()
    def log_message(self, *a): pass
def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
srv = ThreadingHTTPServer(("127.0.0.1", 0), H); threading.Thread(target=srv.serve_forever, daemon=True).start()
tmp = Path(tempfile.mkdtemp())
(tmp/"am.yml").write_text("route:\n  receiver: hook\n  group_by: [alertname, target, subject]\n  group_wait: 1s\n  group_interval: 5m\n  repeat_interval: 4h\n"
  f"receivers:\n  - name: hook\n    webhook_configs:\n      - url: http://127.0.0.1:{srv.server_address[1]}/\n        send_resolved: false\n")
web = [port(), port()]; cl = [port(), port()]
procs = [subprocess.Popen([AM, f"--config.file={tmp/'am.yml'}", f"--storage.path={tmp/f'am{i}'}", f"--web.listen-address=127.0.0.1:{web[i]}",
  f"--cluster.listen-address=127.0.0.1:{cl[i]}", f"--cluster.peer=127.0.0.1:{cl[1-i]}", "--cluster.peer-timeout=3s",
  "--cluster.gossip-interval=100ms", "--log.level=warn"], stderr=subprocess.DEVNULL) for i in range(2)]
urls = [f"http://127.0.0.1:{p}" for p in web]
try:
    for u in urls:
        for _ in range(100):
            try: urllib.request.urlopen(u + "/-/ready", timeout=1).read(); break
            except OSError: time.sleep(0.2)
    time.sleep(6)
    st = [json.load(urllib.request.urlopen(u + "/api/v2/status")) for u in urls]
    names = sorted(p["name"] for p in st[0]["cluster"]["peers"])
    pos = [names.index(s["cluster"]["name"]) for s in st]
    p1 = urls[pos.index(1)]; p0 = urls[pos.index(0)]
    class Slow(BaseHTTPRequestHandler):  # forwards at once, answers 4.5 s later
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            r = urllib.request.urlopen(urllib.request.Request(p1 + self.path, data=body, headers={"Content-Type": "application/json"}), timeout=5)
            code = r.status; r.read(); time.sleep(DELAY[0])
            self.send_response(code); self.end_headers()
        def log_message(self, *a): pass
    slow = ThreadingHTTPServer(("127.0.0.1", 0), Slow); threading.Thread(target=slow.serve_forever, daemon=True).start()
    cfg = AlertConfig(kind="alertmanager", url=f"http://127.0.0.1:{slow.server_address[1]}", urls=(f"http://127.0.0.1:{slow.server_address[1]}", p0), name="am", timeout=10.0)
    for i, dly in enumerate(DELAYS):
        DELAY[0] = dly
        msg = AlertMessage.from_json({"kind": "finding", "status": "firing", "fingerprint": f"f{i}", "rule": "PG501",
            "severity": "warning", "target": f"t{i}", "subject": "setting statement_timeout", "summary": "", "fix": "",
            "starts_at": time.time(), "ends_at": None})
        t0 = time.time(); out = send(cfg, msg); print(f"send t{i} (first peer answers after {dly}s): ok={out.ok} took {time.time()-t0:.1f}s")
    time.sleep(10)
    from collections import Counter
    c = Counter(t for _, _, ts in got for t in ts)
    print("notifications per alert:", dict(sorted(c.items())))
finally:
    for p in procs: p.terminate()
    for p in procs: p.wait()
