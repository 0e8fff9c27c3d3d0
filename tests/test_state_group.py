"""Group commit of the state (issue 28): a cycle's relaxed writes on SQLite — a finding only seen
again (its last_seen), the series points, the cycle record — wait in memory at most
`group_tick` and are committed together; a finding's transition or an alert commits at once,
with everything that waited before it. What this process reads sees the deferred writes; what
a killed process loses is at most the last tick of them. Real SQLite files, a second connection
(another process, `dbwatch status`) to see what is committed, and a real SIGKILL."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbwatch.daemon.state import State
from dbwatch.findings import Finding
from statehelpers import finding

T0 = 1_800_000_000.0
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def st(path: Path) -> Iterator[State]:
    s = State(path)
    s.group_tick = 3600.0  # nothing commits by the clock unless a test says so
    yield s
    s.close()


def committed(path: Path, sql: str) -> list[tuple[Any, ...]]:
    """What another connection reads (only committed rows)."""
    db = sqlite3.connect(path)
    try:
        return db.execute(sql).fetchall()
    finally:
        db.close()


def idle_cycle(st: State, f: Finding, now: float, value: float) -> None:
    """A cycle's state writes as the daemon makes them (loop._after_probe): one relaxed
    transaction for the findings and the bookkeeping."""
    with st.transaction(durable=False):
        st.update("db", [f], now)
        st.record_metrics("db", {"oldest_xact_seconds": value}, now)
        st.record_cycle("db", now, 0.01, "ok", None, 1, 0.0)


POINTS = "SELECT ts, value FROM series ORDER BY ts"
CYCLE = "SELECT started FROM cycles"
SEEN = "SELECT last_seen FROM findings"


def test_relaxed_writes_wait_for_the_tick_and_this_process_sees_them(st: State, path: Path) -> None:
    f = finding()
    idle_cycle(st, f, T0, 1.0)  # a new finding: committed at once (durable) with its cycle
    assert committed(path, SEEN) == [(T0,)] and committed(path, CYCLE) == [(T0,)]
    idle_cycle(st, f, T0 + 15, 2.0)  # nothing changed: deferred
    assert committed(path, POINTS) == [(T0, 1.0)]
    assert committed(path, SEEN) == [(T0,)] and committed(path, CYCLE) == [(T0,)]
    # this process reads them: in-memory copies and reads of the tables that wait
    assert st.last_point("db", "oldest_xact_seconds", 10**10) == [(T0 + 15, 2.0)]
    assert st.history("db", "oldest_xact_seconds", 10**10) == [(T0, 1.0), (T0 + 15, 2.0)]
    assert [c["started"] for c in st.cycles()] == [T0 + 15]
    assert [r.last_seen for r in st.firing("db")] == [T0 + 15]
    # the read committed them
    assert committed(path, POINTS) == [(T0, 1.0), (T0 + 15, 2.0)]
    assert committed(path, SEEN) == [(T0 + 15,)] and committed(path, CYCLE) == [(T0 + 15,)]


def test_the_flusher_commits_a_group_left_alone(path: Path) -> None:
    st = State(path)
    try:
        st.group_tick = 0.2
        f = finding()
        idle_cycle(st, f, T0, 1.0)
        idle_cycle(st, f, T0 + 15, 2.0)
        assert committed(path, POINTS) == [(T0, 1.0)]
        deadline = time.monotonic() + 10
        while committed(path, POINTS) != [(T0, 1.0), (T0 + 15, 2.0)]:
            assert time.monotonic() < deadline, "the group was never committed"
            time.sleep(0.05)
        assert committed(path, SEEN) == [(T0 + 15,)] and committed(path, CYCLE) == [(T0 + 15,)]
    finally:
        st.close()


@pytest.mark.skipif(
    not hasattr(os, "sched_getscheduler") or not hasattr(os, "SCHED_BATCH"),
    reason="no scheduling policies here",
)
def test_the_flusher_is_a_batch_thread(st: State) -> None:
    """The group's flusher is SCHED_BATCH (dbwatch/daemon/batch.py): its wake never preempts a
    cycle's thread."""
    f = finding()
    idle_cycle(st, f, T0, 1.0)
    idle_cycle(st, f, T0 + 15, 2.0)  # deferred: the flusher starts
    flusher = st._flusher
    assert flusher is not None and flusher.native_id is not None
    deadline = time.monotonic() + 5
    while os.sched_getscheduler(flusher.native_id) != os.SCHED_BATCH:
        assert time.monotonic() < deadline, "the flusher never became a batch thread"
        time.sleep(0.01)
    assert os.sched_getscheduler(0) != os.SCHED_BATCH  # the caller's thread as it was


