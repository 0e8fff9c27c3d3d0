"""Kept probe sessions: reused between cycles, capped per server, replaced when they die."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from conftest import PG_URL

from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config
from dbwatch.evaluate import Selection
from dbwatch.pipeline import probe_target
from dbwatch.targets import spec_for
from dbwatch.targets.pool import ConnectionPool, server_key

BASE = PG_URL.rsplit("/", 1)[0]


@pytest.fixture
def dbs(uniq: str) -> Iterator[list[str]]:
    names = [f"dbw_pool_{uniq}_{i}" for i in range(6)]
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        for n in names:
            admin.execute(f'CREATE DATABASE "{n}"')
    try:
        yield names
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            for n in names:
                admin.execute(f'DROP DATABASE IF EXISTS "{n}" WITH (FORCE)')


def sessions(names: list[str]) -> dict[str, list[int]]:
    with psycopg.connect(PG_URL, autocommit=True) as c:
        rows = c.execute(
            "SELECT datname, pid FROM pg_stat_activity WHERE application_name = 'dbwatch' "
            "AND datname = ANY(%s)",
            (names,),
        ).fetchall()
    out: dict[str, list[int]] = {}
    for db, pid in rows:
        out.setdefault(db, []).append(pid)
    return out


def test_reuse_cap_and_reconnect(dbs: list[str]) -> None:
    catalogue, config = load_catalogue(), Config()
    specs = [spec_for(f"{BASE}/{db}", f"t{i}") for i, db in enumerate(dbs)]
    assert len({server_key(s) for s in specs}) == 1
    pool = ConnectionPool(per_server=3, wait=30)
    peak = 0
    stop = threading.Event()

    def watch() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, sum(len(v) for v in sessions(dbs).values()))
            time.sleep(0.05)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        # 6 targets, 6 threads at once, cap 3: never more than 3 sessions to the server
        threads = [
            threading.Thread(target=probe_target, args=(s, catalogue, config, Selection()),
                             kwargs={"pool": pool})
            for s in specs
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        # the same target twice in a row: its kept session is reused
        first = probe_target(specs[0], catalogue, config, Selection(), pool=pool)
        assert first.error is None
        pid_before = sessions(dbs)[dbs[0]]
        again = probe_target(specs[0], catalogue, config, Selection(), pool=pool)
        assert again.error is None
        assert sessions(dbs)[dbs[0]] == pid_before
        assert pool.reused >= 1
        # the kept session dies between cycles: the next cycle reconnects and reads
        with psycopg.connect(PG_URL, autocommit=True) as c:
            c.execute("SELECT pg_terminate_backend(%s)", (pid_before[0],))
        time.sleep(0.2)
        healed = probe_target(specs[0], catalogue, config, Selection(), pool=pool)
        assert healed.error is None, healed.error
        assert healed.evaluation.ran
        assert sessions(dbs)[dbs[0]] != pid_before
    finally:
        stop.set()
        watcher.join(5)
        pool.discard()
    assert 1 <= peak <= 3, f"{peak} sessions to one server with a cap of 3"
    assert sum(pool.sessions().values()) == 0
    assert not sessions(dbs)


def test_server_wide_probes_run_once_per_server(dbs: list[str]) -> None:
    from dbwatch.probes import SharedProbes

    catalogue, config = load_catalogue(), Config()
    specs = [spec_for(f"{BASE}/{db}", f"t{i}") for i, db in enumerate(dbs)]
    shared = SharedProbes(ttl=60.0)
    results = [
        probe_target(s, catalogue, config, Selection(), shared=shared) for s in specs
    ]
    assert all(r.error is None for r in results)
    # pg.sessions, pg.deadlocks, pg.horizon's server-wide part (instance, prepared
    # transactions, slots, pg_stat_replication) and the role's privileges: read once for the
    # six databases of this server
    assert shared.runs == 4, shared.runs
    assert shared.hits == 4 * (len(specs) - 1)
    first, last = results[0].snapshot, results[-1].snapshot
    assert first.sections.get("pg.sessions") is last.sections.get("pg.sessions")
    h0, h1 = first.sections["pg.horizon"], last.sections["pg.horizon"]
    assert getattr(h0, "replication") is getattr(h1, "replication")
    # the instance is the server's, the database each target's own
    assert getattr(h0, "instance").database == dbs[0]
    assert getattr(h1, "instance").database == dbs[-1]
    # per-database sections are still each target's own
    assert results[0].stats.queries > 0
