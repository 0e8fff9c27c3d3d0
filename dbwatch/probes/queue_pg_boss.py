"""pg-boss 10/11: the active and failed jobs read in one pass, cut into bounded slices.

These versions have no index holding active or failed jobs (docs/queues.md), so QU002's
reserved rows, QU004's failed rows and QU003's active share were three scans of every row.
The sweep reads the table once (queue_pg_boss_sweep.sql) and serves the three:

- PostgreSQL 14+: the pass is cut into consecutive page ranges (`ctid >= '(a,0)' AND ctid <
  '(b,0)'`, a TID Range Scan of every partition), the boundaries placed so that each statement
  reads about SLICE_PAGES pages summed over the partitions (`pg_relation_size` of each leaf);
  the last slice has no upper page, so pages added since the sizes were read are read too.
  The slices run in one REPEATABLE READ READ ONLY transaction: every slice sees one snapshot,
  so a job whose row moves to another page between two slices (pg-boss's updates are never HOT:
  `state` is in job_i5's predicate) is counted once, never missed nor counted twice; the
  snapshot is held for the sweep's length, what one scan of the table held before.
- Before 14 (no TID Range Scan: a ctid range would read every page anyway), or when the
  table fits one slice: one statement over the whole table, no transaction (for a small table
  the round trips of before: the sizes and the sweep where reserved and failed were).

Each slice returns its groups; they are merged here into the three aspects' rows, the same
rows the three queries returned for the same data (see merge()). A slice that fails (timeout,
refused) or a sweep stopped by the cycle's deadline raises ProbeError: the table's QU002-QU004
are then unknown (an error), never "no stuck job". What was read goes to the table's `read`."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from itertools import pairwise
from typing import Any

from ..errors import DbwatchError, ProbeError
from ..snapshot.values import as_row, opt_int, to_int, to_str
from ..targets import Connection
from ..targets.quoting import pg_ident_text

BUDGET = 3.0  # seconds: queue.BUDGET, the cycle's queue-table budget; past it, an error
SLICE_PAGES = 4096  # pages (32 MB of 8 kB) read per statement: ~20-30 ms at 1 M rows on 2 cores
TID_RANGE = 140000  # PostgreSQL 14: TID Range Scan
LAST_PAGE = 4294967295  # past any block number: the last slice reads to the end
SWEPT = frozenset({"reserved", "failed"})  # aspects the sweep replaces (repeated: its share)
SIZES = (
    "SELECT pg_relation_size(t.relid) / current_setting('block_size')::bigint AS pages "
    "FROM pg_partition_tree(%(table)s::regclass) t WHERE t.isleaf"
)
log = logging.getLogger(__name__)
SLICE = "ctid >= %(lo)s::tid AND ctid < %(hi)s::tid"


def applies(t: Any) -> bool:
    """Whether the table is read by the sweep (pg-boss without an index on active jobs)."""
    return bool(t.kind == "pg_boss" and dict(t.fragments).get("sweep") == "true")


def boundaries(pages: Sequence[int], budget: int) -> list[int]:
    """Page numbers cutting the partitions' pages into slices of about `budget` pages each,
    counted over every partition (a range [a, b) reads min(b, P) - min(a, P) pages of a
    partition of P pages); the first is 0, the last the largest partition's size."""
    top = max(pages, default=0)
    total = sum(pages)
    if top == 0:
        return [0, 0]
    count = max(1, -(-total // max(budget, 1)))
    out = [0]
    for j in range(1, count):
        want = total * j // count
        lo, hi = out[-1], top  # the least x with sum(min(x, P)) >= want
        while lo < hi:
            mid = (lo + hi) // 2
            if sum(min(mid, p) for p in pages) >= want:
                hi = mid
            else:
                lo = mid + 1
        if lo > out[-1]:
            out.append(lo)
    out.append(top)
    return out


def _rows(value: object) -> list[dict[str, object]]:
    return [dict(r) for r in value if isinstance(r, Mapping)] if isinstance(value, list) else []


def merge(
    slices: Iterable[Mapping[str, object]],
    waiting_repeated: list[dict[str, object]],
    window: int,
    groups: int,
) -> tuple[dict[str, list[dict[str, object]]], bool]:
    """The slices' groups as the three queries' rows, and whether a slice's groups stopped at
    `groups` (then the smaller merged groups may be missing or low; said in `read`).
    - reserved: groups summed by (queue, age, expiry), the oldest first, cut at `window` jobs
      (the query's oldest `window` active jobs) and `groups` groups;
    - failed: groups summed by (queue, head), the largest `groups`; each slice read its newest
      failed_window failures, so past that many in the horizon the counts cover more than one
      window (QU004 flags them as lower bounds either way);
    - repeated: the active jobs on a later try added to the waiting window's rows (the query
      read every active job in one scan), the largest `groups`."""
    reserved: dict[tuple[str, int, int | None], int] = {}
    failed: dict[tuple[str, str, str], dict[str, object]] = {}
    active: dict[tuple[str, int], int] = {}
    capped = False
    for part in slices:
        got = {k: _rows(part.get(k)) for k in ("reserved", "failed", "repeated")}
        capped = capped or any(len(v) >= groups for v in got.values())
        for r in got["reserved"]:
            key = (
                to_str(r.get("queue")),
                to_int(r.get("reserved_seconds")),
                opt_int(r.get("expires_after")),
            )
            reserved[key] = reserved.get(key, 0) + to_int(r.get("n"))
        for r in got["repeated"]:
            akey = (to_str(r.get("queue")), to_int(r.get("attempts")))
            active[akey] = active.get(akey, 0) + to_int(r.get("n"))
        for r in got["failed"]:
            fkey = (to_str(r.get("queue")), to_str(r.get("head")), to_str(r.get("job_class")))
            g = failed.get(fkey)
            if g is None:
                failed[fkey] = dict(r)
                continue
            for col in ("n", "n_1h", "n_6h", "n_24h", "n_3d", "n_7d"):
                g[col] = to_int(g.get(col)) + to_int(r.get(col))
            if to_int(r.get("latest_seconds_ago")) < to_int(g.get("latest_seconds_ago")):
                g["latest"], g["latest_seconds_ago"] = r.get("latest"), r.get("latest_seconds_ago")
    out_reserved: list[dict[str, object]] = []
    left = window
    for (queue, age, expiry), n in sorted(reserved.items(), key=lambda kv: -kv[0][1]):
        if left <= 0 or len(out_reserved) >= groups:
            break
        out_reserved.append(
            {
                "queue": queue,
                "reserved_seconds": age,
                "n": min(n, left),
                "expires_after": expiry,
                "heartbeat": False,
            }
        )
        left -= n
    repeated = {
        (to_str(r.get("queue")), to_int(r.get("attempts"))): dict(r) for r in waiting_repeated
    }
    for (queue, attempts), n in active.items():
        row = repeated.setdefault(
            (queue, attempts),
            {
                "queue": queue,
                "attempts": attempts,
                "job_class": queue[:255],
                "timeout_head": None,
                "n": 0,
            },
        )
        row["n"] = to_int(row.get("n")) + n
    return {
        "reserved": out_reserved,
        "failed": sorted(failed.values(), key=lambda g: -to_int(g.get("n")))[:groups],
        "repeated": sorted(repeated.values(), key=lambda g: -to_int(g.get("n")))[:groups],
    }, capped


def sweep(
    conn: Connection,
    t: Any,
    render: Callable[[Any], str],
    params: Mapping[str, object],
    waiting_repeated: list[dict[str, object]],
    budget: float | None = None,
    slice_pages: int | None = None,
    snapshot: bool = True,
) -> dict[str, object]:
    """The three aspects' rows and `read` (what was read), from one pass over the table.
    `render` composes the sweep's SQL for a table (its fragments: the slice set here); past
    `budget` seconds (BUDGET) the sweep stops between slices: a ProbeError, never a partial
    answer. `slice_pages`: SLICE_PAGES. `snapshot=False` runs the slices outside a transaction:
    only for the test showing that a job moved between slices is then counted twice."""
    args = dict(params)
    deadline = time.monotonic() + (BUDGET if budget is None else budget)
    slice_pages = slice_pages or SLICE_PAGES
    window, groups = to_int(args["window"]), to_int(args["groups"])
    if conn.version_num < TID_RANGE:
        merged, capped = merge([_whole(conn, t, render, args)], waiting_repeated, window, groups)
        return {**merged, "read": _read("one scan of every row and partition", None, 1, capped)}
    # the sizes before any snapshot: the last slice reads to the end, whatever was added since
    sizes = conn.rows(SIZES, {"table": pg_ident_text(t.schema, t.table)})
    pages = [to_int(as_row(r).get("pages")) for r in sizes]
    cuts = boundaries(pages, slice_pages)
    if len(cuts) <= 2:  # one slice: one statement, no transaction (the round trips of before)
        merged, capped = merge([_whole(conn, t, render, args)], waiting_repeated, window, groups)
        how = f"one scan of every row and partition ({sum(pages)} pages: one slice)"
        return {**merged, "read": _read(how, sum(pages), 1, capped)}
    ranged = render(_with(t, "slice", SLICE))
    if snapshot:
        conn.rows("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
    try:
        parts = []
        for i, (a, b) in enumerate(pairwise(cuts)):
            if i and time.monotonic() > deadline:
                raise ProbeError(
                    "query",
                    f"pg-boss active/failed pass stopped after {i} of {len(cuts) - 1} page "
                    "slices (the cycle's time budget): stuck and failed jobs not known",
                )
            hi = LAST_PAGE if i == len(cuts) - 2 else b
            got = conn.rows(ranged, args | {"lo": f"({a},0)", "hi": f"({hi},0)"})
            parts.append(as_row(got[0]) if got else {})
        if snapshot:
            conn.rows("COMMIT")
    except BaseException:
        if snapshot:
            _rollback(conn)
        raise
    merged, capped = merge(parts, waiting_repeated, window, groups)
    how = f"one pass in {len(parts)} page slices of about {slice_pages} pages, " + (
        "one REPEATABLE READ snapshot" if snapshot else "no common snapshot"
    )
    return {**merged, "read": _read(how, sum(pages), len(parts), capped)}


def _whole(
    conn: Connection, t: Any, render: Callable[[Any], str], args: Mapping[str, object]
) -> Mapping[str, object]:
    """The sweep's statement over the whole table (no slice): one statement, one snapshot."""
    rows = conn.rows(render(_with(t, "slice", "true")), args)
    return as_row(rows[0]) if rows else {}


def _read(how: str, pages: int | None, slices: int, capped: bool) -> dict[str, str]:
    out = {
        "active_failed_read": how,
        "active_failed_slices": str(slices),
        "active_failed_counts": "exact: every row of every partition read",
    }
    if pages is not None:
        out["active_failed_pages"] = str(pages)
    if capped:
        out["active_failed_counts"] = (
            "a slice's groups stopped at the groups cap: the smaller groups may be low or missing"
        )
    return out


def _rollback(conn: Connection) -> None:
    try:
        conn.rows("ROLLBACK")
    except DbwatchError as exc:  # the connection is gone: no transaction is left open
        log.debug("rollback after the pg-boss sweep: %s", exc)


def _with(t: Any, key: str, value: str) -> Any:
    """The table with one more SQL fragment (composed in one pass with its names)."""
    return replace(t, fragments=(*t.fragments, (key, value)))