def test_a_cycle_commits_a_group_older_than_the_tick(st: State, path: Path) -> None:
    f = finding()
    idle_cycle(st, f, T0, 1.0)
    idle_cycle(st, f, T0 + 15, 2.0)
    st.group_tick = 0.0  # the group is now older than the tick: the next cycle commits it
    idle_cycle(st, f, T0 + 30, 3.0)
    assert [v for _, v in committed(path, POINTS)] == [1.0, 2.0, 3.0]


def test_a_transition_is_never_deferred_and_takes_the_group_with_it(
    st: State, path: Path
) -> None:
    f, g = finding("pid 7"), finding("pid 8")
    idle_cycle(st, f, T0, 1.0)
    idle_cycle(st, f, T0 + 15, 2.0)  # deferred
    with st.transaction(durable=False):  # g is new: the commit is now, and durable
        st.update("db", [f, g], T0 + 30)
        st.record_metrics("db", {"oldest_xact_seconds": 3.0}, T0 + 30)
    assert [v for _, v in committed(path, POINTS)] == [1.0, 2.0, 3.0]
    assert committed(path, "SELECT subject, last_seen FROM findings ORDER BY subject") == [
        ("pid 7", T0 + 30), ("pid 8", T0 + 30)]
    # a finding resolved likewise
    with st.transaction(durable=False):
        st.update("db", [g], T0 + 45)
    assert committed(path, "SELECT subject, status FROM findings ORDER BY subject") == [
        ("pid 7", "resolved"), ("pid 8", "firing")]


def test_a_durable_transaction_commits_the_group_first(st: State, path: Path) -> None:
    f = finding()
    idle_cycle(st, f, T0, 1.0)
    idle_cycle(st, f, T0 + 15, 2.0)
    st.record_action("db", "PG001", f.fingerprint, f.subject, "terminate", {"pid": 7})
    assert [v for _, v in committed(path, POINTS)] == [1.0, 2.0]
    assert committed(path, "SELECT action FROM actions") == [("terminate",)]


def test_a_rolled_back_cycle_loses_its_writes_only(st: State, path: Path) -> None:
    """A cycle whose transaction fails after a read sent the group's writes: the rollback
    drops that cycle's writes, never the other cycles' deferred before it."""
    f = finding()
    idle_cycle(st, f, T0, 1.0)
    idle_cycle(st, f, T0 + 15, 2.0)  # deferred
    with pytest.raises(RuntimeError), st.transaction(durable=False):
        st.record_metrics("db", {"oldest_xact_seconds": 3.0}, T0 + 30)
        st.history("db", "oldest_xact_seconds", 10**10)  # a read: BEGIN, the group sent
        st.record_metrics("db", {"oldest_xact_seconds": 4.0}, T0 + 31)
        raise RuntimeError("the bookkeeping failed")
    # and a failure before anything was sent
    with pytest.raises(RuntimeError), st.transaction(durable=False):
        st.record_metrics("db", {"oldest_xact_seconds": 5.0}, T0 + 32)
        raise RuntimeError("failed again")
    st.flush()
    assert [v for _, v in committed(path, POINTS)] == [1.0, 2.0]
    assert st.last_point("db", "oldest_xact_seconds", 10**10) == [(T0 + 15, 2.0)]


def test_close_commits_the_group(path: Path) -> None:
    st = State(path)
    st.group_tick = 3600.0
    idle_cycle(st, finding(), T0, 1.0)
    idle_cycle(st, finding(), T0 + 15, 2.0)
    st.close()
    assert [v for _, v in committed(path, POINTS)] == [1.0, 2.0]


def test_tick_zero_commits_every_cycle(path: Path) -> None:
    st = State(path)
    try:
        st.group_tick = 0.0
        f = finding()
        idle_cycle(st, f, T0, 1.0)
        idle_cycle(st, f, T0 + 15, 2.0)
        assert [v for _, v in committed(path, POINTS)] == [1.0, 2.0]
        assert committed(path, CYCLE) == [(T0 + 15,)]
    finally:
        st.close()


