"""Issue 12, live: least-privilege users made with exactly contrib/grants/*.sql, scope per
database (sessions in two PostgreSQL databases, queue health of two databases), and the exit
status with an unreachable target beside a critical finding."""
from __future__ import annotations

import json
import random
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pymysql
import pytest

from test_queue_live import MY_DDL, PG_DDL, fill_laravel
from test_statements_live import audit as st_audit
from test_statements_live import of, pfs, reset, run_worker  # noqa: F401 (pfs: a fixture)

GRANTS = Path(__file__).resolve().parents[2] / "contrib" / "grants"


def dbwatch(*args: str) -> tuple[int, dict[str, Any], str]:
    proc = subprocess.run([sys.executable, "-m", "dbwatch", *args], capture_output=True,
                          text=True, timeout=120)
    doc = json.loads(proc.stdout) if proc.stdout.startswith("{") else {}
    return proc.returncode, doc, proc.stdout + proc.stderr


def statements(path: Path, subs: dict[str, str]) -> list[str]:
    """The grant file's statements (comments dropped) with names substituted."""
    text = "\n".join(ln for ln in path.read_text().splitlines() if not ln.lstrip().startswith("--"))
    for old, new in subs.items():
        text = text.replace(old, new)
    return [s.strip() for s in text.split(";") if s.strip()]


def secret() -> str:
    """A password sharing no 4-character piece with the hex names (dbwatch masks any such
    piece of a password in everything it prints)."""
    return "Kq-" + "".join(random.choice("ghijklmnopqrtuvxyz") for _ in range(12))


def rules(doc: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["rule"] == rule]


def my_exec(*stmts: str, db: str | None = None) -> None:
    """Each step on a fresh root connection: a long-idle one may be ended by other tests."""
    conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="",
                           database=db, autocommit=True)
    try:
        for s in stmts:
            conn.cursor().execute(s)
    finally:
        conn.close()


@pytest.fixture
def my_app(uniq: str) -> Iterator[str]:
    db = f"dbws_{uniq}"
    my_exec(f"CREATE DATABASE {db}")
    conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="",
                           database=db, autocommit=True)
    try:
        cur = conn.cursor()
        for stmt in MY_DDL:
            cur.execute(stmt.format(p=""))
        fill_laravel(lambda s, p=None: cur.execute(s, p), "mysql", "")
    finally:
        conn.close()
    yield db
    my_exec(f"DROP DATABASE {db}")


def test_mariadb_user_from_the_grant_file(my_app: str, uniq: str) -> None:
    """PROCESS only (the old file) is never "OK": DW001 names GRANT SELECT ON `app`.*; with the
    shipped file as it is now the stuck jobs are found and nothing is missing. Queue rules only
    (DW001 is reported whatever --select chose): MY001/MY002 are server-wide, so another
    database's idle transaction on the shared server would make the exit critical."""
    db = my_app
    user, pw = f"dbws_{uniq}", secret()
    subs = {"'dbwatch'@'%'": f"'{user}'@'%'", "change-me": pw, "`app`": f"`{db}`"}
    stmts = statements(GRANTS / "mariadb.sql", subs)
    select_line = [s for s in stmts if s.startswith("GRANT SELECT ON `")]
    assert select_line, "the grant file must grant SELECT on the application schema"
    try:
        my_exec(*[s for s in stmts if s not in select_line])
        url = f"mysql://{user}:{pw}@127.0.0.1:3306/{db}"
        code, doc, out = dbwatch("audit", url, "--select", "QU", "--format", "json")
        assert pw not in out
        dw = rules(doc, "DW001")
        assert code == 3, out
        assert any(f"GRANT SELECT ON `{db}`.* TO '{user}'@'%';" in f["fix"] for f in dw), dw
        assert not rules(doc, "QU001")                      # invisible, and said so
        code, _, table = dbwatch("audit", url, "--select", "QU")
        assert "Status: UNKNOWN" in table.splitlines()[-1] or "UNKNOWN" in table
        my_exec(*select_line)
        code, doc, out = dbwatch("audit", url, "--select", "QU", "--format", "json")
        assert not rules(doc, "DW001"), rules(doc, "DW001")
        assert rules(doc, "QU001") and rules(doc, "QU004"), [f["rule"] for f in doc["findings"]]
        assert code in (1, 2), out
    finally:
        my_exec(f"DROP USER IF EXISTS '{user}'@'%'")


