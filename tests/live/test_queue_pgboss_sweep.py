"""pg-boss 10/11's one pass over active and failed jobs (probes/queue_pg_boss.py) on a real
PostgreSQL database made for the test: a pg-boss 11-shaped `job` table (partitioned by queue,
a default partition, expire_seconds, job_i5) big enough for several page slices at a small
slice size; active and failed jobs placed in different slices and partitions; the merged rows
equal to what the three scans (reserved, failed, repeated's active share) return for the same
data; a job updated between two slices counted once in the snapshot (twice without it); a
sweep stopped by its budget an error, never "no stuck job"."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from itertools import pairwise
from typing import Any

import psycopg
import pytest

from dbwatch.errors import ProbeError
from dbwatch.probes import queue as q
from dbwatch.probes import queue_pg_boss as sweep_mod
from dbwatch.probes.sqlfiles import sql
from dbwatch.snapshot.values import to_int
from dbwatch.targets import open_target, spec_for
from dbwatch.targets.version import ServerVersion

V = ServerVersion.from_pg_num(170000)  # the pg-boss SQL files have no version variants
SLICE = 25  # pages per statement in these tests: ~190 pages, 8 slices

DDL = """
CREATE SCHEMA pgboss;
CREATE TYPE pgboss.job_state AS ENUM ('created', 'retry', 'active', 'completed', 'cancelled',
                                      'failed');
CREATE TABLE pgboss.job (
  id uuid NOT NULL DEFAULT gen_random_uuid(), name text NOT NULL,
  priority integer NOT NULL DEFAULT 0, data jsonb,
  state pgboss.job_state NOT NULL DEFAULT 'created',
  retry_limit integer NOT NULL DEFAULT 2, retry_count integer NOT NULL DEFAULT 0,
  retry_delay integer NOT NULL DEFAULT 0, retry_backoff boolean NOT NULL DEFAULT false,
  expire_seconds integer NOT NULL DEFAULT 900,
  start_after timestamptz NOT NULL DEFAULT now(), created_on timestamptz NOT NULL DEFAULT now(),
  started_on timestamptz, completed_on timestamptz,
  keep_until timestamptz NOT NULL DEFAULT now() + interval '14 days', output jsonb,
  singleton_key text, policy text, PRIMARY KEY (name, id)
) PARTITION BY LIST (name);
CREATE TABLE pgboss.job_common PARTITION OF pgboss.job DEFAULT;
CREATE TABLE pgboss.job_big PARTITION OF pgboss.job FOR VALUES IN ('big');
CREATE INDEX job_i5 ON pgboss.job (name, start_after) INCLUDE (priority, created_on, id)
  WHERE state < 'active';
"""

INSERT = (
    "INSERT INTO pgboss.job (name, state, retry_count, expire_seconds, start_after, started_on,"
    " completed_on, output) SELECT %s, %s::pgboss.job_state, %s, 60, now() - interval '3 hours',"
    " now() - make_interval(secs => %s), CASE WHEN %s::text IN ('completed', 'failed')"
    " THEN now() - interval '10 minutes' END, %s::jsonb FROM generate_series(1, %s)"
)
ERR = '{"message": "boom", "stack": "Error: boom\\n    at x"}'


def _put(c: psycopg.Connection[Any], queue: str, state: str, n: int, retry: int = 0,
         started_ago: int = 7200, output: str | None = None) -> None:
    c.execute(INSERT, (queue, state, retry, started_ago, state, output, n))


@pytest.fixture
def boss(own_pg_db: str) -> Iterator[tuple[str, str]]:
    """The database's URL and a DSN; rows in insertion order, so in page order."""
    dsn = f"host=127.0.0.1 port=5432 user=postgres dbname={own_pg_db}"
    with psycopg.connect(dsn, autocommit=True) as c:
        c.execute(DDL)
        _put(c, "big", "active", 30, started_ago=7200)  # the first pages: stuck (60 s expiry)
        _put(c, "big", "completed", 6000)
        _put(c, "big", "failed", 40, retry=2, output=ERR)  # the middle pages
        _put(c, "big", "completed", 6000)
        _put(c, "big", "active", 20, retry=1, started_ago=10)  # the last pages: fresh, on a retry
        _put(c, "small", "active", 5, retry=3, started_ago=300)
        _put(c, "small", "failed", 7, retry=2, output='{"message": "small boom"}')
        _put(c, "small", "created", 12)
    yield f"postgresql://postgres@127.0.0.1:5432/{own_pg_db}", dsn


def _table(conn: Any) -> Any:
    (t,) = [x for x in q.discover(conn, "postgresql") if x.kind == "pg_boss"]
    return t


