"""State DB: finding lifecycle with `for`, outbox order and coalescing, deadlocks, actions,
time series retention, and durability across a reopen."""
from __future__ import annotations

import json
import time
from contextlib import contextmanager
from pathlib import Path

from dbwatch.daemon.state import State
from dbwatch.findings import Finding


def f(rule: str = "PG002", subject: str = "pid 1", severity: str = "warning",
      target: str = "db", ident: object = None, age: str = "5s") -> Finding:
    return Finding(rule=rule, severity=severity, target=target, subject=subject,
                   summary=f"{subject} idle for {age}", fix="terminate it",
                   evidence={"age": age}, identity=ident if ident is not None else [subject, 1])


def test_fires_at_once_without_for(state_at: str) -> None:
    st = State(state_at)
    tr = st.update("db", [f()], now=100.0)
    assert [r.rule for r in tr.fired] == ["PG002"]
    assert st.firing("db")[0].fired_at == 100.0
    tr = st.update("db", [f(age="9s")], now=115.0)       # same identity, new duration
    assert tr.fired == [] and tr.resolved == []
    assert st.firing("db")[0].data["summary"] == "pid 1 idle for 9s"


def test_pending_until_for_then_resolved(state_at: str) -> None:
    st = State(state_at)
    wait = {"PG002": 30.0}.get
    tr = st.update("db", [f()], now=0.0, for_seconds=lambda r: wait(r) or 0.0)
    assert tr.pending == 1 and tr.fired == [] and st.firing() == []
    assert st.update("db", [f()], now=20.0, for_seconds=lambda r: 30.0).fired == []
    tr = st.update("db", [f()], now=31.0, for_seconds=lambda r: 30.0)
    assert [r.status for r in tr.fired] == ["firing"]
    row = st.firing("db")[0]
    assert (row.first_seen, row.fired_at) == (0.0, 31.0)
    tr = st.update("db", [], now=40.0)
    assert [r.rule for r in tr.resolved] == ["PG002"] and st.firing() == []
    assert st.finding(row.fingerprint).resolved_at == 40.0   # type: ignore[union-attr]


def test_pending_that_clears_never_fires(state_at: str) -> None:
    st = State(state_at)
    st.update("db", [f()], now=0.0, for_seconds=lambda r: 60.0)
    tr = st.update("db", [], now=10.0, for_seconds=lambda r: 60.0)
    assert tr.resolved == [] and st.pending() == [] and st.firing() == []


def test_unknown_rules_keep_their_findings(state_at: str) -> None:
    """A probe that failed this cycle must not make its findings look resolved."""
    st = State(state_at)
    st.update("db", [f(), f(rule="PG001")], now=0.0)
    tr = st.update("db", [], now=10.0, keep_rules={"PG002"})
    assert [r.rule for r in tr.resolved] == ["PG001"]
    assert [r.rule for r in st.firing("db")] == ["PG002"]


def test_targets_are_independent(state_at: str) -> None:
    st = State(state_at)
    st.update("a", [f(target="a")], now=0.0)
    st.update("b", [], now=1.0)
    assert [r.target for r in st.firing()] == ["a"]


def test_finding_round_trip(state_at: str) -> None:
    st = State(state_at)
    orig = f(ident=[42, "2024-01-01T00:00:00"])
    st.update("db", [orig], now=0.0)
    back = st.firing()[0].finding
    assert back.fingerprint == orig.fingerprint and back.summary == orig.summary


def test_outbox_order_and_coalescing(state_at: str) -> None:
    st = State(state_at)
    a = st.enqueue("hook", "fp1", "firing", {"n": 1})
    b = st.enqueue("hook", "fp1", "firing", {"n": 2})     # a repeat replaces the queued one
    assert a == b and st.outbox_head("hook")[0]["payload"] == {"n": 2}
    c = st.enqueue("hook", "fp1", "resolved", {"n": 3})
    d = st.enqueue("hook", "fp1", "firing", {"n": 4})     # fired again after resolve: kept apart
    assert len({a, c, d}) == 3
    assert [m["event"] for m in st.outbox_head("hook")] == ["firing", "resolved", "firing"]
    st.outbox_failed(a, "HTTP 500", time.time() + 5)
    assert st.outbox_head("hook")[0]["attempts"] == 1
    st.outbox_done(a)
    assert st.outbox_size() == {"hook": 2}


def test_outbox_survives_reopen(state_at: str) -> None:
    st = State(state_at)
    st.enqueue("hook", "fp", "firing", {"x": 1})
    st.close()
    again = State(state_at)
    assert again.outbox_size() == {"hook": 1}


def test_transaction_rolls_back_everything(state_at: str) -> None:
    st = State(state_at)
    try:
        with st.transaction():
            st.update("db", [f()], now=0.0)
            st.enqueue("hook", "fp", "firing", {})
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert st.firing() == [] and st.outbox_size() == {}


def test_deadlocks_dedupe(state_at: str) -> None:
    st = State(state_at)
    assert st.record_deadlock("my", "k1", "2024-05-01 10:00:00", {"victim": 1}) is True
    assert st.record_deadlock("my", "k1", "2024-05-01 10:00:00", {"victim": 1}) is False
    assert st.record_deadlock("my", "k2", "2024-05-01 10:01:00", json.dumps({"victim": 2}))
    assert st.record_deadlock("other", "k1", "x", "{}") is True
    got = st.deadlocks("my")
    assert [d["key"] for d in got] == ["k2", "k1"] and got[0]["data"] == {"victim": 2}
    assert len(st.deadlocks()) == 3 and len(st.deadlocks(limit=1)) == 1
    assert st.deadlock_count("my") == 2


