"""Issue 12 (pure): exit status and its last line, argument errors, empty selections, bad input
files, DW002 over snapshot gaps, SHOW GRANTS parsing, deadlocks outside the scope."""
from __future__ import annotations

import gzip
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config
from dbwatch.errors import UsageError
from dbwatch.evaluate import Evaluation, Selection, evaluate
from dbwatch.findings import Finding
from dbwatch.inputs import check_state_path
from dbwatch.sqlpatterns.logs.sniff import check_log
from dbwatch.pipeline import AuditResult, TargetResult
from dbwatch.probes.grants import exact_grant
from dbwatch.probes.privileges import account_literal, can_select, parse_grants
from dbwatch.deadlocks.record import DeadlockRecord
from dbwatch.snapshot import CoverageGap, Snapshot
from dbwatch.targets import TargetSpec

LOGS = Path(__file__).resolve().parent / "fixtures" / "logs"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "dbwatch", *args], capture_output=True,
                          text=True, timeout=60)


def snap(name: str = "t", gaps: tuple[CoverageGap, ...] = (), scope: str | None = None) -> Snapshot:
    return Snapshot(name, "mariadb", "10.11", 101100, time.time(), gaps=gaps, scope=scope)


def result(findings: list[Finding], error: str | None = None) -> TargetResult:
    spec = TargetSpec("t", "mysql://x@h/app", "mysql")
    return TargetResult(spec, snap(), Evaluation(findings=findings), error=error)


def f(rule: str, severity: str) -> Finding:
    return Finding(rule, severity, "t", "s", "summary", "fix")


@pytest.mark.parametrize("targets,code,line", [
    ([result([])], 0, "no findings — Status: OK"),
    ([result([f("QU001", "warning")])], 1, "1 warning — Status: WARNING"),
    ([result([f("QU001", "warning"), f("PG001", "warning")])], 1, "2 warnings — Status: WARNING"),
    ([result([f("QU001", "warning"), f("DW001", "warning")])], 3,
     "1 warning, 1 unreadable — Status: UNKNOWN"),
    ([result([f("PG002", "critical")]), result([f("DW001", "critical")], error="refused")], 2,
     "1 critical, 1 unreadable — Status: CRITICAL"),
    ([result([f("DW001", "critical")], error="refused")], 3, "1 unreadable — Status: UNKNOWN"),
])
def test_exit_status_order_and_last_line(targets: list[TargetResult], code: int, line: str) -> None:
    res = AuditResult(targets)
    assert res.exit_code == code and res.status_line() == line


def test_partly_read_log_is_unreadable() -> None:
    res = AuditResult([], input_errors=["x.gz: log unreadable after 10 bytes"])
    assert res.exit_code == 3 and "1 unreadable" in res.status_line()


@pytest.mark.parametrize("args", [["audit", "--bogus"], ["audit", "--format", "xml"], [],
                                  ["terminate", "--older-than"], ["config"]])
def test_argument_errors_are_one_line_exit_3(args: list[str]) -> None:
    proc = run(*args)
    assert proc.returncode == 3 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("dbwatch: ")
    assert "usage:" not in proc.stderr


def test_selection_without_rules_exits_3() -> None:
    proc = run("audit", "--select", "ZZ9", "postgresql://nobody@127.0.0.1:1/x")
    assert proc.returncode == 3 and "ZZ9" in proc.stderr and "no rule" in proc.stderr
    assert proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1
    assert run("audit", "--select", "QU", "--ignore", "QU").returncode == 3


