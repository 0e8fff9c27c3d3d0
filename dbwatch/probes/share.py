"""What the daemon shares and keeps between probes: server-wide results read once per server
(single flight), per-target results of slow-changing probes, and catalog reads kept while the
database's DDL marker (catalog_marker.sql) stays the same."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import field
from typing import TypeVar, cast

from ..errors import ProbeError
from ..frozen import mutable
from ..targets import Connection

log = logging.getLogger(__name__)
T = TypeVar("T")


class SharedProbes:
    """Results of server-wide probes shared by the targets of one server (and user) for
    `ttl` seconds: 2,000 databases of one cluster read pg_stat_activity once, not 2,000 times.
    One caller runs a probe while the others wait for its result (single flight)."""

    def __init__(self, ttl: float) -> None:
        self.ttl = ttl
        self._lock = threading.Lock()
        self._items: dict[tuple[str, str], tuple[float, object]] = {}
        self._running: dict[tuple[str, str], threading.Event] = {}
        self.hits = 0
        self.runs = 0

    def get_or_run(self, key: str, name: str, run: Callable[..., object], *args: object) -> object:
        """The shared result of (key, name), or `run(*args)`'s (the arguments apart: a
        daemon cycle mostly hits, and makes no partial for a hit)."""
        k = (key, name)
        # a fresh result read without the lock (an entry is replaced whole, never changed):
        # most calls of a daemon cycle; `hits` may then miss a count under contention
        hit = self._items.get(k)
        if hit is not None and time.monotonic() - hit[0] <= self.ttl:
            self.hits += 1
            return hit[1]
        while True:
            with self._lock:
                hit = self._items.get(k)
                if hit is not None and time.monotonic() - hit[0] <= self.ttl:
                    self.hits += 1
                    return hit[1]
                busy = self._running.get(k)
                if busy is None:
                    self._running[k] = threading.Event()
                    break
            busy.wait(30.0)
        try:
            data = run(*args)  # a ProbeError propagates to this caller; the next one retries
            with self._lock:
                self._items[k] = (time.monotonic(), data)
                self.runs += 1
            return data
        finally:
            with self._lock:
                self._running.pop(k).set()


class ProbeCache:
    """Per-target results of slow-changing probes (catalog reads), kept by the daemon so a
    15 s cycle does not rescan information_schema on a server with thousands of tables."""

    def __init__(self) -> None:
        self._items: dict[str, tuple[float, object]] = {}
        # section -> (the probe's last data, marshalled; the section built from it): the
        # same data the next cycle (an idle database) is not built again (run_probes._build)
        self.built: dict[str, tuple[bytes, object]] = {}

    def get(self, name: str, ttl: float) -> object:
        hit = self._items.get(name)
        if hit is None or time.monotonic() - hit[0] > ttl:
            return None
        return hit[1]

    def put(self, name: str, data: object) -> None:
        self._items[name] = (time.monotonic(), data)


# The daemon's shared store and this target's server key while its probes run (set by
# run_probes): lets a probe read a server-wide part of its data once per server (per_server).
_SHARED: ContextVar[tuple[SharedProbes, str] | None] = ContextVar("dbwatch_shared", default=None)


# A catalog read cached by the daemon is re-read at least this often whatever the marker says
# (a marker that cannot see a change: statistics off, counters reset to the same values).
CATALOG_MAX_AGE = 300.0


@mutable
class _Cycle:
    """One target's probing pass: its connection and cache, and the catalog marker read at
    most once in it (None: not trusted, the catalog reads run every time)."""

    conn: Connection
    cache: ProbeCache | None
    marker: tuple[object, ...] | None = None
    read: bool = False
    # the sections this pass has read so far (probes run in name order), for a probe whose
    # read another one's rows can show to be empty (pg.txn_detail after pg.sessions)
    sections: dict[str, object] = field(default_factory=dict)


_CYCLE: ContextVar[_Cycle | None] = ContextVar("dbwatch_cycle", default=None)


def catalog_cached(name: str, read: Callable[[], T]) -> T:
    """`read()`'s last result while the target's catalog is unchanged (the daemon: the DDL
    marker of catalog_marker.sql, once per cycle; at most CATALOG_MAX_AGE old), a fresh
    `read()` otherwise and always outside the daemon. For what only DDL changes: which tables
    are queue tables and their columns, whether an extension is installed."""
    cyc = _CYCLE.get()
    if cyc is None or cyc.cache is None:
        return read()
    marker = _marker(cyc)
    if marker is None:
        return read()
    hit = cyc.cache.get(f"catalog:{name}", CATALOG_MAX_AGE)
    if isinstance(hit, tuple) and len(hit) == 2 and hit[0] == marker:
        return cast(T, hit[1])
    data = read()
    cyc.cache.put(f"catalog:{name}", (marker, data))
    return data


def _marker(cyc: _Cycle) -> tuple[object, ...] | None:
    if not cyc.read:
        cyc.read = True
        conn = cyc.conn
        try:
            if conn.engine == "postgresql":
                cyc.marker = _pg_marker(conn)
            else:  # server-wide counters: one read per server serves its targets
                got = per_server("catalog_marker", _my_marker, conn)
                cyc.marker = got if isinstance(got, tuple) else None
        except ProbeError as exc:  # not readable: no caching, the reads run every cycle
            log.debug("catalog marker of %s not read: %s", conn.spec.name, exc.detail)
            cyc.marker = None
    return cyc.marker


def _pg_marker(conn: Connection) -> tuple[object, ...] | None:
    from .sqlfiles import sql

    rows = conn.rows(sql("postgresql", "catalog_marker", conn.version))
    return pg_marker_of(rows[0].get("track_counts"), rows[0].get("marker")) if rows else None


def pg_marker_of(track_counts: object, marker: object) -> tuple[object, ...] | None:
    """The PostgreSQL marker from catalog_marker.sql's columns (None: not trusted)."""
    return ("pg", marker) if track_counts == "on" else None


