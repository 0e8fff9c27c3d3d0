"""Every machine-readable output, produced live, validates against its schema in docs/schema/
(issue 26.5); and the schemas are strict enough that a renamed or dropped field fails."""

from __future__ import annotations

import copy
import os
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conftest import ROOT
from oncall_scene import scene
from pagerduty_stub import pagerduty_stub
from schemas import SCHEMA_DIR, load_json, problems, validator

FIX = ROOT / "tests" / "fixtures"
PD_KEY = "SchemaTestRoutingKeySchemaTest32"


def dbwatch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dbwatch", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, check=False,
                          env={**os.environ, "PD_ROUTING_KEY": PD_KEY})


class Hook:
    """A webhook receiver on loopback that keeps every body."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        outer = self

        class H(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                outer.bodies.append(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *a: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[Any]]]:
    """Run every producer once against our own scene; name -> the documents it printed/sent."""
    tmp = tmp_path_factory.mktemp("schemas")
    hook = Hook()
    got: dict[str, list[Any]] = {}
    with pagerduty_stub() as stub, scene(jobs=3) as s:
        cfg = tmp / "dbwatch.toml"
        cfg.write_text(
            f'[[targets]]\nname = "pg"\nurl = "{s.pg_url}"\n'
            f'[[targets]]\nname = "maria"\nurl = "{s.my_url}"\n'
            '[rules.PG002]\nthresholds = { warning = "1s", critical = "1h" }\nfor = "0s"\n'
            f'[[alerts]]\nkind = "webhook"\nname = "hook"\nurl = "{hook.url}"\nsecret = "s3cret-hook"\n'
            f'[[alerts]]\nkind = "pagerduty"\nname = "pd"\nurl = "{stub.url}"\n'
            'routing_key = "${PD_ROUTING_KEY}"\n'
        )
        state = tmp / "state.db"
        time.sleep(1.2)
        runs = {
            "audit": [("audit", "--config", str(cfg), "--format", "json")],
            "terminate": [("terminate", s.pg_url, "--match-app", "oncall-idle",
                           "--include-superusers", "--format", "json")],
            "rules": [("rules", "--format", "json")],
            "deadlocks": [
                ("deadlocks", "--error-log", str(FIX / "innodb" / "mariadb-error-log-excerpt.log"),
                 "--format", "json"),
                ("deadlocks", "--error-log", str(FIX / "pglog" / "pg15-stderr-debian-prefix.log"),
                 "--format", "json"),
                ("deadlocks", "--file", str(FIX / "innodb" / "mysql8-manual-example-status.txt"),
                 "--format", "json"),
                ("deadlocks", "--error-log", str(FIX / "innodb" / "mariadb-error-log-excerpt.log"),
                 "--summary", "--format", "json"),
            ],
        }
        once = dbwatch("watch", "--once", "--config", str(cfg), "--state", str(state))
        assert once.returncode in (1, 2), once.stderr
        runs["status"] = [("status", "--config", str(cfg), "--state", str(state), "--format", "json")]
        runs["history"] = [("history", "--state", str(state), "--since", "1h", "--format", "json")]
        runs["deadlocks"].append(("deadlocks", "--history", "--state", str(state), "--format", "json"))
        jobs = [(name, args) for name, commands in runs.items() for args in commands]
        with ThreadPoolExecutor(4) as pool:  # independent read-only runs: side by side
            procs = list(pool.map(lambda job: dbwatch(*job[1]), jobs))
        for (name, args), proc in zip(jobs, procs, strict=True):
            assert proc.stdout.strip(), f"{args}: {proc.stderr}"
            got.setdefault(name, []).append(json.loads(proc.stdout))
        got["webhook"] = [json.loads(b) for b in hook.bodies]
        got["pagerduty"] = list(stub.events)
    hook.server.shutdown()
    yield got


NAMES = sorted(p.name.split(".")[0] for p in SCHEMA_DIR.glob("*.schema.json"))


def test_every_schema_is_valid_draft_2020_12() -> None:
    assert NAMES == ["audit", "deadlocks", "history", "pagerduty", "rules", "status", "terminate",
                     "webhook"]
    for name in NAMES:
        schema = validator(name).schema
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


@pytest.mark.parametrize("name", NAMES)
def test_live_output_validates(outputs: dict[str, list[Any]], name: str) -> None:
    docs = outputs.get(name)
    assert docs, f"the scene produced no {name} output"
    for doc in docs:
        load_json(json.dumps(doc), name)


def test_the_scene_produced_what_it_should(outputs: dict[str, list[Any]]) -> None:
    (audit,) = outputs["audit"]
    assert any(f["rule"] == "PG002" for f in audit["findings"])
    (term,) = outputs["terminate"]
    assert term and term[0]["action"] == "would_terminate"
    (status,) = outputs["status"]
    assert status["firing"]
    assert {e["event_action"] for e in outputs["pagerduty"]} == {"trigger"}
    assert all(b["status"] == "firing" for b in outputs["webhook"])
    assert any(d.get("deadlocks") for d in outputs["deadlocks"])
    assert any("summary" in d for d in outputs["deadlocks"])


def _mutations(name: str, doc: Any) -> Iterator[tuple[str, Any]]:
    """A field renamed, a field dropped, a field of the wrong type — in the first object."""
    paths = {
        "audit": ["findings", 0], "deadlocks": ["deadlocks", 0, "transactions", 0],
        "terminate": [0], "status": ["firing", 0], "history": [],
        "webhook": ["alerts", 0, "labels"], "pagerduty": ["payload"], "rules": [0],
    }[name]
    target = doc
    for step in paths:
        target = target[step]
    key = sorted(target)[0]
    renamed = copy.deepcopy(doc)
    t = renamed
    for step in paths:
        t = t[step]
    t[key + "_renamed"] = t.pop(key)
    yield f"renamed {key}", renamed
    dropped = copy.deepcopy(doc)
    t = dropped
    for step in paths:
        t = t[step]
    del t[key]
    yield f"dropped {key}", dropped


@pytest.mark.parametrize("name", NAMES)
def test_a_renamed_or_dropped_field_fails(outputs: dict[str, list[Any]], name: str) -> None:
    doc = next(d for d in outputs[name] if name != "deadlocks" or d.get("deadlocks"))
    if name == "history" and not doc:
        pytest.fail("empty history document")
    for what, bad in _mutations(name, doc):
        assert problems(bad, name), f"{name}: {what} still validates"