@pytest.fixture
def pg_two_dbs(uniq: str) -> Iterator[tuple[str, str, Any]]:
    admin = psycopg.connect("postgresql://postgres@127.0.0.1:5432/test", autocommit=True)
    names = (f"dbws_a_{uniq}", f"dbws_b_{uniq}")
    for db in names:
        for attempt in range(5):      # other tests may be copying template1 at the same moment
            try:
                admin.execute(f"CREATE DATABASE {db}")
                break
            except psycopg.errors.ObjectInUse:
                time.sleep(0.5 * (attempt + 1))
    yield names[0], names[1], admin
    for db in names:
        admin.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")
    admin.close()


def pg_url(db: str, user: str = "postgres") -> str:
    return f"postgresql://{user}@127.0.0.1:5432/{db}"


def test_pg_sessions_are_scoped_to_the_database(pg_two_dbs: tuple[str, str, Any],
                                                tmp_path: Path) -> None:
    a, b, _ = pg_two_dbs
    cfg = tmp_path / "c.toml"
    cfg.write_text('[rules.PG002]\nthresholds = { warning = "1s", critical = "1h" }\n')
    idle = psycopg.connect(pg_url(a), application_name="scope-idler")
    try:
        idle.execute("SELECT txid_current()")
        time.sleep(1.5)
        pid = idle.info.backend_pid
        _, doc, _ = dbwatch("audit", pg_url(b), "--config", str(cfg), "--select", "PG0,PG1,PG2",
                            "--format", "json")
        assert pid not in {f["evidence"].get("pid") for f in doc["findings"]}
        _, doc, _ = dbwatch("audit", pg_url(a), "--config", str(cfg), "--select", "PG002",
                            "--format", "json")
        mine = [f for f in rules(doc, "PG002") if f["evidence"]["pid"] == pid]
        assert mine and mine[0]["evidence"]["database"] == a
        _, doc, _ = dbwatch("audit", pg_url(b), "--all-databases", "--config", str(cfg),
                            "--select", "PG002", "--format", "json")
        wide = [f for f in rules(doc, "PG002") if f["evidence"]["pid"] == pid]
        assert wide and wide[0]["evidence"]["database"] == a
        code, _, table = dbwatch("audit", pg_url(b), "--all-databases", "--config", str(cfg),
                                 "--select", "PG002")
        assert f"db={a}" in table and code in (1, 2)
    finally:
        idle.close()


def test_pg_shared_sessions_probe_serves_each_targets_own_database(
        pg_two_dbs: tuple[str, str, Any]) -> None:
    """pg.sessions is server-wide: the daemon runs it once per server+user for every target
    (SharedProbes). Target B must still see the sessions of its own database, and target A
    must not see B's: the read is cluster-wide and the checks apply each target's scope."""
    from dbwatch.catalogue import Thresholds, load_catalogue
    from dbwatch.config import Config, RuleOverride
    from dbwatch.evaluate import Selection
    from dbwatch.pipeline import probe_target
    from dbwatch.probes import SharedProbes
    from dbwatch.targets import spec_for

    a, b, _ = pg_two_dbs
    idlers = {db: psycopg.connect(pg_url(db), application_name="shared-idler") for db in (a, b)}
    try:
        for conn in idlers.values():
            conn.execute("SELECT txid_current()")
        time.sleep(1.5)
        pids = {db: conn.info.backend_pid for db, conn in idlers.items()}
        config = Config(rules={"PG002": RuleOverride(
            thresholds=Thresholds("duration", 1.0, None))})
        shared = SharedProbes(ttl=60.0)   # as the daemon shares it between a server's targets
        found = {}
        runs = []
        for db in (a, b):
            res = probe_target(spec_for(pg_url(db), f"t-{db}"), load_catalogue(), config,
                               Selection(("PG002",)), shared=shared)
            assert res.error is None, res.error
            found[db] = {f.evidence["pid"] for f in res.evaluation.findings if f.rule == "PG002"}
            runs.append(shared.runs)
        # the first target's shared reads (pg.sessions, and the role's privileges it takes the
        # visibility from) served the second: it ran none of its own
        assert runs[0] >= 1 and runs[1] == runs[0] and shared.hits >= 1
        assert pids[a] in found[a] and pids[b] not in found[a]
        assert pids[b] in found[b] and pids[a] not in found[b]   # no silent OK for B
    finally:
        for conn in idlers.values():
            conn.close()


