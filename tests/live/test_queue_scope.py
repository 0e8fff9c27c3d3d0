"""Queue scope and coverage on the local MariaDB (issue 12.1/12.2 for queue tables): 26 Laravel
databases, one unhealthy. A URL naming a database examines only that database's queue tables;
a URL naming none covers every schema, and what one cycle cannot reach is a DW002 gap by name,
never dropped; the daemon's rotation (ProbeCache) covers every table within a bounded number
of cycles and keeps each table's last result between its turns."""

from __future__ import annotations

import math
import time
from collections.abc import Iterator

import pymysql
import pytest
from queue_libs import audit, by_rule, queue_findings

from dbwatch.probes import Covered, ProbeCache
from dbwatch.probes.queue import MAX_TABLES, collect
from dbwatch.targets import open_target, spec_for

N = 26
DDL = ("CREATE TABLE {db}.jobs (id bigint unsigned AUTO_INCREMENT PRIMARY KEY, queue varchar(255)"
       " NOT NULL, payload longtext NOT NULL, attempts tinyint unsigned NOT NULL, reserved_at int"
       " unsigned NULL, available_at int unsigned NOT NULL, created_at int unsigned NOT NULL,"
       " KEY jobs_queue_index (queue))")


@pytest.fixture(scope="module")
def apps() -> Iterator[list[str]]:
    tag = f"{time.time_ns() % 10**8:08d}"
    dbs = [f"dbwscope_{tag}_{i:02d}" for i in range(N)]
    conn = pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)
    with conn.cursor() as cur:
        for i, db in enumerate(dbs):
            cur.execute(f"CREATE DATABASE {db}")
            cur.execute(DDL.format(db=db))
            age = 7200 if i == 17 else 0  # app 17: 30 jobs waiting two hours
            cur.execute(f"INSERT INTO {db}.jobs (queue, payload, attempts, available_at,"
                        f" created_at) SELECT 'default', '{{}}', 0, UNIX_TIMESTAMP() - {age},"
                        f" UNIX_TIMESTAMP() FROM {db}.seq_1_to_30")
    yield dbs
    with conn.cursor() as cur:
        for db in dbs:
            cur.execute(f"DROP DATABASE {db}")
    conn.close()


def test_url_database_scopes_queue_tables(apps: list[str]) -> None:
    healthy = audit(f"mysql://root@127.0.0.1:3306/{apps[3]}", "--select", "QU,DW")
    assert queue_findings(healthy) == [] and healthy["status"] == "ok"
    sick = audit(f"mysql://root@127.0.0.1:3306/{apps[17]}", "--select", "QU,DW")
    (f,) = by_rule(sick, "QU001")
    assert f["evidence"]["table"] == f"{apps[17]}.jobs" and f["evidence"]["depth"] == 30
    target = open_target(spec_for(f"mysql://root@127.0.0.1:3306/{apps[3]}"))
    try:
        data = collect(target)
    finally:
        target.close()
    assert not isinstance(data, Covered) and data["discovered"] == 1 and data["scope"] == apps[3]


def _mine(names: list[str], apps: list[str]) -> set[str]:
    return {n for n in names if n.split(".")[0] in apps}


def test_server_url_covers_every_schema_gaps_then_rotation(apps: list[str]) -> None:
    spec = spec_for("mysql://root@127.0.0.1:3306/")
    target = open_target(spec)
    try:
        one = collect(target)  # an audit: no cache
        assert isinstance(one, Covered)
        data, gaps = one.data, one.gaps
        examined = [f"{t['schema']}.{t['table']}" for t in data["tables"]]
        assert len(examined) <= MAX_TABLES and data["discovered"] >= N
        assert all(g.kind == "queue_table" and "cap" in g.reason for g in gaps)
        # nothing of ours silently dropped: examined or named as a gap
        assert _mine(examined, apps) | _mine([g.name for g in gaps], apps) == {
            f"{db}.jobs" for db in apps}
        # the daemon: one cache per target, kept between cycles
        cache = ProbeCache()
        cycles = math.ceil(data["discovered"] / MAX_TABLES)
        seen: set[str] = set()
        for _ in range(cycles):
            out = collect(target, cache)
            section = out.data if isinstance(out, Covered) else out
            seen |= {f"{t['schema']}.{t['table']}" for t in section["tables"]
                     if not t.get("reused")}
        assert _mine(sorted(seen), apps) == {f"{db}.jobs" for db in apps}
        last = collect(target, cache)  # every table now has a result: no gap left
        section = last.data if isinstance(last, Covered) else last
        assert not isinstance(last, Covered) or not _mine([g.name for g in last.gaps], apps)
        sick = [t for t in section["tables"] if t["schema"] == apps[17]]
        assert len(sick) == 1 and sick[0]["summary"][0]["available"] == 30
    finally:
        target.close()
