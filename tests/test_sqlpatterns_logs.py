"""Log readers on logs captured from the local servers (tests/fixtures/logs), format
detection, gzip, hostile input."""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbwatch.errors import UsageError
from dbwatch.sqlpatterns.logs import READERS, analyse_logs, detect_format
from dbwatch.sqlpatterns.logs.lines import LineStats, iter_lines

FIX = Path(__file__).parent / "fixtures" / "logs"
N_JOBS = 5   # the captured worker processed 5 jobs


def _by_rule(path: Path, **kw: object) -> dict[str, list]:
    a = analyse_logs([path], **kw)  # type: ignore[arg-type]
    out: dict[str, list] = {}
    for f in a.findings:
        out.setdefault(f.rule, []).append(f)
    return out


@pytest.mark.parametrize("name, fmt", [
    ("mariadb-general-autocommit-off.log", "mysql-general"),
    ("mariadb-general-explicit.log", "mysql-general"),
    ("mariadb-general-pdo-prepared.log", "mysql-general"),
    ("mariadb-slow-autocommit-off.log", "mysql-slow"),
])
def test_mariadb_fixtures_report_qu401_and_qu402(name: str, fmt: str) -> None:
    a = analyse_logs([FIX / name])
    assert a.stats.format == fmt
    assert a.stats.server_version == "10.11.19-MariaDB-0+deb12u1 (Debian 12)"
    assert a.stats.unreadable_lines == 0 and a.stats.unparsable == 0
    (q401,) = [f for f in a.findings if f.rule == "QU401"]
    assert q401.evidence["count"] == N_JOBS and q401.evidence["key_columns"] == ["id"]
    assert q401.target == f"log:{name}"
    (q402,) = [f for f in a.findings if f.rule == "QU402"]
    assert q402.evidence["count"] == N_JOBS + 1 and q402.confidence == "high"


def test_mariadb_single_delete_fixture_is_clean() -> None:
    a = analyse_logs([FIX / "mariadb-general-single-delete.log"])
    assert a.findings == [] and a.stats.statements > 4 * N_JOBS


def test_server_version_override_beats_the_log() -> None:
    rules = _by_rule(FIX / "mariadb-general-explicit.log",
                     server_version_override="10.5.13-MariaDB")
    assert "QU401" in rules and "QU402" not in rules       # no SKIP LOCKED before 10.6
    with pytest.raises(UsageError):
        analyse_logs([FIX / "mariadb-general-explicit.log"], server_version_override="x")


@pytest.mark.parametrize("name, fmt", [
    ("postgresql-stderr-bind.log", "postgresql-stderr"),
    ("postgresql-stderr-client.log", "postgresql-stderr"),
    ("postgresql-stderr-session.log", "postgresql-stderr"),
    ("postgresql-csvlog-session.csv", "postgresql-csvlog"),
    ("postgresql-jsonlog-session.json", "postgresql-jsonlog"),
])
def test_postgresql_fixtures(name: str, fmt: str) -> None:
    a = analyse_logs([FIX / name])
    assert a.stats.format == fmt
    (q401,) = [f for f in a.findings if f.rule == "QU401"]
    assert q401.evidence["count"] == N_JOBS
    (q402,) = [f for f in a.findings if f.rule == "QU402"]
    if "session" in name:           # these logs hold `starting PostgreSQL 15.x`
        assert q402.confidence == "high" and a.stats.server_version.startswith("PostgreSQL 15")
    else:
        assert q402.confidence == "probable" and a.stats.server_version is None


def test_postgresql_parameters_distinguish_rows(tmp_path: Path) -> None:
    """Bound `$1` values from DETAIL lines are compared: another row is not a match."""
    text = (FIX / "postgresql-stderr-bind.log").read_text()
    lines = text.splitlines()
    out, flip = [], False
    for line in lines:
        if "execute <unnamed>: delete" in line:
            flip = True
        elif flip and "DETAIL:  parameters: $1 = '" in line:
            line = line.replace("$1 = '", "$1 = '9")
            flip = False
        out.append(line)
    p = tmp_path / "other-rows.log"
    p.write_text("\n".join(out) + "\n")
    assert "QU401" not in _by_rule(p)


def test_gzip_and_several_files(tmp_path: Path) -> None:
    gz = tmp_path / "general.log.gz"          # the name does not matter: magic bytes do
    gz.write_bytes(gzip.compress((FIX / "mariadb-general-explicit.log").read_bytes()))
    a = analyse_logs([gz, FIX / "mariadb-general-autocommit-off.log"])
    q401 = [f for f in a.findings if f.rule == "QU401"]     # two workers, two tables
    assert [f.evidence["count"] for f in q401] == [N_JOBS, N_JOBS]
    assert a.stats.format == "mysql-general" and a.stats.errors == []