def test_pg_shared_deadlock_counters_serve_each_targets_own_database(
        pg_two_dbs: tuple[str, str, Any]) -> None:
    """pg.deadlocks is server-wide too (pg_stat_database, shared by a server's targets): a
    deadlock in B's database is B's PG102, even when A's audit ran the shared read first, and
    never A's."""
    from dbwatch.catalogue import load_catalogue
    from dbwatch.config import Config
    from dbwatch.evaluate import Selection
    from dbwatch.pipeline import probe_target
    from dbwatch.probes import SharedProbes
    from dbwatch.targets import spec_for
    from test_pg_deadlock_log_live import make_deadlock

    a, b, _ = pg_two_dbs
    with psycopg.connect(pg_url(b), autocommit=True) as c:
        c.execute("CREATE TABLE jobs (id int PRIMARY KEY, queue text, state text)")
        c.execute("INSERT INTO jobs VALUES (1, 'default', 'ready'), (2, 'default', 'ready')")
    make_deadlock(pg_url(b))
    time.sleep(0.6)  # the statistics collector's flush (PG 15: at most every second)
    shared = SharedProbes(ttl=60.0)
    found = {}
    runs = []
    for db in (a, b):
        res = probe_target(spec_for(pg_url(db), f"t-{db}"), load_catalogue(), Config(),
                           Selection(("PG102",)), shared=shared)
        assert res.error is None, res.error
        found[db] = [f.evidence["database"] for f in res.evaluation.findings if f.rule == "PG102"]
        runs.append(shared.runs)
    assert runs[0] >= 1 and runs[1] == runs[0] and shared.hits >= 1  # the second ran none
    assert found[a] == [] and found[b] == [b]


