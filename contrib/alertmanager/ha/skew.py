"""Characterise a 2-peer Alertmanager cluster: one alert, POSTed to peer X at T and to peer Y
at T+delta; how many notifications does the webhook get?  Also: a slow webhook."""
import json, os, socket, subprocess, sys, tempfile, threading, time, urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
AM = "/usr/bin/prometheus-alertmanager"
got = []; SLOW = [0.0]
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        b = self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(SLOW[0])
        d = json.loads(b); got.append((time.time(), d["externalURL"], [a["labels"]["alertname"] for a in d["alerts"]]))
        self.send_response(200); self.end_headers()
    def log_message(self, *a): pass
def port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
srv = ThreadingHTTPServer(("127.0.0.1", 0), H); threading.Thread(target=srv.serve_forever, daemon=True).start()
tmp = Path(tempfile.mkdtemp())
(tmp/"am.yml").write_text("route:\n  receiver: hook\n  group_by: [alertname]\n  group_wait: 1s\n  group_interval: 5m\n  repeat_interval: 4h\n"
  f"receivers:\n  - name: hook\n    webhook_configs:\n      - url: http://127.0.0.1:{srv.server_address[1]}/\n        send_resolved: false\n")
web = [port(), port()]; cl = [port(), port()]
peer_timeout = os.environ.get("PT", "3s")
procs = [subprocess.Popen([AM, f"--config.file={tmp/'am.yml'}", f"--storage.path={tmp/f'am{i}'}", f"--web.listen-address=127.0.0.1:{web[i]}",
  f"--cluster.listen-address=127.0.0.1:{cl[i]}", f"--cluster.peer=127.0.0.1:{cl[1-i]}", f"--cluster.peer-timeout={peer_timeout}",
  "--cluster.gossip-interval=100ms", "--log.level=warn"], stderr=subprocess.DEVNULL) for i in range(2)]
urls = [f"http://127.0.0.1:{p}" for p in web]
try:
    for u in urls:
        for _ in range(100):
            try: urllib.request.urlopen(u + "/-/ready", timeout=1).read(); break
            except OSError: time.sleep(0.2)
    time.sleep(6)  # settle
    st = [json.load(urllib.request.urlopen(u + "/api/v2/status")) for u in urls]
    names = sorted(p["name"] for p in st[0]["cluster"]["peers"])
    pos = [names.index(s["cluster"]["name"]) for s in st]
    print("positions:", dict(zip(urls, pos)), "peers seen:", [len(s["cluster"]["peers"]) for s in st])
    p0 = urls[pos.index(0)]; p1 = urls[pos.index(1)]
    def post(u, name, starts):
        body = json.dumps([{"labels": {"alertname": name}, "startsAt": starts, "endsAt": "2099-01-01T00:00:00Z"}]).encode()
        urllib.request.urlopen(urllib.request.Request(u + "/api/v2/alerts", data=body, headers={"Content-Type": "application/json"}), timeout=5).read()
    plan = [(float(x), mode) for mode in ("p1first", "p0first") for x in os.environ.get("DELTAS", "0,1,2,3,3.5,4,5,7").split(",")]
    SLOW[0] = float(os.environ.get("SLOW", "0"))
    for delta, mode in plan:
        name = f"A_{mode}_{delta}"
        first, second = (p1, p0) if mode == "p1first" else (p0, p1)
        starts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        post(first, name, starts)
        time.sleep(delta)
        post(second, name, starts)
    time.sleep(12 + SLOW[0] * 2)
    from collections import Counter
    c = Counter(n for _, _, ns in got for n in ns)
    for delta, mode in plan:
        print(f"{mode:8s} delta={delta:4.1f}s notifications={c[f'A_{mode}_{delta}']}")
finally:
    for p in procs: p.terminate()
    for p in procs: p.wait()