def _bad_logs(tmp: Path) -> dict[str, Path]:
    out = {"empty": tmp / "empty.log", "binary": tmp / "ls.bin", "random": tmp / "random.txt",
           "prose": tmp / "README.txt", "gzip": tmp / "cut.log.gz", "dir": tmp}
    out["empty"].write_bytes(b"")
    out["binary"].write_bytes(Path(sys.executable).read_bytes()[:200_000])
    out["random"].write_text("\n".join("qzx wvut plok " * 5 for _ in range(100)))
    out["prose"].write_text("Hello.\nSelect your options carefully; and read on.\nThe end.\n")
    data = gzip.compress((LOGS / "mariadb-general-pdo-prepared.log").read_bytes())
    out["gzip"].write_bytes(data[: len(data) // 2])
    return out


@pytest.mark.parametrize("kind", ["empty", "binary", "random", "prose", "gzip", "dir"])
def test_bad_log_is_one_line_exit_3(tmp_path: Path, kind: str) -> None:
    path = _bad_logs(tmp_path)[kind]
    with pytest.raises(UsageError, match="expected a MySQL/MariaDB general or slow log"):
        check_log(path)
    proc = run("audit", "--log", str(path))
    assert proc.returncode == 3 and "Status: OK" not in proc.stdout
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and str(path) in lines[0] and "Error" not in lines[0]


def test_good_logs_pass_the_check() -> None:
    for path in LOGS.iterdir():
        check_log(path)


def test_state_and_config_paths(tmp_path: Path) -> None:
    junk = tmp_path / "junk"
    junk.write_text("not sqlite")
    for bad in (junk, tmp_path):
        with pytest.raises(UsageError, match="--state"):
            check_state_path(bad)
        proc = run("status", "--state", str(bad))
        assert proc.returncode == 3 and str(bad) in proc.stderr and "Error:" not in proc.stderr
    assert check_state_path(tmp_path / "new" / "state.db") == tmp_path / "new" / "state.db"
    binary = tmp_path / "c.toml"
    binary.write_bytes(b"\x00\xff\xfe binary")
    proc = run("config", "check", "--config", str(binary))
    assert proc.returncode == 3 and "not a TOML file" in proc.stderr
    assert "UnicodeDecodeError" not in proc.stderr


def test_dw002_lists_every_gap_capped() -> None:
    cat = load_catalogue()
    gaps = tuple(CoverageGap("queue_table", f"app.jobs_{i}", "past the cap of 20")
                 for i in range(30))
    ev = evaluate(snap(gaps=gaps), cat, Config(), Selection(("DW002",)))
    (dw,) = ev.findings
    assert dw.rule == "DW002" and dw.severity == "warning" and dw.evidence["count"] == 30
    assert len(dw.evidence["gaps"]) == 30 and "app.jobs_0" in dw.summary
    assert "more (--format json lists all)" in dw.summary and len(dw.summary) < 800
    assert not evaluate(snap(), cat, Config(), Selection(("DW002",))).findings


def test_grants_parsing() -> None:
    g = parse_grants([
        "GRANT PROCESS ON *.* TO `mon`@`%` IDENTIFIED BY PASSWORD '*ABC'",
        "GRANT SELECT (`User`, `Super_priv`) ON `mysql`.`user` TO `mon`@`%`",
        "GRANT SELECT, SHOW VIEW ON `app\\_1`.* TO `mon`@`%`",
        "GRANT ALL PRIVILEGES ON `shop%`.* TO `mon`@`%`",
        "GRANT `reader` TO `mon`@`%`",
    ])
    assert "PROCESS" in g.privileges("*.*") and g.roles == ["reader"]
    assert can_select(g, "app_1") and not can_select(g, "appx1")
    assert can_select(g, "shop_eu") and not can_select(g, "mysql") and not can_select(g, None)
    assert not g.privileges("mysql.user")                  # column grants are not table grants
    assert account_literal("mon@%") == "'mon'@'%'"
    assert exact_grant("GRANT pg_monitor TO <monitor_user>;", {"pg.privileges": {"user": "Mon"}}) \
        == 'GRANT pg_monitor TO "Mon";'


def test_deadlock_scope() -> None:
    dl = DeadlockRecord.from_json({"locks": [{"db": "`shop`", "table": "jobs"}],
                                   "transactions": [{"tables": ["shop.jobs"]}]})
    assert dl.in_scope(None) and dl.in_scope("shop") and dl.in_scope("SHOP")
    assert not dl.in_scope("app")
    assert DeadlockRecord.from_json({"locks": [], "transactions": []}).in_scope("app")  # kept


def test_pg201_scope_drops_other_databases_and_marks_cluster_holders() -> None:
    from dataclasses import replace

    from test_pg_mvcc_checks import backend, horizon, run
    from test_pg_mvcc_checks import snap as pg_snap

    hz = horizon(
        backends=[backend(10, 5000, 4000.0, db="app"), backend(11, 9000, 4000.0, db="other")],
        slots=[{"slot_name": "s1", "slot_type": "physical", "plugin": None, "database": None,
                "active": False, "xmin": "50", "catalog_xmin": None, "xmin_age": 20000,
                "catalog_xmin_age": None, "inactive_seconds": 7200.0}])
    wide = run("PG201", pg_snap(**{"pg.horizon": hz}))
    assert {f.subject for f in wide} == {"pid 10", "pid 11", "slot s1"}
    scoped = run("PG201", replace(pg_snap(**{"pg.horizon": hz}), scope="app"))
    by = {f.subject: f.evidence for f in scoped}
    assert set(by) == {"pid 10", "slot s1"}
    assert by["slot s1"]["scope"] == "cluster" and by["slot s1"]["database"] == "app"
    assert by["pid 10"]["scope"] == "database" and by["pid 10"]["database"] == "app"
