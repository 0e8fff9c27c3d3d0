"""State's in-memory copies (issue 28): the live findings and the series' newest points a
State wrote are not read back each cycle, and the rows stored are exactly those of a full
write. Whatever another connection commits, a rollback, a prune or a newly registered
secret is seen. Real SQLite files, two connections where another writer is needed."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dbwatch.daemon.state import State
from dbwatch.findings import Finding
from statehelpers import finding
from dbwatch.targets.secrets import register_secret

T0 = 1_800_000_000.0


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "state.db"


@pytest.fixture
def st(path: Path) -> Iterator[State]:
    s = State(path)
    yield s
    s.close()


def stored(path: Path, *writers: State) -> list[dict[str, Any]]:
    """The findings table as another connection reads it, once `writers` committed what
    they deferred (group commit: a cycle's relaxed writes wait up to a tick)."""
    for w in writers:
        w.flush()
    other = State(path)
    try:
        return [dict(r) for r in other.query("SELECT * FROM findings ORDER BY fingerprint")]
    finally:
        other.close()


def test_seen_again_writes_last_seen_and_the_same_row(st: State, path: Path) -> None:
    f = finding()
    st.update("db", [f], T0)
    first = stored(path, st)
    tr = st.update("db", [f], T0 + 15)
    rows = stored(path, st)
    assert rows[0]["last_seen"] == T0 + 15
    assert {k: v for k, v in rows[0].items() if k != "last_seen"} == {
        k: v for k, v in first[0].items() if k != "last_seen"}
    assert [(r.last_seen, r.data["summary"]) for r in tr.firing] == [(T0 + 15, "pid 7 is old")]
    assert tr.fired == [] and tr.resolved == []
    # a new Finding of the same fingerprint with other evidence: its data is written
    g = finding(evidence={"age": 2})
    st.update("db", [g], T0 + 30)
    assert '"age": 2' in stored(path, st)[0]["data"]
    # and the same object again after that: still that data, last_seen moved
    st.update("db", [g], T0 + 45)
    assert '"age": 2' in stored(path, st)[0]["data"] and stored(path, st)[0]["last_seen"] == T0 + 45


def test_rows_are_those_of_a_state_that_reads_everything_back(path: Path, tmp_path: Path) -> None:
    """The same cycles on a State that keeps its copies and on a fresh State per cycle (which
    reads every row back): the same tables."""
    other = tmp_path / "fresh.db"
    a, b = finding("pid 1"), finding("pid 2", severity="critical")
    cycles: list[tuple[float, list[Finding]]] = [
        (T0, [a]), (T0 + 15, [a, b]), (T0 + 30, [a, b]), (T0 + 45, [b]), (T0 + 60, [b]),
        (T0 + 75, [a, b]), (T0 + 90, []), (T0 + 105, [a]),
    ]
    kept = State(path)
    try:
        for now, found in cycles:
            kept.update("db", found, now, lambda rule: 20.0)  # pending for 20 s
            fresh = State(other)
            fresh.update("db", found, now, lambda rule: 20.0)
            fresh.close()
            assert stored(path, kept) == stored(other), now
    finally:
        kept.close()


def test_pending_turns_firing_for_the_same_object(st: State) -> None:
    f = finding()
    wait = lambda rule: 30.0  # noqa: E731
    assert st.update("db", [f], T0, wait).pending == 1
    tr = st.update("db", [f], T0 + 15, wait)
    assert (tr.pending, tr.fired, tr.firing) == (1, [], [])
    tr = st.update("db", [f], T0 + 30, wait)
    assert [r.fired_at for r in tr.fired] == [T0 + 30]
    assert [r.status for r in st.firing("db")] == ["firing"]


def test_another_connection_writing_is_seen(st: State, path: Path) -> None:
    """Another State (another process, a `dbwatch` command) resolves the finding: the next
    update of the same object fires it again, as a new row, not a last_seen on a resolved one."""
    f = finding()
    st.update("db", [f], T0)
    other = State(path)
    try:
        assert [r.subject for r in other.update("db", [], T0 + 10).resolved] == ["pid 7"]
    finally:
        other.close()
    tr = st.update("db", [f], T0 + 15)
    assert [r.first_seen for r in tr.fired] == [T0 + 15]
    assert [(r.status, r.first_seen) for r in st.firing("db")] == [("firing", T0 + 15)]


def test_a_rolled_back_update_is_forgotten(st: State, path: Path) -> None:
    """An update rolled back (the cycle's transaction failed after it): the copies hold what
    is committed, so the finding is still the one first seen, not fired again."""
    f = finding()
    st.update("db", [f], T0)
    with pytest.raises(RuntimeError), st.transaction():
        assert st.update("db", [], T0 + 15).resolved  # resolved, then rolled back
        raise RuntimeError("the bookkeeping failed")
    tr = st.update("db", [f], T0 + 30)
    assert tr.fired == [] and [r.first_seen for r in tr.firing] == [T0]
    assert [(r["status"], r["last_seen"]) for r in stored(path, st)] == [("firing", T0 + 30)]


def test_kept_and_resolved_rows_carry_their_data(st: State) -> None:
    a, b = finding("pid 1"), finding("pid 2")
    st.update("db", [a, b], T0)
    tr = st.update("db", [b], T0 + 15, keep_rules={"PG999"})
    assert [(r.subject, r.data["summary"]) for r in tr.resolved] == [("pid 1", "pid 1 is old")]
    c = Finding(rule="PG002", severity="warning", target="db", subject="pid 3", summary="idle",
                fix="", evidence={}, identity=["pid 3"])
    st.update("db", [b, c], T0 + 30)
    tr = st.update("db", [b], T0 + 45, keep_rules={"PG002"})  # PG002 could not run
    assert [(r.subject, r.data["summary"]) for r in tr.firing] == [
        ("pid 2", "pid 2 is old"), ("pid 3", "idle")]


def test_a_secret_registered_later_is_scrubbed_from_a_finding_seen_again(
    st: State, path: Path, own_secrets: None
) -> None:
    f = finding(evidence={"query": "SELECT 'Sw0rdf1shSecret'"})
    st.update("db", [f], T0)
    assert "Sw0rdf1shSecret" in stored(path, st)[0]["data"]
    register_secret("Sw0rdf1shSecret")
    st.update("db", [f], T0 + 15)
    assert "Sw0rdf1shSecret" not in stored(path, st)[0]["data"]


@pytest.fixture
def own_secrets() -> Iterator[None]:
    from dbwatch.targets import secrets

    saved = dict(secrets._patterns), dict(secrets._public)
    yield
    for live, old in zip((secrets._patterns, secrets._public), saved, strict=True):
        live.clear()
        live.update(old)  # type: ignore[attr-defined]
    secrets._generation[0] += 1


def test_last_point_follows_every_writer(st: State, path: Path) -> None:
    """last_point from memory gives what a read would: this State's writes, another
    connection's, a rollback, a prune."""
    import time

    now = time.time()
    assert st.last_point("db", "k", 3600) == []
    st.record_metrics("db", {"k": 1.0}, now - 30)
    assert st.last_point("db", "k", 3600) == [(now - 30, 1.0)]
    assert st.last_point("db", "k", 10) == []  # out of the window
    st.record_metrics("db", {"k": 2.0}, now - 40)  # older than the newest: not the newest
    assert st.last_point("db", "k", 3600) == [(now - 30, 1.0)]
    other = State(path)
    try:
        other.record_metrics("db", {"k": 3.0}, now - 20)
    finally:
        other.close()
    assert st.last_point("db", "k", 3600) == [(now - 20, 3.0)]
    with pytest.raises(RuntimeError), st.transaction():
        st.record_metrics("db", {"k": 4.0}, now - 10)
        assert st.last_point("db", "k", 3600) == [(now - 10, 4.0)]
        raise RuntimeError("rolled back")
    assert st.last_point("db", "k", 3600) == [(now - 20, 3.0)]
    st.retention = 15.0
    st.prune(now, every=0.0)  # deletes every point older than 15 s
    assert st.last_point("db", "k", 3600) == []
    st.record_metrics("db", {"k": 5.0}, now)
    assert st.last_point("db", "k", 3600) == [(now, 5.0)]
    # a key never asked for is not kept; a write to it is read back as before
    st.record_metrics("db", {"other": 6.0}, now)
    assert ("db", "other") not in st._newest
    assert st.last_point("db", "other", 3600) == [(now, 6.0)]


def test_sent_follows_every_writer(st: State, path: Path) -> None:
    """What each receiver was sent (routing reads it every cycle) is the state's copy: it is
    what a fresh read gives after this State's writes, another connection's, a rollback and a
    prune."""
    def fresh() -> dict[str, Any]:
        st.flush()
        other = State(path)
        try:
            return other.sent("db", "hook")
        finally:
            other.close()

    assert st.sent("db", "hook") == {} == fresh()
    st.mark_sent("hook", "fp1", "db", "firing", "warning", T0)  # a row the copy did not hold
    assert st.sent("db", "hook") == fresh() and st.sent("db", "hook")["fp1"].last_sent == T0
    kept = st.sent("db", "hook")
    st.mark_sent("hook", "fp1", "db", "firing", "critical", T0 + 15)  # a row it holds
    assert kept["fp1"].severity == "warning"  # a mapping handed out is never changed
    got = st.sent("db", "hook")
    assert got == fresh() and (got["fp1"].severity, got["fp1"].first_sent, got["fp1"].last_sent) == (
        "critical", T0, T0 + 15)
    other = State(path)  # another writer
    other.mark_sent("hook", "fp1", "db", "resolved", "critical", T0 + 30)
    other.close()
    assert st.sent("db", "hook")["fp1"].status == "resolved"
    with pytest.raises(RuntimeError):  # a rolled back write is forgotten
        with st.transaction():
            st.mark_sent("hook", "fp1", "db", "firing", "warning", T0 + 45)
            assert st.sent("db", "hook")["fp1"].status == "firing"
            raise RuntimeError
    assert st.sent("db", "hook") == fresh() and st.sent("db", "hook")["fp1"].status == "resolved"
    st.retention = 10.0  # prune deletes the resolved row
    st.prune(T0 + 100)
    assert st.sent("db", "hook") == {} == fresh()
    st.mark_sent("hook", "fp3", "other", "firing", "warning", T0 + 150)
    st.mark_sent("hook", "fp3", "db", "firing", "warning", T0 + 160)  # the row stays other's
    assert st.sent("db", "hook") == {} == fresh()
    st.mark_sent("hook", "fp2", "db", "firing", "warning", T0 + 200)
    assert list(st.sent("db", "hook")) == ["fp2"] and st.sent("db", "hook") == fresh()
    st.drop_receivers(["other"], T0 + 201)  # the receiver left the config
    assert st.sent("db", "hook") == {} == fresh()


def test_an_idle_update_says_and_stores_what_the_full_one_does(
    path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_secrets: None
) -> None:
    """The same Finding objects as the target's last update, every row firing: the update
    only moves last_seen (`_quiet_update`, no full pass); its transitions and the tables are
    those of a fresh State (which reads every row back) for every kind of cycle around it."""
    a, b = finding("pid 1"), finding("pid 2", severity="critical")
    a2 = finding("pid 1", severity="critical")  # a's fingerprint, a higher severity
    c = finding("pid 3", evidence={"query": "SELECT 'Sw0rdf1shSecret'"})
    no_wait, wait20 = (lambda rule: 0.0), (lambda rule: 20.0)
    cycles: list[tuple[list[Finding], Any, set[str], bool]] = [
        ([a, b], no_wait, set(), False),  # new
        ([a, b], no_wait, set(), True),  # idle
        ([a, b], wait20, {"PG001"}, True),  # idle whatever for_seconds and keep say
        ([b, a], no_wait, set(), False),  # another order: in full
        ([b, a], no_wait, set(), True),
        ([a, a2, b], no_wait, set(), False),  # a severity change by a duplicate
        ([a, a2, b], no_wait, set(), True),
        ([b], no_wait, {"PG001"}, False),  # a and a2's row kept: not idle after it
        ([b], no_wait, {"PG001"}, False),
        ([b], no_wait, set(), False),  # the kept row resolves
        ([b], no_wait, set(), True),
        ([b, c], wait20, set(), False),  # c pending: the next one is in full
        ([b, c], wait20, set(), False),
        ([b, c], wait20, set(), False),  # c fires (20 s)
        ([b, c], wait20, set(), True),
        ([b, c], wait20, set(), "secret"),  # a secret registered since: in full
        ([b, c], wait20, set(), True),
        ([], no_wait, set(), False),
    ]
    full = State._update
    calls: list[str] = []

    def counted(self: State, *args: Any) -> Any:
        calls.append(args[1])
        return full(self, *args)

    monkeypatch.setattr(State, "_update", counted)
    kept = State(path)
    try:
        for i, (found, wait, keep, idle) in enumerate(cycles):
            now = T0 + 15 * i
            if idle == "secret":
                register_secret("Sw0rdf1shSecret")
            calls.clear()
            got = kept.update("db", found, now, wait, keep_rules=keep)
            assert (calls == []) is (idle is True), i
            fresh = State(tmp_path / "fresh.db")
            want = fresh.update("db", found, now, wait, keep_rules=keep)
            fresh.close()
            assert (got.fired, got.resolved, got.pending, got.firing) == (
                want.fired, want.resolved, want.pending, want.firing), i
            assert stored(path, kept) == stored(tmp_path / "fresh.db"), i
    finally:
        kept.close()
