"""The my.innodb_status section keeps the parsed deadlock; its record (diagnosis, key) is made
where it is used, by deadlocks.record — no probe diagnoses, and deadlocks/ never imports probes/."""
from __future__ import annotations

import ast
from pathlib import Path

from dbwatch.deadlocks.record import deadlock_key, deadlock_record
from dbwatch.parsers.deadlock_model import Deadlock
from dbwatch.parsers.innodb_status import parse_status
from dbwatch.snapshot import Snapshot
from dbwatch.snapshot.my import MY_INNODB_STATUS, InnodbStatusSection

FIX = Path(__file__).parent / "fixtures" / "innodb"
PKG = Path(__file__).resolve().parent.parent / "dbwatch"


def test_section_keeps_the_parsed_deadlock() -> None:
    text = (FIX / "mariadb-laravel-queue-index.txt").read_text()
    sec = InnodbStatusSection.from_text(text)
    assert isinstance(sec.deadlock, Deadlock)
    assert sec.deadlock == parse_status(text).deadlock
    rec = deadlock_record(sec.deadlock)
    assert rec.key == deadlock_key(sec.deadlock) == "trx:95662,95604"
    assert rec.too_deep is False
    assert rec.diagnosis.pattern == "queue-claim-vs-delete"


def test_builder_reads_report_text() -> None:
    text = (FIX / "mariadb-laravel-queue-index.txt").read_text()
    body = text.split("LATEST DETECTED DEADLOCK\n------------------------\n", 1)[1]
    body = body.split("------------\nTRANSACTIONS", 1)[0]
    snap = Snapshot(target="t", engine="mysql", server_version="10.11.6-MariaDB",
                    version_num=101106, taken_at=0.0,
                    sections={"my.innodb_status": {"at": "2026-11-22 02:05:00", "deadlock": body}})
    sec = snap.get(MY_INNODB_STATUS)
    assert sec is not None and sec.deadlock == parse_status(text).deadlock
    assert Snapshot(target="t", engine="mysql", server_version="", version_num=0, taken_at=0.0,
                    sections={"my.innodb_status": sec}).get(MY_INNODB_STATUS) is sec


def _imports(path: Path) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(("." * node.level) + node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return out


def test_no_probe_diagnoses_and_deadlocks_never_imports_probes() -> None:
    for path in (PKG / "deadlocks").glob("*.py"):
        bad = {m for m in _imports(path) if m.startswith(("..probes", "dbwatch.probes"))}
        assert not bad, f"{path.name} imports {bad}"
    for path in (PKG / "probes").glob("*.py"):
        bad = {m for m in _imports(path) if "diagnosis" in m or m.endswith("deadlocks.record")}
        assert not bad, f"{path.name} imports {bad}"