def marker_pending(conn: Connection) -> bool:
    """A daemon pass on `conn` (PostgreSQL) whose catalog marker is not read yet: a probe
    about to send a statement on this connection anyway may read the marker in it (one round
    trip, not two: pg.dead_tuples) and hand it over with `marker_read_along`."""
    cyc = _CYCLE.get()
    return (
        cyc is not None
        and cyc.cache is not None
        and not cyc.read
        and cyc.conn is conn
        and conn.engine == "postgresql"
    )


def marker_read_along(marker: tuple[object, ...] | None) -> None:
    """This pass's catalog marker, read by a probe in its own statement (`pg_marker_of`):
    catalog_cached uses it instead of reading it again."""
    cyc = _CYCLE.get()
    if cyc is not None:
        cyc.read, cyc.marker = True, marker


def _my_marker(conn: Connection) -> tuple[object, ...] | None:
    from .sqlfiles import sql

    rows = conn.rows(sql("mysql", "catalog_marker", conn.version))
    got = sorted((str(r.get("name")).lower(), str(r.get("value"))) for r in rows)
    return ("my", *got) if got else None


def read_this_pass(name: str) -> object:
    """The section `name` as this probing pass (audit or daemon) has already read it: probes
    run ALWAYS first, then in name order. None outside a pass, before it ran, or failed."""
    cyc = _CYCLE.get()
    return None if cyc is None else cyc.sections.get(name)


def per_server(name: str, read: Callable[..., object], *args: object) -> object:
    """`read()` once per server and user per share interval in the daemon (single flight;
    the targets of that server get the same result), every time elsewhere (audit). For the
    server-wide part of a probe whose other part is the target's own (pg.horizon's peers)."""
    shared = _SHARED.get()
    if shared is None:
        return read(*args)
    store, key = shared
    return store.get_or_run(key, name, read, *args)


def shared_section(name: str) -> object:
    """In the daemon (server-wide reads shared), the section `name` as this cycle already read
    it; None elsewhere (audit), before it ran, or when it failed."""
    cyc = _CYCLE.get()
    if _SHARED.get() is None or cyc is None or cyc.cache is None:
        return None
    return cyc.sections.get(name)