def test_another_writer_is_not_starved_and_sees_the_group(st: State, path: Path) -> None:
    """No lock is held while writes wait: another connection writes at once, and the memo
    copies are dropped when it did (PRAGMA data_version)."""
    f = finding()
    idle_cycle(st, f, T0, 1.0)
    idle_cycle(st, f, T0 + 15, 2.0)  # deferred, no transaction open
    db = sqlite3.connect(path, timeout=0.5)
    try:
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO series(target, key, ts, value) VALUES ('db', "
                   "'oldest_xact_seconds', ?, 9.0)", (T0 + 20,))
        db.execute("COMMIT")
    finally:
        db.close()
    assert st.last_point("db", "oldest_xact_seconds", 10**10) == [(T0 + 20, 9.0)]
    st.flush()
    assert [v for _, v in committed(path, POINTS)] == [1.0, 2.0, 9.0]


KILLED = textwrap.dedent("""
    import os, signal, sys, time
    sys.path.insert(0, {root!r})
    from dbwatch.daemon.state import State
    from dbwatch.findings import Finding
    st = State({path!r})
    st.group_tick = {tick}
    f = Finding(rule="PG001", severity="warning", target="db", subject="pid 7",
                summary="old", fix="", evidence={{}}, identity=["pid 7"])
    def cycle(fs, now, v):
        with st.transaction(durable=False):
            st.update("db", fs, now)
            st.record_metrics("db", {{"oldest_xact_seconds": v}}, now)
            st.record_cycle("db", now, 0.01, "ok", None, len(fs), 0.0)
    cycle([f], 100.0, 1.0)           # new finding: committed
    cycle([f], 115.0, 2.0)           # deferred
    cycle([], 130.0, 3.0)            # resolved: committed with the point before
    cycle([], 145.0, 4.0)            # deferred
    time.sleep({wait})
    os.kill(os.getpid(), signal.SIGKILL)
""")


@pytest.mark.parametrize(("wait", "kept"), [(0.0, [1.0, 2.0, 3.0]), (1.5, [1.0, 2.0, 3.0, 4.0])])
def test_a_killed_process_loses_at_most_the_last_tick(
    path: Path, wait: float, kept: list[float]
) -> None:
    """SIGKILL right after a deferred cycle: the finding's transitions and everything before
    them are there, the last cycle's bookkeeping is not; killed a tick later, nothing is lost."""
    code = KILLED.format(root=str(ROOT), path=str(path), tick=0.25, wait=wait)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert r.returncode == -signal.SIGKILL, r.stderr.decode()
    assert [v for _, v in committed(path, POINTS)] == kept
    assert committed(path, "SELECT status, resolved_at FROM findings") == [("resolved", 130.0)]
    assert committed(path, CYCLE) == [(145.0 if wait else 130.0,)]


def test_postgresql_state_has_no_group() -> None:
    """A PostgreSQL state (a fleet: other daemons read the rows) commits every cycle."""
    import psycopg

    url = "postgresql://postgres@127.0.0.1:5432/test"
    schema = f"dbw_group_{os.getpid()}"
    st = State(url, schema=schema)
    try:
        assert st.group_tick == 0.0
        f = finding()
        idle_cycle(st, f, T0, 1.0)
        idle_cycle(st, f, T0 + 15, 2.0)
        with psycopg.connect(url, autocommit=True) as c:
            rows = c.execute(f'SELECT value FROM "{schema}".series ORDER BY ts').fetchall()
            seen = c.execute(f'SELECT last_seen FROM "{schema}".findings').fetchall()
        assert [r[0] for r in rows] == [1.0, 2.0] and seen == [(T0 + 15,)]
    finally:
        st.close()
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def test_another_commit_after_the_memo_look_fails_the_lazy_transaction(
    st: State, path: Path
) -> None:
    """A lazy transaction looked at the in-memory copies (one PRAGMA data_version, no BEGIN)
    and decided on them; another connection commits; then the transaction needs its BEGIN:
    nothing it decided is written (the cycle fails), and the next one reads afresh."""
    from dbwatch.daemon.statebase import StateChanged

    f = finding()
    idle_cycle(st, f, T0, 1.0)
    with pytest.raises(StateChanged), st.transaction(durable=False):
        st.update("db", [f], T0 + 15)  # seen again, from the copies: deferred
        db = sqlite3.connect(path)
        db.execute("UPDATE findings SET status = 'resolved', resolved_at = ?", (T0 + 10,))
        db.commit()
        db.close()
        st.record_metrics("db", {"oldest_xact_seconds": 2.0}, T0 + 15)
        st.query("SELECT count(*) FROM cycles")  # a read: the BEGIN
    st.flush()
    assert committed(path, SEEN) == [(T0,)]
    assert [v for _, v in committed(path, POINTS)] == [1.0]
    tr = st.update("db", [f], T0 + 30)  # the resolved row is read back: fired anew
    assert [r.first_seen for r in tr.fired] == [T0 + 30]


