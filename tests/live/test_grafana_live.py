"""contrib/grafana/dbwatch.json (issue 26.4): a real Prometheus (Debian's `prometheus`) scrapes a
real `dbwatch watch --metrics-address` watching our own PostgreSQL and MariaDB databases (an
idle-in-transaction writer, dead tuples, ready jobs, a receiver that is down), and every
panel's query is evaluated through Prometheus' HTTP API: none may error or come back empty."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT
from oncall_scene import scene

DASHBOARD = ROOT / "contrib" / "grafana" / "dbwatch.json"
# Grafana's variables, made concrete: a rate window of several 1 s scrapes, every job/target
VARIABLES = {"$__rate_interval": "10s", "$__interval": "2s", "$job": ".+", "$target": ".+"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def panels(doc: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for p in doc.get("panels", []):
        yield p
        yield from panels(p)  # a collapsed row holds its panels


def exprs(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [
        (f"{p['title']} / {t['refId']}", t["expr"])
        for p in panels(doc)
        for t in p.get("targets", [])
    ]


def concrete(expr: str) -> str:
    for var, value in VARIABLES.items():
        expr = expr.replace(var, value)
    assert "$" not in expr, f"an unknown variable left in {expr!r}"
    return expr


def query(base: str, promql: str) -> dict[str, Any]:
    url = f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return dict(json.load(resp))
    except urllib.error.HTTPError as exc:  # 400/422: the query itself is wrong
        return dict(json.load(exc))


def test_dashboard_shape() -> None:
    doc = json.loads(DASHBOARD.read_text())
    (ds_input,) = doc["__inputs"]
    assert ds_input["type"] == "datasource" and ds_input["pluginId"] == "prometheus"
    variables = {v["name"]: v for v in doc["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["current"]["value"] == "${DS_PROMETHEUS}"
    ids = [p["id"] for p in panels(doc)]
    assert len(ids) == len(set(ids))
    for p in panels(doc):
        if p["type"] != "row":
            assert p["datasource"] == {"type": "prometheus", "uid": "${datasource}"}, p["title"]
            assert p["targets"], p["title"]
    titles = " ".join(p["title"].lower() for p in panels(doc))
    for needed in ("targets up", "findings by rule and severity", "horizon", "dead tuples",
                   "history list length", "queue depth", "oldest ready job", "deadlock rate",
                   "cycle lateness"):
        assert needed in titles, needed
    assert (ROOT / "contrib" / "prometheus" / "dbwatch-rules.yml").is_file()  # the package
    assert "../prometheus/dbwatch-rules.yml" in (DASHBOARD.parent / "README.md").read_text()


def test_every_panel_query_returns_data(tmp_path: Path) -> None:
    prometheus = shutil.which("prometheus")
    if prometheus is None:
        pytest.skip("prometheus not installed (apt-get install prometheus; .ci/run does)")
    doc = json.loads(DASHBOARD.read_text())
    metrics_port, prom_port = free_port(), free_port()
    (tmp_path / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
        "scrape_configs:\n  - job_name: dbwatch\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{metrics_port}']\n"
    )
    base = f"http://127.0.0.1:{prom_port}"
    with scene(jobs=5) as s:
        cfg = tmp_path / "dbwatch.toml"
        cfg.write_text(
            f'[[targets]]\nname = "pg"\nurl = "{s.pg_url}"\ninterval = "1s"\n'
            f'[[targets]]\nname = "maria"\nurl = "{s.my_url}"\ninterval = "1s"\n'
            '[rules.PG002]\nthresholds = { warning = "1s", critical = "1h" }\nfor = "0s"\n'
            '[[alerts]]\nkind = "webhook"\nname = "down"\nurl = "http://127.0.0.1:1/hook"\n'
            'timeout = "1s"\n'
        )
        logs = (tmp_path / "daemon.log").open("wb"), (tmp_path / "prometheus.log").open("wb")
        daemon = subprocess.Popen(
            [sys.executable, "-m", "dbwatch", "watch", "--config", str(cfg), "--state",
             str(tmp_path / "state.db"), "--metrics-address", f"127.0.0.1:{metrics_port}"],
            cwd=ROOT, stdout=logs[0], stderr=subprocess.STDOUT,
            env={**os.environ, "DBWATCH_ALERT_BACKOFF": "0.2,1"},
        )
        prom = subprocess.Popen(
            [prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
             f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}",
             "--log.level=warn"],
            stdout=logs[1], stderr=subprocess.STDOUT,
        )
        try:
            queries = [(where, concrete(e)) for where, e in exprs(doc)]
            assert len(queries) >= 15
            deadline = time.monotonic() + 25
            while True:
                empty, errors = [], []
                for where, q in queries:
                    try:
                        got = query(base, q)
                    except OSError as exc:  # Prometheus still starting
                        got = {"status": "error", "error": str(exc)}
                    if got.get("status") != "success":
                        errors.append(f"{where}: {q}: {got.get('error')}")
                    elif not got["data"]["result"]:
                        empty.append(f"{where}: {q}")
                if not empty and not errors:
                    break
                if time.monotonic() > deadline:
                    raise AssertionError(
                        "panel queries failing:\n" + "\n".join(errors + [f"no data: {e}" for e in empty])
                    )
                time.sleep(1.0)
            # the template variables' label_values() find the targets too
            with urllib.request.urlopen(
                f"{base}/api/v1/label/target/values?match[]=dbwatch_target_up", timeout=5
            ) as resp:
                assert set(json.load(resp)["data"]) >= {"pg", "maria"}
        finally:
            for proc in (daemon, prom):
                proc.terminate()
            for proc in (daemon, prom):
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
            for fh in logs:
                fh.close()
