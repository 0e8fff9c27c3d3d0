"""What the two experiments share: a webhook receiver that records every notification, and a
2-peer Alertmanager cluster on loopback (peer timeout `peer_timeout`, group_wait 1 s, gossip
100 ms) routing to it. `cluster()` yields the peers' URLs ordered by their position in the
cluster (the one at position 0 notifies first) and the list the receiver appends to:
(time, the notifying peer's externalURL, the alerts' `label` values)."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

AM = "/usr/bin/prometheus-alertmanager"
Got = list[tuple[float, str, list[str]]]


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def receiver(got: Got, label: str, slow: list[float]) -> ThreadingHTTPServer:
    """A webhook that takes `slow[0]` seconds per notification and records it."""

    class Hook(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            time.sleep(slow[0])
            d = json.loads(body)
            got.append((time.time(), d["externalURL"], [a["labels"][label] for a in d["alerts"]]))
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Hook)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@contextlib.contextmanager
def cluster(
    group_by: str, label: str, peer_timeout: str = "3s", slow: list[float] | None = None
) -> Iterator[tuple[list[str], Got]]:
    """Two clustered Alertmanagers routing to a recording webhook, settled; yields
    ([url at position 0, url at position 1], got)."""
    got: Got = []
    srv = receiver(got, label, slow if slow is not None else [0.0])
    tmp = Path(tempfile.mkdtemp())
    (tmp / "am.yml").write_text(
        f"route:\n  receiver: hook\n  group_by: [{group_by}]\n  group_wait: 1s\n"
        "  group_interval: 5m\n  repeat_interval: 4h\n"
        "receivers:\n  - name: hook\n    webhook_configs:\n"
        f"      - url: http://127.0.0.1:{srv.server_address[1]}/\n        send_resolved: false\n"
    )
    web, peers = [free_port(), free_port()], [free_port(), free_port()]
    procs = [
        subprocess.Popen(
            [
                AM,
                f"--config.file={tmp / 'am.yml'}",
                f"--storage.path={tmp / f'am{i}'}",
                f"--web.listen-address=127.0.0.1:{web[i]}",
                f"--cluster.listen-address=127.0.0.1:{peers[i]}",
                f"--cluster.peer=127.0.0.1:{peers[1 - i]}",
                f"--cluster.peer-timeout={peer_timeout}",
                "--cluster.gossip-interval=100ms",
                "--log.level=warn",
            ],
            stderr=subprocess.DEVNULL,
        )
        for i in range(2)
    ]
    urls = [f"http://127.0.0.1:{p}" for p in web]
    try:
        for u in urls:
            for _ in range(100):
                try:
                    urllib.request.urlopen(u + "/-/ready", timeout=1).read()
                    break
                except OSError:
                    time.sleep(0.2)
        time.sleep(6)  # the cluster settles
        status = [json.load(urllib.request.urlopen(u + "/api/v2/status")) for u in urls]
        names = sorted(p["name"] for p in status[0]["cluster"]["peers"])
        pos = [names.index(s["cluster"]["name"]) for s in status]
        print("positions:", dict(zip(urls, pos)), "peers seen:", [len(s["cluster"]["peers"]) for s in status])
        yield [urls[pos.index(0)], urls[pos.index(1)]], got
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
        srv.shutdown()
