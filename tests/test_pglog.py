"""The one reader of PostgreSQL log lines (dbwatch/parsers/pglog.py): message headers under any
log_line_prefix, what a prefix tells, and the query-log reader seeing through the same wrappers
as the deadlock parser."""

from __future__ import annotations

from pathlib import Path

import pytest

from dbwatch.parsers.pglog import PgRecord, StderrReader, prefix_fields, split_header
from dbwatch.sqlpatterns.logs.postgres import read_stderr

LOGS = Path(__file__).parent / "fixtures" / "logs"


@pytest.mark.parametrize(
    ("line", "want"),
    [
        ("2024-03-03 10:00:00.123 UTC [42] ERROR:  deadlock detected", "ERROR"),
        ("2023-09-01 06:18:54 UTC:10.4.1.3(55582):u@db:[25278]:ERROR:  deadlock detected", "ERROR"),
        ("2026-08-26 22:25:24.100 UTC [1549] <queryid>DETAIL:  Process 1549 waits", "DETAIL"),
        ("ERROR: deadlock detected", "ERROR"),  # one space: a tracker squeezed it
        ("2024-03-03 10:00:00 CET [9] app=My Worker 3 LOG:  statement: SELECT 1", "LOG"),
        ("2024-03-03 10:00:00 UTC [9] 40P01 FEHLER:  Verklemmung (Deadlock) entdeckt", "FEHLER"),
        ("\tProcess 1: UPDATE t SET x = 'ERROR:  no'", None),  # a continuation line
        ("Process 12: SELECT 1", None),
        ("  WHERE note = 'LOG:  not a header'", None),  # a quote in the "prefix": SQL text
        ("*** (1) TRANSACTION:", None),  # InnoDB, not a translated severity
    ],
)
def test_headers(line: str, want: str | None) -> None:
    head = split_header(line)
    assert (head[1] if head else None) == want


@pytest.mark.parametrize(
    ("prefix", "pid", "at", "user", "db"),
    [
        ("2024-03-03 10:00:00.123 UTC [42] app@shop ", 42, "2024-03-03 10:00:00", "app", "shop"),
        ("2024-03-03 10:00:00 UTC:10.0.0.7(52144):app@shop:[4242]:", 4242, "2024-03-03 10:00:00",
         "app", "shop"),
        ("2024-03-03 10:00:00 UTC [7]: [3-1] user=app,db=shop,app=psql,client=::1 ", 7,
         "2024-03-03 10:00:00", "app", "shop"),
        ("< 2024-03-03 10:00:00.001 UTC >", None, "2024-03-03 10:00:00", None, None),
        ("2024-03-03 10:00:00.001 UTC 31337 ", 31337, "2024-03-03 10:00:00", None, None),
        ("[unknown]@[unknown] [8] ", 8, None, None, None),
    ],
)  # fmt: skip
def test_prefix_fields(prefix: str, pid: int | None, at: str | None, user: str | None,
                       db: str | None) -> None:  # fmt: skip
    reader = StderrReader()
    reader.feed(prefix + "ERROR:  deadlock detected")
    rec = reader.close()
    assert isinstance(rec, PgRecord)
    prefix_fields(rec)
    assert (rec.pid, rec.at, rec.user, rec.dbname) == (pid, at, user, db)


class Sink:
    def __init__(self) -> None:
        self.statements: list[tuple[object, str]] = []

    def statement(self, conn: object, ts: object, text: str, params: object = None) -> None:
        self.statements.append((conn, text))

    def connect(self, conn: object) -> None: ...
    def disconnect(self, conn: object) -> None: ...
    def version(self, text: str) -> None: ...
    def unreadable(self, n: int = 1) -> None: ...


@pytest.mark.parametrize(
    "wrap",
    [lambda s: "postgres-1  | " + s, lambda s: "2024-03-03T10:00:00.000000001Z " + s,
     lambda s: "> " + s, lambda s: s + "\r"],
)  # fmt: skip
def test_query_log_through_wrappers(wrap: object) -> None:
    """The query-log reader reads a containerised or pasted log like the plain file."""
    lines = (LOGS / "postgresql-stderr-session.log").read_text().splitlines()
    plain, wrapped = Sink(), Sink()
    read_stderr(lines, plain)
    read_stderr([wrap(ln) for ln in lines], wrapped)  # type: ignore[operator]
    assert plain.statements and wrapped.statements == plain.statements
