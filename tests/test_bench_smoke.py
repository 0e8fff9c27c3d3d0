"""Every benchmark in contrib/bench that issue 28 measures by runs in its smoke mode (tiny
scale, seconds) and produces its result fields, so none can silently rot. What is asserted
is the shape and the counts (statements, deadlocks recorded), never a timing."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "contrib" / "bench"


def run(script: str, *args: str, timeout: float = 240) -> str:
    out = subprocess.run(
        [sys.executable, str(BENCH / script), "--smoke", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout


def test_floor(tmp_path: Path) -> None:
    run("bench_floor.py", "--json", str(tmp_path / "f.json"))
    res: dict[str, Any] = json.loads((tmp_path / "f.json").read_text())
    for key in (
        "dbwatch_cpu_ms_per_cycle",
        "floor_wall_ms_per_cycle",
        "floor_cpu_ms_per_cycle",
        "server_cpu_ms_per_cycle",
    ):
        assert key in res
    # an idle database's steady cycle: a handful of statements, each listed with its rows
    assert 1 <= res["statements_per_cycle"] <= 10
    assert len(res["statements"]) == res["statements_per_cycle"]
    assert all(isinstance(s["rows"], int) for s in res["statements"])


def test_floor_spaced_cycles(tmp_path: Path) -> None:
    """--gap: the same cycle with sleep between cycles (the daemon's spacing), same statements."""
    run("bench_floor.py", "--gap", "0.01", "--json", str(tmp_path / "g.json"))
    res: dict[str, Any] = json.loads((tmp_path / "g.json").read_text())
    assert res["gap_s"] == 0.01
    assert 1 <= res["statements_per_cycle"] <= 10
    assert res["dbwatch_cpu_ms_per_cycle"] > 0


def test_floor_mysql(tmp_path: Path) -> None:
    run("bench_floor.py", "--engine", "mysql", "--json", str(tmp_path / "m.json"))
    res = json.loads((tmp_path / "m.json").read_text())
    assert res["engine"] == "mysql"
    # every MySQL read of an idle schema is server-wide (shared) or catalog (cached)
    assert len(res["statements"]) == res["statements_per_cycle"] <= 3
    assert res["floor_cpu_ms_per_cycle"] is not None


def test_daemon(tmp_path: Path) -> None:
    run("bench_daemon.py", "--json", str(tmp_path / "d.json"))
    (res,) = json.loads((tmp_path / "d.json").read_text())
    assert res["targets"] == 5
    assert res["cycles_run"] >= res["targets"]  # every target ran at least once
    for key in ("lateness_p95", "cpu_ms_per_cycle", "server_cpu_ms_per_cycle", "loadavg_1m"):
        assert key in res


def test_first_look(tmp_path: Path) -> None:
    run("bench_first_look.py", "--json", str(tmp_path / "f.json"))
    res = json.loads((tmp_path / "f.json").read_text())
    assert res["targets"] == 3
    first = {s["statement"]: s for s in res["first_look"]["statements"]}
    second = {s["statement"]: s for s in res["second_cycle"]["statements"]}
    # the first look opens a session and reads the catalog; the second cycle does neither
    assert first["<session open>"]["calls"] == 2 and "<session open>" not in second
    assert any("Queue-table candidates" in k for k in first)
    assert not any("Queue-table candidates" in k for k in second)
    # ... but reads the catalog marker: in the dead-tuple statement (one round trip), or alone
    assert any("catalog marker" in k or "catalog changed" in k for k in second)


def test_tail() -> None:
    for args in ((), ("--report", "mysql57", "--vary")):
        res = json.loads(run("bench_tail.py", *args))
        assert res["deadlocks_written"] == 40
        assert res["recorded"] == res["deadlocks_written"]  # each one recorded, exactly once
        assert "share_of_one_core_pct" in res and "cpu_ms_per_deadlock" in res
        assert res["built_from_shapes"] > 20  # the storm path was taken, not only learnt
        assert res["slimmed_by_skeleton"] > 20  # and the record dumps dropped by skeleton
        assert len(res["poll_cpu_ms"]) == 2
        # the share from the third poll on: none in a 2 s run
        assert res["after_learning_share_pct"] is None
        assert res["after_learning_ms_per_deadlock"] is None


def test_tail_parts() -> None:
    rows = [json.loads(line) for line in run("bench_tail_parts.py").splitlines()]
    assert [r["report"] for r in rows] == ["mariadb", "mysql57"]
    for r in rows:
        assert r["deadlocks"] == 10
        assert {"scan_ms_per_deadlock", "record_ms_per_deadlock", "insert_ms_per_deadlock"} <= set(r)


def test_state_phase() -> None:
    """An idle cycle's state phase replayed at 67 cycles a second: its writes go in groups
    (one BEGIN per 0.25 s: a few per 200 cycles), one series point per gauge."""
    res = json.loads(run("bench_state_phase.py"))
    assert res["cycles"] == 200
    assert 0 < res["begins_per_cycle"] < 0.2
    assert res["statements_per_cycle"] >= 6 and res["wal_bytes_per_cycle"] > 0


def test_journal_pages() -> None:
    res = json.loads(run("bench_journal_pages.py"))
    # a storm's stored deadlock, compact (diagnosis text derived on read): two a 4 KB page
    assert 1000 < res["row_bytes"] <= 2000
    assert set(res["by_page_size"]) == {"4096", "8192", "16384"}
    for v in res["by_page_size"].values():
        assert len(v["tail_insert_us_per_row"]) == len(v["fleet_cycle_commit_us"]) == 1


def test_startup(tmp_path: Path) -> None:
    run("bench_startup.py", "--json", str(tmp_path / "s.json"))
    res = json.loads((tmp_path / "s.json").read_text())
    for key in ("python_bare", "version", "help", "audit_empty_pg", "audit_empty_mysql"):
        assert set(res[key]) == {"wall_s", "cpu_s", "cpu_min_s"}, key
    assert res["import_ms"]["audit_empty_pg"] > res["import_ms"]["version"] > 0
    # what each command imports, counted: --version a small part of what an audit needs
    mods = res["modules"]
    assert 0 < mods["version"] < mods["audit_empty_mysql"] and mods["version"] < mods["audit_empty_pg"]
    # the same in a clean venv (no .pth of this machine's site): its interpreter imports less
    clean = res["clean_site"]
    for key in ("python_bare", "version", "audit_empty_pg", "audit_empty_mysql"):
        assert set(clean[key]) == {"wall_s", "cpu_s", "cpu_min_s"}, key
    assert 0 < clean["modules"]["version"] < mods["version"]
    assert clean["modules"]["version"] < clean["modules"]["audit_empty_pg"]


def test_instructions(tmp_path: Path) -> None:
    if not shutil.which("valgrind"):
        pytest.skip("valgrind is not installed (.ci/run installs it): bench_instructions.py counts with it")
    run("bench_instructions.py", "--json", str(tmp_path / "i.json"), timeout=300)
    res = json.loads((tmp_path / "i.json").read_text())
    st = res["startup"]
    # counted by callgrind: a start of dbwatch executes more than the bare interpreter's
    assert st["version"] > st["python_pass"] > 1_000_000
    assert res["cycle"] == {"ran_uncounted": 2}


def test_after_probe(tmp_path: Path) -> None:
    """The idle cycle's part after its probes (issue 28): both clocks' children run, uncounted."""
    run("bench_after_probe.py", "--json", str(tmp_path / "a.json"))
    res = json.loads((tmp_path / "a.json").read_text())
    assert res["hit"] == res["fleet"] == {"ran_uncounted": 2}


def test_queue_libs(tmp_path: Path) -> None:
    run("bench_queue_libs.py", "--json", str(tmp_path / "q.json"), timeout=400)
    res = json.loads((tmp_path / "q.json").read_text())
    libs = {r["library"]: r for r in res["results"]}
    # every library whose schema needs no external tool, on each engine it supports
    assert set(libs) == {"laravel-pg", "laravel-mariadb", "que", "good_job", "oban", "river",
                         "delayed_job-pg", "delayed_job-mariadb", "solid_queue-pg",
                         "solid_queue-mariadb"}
    for r in libs.values():
        assert r["rows"]["n"] == 2000
        assert r["cold_ms"] and set(r["cold_ms"]) == set(r["analyzed_ms"]), r["library"]
        assert all(v == v for v in r["cold_ms"].values()), r  # no query failed (NaN)
        # each library's mix (waiting, running, failed) gives it at least one QU finding
        assert any(f[0].startswith("QU") for f in r["findings"]), r["library"]
    assert "jobs.summary" in libs["laravel-pg"]["cold_ms"]
    assert "jobs.bounds" in libs["laravel-mariadb"]["cold_ms"]


def test_queue_model(tmp_path: Path) -> None:
    run("bench_queue_model.py", "--json", str(tmp_path / "m.json"), timeout=400)
    res = json.loads((tmp_path / "m.json").read_text())
    assert {r["engine"] for r in res["results"]} == {"postgresql", "mysql"}
    for r in res["results"]:
        # the job table no library knows is read by the model as a queue
        assert [v for k, v in r["generic_candidates"] if k.endswith(".task_queue")] == ["queue"]
        for key in ("generic_query_ms_cold", "generic_query_ms_median"):
            # every aspect ran (a number, not "failed: ..."), cold and after ANALYZE
            names = {k for k in r[key] if not k.endswith("_cpu")}
            assert names == {"values_indexed", "values", "summary", "reserved", "repeated",
                             "failed"}
            assert all(isinstance(v, float) for v in r[key].values()), r[key]


def test_scheduler(tmp_path: Path) -> None:
    run("bench_scheduler.py", "--json", str(tmp_path / "s.json"))
    res = json.loads((tmp_path / "s.json").read_text())
    assert res["targets"] == 50
    # every target's job ran about once a second (a no-op: nothing may hold them back)
    assert res["cycles"] >= res["expected"] // 2
    assert res["cpu_ms_per_cycle"] >= 0 and res["switches_per_cycle"] >= 0


def test_phases(tmp_path: Path) -> None:
    """Each phase's counted child (issue 28: the rules, the state with a receiver), both
    clocks (one target; eight cycled in turn), run once uncounted."""
    run("bench_phases.py", "--receiver", "--phase", "rules,state", "--json", str(tmp_path / "p.json"))
    res = json.loads((tmp_path / "p.json").read_text())
    assert res["hit"] == res["fleet"] == {"rules": "ran_uncounted", "state": "ran_uncounted"}


def test_ab_startup() -> None:
    """Two trees alternating (here the checkout against itself): both measured, each run once."""
    out = subprocess.run(
        [sys.executable, str(BENCH / "ab_startup.py"), str(ROOT), str(ROOT), "1", "--", "--version"],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert [ln.split(":")[0] for ln in lines[:2]] == ["base", "new"], out.stdout
    assert all("(n=1)" in ln for ln in lines[:2]) and lines[2].startswith("load ")