def test_pg_sessions_past_the_limit_are_a_coverage_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cluster-wide read is bounded: when the limit is hit the rest is a DW002 gap."""
    from dbwatch.catalogue import load_catalogue
    from dbwatch.config import Config
    from dbwatch.evaluate import Selection
    from dbwatch.pipeline import probe_target
    from dbwatch.probes import postgresql
    from dbwatch.targets import spec_for

    monkeypatch.setattr(postgresql, "SESSION_LIMIT", 1)
    res = probe_target(spec_for(pg_url("test")), load_catalogue(), Config(),
                       Selection(("PG001", "DW002")))
    assert res.error is None, res.error
    assert [g.name for g in res.snapshot.gaps if g.kind == "session_cap"] == ["pg.sessions"]
    assert len(res.snapshot.sections.get("pg.sessions")) == 1
    assert any(f.rule == "DW002" and "pg.sessions" in f.summary
               for f in res.evaluation.findings)


def test_pg_queue_health_per_database(pg_two_dbs: tuple[str, str, Any]) -> None:
    a, b, _ = pg_two_dbs
    for db, fill in ((a, True), (b, False)):
        with psycopg.connect(pg_url(db), autocommit=True) as c:
            for stmt in PG_DDL:
                c.execute(stmt.format(p=""))
            if fill:
                fill_laravel(lambda s, p=None, c=c: c.execute(s, p), "postgresql", "")
    code_b, doc_b, out = dbwatch("audit", pg_url(b), "--select", "QU0", "--format", "json")
    assert not doc_b["findings"] and code_b == 0, out
    code_a, doc_a, _ = dbwatch("audit", pg_url(a), "--select", "QU0", "--format", "json")
    assert rules(doc_a, "QU001") and code_a in (1, 2)


def test_pg_role_from_the_grant_file(pg_two_dbs: tuple[str, str, Any], uniq: str) -> None:
    """pg_monitor only: the queue tables are unreadable and DW001 names the exact GRANT;
    with the whole shipped file run in the application database, nothing is missing."""
    a, _, admin = pg_two_dbs
    role = f"dbws_{uniq}"
    with psycopg.connect(pg_url(a), autocommit=True) as c:
        for stmt in PG_DDL:
            c.execute(stmt.format(p=""))
        fill_laravel(lambda s, p=None: c.execute(s, p), "postgresql", "")
        c.execute("REVOKE ALL ON SCHEMA public FROM PUBLIC")
    pw = secret()
    stmts = statements(GRANTS / "postgresql.sql", {"dbwatch": role, "change-me": pw})
    per_db = [s for s in stmts if re.search(r"\bON (SCHEMA|ALL TABLES)", s)]
    try:
        for s in stmts:
            if s not in per_db:
                admin.execute(s)
        url = f"postgresql://{role}:{pw}@127.0.0.1:5432/{a}"
        code, doc, out = dbwatch("audit", url, "--select", "QU0,DW", "--format", "json")
        fixes = " ".join(f["fix"] for f in rules(doc, "DW001"))
        assert code == 3 and f'GRANT USAGE ON SCHEMA "public" TO "{role}";' in fixes, out
        assert pw not in out
        with psycopg.connect(pg_url(a), autocommit=True) as c:
            for s in per_db:
                c.execute(s)
        code, doc, out = dbwatch("audit", url, "--select", "QU0,DW", "--format", "json")
        assert not rules(doc, "DW001"), out
        assert rules(doc, "QU001"), out
    finally:
        with psycopg.connect(pg_url(a), autocommit=True) as c:
            c.execute(f"DROP OWNED BY {role}")
        admin.execute(f"DROP OWNED BY {role}")
        admin.execute(f"DROP ROLE {role}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_unreachable_beside_critical_exits_2(pg_two_dbs: tuple[str, str, Any],
                                             tmp_path: Path) -> None:
    a, _, _ = pg_two_dbs
    cfg = tmp_path / "c.toml"
    cfg.write_text('[rules.PG002]\nthresholds = { warning = "1s", critical = "1s" }\n')
    idle = psycopg.connect(pg_url(a), application_name="scope-critical")
    try:
        idle.execute("SELECT txid_current()")
        time.sleep(1.5)
        dead = f"mysql://u@127.0.0.1:{free_port()}/x"
        code, _, out = dbwatch("audit", pg_url(a), dead, "--config", str(cfg), "--select", "PG002")
        last = out.strip().splitlines()
        status = next(ln for ln in last if "Status:" in ln)
        assert code == 2, out
        assert "1 critical" in status and "1 unreadable" in status and "CRITICAL" in status
        code, doc, _ = dbwatch("audit", dead, "--format", "json")
        assert code == 3 and doc["counts"]["unreadable"] == 1
    finally:
        idle.close()


def test_watch_once_unreachable_beside_critical_exits_2(pg_two_dbs: tuple[str, str, Any],
                                                        tmp_path: Path) -> None:
    a, _, _ = pg_two_dbs
    dead = f"mysql://u@127.0.0.1:{free_port()}/x"
    cfg = tmp_path / "w.toml"
    rules_part = '[rules.PG002]\nthresholds = { warning = "1s", critical = "1s" }\nfor = "0s"\n'
    cfg.write_text(f'[[targets]]\nname = "pg"\nurl = "{pg_url(a)}"\n'
                   f'[[targets]]\nname = "dead"\nurl = "{dead}"\n' + rules_part)
    idle = psycopg.connect(pg_url(a), application_name="scope-watch")
    try:
        idle.execute("SELECT txid_current()")
        time.sleep(1.5)
        code, _, out = dbwatch("watch", "--once", "--config", str(cfg),
                               "--state", str(tmp_path / "s.db"), "--flush-timeout", "0")
        assert code == 2, out
    finally:
        idle.close()
    only_dead = tmp_path / "d.toml"
    only_dead.write_text(f'[[targets]]\nname = "dead"\nurl = "{dead}"\n')
    code, _, out = dbwatch("watch", "--once", "--config", str(only_dead),
                           "--state", str(tmp_path / "s2.db"), "--flush-timeout", "0")
    assert code == 3, out


def test_mariadb_deadlock_shown_only_in_its_schema(uniq: str) -> None:
    """MY102: a deadlock none of whose tables is in the URL's schema is not this target's."""
    from test_mariadb_deadlocks import opposite_order

    table = f"dbws_dl_{uniq}"
    empty = f"dbws_e_{uniq}"
    my_exec(f"CREATE DATABASE {empty}")
    try:
        opposite_order(table)                       # a deadlock on test.<table>
        code, doc, out = dbwatch("audit", f"mysql://root@127.0.0.1:3306/{empty}",
                                 "--select", "MY102", "--format", "json")
        assert not rules(doc, "MY102"), out
        code, doc, out = dbwatch("audit", f"mysql://root@127.0.0.1:3306/{empty}",
                                 "--all-databases", "--select", "MY102", "--format", "json")
        wide = rules(doc, "MY102")
        assert wide, out                            # the server's latest deadlock, whatever it is
        if any(lk.get("table") == table for lk in wide[0]["evidence"]["deadlock"]["locks"]):
            code, doc, out = dbwatch("audit", "mysql://root@127.0.0.1:3306/test",
                                     "--select", "MY102", "--format", "json")
            assert rules(doc, "MY102"), out
    finally:
        my_exec(f"DROP DATABASE {empty}", f"DROP TABLE IF EXISTS test.`{table}`")


def test_time_budget_leaves_gaps(pg_two_dbs: tuple[str, str, Any]) -> None:
    """A budget that runs out: the probes not started are DW002 gaps, their rules unknown."""
    from dbwatch.catalogue import load_catalogue
    from dbwatch.config import Config
    from dbwatch.evaluate import evaluate, rules_for, sections_needed
    from dbwatch.pipeline import ALL_RULES
    from dbwatch.probes import run_probes
    from dbwatch.targets import open_target, spec_for

    a, _, _ = pg_two_dbs
    cat = load_catalogue()
    conn = open_target(spec_for(pg_url(a)))
    try:
        needs = sections_needed("postgresql", rules_for("postgresql", cat, Config(), ALL_RULES))
        snap = run_probes(conn, "pg", needs, budget=0.0)
    finally:
        conn.close()
    gaps = {g.name for g in snap.gaps if g.kind == "time_budget"}
    assert gaps and "pg.sessions" in gaps and snap.sections.get("pg.sessions") is None
    ev = evaluate(snap, cat, Config())
    dw2 = [f for f in ev.findings if f.rule == "DW002"]
    assert dw2 and "pg.sessions" in dw2[0].summary and "PG001" in ev.unknown


def test_statement_patterns_only_from_the_urls_schema(pfs: Any) -> None:
    """QU401/QU402 from the live history and digests: statements of schema `test` are not
    those of a target naming schema `mysql`; --all-databases sees them again."""
    reset(pfs)
    t = run_worker(pfs, "start transaction", fetch=True)
    _, doc = st_audit(pfs.url("mysql"))
    assert not of(doc, "QU401", t) and not of(doc, "QU402", t)
    _, doc = st_audit(pfs.url("mysql"), "--all-databases")
    assert of(doc, "QU401", t) and of(doc, "QU402", t)
    _, doc = st_audit(pfs.url("test"))
    assert of(doc, "QU401", t)
