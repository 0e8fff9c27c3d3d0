"""Characterise a 2-peer Alertmanager cluster: one alert, POSTed to peer X at T and to peer Y
at T+delta; how many notifications does the webhook get?  Also: a slow webhook (SLOW=s).
Environment: DELTAS (default 0,1,2,3,3.5,4,5,7), SLOW (s per notification), PT (peer
timeout, default 3s)."""

import json
import os
import time
import urllib.request
from collections import Counter

from amcluster import cluster


def post(url: str, name: str, starts: str) -> None:
    body = json.dumps(
        [{"labels": {"alertname": name}, "startsAt": starts, "endsAt": "2099-01-01T00:00:00Z"}]
    ).encode()
    request = urllib.request.Request(
        url + "/api/v2/alerts", data=body, headers={"Content-Type": "application/json"}
    )
    urllib.request.urlopen(request, timeout=5).read()


def main() -> None:
    slow = [float(os.environ.get("SLOW", "0"))]
    deltas = os.environ.get("DELTAS", "0,1,2,3,3.5,4,5,7").split(",")
    plan = [(float(x), mode) for mode in ("p1first", "p0first") for x in deltas]
    with cluster("alertname", "alertname", os.environ.get("PT", "3s"), slow) as ((p0, p1), got):
        for delta, mode in plan:
            name = f"A_{mode}_{delta}"
            first, second = (p1, p0) if mode == "p1first" else (p0, p1)
            starts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            post(first, name, starts)
            time.sleep(delta)
            post(second, name, starts)
        time.sleep(12 + slow[0] * 2)
        c = Counter(n for _, _, ns in got for n in ns)
        for delta, mode in plan:
            print(f"{mode:8s} delta={delta:4.1f}s notifications={c[f'A_{mode}_{delta}']}")


if __name__ == "__main__":
    main()