def test_actions(state_at: str) -> None:
    st = State(state_at)
    st.record_action("db", "PG002", "fp", "pid 7", "terminated", {"pid": 7})
    st.record_action("db", "PG002", "fp2", "pid 8", "would_terminate", "{}")
    acts = st.actions("db")
    assert [a["action"] for a in acts] == ["would_terminate", "terminated"]
    assert acts[1]["detail"] == {"pid": 7}


def test_history_rate_and_retention(state_at: str) -> None:
    st = State(state_at, retention=3600)
    now = time.time()
    for i in range(5):
        st.record_metric("db", "dead_tuples:public.jobs", 1000 + 100 * i, now - 40 + 10 * i)
    st.record_metric("db", "dead_tuples:public.jobs", 1.0, now - 7200)   # beyond retention
    pts = st.history("db", "dead_tuples:public.jobs", 60)
    assert [v for _, v in pts] == [1000, 1100, 1200, 1300, 1400]
    assert abs((st.rate("db", "dead_tuples:public.jobs", 60) or 0) - 10.0) < 1e-6
    assert st.rate("db", "nothing", 60) is None
    st.prune(now)
    assert len(st.history("db", "dead_tuples:public.jobs", 86400)) == 5


def test_cycles(state_at: str) -> None:
    st = State(state_at)
    st.record_cycle("db", 10.0, 0.5, "ok", None, 2, 0.01)
    st.record_cycle("db", 25.0, 0.4, "unreachable", "cannot connect", 1, 0.02)
    assert [(c["target"], c["status"], c["error"]) for c in st.cycles()] == [
        ("db", "unreachable", "cannot connect")]


def test_commit_waits_for_the_disk_only_when_something_changed(state_at: str) -> None:
    """A cycle that sees its findings again commits without waiting for the disk; a
    transition, or an alert queued inside the same transaction, makes it wait (fsync)."""
    st = State(state_at)
    syncs: list[bool] = []  # per outermost transaction: did its commit wait for the disk
    transaction = st.transaction

    def recording(durable: bool = True):  # type: ignore[no-untyped-def]
        outer = st._depth == 0
        with transaction(durable) as db:
            yield db
        if outer:
            syncs.append(st._sync)

    st.transaction = contextmanager(recording)  # type: ignore[method-assign]
    wait = {"PG001": 30.0}
    later = lambda r: wait.get(r, 0.0)  # noqa: E731
    st.update("db", [f()], now=100.0)                        # new, firing
    st.update("db", [f(age="9s")], now=115.0)                # seen again, evidence moved
    st.update("db", [f(), f("PG001", "pid 2")], now=130.0, for_seconds=later)  # new, pending
    st.update("db", [f(), f("PG001", "pid 2")], now=145.0, for_seconds=later)  # still pending
    st.update("db", [f(), f("PG001", "pid 2")], now=161.0, for_seconds=later)  # pending -> firing
    st.update("db", [f(severity="critical"), f("PG001", "pid 2")], now=175.0)  # severity
    st.update("db", [f(severity="critical")], now=190.0)     # PG001 resolved
    with st.transaction(durable=False):                      # a quiet update, then an alert
        st.update("db", [f(severity="critical")], now=205.0)
        st.enqueue("ops", "fp", "firing", {"x": 1}, now=205.0)
    st.update("db", [f(severity="critical")], now=220.0)
    assert syncs == [True, False, True, False, True, True, True, True, False]
    assert [r.rule for r in st.firing("db")] == ["PG002"]
    assert st.firing("db")[0].last_seen == 220.0  # the relaxed commits are committed


def test_metrics_read_deadlocks_recorded_at_scrape_time(state_at: str) -> None:
    """dbwatch_deadlocks_seen comes from one count per scrape, not a read per cycle."""
    from dbwatch.daemon.metrics import DaemonCollector

    st = State(state_at)
    col = DaemonCollector()
    col.deadlock_source = st.deadlock_counts
    col.observe("my", up=True, duration=0.1, lateness=0.0, error=False, findings=[], values={})
    col.observe("pg", up=True, duration=0.1, lateness=0.0, error=False, findings=[], values={})

    def seen() -> dict[str, float]:
        (fam,) = [m for m in col.collect() if m.name == "dbwatch_deadlocks_seen"]
        return {s.labels["target"]: s.value for s in fam.samples}

    assert seen() == {"my": 0.0, "pg": 0.0}
    st.record_deadlock("my", "k1", "2024-01-01T00:00:00", {"x": 1})
    st.record_deadlock("my", "k2", "2024-01-01T00:00:01", {"x": 2})
    st.record_deadlock("other", "k3", "2024-01-01T00:00:02", {"x": 3})  # not observed here
    assert seen() == {"my": 2.0, "pg": 0.0}
    assert st.deadlock_counts() == {"my": 2, "other": 1}


def test_daemons_starting_at_once_on_a_new_postgresql_state(state_pg_db: str) -> None:
    """A fleet's daemons start together on a state no one created yet: each one opens it (the
    schema, then the tables) and none dies of the others doing the same at the same moment
    (CREATE SCHEMA IF NOT EXISTS alone raced: a unique violation on the catalog)."""
    import threading
    import uuid

    for _ in range(3):
        schema = f"s_{uuid.uuid4().hex[:8]}"
        start = threading.Barrier(6)
        errors: list[BaseException] = []
        opened: list[State] = []

        def open_state() -> None:
            start.wait()
            try:
                opened.append(State(state_pg_db, schema=schema))  # noqa: B023
            except BaseException as exc:  # noqa: BLE001
                errors.append(exc)

        threads = [threading.Thread(target=open_state) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        for st in opened:
            st.close()
        assert not errors, errors
        assert len(opened) == 6