def _params() -> dict[str, object]:
    return {"window": q.WINDOW, "groups": q.GROUPS, "horizon": q.HORIZON,
            "lookups": q.LOOKUPS, "failed_window": q.FAILED_WINDOW}


def _render(t: Any) -> str:
    return q._render(sql("postgresql", "queue_pg_boss_sweep", V), "postgresql", t)


def _scans(conn: Any, t: Any) -> dict[str, list[dict[str, object]]]:
    """The three scans of the code before the sweep: reserved, failed, repeated with its
    active share read by the repeated query itself."""
    out = {}
    for aspect in ("reserved", "failed", "repeated"):
        table = replace(t, fragments=(*t.fragments, ("active_scan", "true")))
        text = q._render(sql("postgresql", f"queue_pg_boss_{aspect}", V), "postgresql", table)
        params = _params() | {"window": q.FAILED_WINDOW if aspect == "failed" else q.WINDOW}
        out[aspect] = [q.jsonable(r) for r in conn.rows(text, params)]
    return out


def _norm(rows: object) -> list[tuple[Any, ...]]:
    assert isinstance(rows, list)
    return sorted(tuple(sorted((k, str(v)) for k, v in r.items())) for r in rows)


def test_boundaries_cut_the_pages_of_every_partition() -> None:
    pages = [1000, 10, 10, 0]
    cuts = sweep_mod.boundaries(pages, 300)
    assert cuts[0] == 0 and cuts[-1] == 1000 and cuts == sorted(set(cuts))
    reads = [sum(min(b, p) - min(a, p) for p in pages) for a, b in pairwise(cuts)]
    assert sum(reads) == sum(pages) and max(reads) <= 300 and len(reads) == 4
    assert sweep_mod.boundaries([0, 0], 300) == [0, 0]
    assert sweep_mod.boundaries([50], 300) == [0, 50]


def test_sweep_in_slices_returns_what_the_three_scans_return(boss: tuple[str, str]) -> None:
    url, _ = boss
    conn = open_target(spec_for(url))
    try:
        if conn.version_num < sweep_mod.TID_RANGE:
            pytest.skip("TID Range Scan needs PostgreSQL 14")
        t = _table(conn)
        assert sweep_mod.applies(t)
        before = _scans(conn, t)
        waiting = [q.jsonable(r) for r in conn.rows(q._render(
            sql("postgresql", "queue_pg_boss_repeated", V), "postgresql", t), _params())]
        got = sweep_mod.sweep(conn, t, _render, _params(), waiting, slice_pages=SLICE)
        read = got["read"]
        assert isinstance(read, dict) and int(read["active_failed_slices"]) >= 6
        assert read["active_failed_counts"].startswith("exact")
        # the sizes the slices were cut from are the partitions' pages
        assert int(read["active_failed_pages"]) == to_int(conn.rows(
            "SELECT sum(pg_relation_size(relid)) / 8192 AS p FROM pg_partition_tree('pgboss.job')"
        )[0]["p"])
        for aspect in ("reserved", "failed", "repeated"):
            assert _norm(got[aspect]) == _norm(before[aspect]), aspect
        # and what they hold, against the rows put in
        stuck = {(r["queue"], r["n"]) for r in got["reserved"] if r["reserved_seconds"] >= 60}
        assert stuck == {("big", 30), ("small", 5)}
        assert sum(r["n"] for r in got["reserved"]) == 55
        assert {(r["queue"], r["n"]) for r in got["failed"]} == {("big", 40), ("small", 7)}
        assert {(r["queue"], r["attempts"], r["n"]) for r in got["repeated"]} == {
            ("big", 2, 20), ("small", 4, 5)}
        assert conn.conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    finally:
        conn.close()


class _MoveBetweenSlices:
    """The probe's connection, with one job updated by another session right after the first
    slice was read: a worker's update of an active job from the first pages (its new version
    lands on the last page: no free space is known before it, no VACUUM ran)."""

    def __init__(self, conn: Any, dsn: str) -> None:
        self._conn, self._dsn, self._slices, self.moved_to = conn, dsn, 0, -1

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def rows(self, text: str, params: Any = None, limit: int | None = None) -> Any:
        out = self._conn.rows(text, params, limit)
        if "ctid >=" in text:
            self._slices += 1
            if self._slices == 1:
                with psycopg.connect(self._dsn, autocommit=True) as c:
                    row = c.execute(
                        "UPDATE pgboss.job SET data = '{\"progress\": 1}' WHERE id = (SELECT id"
                        " FROM pgboss.job_big WHERE state = 'active' ORDER BY ctid LIMIT 1)"
                        " RETURNING (ctid::text::point)[0]::int").fetchone()
                    assert row is not None
                    self.moved_to = int(row[0])
        return out


