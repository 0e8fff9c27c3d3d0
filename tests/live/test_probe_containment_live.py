"""A bug in one probe (issue 12.7): that probe's rules are unknown, DW001 names the probe, and
every other probe and target still reports. The probe is made to raise by monkeypatching its
function (a dbwatch bug stand-in, not a database mock); the servers are real."""
from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config
from dbwatch.pipeline import run_audit
from dbwatch.probes import PROBES
from dbwatch.targets import spec_for


def test_one_raising_probe_leaves_every_other_probe_and_target(
        monkeypatch: pytest.MonkeyPatch, pg_url: str, my_url: str) -> None:

    def broken(conn: Any, *args: Any) -> Any:
        raise KeyError("boom in pg.sessions")
    probe = PROBES["pg.sessions"]
    monkeypatch.setitem(PROBES, "pg.sessions", dataclasses.replace(probe, fn=broken))
    result = run_audit([spec_for(pg_url, "pg"), spec_for(my_url, "maria")], load_catalogue(),
                       Config())
    pg, maria = result.targets
    assert pg.error is None and maria.error is None
    dw = [f for f in pg.evaluation.findings
          if f.rule == "DW001" and f.evidence["probe"] == "pg.sessions"]
    assert len(dw) == 1 and "internal error: KeyError" in dw[0].summary
    assert {"PG001", "PG002", "PG101"} <= set(dw[0].evidence["rules_unknown"])
    assert "PG201" in pg.evaluation.ran and "PG501" in pg.evaluation.ran
    assert "MY001" in maria.evaluation.ran
    assert result.exit_code in (2, 3)  # never OK with a probe lost


def test_a_bug_outside_the_probes_loses_only_its_target(
        monkeypatch: pytest.MonkeyPatch, pg_url: str, my_url: str) -> None:
    import dbwatch.pipeline as pipeline
    real = pipeline.run_probes

    def flaky(conn: Any, target: str, *args: Any, **kw: Any) -> Any:
        if target == "pg":
            raise RuntimeError("bug while assembling the snapshot")
        return real(conn, target, *args, **kw)
    monkeypatch.setattr(pipeline, "run_probes", flaky)
    result = run_audit([spec_for(pg_url, "pg"), spec_for(my_url, "maria")], load_catalogue(),
                       Config())
    pg, maria = result.targets
    assert pg.error and "internal error: RuntimeError" in pg.error
    assert maria.error is None and "MY001" in maria.evaluation.ran