def test_truncated_gzip_keeps_what_was_read(tmp_path: Path) -> None:
    data = gzip.compress((FIX / "mariadb-general-explicit.log").read_bytes() * 2000)
    p = tmp_path / "cut.gz"
    p.write_bytes(data[: len(data) // 2])
    a = analyse_logs([p])
    assert len(a.stats.errors) == 1 and "cut.gz: log unreadable after" in a.stats.errors[0]
    assert a.stats.statements > 1000 and a.stats.bytes >= 1 << 20


def test_transcript(tmp_path: Path) -> None:
    p = tmp_path / "worker.sql"
    p.write_text("-- captured by hand\nSTART TRANSACTION;\n"
                 "select * from jobs where id = 4 limit 1 for update;\n"
                 "delete from jobs\n where id = 4; COMMIT;\n"
                 "insert into jobs (payload) values ('a;b');\n")
    a = analyse_logs([p], server_version_override="8.0.36")
    assert a.stats.format == "sql" and a.stats.statements == 5
    assert [f.rule for f in a.findings] == ["QU401"]


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read log"):
        analyse_logs([tmp_path / "nope.log"])


@pytest.mark.parametrize("tabs", [None, 8, 2])  # as written; pasted with its tabs made spaces
def test_mysql8_general_log_timestamps(tmp_path: Path, tabs: int | None) -> None:
    p = tmp_path / "mysql8.log"
    write = p.write_text if tabs is None else (
        lambda text: p.write_text(text.expandtabs(tabs)))  # type: ignore[misc]
    write(
        "/usr/sbin/mysqld, Version: 8.0.36 (MySQL Community Server - GPL). started with:\n"
        "Tcp port: 3306  Unix socket: /var/run/mysqld/mysqld.sock\n"
        "Time                 Id Command    Argument\n"
        "2024-01-15T10:00:00.123456Z\t   11 Connect\tapp@localhost on test using Socket\n"
        "2024-01-15T10:00:00.123500Z\t   11 Query\tSTART TRANSACTION\n"
        "2024-01-15T10:00:00.123600Z\t   11 Prepare\tselect * from `jobs` where `id` = ? limit 1 for update\n"
        "2024-01-15T10:00:00.123700Z\t   11 Execute\tselect * from `jobs` where `id` = 7 limit 1 for update\n"
        "2024-01-15T10:00:00.123800Z\t   11 Execute\tdelete from `jobs`\n  where `id` = 7\n"
        "2024-01-15T10:00:00.123900Z\t   11 Query\tCOMMIT\n"
        "2024-01-15T10:00:00.124000Z\t   11 Quit\t\n")
    a = analyse_logs([p])
    assert a.stats.server_version.startswith("8.0.36") and a.stats.statements == 4
    assert [f.rule for f in a.findings] == ["QU401"]


# What the servers print as a general log's command (`command_name[]`, sql/sql_parse.cc): MySQL
# 8.0 and MariaDB 10.11, every name a client can cause, a few of two or more capitalised words.
SERVER_COMMANDS = {
    "mysql-8.0": ["Sleep", "Quit", "Init DB", "Query", "Field List", "Create DB", "Drop DB",
                  "Refresh", "Shutdown", "Statistics", "Processlist", "Connect", "Kill", "Debug",
                  "Ping", "Time", "Delayed insert", "Change user", "Binlog Dump", "Table Dump",
                  "Connect Out", "Register Replica", "Prepare", "Execute", "Long Data",
                  "Close stmt", "Reset stmt", "Set option", "Fetch", "Daemon", "Binlog Dump GTID",
                  "Reset Connection", "clone", "Group Replication Data Stream", "Error"],
    "mariadb-10.11": ["Register Slave", "Bulk_execute", "Slave_worker", "Slave_IO", "Slave_SQL",
                      "Reset connection", "Unimpl get tid"],
}


@pytest.mark.parametrize("stamp", ["\t\t", "2024-01-15T10:00:00.123456Z\t"])
@pytest.mark.parametrize("server", sorted(SERVER_COMMANDS))
def test_another_sessions_command_never_joins_a_statement(
        tmp_path: Path, server: str, stamp: str) -> None:
    """Any command of another session, after any line of a worker's log, is its own entry:
    `Init DB` (a driver's select_db) read as a continuation once hid a fetch-before-delete."""
    lines = (FIX / "mariadb-general-pdo-prepared.log").read_text().split("\n")
    entry = [i for i, ln in enumerate(lines) if ln.startswith(("\t", "2"))]
    for name in SERVER_COMMANDS[server]:
        noisy = list(lines)
        for i in reversed(entry):
            noisy.insert(i + 1, f"{stamp}  9999 {name}\tinformation_schema")
        p = tmp_path / "noisy.log"
        p.write_text("\n".join(noisy))
        a = analyse_logs([p])
        assert a.stats.unreadable_lines == 0, name
        counts = {f.rule: f.evidence["count"] for f in a.findings}
        assert counts == {"QU401": N_JOBS, "QU402": N_JOBS + 1}, name


@pytest.mark.parametrize("reset", ["Reset Connection", "Reset connection"])
def test_a_reset_connection_ends_the_transaction(tmp_path: Path, reset: str) -> None:
    """COM_RESET_CONNECTION (a pool handing the session on) rolls back and restores
    autocommit: a DELETE after it is not the same transaction as the SELECT before it."""
    head = "\t\t    11 "
    body = [f"{head}Query\tSET autocommit=0",
            f"{head}Query\tselect * from `jobs` where `id` = 7 limit 1 for update",
            f"{head}{reset}\t",
            f"{head}Query\tdelete from `jobs` where `id` = 7"]
    p = tmp_path / "reset.log"
    p.write_text("Time\t\t    Id Command\tArgument\n" + "\n".join(body) + "\n")
    assert analyse_logs([p]).findings == []
    p.write_text("Time\t\t    Id Command\tArgument\n" + "\n".join(body[:2] + body[3:]) + "\n")
    assert [f.rule for f in analyse_logs([p]).findings] == ["QU401"]


def test_a_reset_connection_in_the_slow_log_ends_the_transaction(tmp_path: Path) -> None:
    def entry(sql: str) -> str:
        return ("# User@Host: app[app] @  [127.0.0.1]\n# Thread_id: 21  Schema: test\n"
                "# Query_time: 0.000100  Lock_time: 0.000000  Rows_sent: 0  Rows_examined: 0\n"
                f"SET timestamp=1795312713;\n{sql}\n")
    body = [entry("SET autocommit=0;"),
            entry("select * from jobs where id = 7 limit 1 for update;"),
            entry("# administrator command: Reset Connection;"),
            entry("delete from jobs where id = 7;")]
    p = tmp_path / "slow.log"
    p.write_text("# Time: 261122  1:58:33\n" + "".join(body))
    assert analyse_logs([p]).stats.format == "mysql-slow" and analyse_logs([p]).findings == []
    p.write_text("# Time: 261122  1:58:33\n" + "".join(body[:2] + body[3:]))
    assert [f.rule for f in analyse_logs([p]).findings] == ["QU401"]


def test_detect_format_plain_sql() -> None:
    assert detect_format(["select 1;", "select 2;"]) == "sql"
    assert detect_format([]) == "sql"


def test_overlong_lines_are_cut(tmp_path: Path) -> None:
    p = tmp_path / "long.log"
    p.write_bytes(b"a" * (3 << 20) + b"\nselect 1;\n" + b"b" * (2 << 20))
    stats = LineStats()
    with p.open("rb") as f:
        lines = list(iter_lines(f, stats, max_line=1 << 20))
    assert [len(x) for x in lines] == [1 << 20, 9, 1 << 20]
    assert stats.overlong == 2 and stats.lines == 3


class _Counting:
    def __init__(self) -> None:
        self.n = 0

    def statement(self, conn: object, ts: object, text: str, params: object = None) -> None:
        assert isinstance(text, str)
        self.n += 1

    def connect(self, conn: object) -> None: ...

    def disconnect(self, conn: object) -> None: ...

    def version(self, text: str) -> None: ...

    def unreadable(self, n: int = 1) -> None: ...


_LINE = st.one_of(
    st.text(max_size=120),
    st.sampled_from(["\t\t    11 Query\tselect 1", "# Time: 1", "# Thread_id: x", "\tcont",
                     "2024-01-01 00:00:00 UTC [1] LOG:  statement: begin", '{"a": 1}',
                     '{"error_severity": 5, "message": []}', "LOG:  execute x",
                     'x,"unterminated', "DETAIL:  parameters: $1 = '", "/*", "SET timestamp=1;",
                     "   271 Query    select 1", "| 2024-01-01 00:00:00 | u | 1 | 1 | Query | x",
                     '"2024-01-01 00:00:00","u",1,1,"Query","a\\', "+---+", "x |",
                     "event_time\tuser_host\tthread_id\tserver_id\tcommand_type\targument",
                     "2024-01-01 00:00:00\tu\t1\t1\tQuery\tselect\\n1",
                     "*************************** 1. row ***************************",
                     "    argument: select", "   thread_id: x", "command_type: Quit"]))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_LINE, max_size=30))
def test_readers_never_raise_on_garbage(lines: list[str]) -> None:
    for reader in READERS.values():
        reader(iter(lines), _Counting())
    detect_format(lines)


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=2000))
def test_analyse_never_raises_on_random_bytes(data: bytes) -> None:
    import tempfile
    with tempfile.NamedTemporaryFile(suffix=".log") as f:
        f.write(data)
        f.flush()
        for fmt in READERS:
            analyse_logs([f.name], fmt=fmt)