@pytest.mark.parametrize("snapshot", [True, False])
def test_a_job_updated_between_slices_is_counted_once_in_the_snapshot(
    boss: tuple[str, str], snapshot: bool
) -> None:
    url, dsn = boss
    conn = open_target(spec_for(url))
    try:
        if conn.version_num < sweep_mod.TID_RANGE:
            pytest.skip("TID Range Scan needs PostgreSQL 14")
        t = _table(conn)
        moving = _MoveBetweenSlices(conn, dsn)
        got = sweep_mod.sweep(moving, t, _render, _params(), [], slice_pages=SLICE,
                              snapshot=snapshot)
        slices = int(got["read"]["active_failed_slices"])  # type: ignore[index]
        pages = to_int(conn.rows("SELECT pg_relation_size('pgboss.job_big') / 8192 AS p")[0]["p"])
        assert moving.moved_to >= pages - 2 and slices >= 6  # the premise: first slice -> last
        active = sum(to_int(r["n"]) for r in got["reserved"])  # type: ignore[union-attr]
        # 55 active jobs: the moved one read in the first slice and, outside a snapshot, again
        # in the last one
        assert active == (55 if snapshot else 56)
    finally:
        conn.close()


def test_a_sweep_stopped_by_its_budget_is_an_error_not_an_answer(
    boss: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = boss
    monkeypatch.setattr(sweep_mod, "SLICE_PAGES", SLICE)
    monkeypatch.setattr(sweep_mod, "BUDGET", 0.0)
    conn = open_target(spec_for(url))
    try:
        if conn.version_num < sweep_mod.TID_RANGE:
            pytest.skip("TID Range Scan needs PostgreSQL 14")
        t = _table(conn)
        with pytest.raises(ProbeError, match="stopped after 1 of"):
            sweep_mod.sweep(conn, t, _render, _params(), [])
        assert conn.conn.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
        out = q.probe_table(conn, "postgresql", t)
        assert "stopped after 1 of" in str(out["error"])
        # and repeated, read before the sweep, lacks the active jobs: unknown, not low
        assert not {"reserved", "failed", "repeated"} & set(out) and out["summary"]
    finally:
        conn.close()
    data = q.collect(open_target(spec_for(url)))
    assert "QU001-QU004 unknown for pgboss.job" in str(getattr(data, "message", data))


class _Recorder:
    def __init__(self, conn: Any) -> None:
        self._conn, self.sent = conn, []  # type: list[str]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)

    def rows(self, text: str, params: Any = None, limit: int | None = None) -> Any:
        self.sent.append(text)
        return self._conn.rows(text, params, limit)


@pytest.mark.parametrize("mode", ["slices", "one_slice", "before_14"])
def test_probe_reads_pgboss_11_through_the_sweep(
    boss: tuple[str, str], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """The probe's own path: reserved, failed and repeated from the sweep, `read` said; a
    table within one slice (the default size) in one statement, no transaction; the path of
    servers before 14 (one statement), taken here by raising the version it needs."""
    url, _ = boss
    if mode == "slices":
        monkeypatch.setattr(sweep_mod, "SLICE_PAGES", SLICE)
    if mode == "before_14":
        monkeypatch.setattr(sweep_mod, "TID_RANGE", 10**9)
    conn = open_target(spec_for(url))
    try:
        t = _table(conn)
        before = _scans(conn, t)
        rec = _Recorder(conn)
        out = q.probe_table(rec, "postgresql", t)  # type: ignore[arg-type]
    finally:
        conn.close()
    assert out["error"] is None
    began = [x for x in rec.sent if x.startswith("BEGIN")]
    assert len(began) == (1 if mode == "slices" else 0)
    # before: summary, reserved, repeated, failed; now summary, repeated, [sizes], sweep(s)
    assert len(rec.sent) == {"slices": 5 + 8, "one_slice": 4, "before_14": 3}[mode]
    for aspect in ("reserved", "failed", "repeated"):
        assert _norm(out[aspect]) == _norm(before[aspect]), aspect
    read = out["read"]
    assert isinstance(read, dict)
    if mode == "before_14":
        assert "one scan" in str(read["active_failed_read"]) and "pages" not in str(read)
    elif mode == "one_slice":
        assert "one slice" in str(read["active_failed_read"])
        assert read["active_failed_slices"] == "1"
    else:
        assert "REPEATABLE READ" in str(read["active_failed_read"])
        assert int(str(read["active_failed_slices"])) >= 6
