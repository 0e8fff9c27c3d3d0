"""The dirt DBWATCH_DIRTY_SHARED=1 leaves on the shared servers is really there (issue 24.2):
unscoped audits of the shared servers see it, so the suite's tests that pass beside it are
isolated, not lucky."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DIRTY, MY_URL, PG_URL, ROOT

pytestmark = pytest.mark.skipif(not DIRTY, reason="DBWATCH_DIRTY_SHARED is not set")


def findings(*args: str) -> list[dict[str, object]]:
    proc = subprocess.run([sys.executable, "-m", "dbwatch", "audit", *args, "--format", "json"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    return list(json.loads(proc.stdout)["findings"])


def test_the_shared_databases_are_dirty(tmp_path: Path) -> None:
    pg = findings(PG_URL, "--select", "PG202")
    assert any("dbw_dirt_bloat_" in str(f["subject"]) for f in pg), pg
    my = findings(MY_URL, "--select", "QU001,QU301")
    assert {f["rule"] for f in my if "dbw_dirt_jobs_" in str(f["subject"])} == {"QU001", "QU301"}
    # the sessions idle in transaction live in another database / schema
    cfg = tmp_path / "dbwatch.toml"
    cfg.write_text('[rules.PG002]\nthresholds = { warning = "1s", critical = "1h" }\n'
                   '[rules.MY002]\nthresholds = { warning = "1s", critical = "1h" }\n')
    pg = findings(PG_URL, "--all-databases", "--select", "PG002", "--config", str(cfg))
    assert any(str(f["evidence"].get("database")).startswith("dbw_dirt_")  # type: ignore[union-attr]
               for f in pg), pg
    my = findings(MY_URL.rsplit("/", 1)[0], "--select", "MY002", "--config", str(cfg))
    assert any(str(f["evidence"].get("database")).startswith("dbw_dirt_")  # type: ignore[union-attr]
               for f in my), my
