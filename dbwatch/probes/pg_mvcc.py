"""PostgreSQL MVCC probes: who holds the xmin horizon (instance-wide, plus standby/primary
peers), dead tuples per table (each configured database), and deadlock counters.

Extra sessions (other databases, a standby's primary) are opened one at a time and closed.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache, partial
from typing import Any, TypeVar

from ..config import Config, TargetConfig
from ..errors import ProbeError, TargetError
from ..frozen import frozen
from ..queues import QUEUE_NAME_PATTERN, QUEUE_TABLE_NAMES
from ..snapshot import CoverageGap
from ..snapshot.memo import per_read
from ..snapshot.pg import (
    PgHorizon,
    PgInstance,
    PgPeer,
    PgPrepared,
    PgReplication,
    PgSlot,
    horizon_backends,
)
from ..snapshot.sections import FromRow
from ..snapshot.values import as_row, opt_str, to_str
from ..targets import Connection, TargetSpec, open_target, spec_from_config
from ..targets.quoting import pg_text_array
from ..targets.version import ServerVersion
from .grants import MONITOR_GRANT
from .postgresql import session_rows
from .registry import probe
from .results import Covered, PartialResult, jsonable
from .share import marker_pending, marker_read_along, per_server, pg_marker_of
from .sqlfiles import sql

R = TypeVar("R", bound=FromRow)

log = logging.getLogger(__name__)
HOLDER_LIMIT = 50
STANDBY_BACKENDS = 10  # a standby peer's oldest snapshots, for naming its feedback
DEAD_LIMIT = 100
DEAD_MIN = 1
MAX_DATABASES = 50
# What a queue table is lives in the queue registry (dbwatch/queues): library table names,
# plus job(s)/queue(s) as a word of the name (solid_queue_ready_executions, que_jobs_2024).
QUEUE_NAMES = sorted(QUEUE_TABLE_NAMES)
# the same names as one array literal (bound as text, cast by the query): a Python list was
# dumped element by element on every cycle (7 % of a fleet cycle's CPU)
QUEUE_NAMES_ARRAY = pg_text_array(QUEUE_NAMES)
QUEUE_PATTERN = QUEUE_NAME_PATTERN


# pg_stat_database rows read per server (one small row per database)
DEADLOCK_DATABASES = 10000


def _rows(
    conn: Connection, name: str, params: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    return [jsonable(r) for r in conn.rows(sql("postgresql", name, conn.version), params)]


def _targets(config: object) -> tuple[TargetConfig, ...]:
    """The configured targets (the daemon and audit pass a Config; tests may pass None)."""
    return config.targets if isinstance(config, Config) else ()


@frozen
class _Index:
    """A config's targets by name and by the primary they name (held with the config: a
    fleet of 2,000 targets is not walked twice per target and cycle)."""

    config: object
    by_name: dict[str, TargetConfig]
    standbys: dict[str, tuple[TargetConfig, ...]]
    # (target, connected database) -> databases_for's answer, for targets not reading "all
    # databases" (those list them each pass): a function of the config and the session
    databases: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]]


_INDEX: list[_Index] = []


def _index(config: object) -> _Index:
    last = _INDEX[-1] if _INDEX else None
    if last is not None and last.config is config:
        return last
    by_name: dict[str, TargetConfig] = {}
    standbys: dict[str, list[TargetConfig]] = {}
    for t in _targets(config):
        by_name.setdefault(t.name, t)
        if t.primary:
            standbys.setdefault(t.primary, []).append(t)
    made = _Index(config, by_name, {k: tuple(v) for k, v in standbys.items()}, {})
    _INDEX[:] = [made]
    return made


def _target_config(config: object, name: str) -> TargetConfig | None:
    return _index(config).by_name.get(name)


@contextmanager
def _session(spec: TargetSpec, database: str | None = None) -> Iterator[Connection]:
    conn = open_target(spec, database)
    try:
        yield conn
    finally:
        conn.close()


def _horizon_rows(conn: Connection, name: str, cls: type[R]) -> tuple[R, ...]:
    rows = conn.rows(sql("postgresql", name, conn.version), {"limit": HOLDER_LIMIT})
    return tuple(cls.from_row(as_row(r)) for r in rows)


def _instance(conn: Connection) -> PgInstance:
    row = dict(as_row(conn.rows(sql("postgresql", "horizon_instance", conn.version))[0]))
    row["application_name"] = receiver_app_name(
        opt_str(row.get("receiver_conninfo")), opt_str(row.get("cluster_name"))
    )
    return PgInstance.from_row(row)


def receiver_app_name(conninfo: str | None, cluster_name: str | None) -> str:
    """The application_name a standby's WAL receiver shows in the primary's pg_stat_replication."""
    for key in ("application_name", "fallback_application_name"):
        m = re.search(rf"(?:^|\s){key}=('(?:[^'\\]|\\.)*'|\S+)", conninfo or "")
        if m:
            return m.group(1).strip("'")
    return cluster_name or "walreceiver"


def _standby_view(conn: Connection, target: str) -> PgPeer:
    """What a standby tells about itself: its WAL receiver and its oldest snapshots (its
    sessions through the same sessions.sql and the same horizon model as the primary's)."""
    oldest = horizon_backends(session_rows(conn), STANDBY_BACKENDS)
    return PgPeer(target, instance=_instance(conn), backends=oldest)


def _primary_view(conn: Connection, target: str) -> PgPeer:
    return PgPeer(
        target,
        replication=_horizon_rows(conn, "horizon_replication", PgReplication),
        slots=_horizon_rows(conn, "horizon_slots", PgSlot),
    )


def _peer(config: object, name: str, fetch: Callable[[Connection, str], PgPeer]) -> PgPeer:
    """One configured peer target, read through one short session; errors are data."""
    tc = _target_config(config, name)
    if tc is None:
        return PgPeer(name, error=f"no configured target named {name!r}")
    try:
        with _session(spec_from_config(tc)) as peer:
            return fetch(peer, name)
    except (TargetError, ProbeError) as exc:
        return PgPeer(name, error=str(exc))


@frozen
class _Local:
    """The server's own horizon holders but the backends: the same for every target of it."""

    instance: PgInstance
    prepared: tuple[PgPrepared, ...]
    slots: tuple[PgSlot, ...]
    replication: tuple[PgReplication, ...]


def _local(conn: Connection) -> _Local:
    return _Local(
        _instance(conn),
        _horizon_rows(conn, "horizon_prepared", PgPrepared),
        _horizon_rows(conn, "horizon_slots", PgSlot),
        _horizon_rows(conn, "horizon_replication", PgReplication),
    )


@probe("pg.horizon", "postgresql", grant=MONITOR_GRANT, with_config=True)
def horizon(conn: Connection, config: object = None) -> PgHorizon:
    """Every kind of horizon holder but the backends (the horizon is per instance): the
    backends are the pg.sessions rows, read once per cycle. The instance's own holders are
    read once per server by the daemon (per_server); the peers are this target's own."""
    local = per_server("pg.horizon:local", _local, conn)
    if not isinstance(local, _Local):  # per_server returns what _local returned
        raise TypeError("pg.horizon: shared read of another type")
    database = opt_str(getattr(conn, "database", None))
    me = _target_config(config, conn.spec.name)
    in_recovery = local.instance.in_recovery
    primary_name = me.primary if in_recovery and me is not None else None
    peers = () if in_recovery else _index(config).standbys.get(conn.spec.name, ())
    if not primary_name and not peers:
        # no peer of its own: a function of the shared read and the database alone, the
        # same object for every cycle of that read (PG201's memo compares it by identity)
        return per_read(local, ("pg.horizon", database), partial(_horizon_of, local, database))
    primary, standbys = None, []
    if primary_name:
        primary = _peer(config, primary_name, _primary_view)
    for peer in peers:
        standbys.append(_peer(config, peer.name, _standby_view))
    return _horizon_of(local, database, primary, tuple(standbys))


def _horizon_of(
    local: _Local,
    database: str | None,
    primary: PgPeer | None = None,
    standbys: tuple[PgPeer, ...] = (),
) -> PgHorizon:
    inst = dataclasses.replace(local.instance, database=database)
    return PgHorizon(
        instance=inst,
        prepared=local.prepared,
        slots=local.slots,
        replication=local.replication,
        primary=primary,
        standbys=standbys,
    )


def databases_for(
    conn: Connection, config: Config | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The connected database first, then those the target's config names (or all, with
    all_databases / --all-databases); and the ones past MAX_DATABASES (DW002 gaps). Without
    all_databases, kept with the config (the same answer every pass)."""
    current = opt_str(getattr(conn, "database", None)) or ""
    spec = conn.spec
    index = _index(config)
    key = (spec.name, current)
    hit = None if spec.all_databases else index.databases.get(key)
    if hit is not None:
        return hit
    tc = index.by_name.get(spec.name)
    names: list[str] = []
    listed = spec.all_databases or (tc is not None and tc.all_databases)
    if listed:
        rows = _rows(conn, "connectable_databases", {"limit": MAX_DATABASES + 50})
        names = [to_str(r.get("database")) for r in rows]
    elif tc is not None:
        names = list(tc.databases)
    others = tuple(n for n in dict.fromkeys(names) if n != current)
    out = (current, *others[:MAX_DATABASES]), others[MAX_DATABASES:]
    if not listed:
        if len(index.databases) > 65536:  # sessions of many databases come and go
            index.databases.clear()
        index.databases[key] = out
    return out


_DEAD_PARAMS = {
    "queue_names": QUEUE_NAMES_ARRAY,
    "queue_pattern": QUEUE_PATTERN,
    "min_dead": DEAD_MIN,
    "limit": DEAD_LIMIT,
}
# the catalog marker's columns in dead_tuples_with_marker's rows
_MARKER_COLUMNS = ("catalog_track_counts", "catalog_marker")


def dead_tuple_rows(conn: Connection) -> list[dict[str, object]]:
    return _rows(conn, "dead_tuples", _DEAD_PARAMS)


@cache
def _with_marker(dead: str, marker: str) -> str:
    """dead_tuples.sql and catalog_marker.sql as one statement: the marker's one row joined
    to every dead-tuple row, or alone (the dead-tuple columns NULL) when there is none. The
    marker's columns come last, so a dead-tuple row keeps its column order without them."""
    return (
        "-- Dead tuples and the catalog marker in one round trip (probes/pg_mvcc.py)\n"
        f"WITH catalog AS (\n{_code(marker)}\n), dead AS (\n{_code(dead)}\n)\n"
        "SELECT dead.*, catalog.track_counts AS catalog_track_counts,"
        " catalog.marker AS catalog_marker\n"
        "FROM catalog LEFT JOIN dead ON true\n"
        "ORDER BY dead.n_dead_tup DESC"
    )


def _inlined(text: str, params: dict[str, object]) -> str:
    """`text` with its %(name)s parameters written in as literals: the joined statement's
    parameters are dbwatch's own constants, and a statement sent without parameters skips
    the driver's adaptation of them at every execution. Strings are dollar-quoted (no
    escaping, whatever standard_conforming_strings says); ints as digits."""
    for name, value in params.items():
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise TypeError(f"{name}: not a constant to write in: {value!r}")
        if isinstance(value, str):
            if "$dbw$" in value:
                raise ValueError(f"{name}: holds the quote")
            literal = f"$dbw${value}$dbw$"
        else:
            literal = str(value)
        text = text.replace(f"%({name})s", literal)
    if "%(" in text:
        raise ValueError("a parameter left in the statement")
    return text


# the joined statement per server version object (the connection's, held): built once
_JOINED: dict[int, tuple[object, str]] = {}


def _joined(version: ServerVersion) -> str:
    hit = _JOINED.get(id(version))
    if hit is not None and hit[0] is version:
        return hit[1]
    text = _inlined(
        _with_marker(
            sql("postgresql", "dead_tuples", version),
            sql("postgresql", "catalog_marker", version),
        ),
        _DEAD_PARAMS,
    )
    if len(_JOINED) > 1024:  # sessions come and go
        _JOINED.clear()
    _JOINED[id(version)] = (version, text)
    return text


def _code(text: str) -> str:
    """The statement without its comment lines (the files explain it): psycopg parses a
    statement longer than 4,096 bytes again at every execution, not once."""
    return "\n".join(ln for ln in text.splitlines() if not ln.lstrip().startswith("--"))


def own_dead_tuple_rows(conn: Connection) -> list[dict[str, object]]:
    """dead_tuple_rows of the probing pass's own connection. In a daemon pass whose catalog
    marker is still to be read (the queue and statement probes read it every cycle), the
    marker comes in the same statement: an idle database's cycle makes one round trip, not
    two. If that statement fails, the dead tuples are read alone (and the marker then on its
    own, as before)."""
    if not marker_pending(conn):
        return dead_tuple_rows(conn)
    fixed = getattr(conn, "fixed_rows", None)  # a PostgreSQL session: around the cursor
    try:
        if fixed is None:
            rows = conn.rows(_joined(conn.version))
        else:
            names, got = fixed(_joined(conn.version))
            rows = _joined_rows(names, got)
    except ProbeError as exc:
        log.debug("dead tuples with the catalog marker: %s; read apart", exc.detail)
        return dead_tuple_rows(conn)
    first = rows[0] if rows else {}
    marker_read_along(pg_marker_of(first.get("catalog_track_counts"), first.get("catalog_marker")))
    out = []
    for r in rows:
        if r.get("table") is None:  # the marker's row alone: no table with dead tuples
            continue
        row = jsonable(r)
        for k in _MARKER_COLUMNS:
            del row[k]
        out.append(row)
    return out


def _joined_rows(names: tuple[str, ...], got: list[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """The joined statement's rows as rows() makes them; an idle database's one row (the
    marker's alone) as just its marker columns."""
    if len(got) == 1:
        idle = _IDLE_SHAPE.get(names)
        if idle is None:
            idle = _IDLE_SHAPE[names] = (
                names.index("table"),
                names.index("catalog_track_counts"),
                names.index("catalog_marker"),
            )
        row = got[0]
        if row[idle[0]] is None:
            return [{"catalog_track_counts": row[idle[1]], "catalog_marker": row[idle[2]]}]
    return [dict(zip(names, r, strict=True)) for r in got]


# the joined statement's columns -> where its table and marker columns are (one shape a
# server version)
_IDLE_SHAPE: dict[tuple[str, ...], tuple[int, int, int]] = {}


@probe("pg.dead_tuples", "postgresql", with_config=True)
def dead_tuples(conn: Connection, config: Config | None = None) -> object:
    """Per database (pg_stat_user_tables is per database): one bounded query each, sequentially."""
    tables = own_dead_tuple_rows(conn)
    dbs, past = databases_for(conn, config)
    gaps = [_capped(dbs[0], len(tables))]
    done, errors = [dbs[0]], list[str]()
    for name in dbs[1:]:
        try:
            with _session(conn.spec, name) as other:
                rows = dead_tuple_rows(other)
            tables += rows
            gaps.append(_capped(name, len(rows)))
            done.append(name)
        except (TargetError, ProbeError) as exc:
            errors.append(f"{name}: {exc}")
    gaps += [
        CoverageGap(
            "database",
            name,
            f"dead tuples not read: more than {MAX_DATABASES} databases on this target; "
            "audit it by its own URL",
        )
        for name in past
    ]
    data: object = {"databases": done, "tables": tables}
    if errors:
        data = PartialResult(
            data,
            "dead tuples not read in " + "; ".join(errors),
            "GRANT CONNECT ON DATABASE <db> TO <monitor_user>;",
        )
    real = tuple(g for g in gaps if g is not None)
    return Covered(data, real) if real else data


def _capped(database: str, rows: int) -> CoverageGap | None:
    """The dead-tuple query stops at DEAD_LIMIT tables: the rest of that database is a gap."""
    if rows < DEAD_LIMIT:
        return None
    return CoverageGap(
        "table_cap",
        f"{database}: tables past the {DEAD_LIMIT} with the most dead tuples",
        f"PG202 read the {DEAD_LIMIT} tables with the most dead tuples (queue tables first); "
        "tables with fewer were not examined",
    )


@probe("pg.deadlocks", "postgresql", server_wide=True)
def deadlocks(conn: Connection) -> object:
    rows = _rows(conn, "deadlocks", {"limit": DEADLOCK_DATABASES})
    if len(rows) < DEADLOCK_DATABASES:
        return rows
    gap = CoverageGap(
        "database",
        "pg.deadlocks",
        f"read the deadlock counters of the first {DEADLOCK_DATABASES} databases by name; "
        "the server has more and their counters were not examined",
    )
    return Covered(rows, (gap,))