def test_opening_a_current_state_commits_nothing(st: State, path: Path) -> None:
    """A reader (`dbwatch status`) opening the file writes nothing: the daemon's copies stay
    valid and a lazy transaction that needs its BEGIN afterwards is not failed."""
    f, g = finding("pid 7"), finding("pid 8")
    idle_cycle(st, f, T0, 1.0)
    with st.transaction(durable=False):
        st.update("db", [f], T0 + 15)  # from the copies, deferred
        State(path).close()  # a reader opens the file
        st.update("db", [f, g], T0 + 15)  # a transition: the BEGIN
    assert committed(path, "SELECT subject FROM findings ORDER BY subject") == [
        ("pid 7",), ("pid 8",)]


def test_opening_a_current_state_takes_no_write_lock(st: State, path: Path) -> None:
    """`dbwatch status` opens the file while another connection holds the write lock (the
    group's commit, another process): it reads at once instead of waiting for the lock."""
    idle_cycle(st, finding(), T0, 1.0)
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("BEGIN IMMEDIATE")
        began = time.monotonic()
        reader = State(path)
        try:
            assert [c["started"] for c in reader.cycles()] == [T0]
        finally:
            reader.close()
        assert time.monotonic() - began < 5
    finally:
        db.execute("ROLLBACK")
        db.close()


def routed_cycle(st: State, f: Finding, now: float, value: float) -> None:
    """An idle cycle as the daemon makes it with a receiver configured: the findings, the
    routing of what fires (dispatch.apply_findings), the bookkeeping; one transaction."""
    from dbwatch.alerts.router import Policy, route
    from dbwatch.config import AlertConfig

    policy = Policy.of(AlertConfig(kind="webhook", url="http://127.0.0.1:9/x", name="hook"))
    with st.transaction(durable=False):
        tr = st.update("db", [f], now)
        route(st, "db", [policy], now, 15.0, firing=tr.firing)
        st.record_metrics("db", {"oldest_xact_seconds": value}, now)
        st.record_cycle("db", now, 0.01, "ok", None, 1, 0.0)


def test_an_idle_cycle_with_a_receiver_waits_for_the_group(st: State, path: Path) -> None:
    """Routing reads what each receiver was sent: from the state's copy, so an idle cycle
    with receivers sends no BEGIN either (it read alerts_sent every cycle, and that read
    committed the group at every cycle)."""
    f = finding()
    routed_cycle(st, f, T0, 1.0)  # fires: the alert is queued and the cycle committed at once
    assert committed(path, "SELECT receiver, status FROM alerts_sent") == [("hook", "firing")]
    assert len(committed(path, "SELECT id FROM outbox")) == 1
    routed_cycle(st, f, T0 + 15, 2.0)  # nothing to send (repeat_interval): deferred
    routed_cycle(st, f, T0 + 30, 3.0)
    assert committed(path, POINTS) == [(T0, 1.0)] and committed(path, CYCLE) == [(T0,)]
    st.flush()
    assert committed(path, POINTS) == [(T0, 1.0), (T0 + 15, 2.0), (T0 + 30, 3.0)]
    assert committed(path, "SELECT receiver, status, last_sent FROM alerts_sent") == [
        ("hook", "firing", T0)]
    assert len(committed(path, "SELECT id FROM outbox")) == 1
