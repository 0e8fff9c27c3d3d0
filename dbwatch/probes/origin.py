"""What an open transaction did and who opened it: pg.txn_detail (the locks it holds, the
statements seen for it across daemon cycles) and my.txn_detail (connection attributes,
statement history, the transaction event). Bounded reads of the transactions at least
MIN_AGE old only, one query per source for all of them; what is off is said, with the fix.
"""

from __future__ import annotations

from collections import OrderedDict
from datetime import UTC, datetime
from types import ModuleType

from ..errors import ProbeError
from ..snapshot import CoverageGap
from ..snapshot.origin import MyTxnDetail, PgTxnDetail, PgTxnLock, PgTxnStatement
from ..snapshot.values import as_row, opt_datetime, opt_num, to_int, to_str
from ..targets import Connection
from .grants import MONITOR_GRANT
from .registry import probe
from .results import Covered
from .share import ProbeCache, read_this_pass
from .sqlfiles import sql
from .statements import PFS_GRANT, PFS_ON_FIX, consumers

MIN_AGE = 1.0  # seconds: younger transactions are no finding of any session rule's defaults
LOCK_ROWS = 3000  # pg: (backend, relation, mode) rows read per cycle
ATTR_ROWS = 3000  # my: connection attribute rows (≤ 6 per thread)
STATEMENT_ROWS = 5000  # my: history rows (10 per thread by default)
EVENT_ROWS = 1000  # my: transaction events (one per thread)
THREAD_ROWS = 1000  # my: threads whose detail is read
KEPT_PER_TXN = 16  # pg daemon memory: distinct statements kept per transaction
KEPT_TXNS = 1000  # pg daemon memory: transactions remembered
MEMORY = "pg.txn_detail#statements"  # the ProbeCache entry the daemon keeps between cycles
HISTORY_FIX = (
    "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME IN "
    "('global_instrumentation', 'thread_instrumentation', 'events_statements_current', "
    "'events_statements_history');  -- until restart; in my.cnf: "
    "`performance-schema-consumer-events-statements-history = ON`"
)
TRANSACTIONS_FIX = (
    "UPDATE performance_schema.setup_consumers SET ENABLED = 'YES' WHERE NAME = "
    "'events_transactions_current'; UPDATE performance_schema.setup_instruments SET "
    "ENABLED = 'YES', TIMED = 'YES' WHERE NAME = 'transaction';  -- in my.cnf: "
    "`performance-schema-consumer-events-transactions-current = ON` and "
    "`performance-schema-instrument = 'transaction=ON'`"
)
Key = tuple[int, datetime | None, datetime | None]  # pid, backend_start, xact_start
Memory = OrderedDict[Key, OrderedDict[str, list[str]]]


@probe("pg.txn_detail", "postgresql", grant=MONITOR_GRANT, with_cache=True)
def pg_txn_detail(conn: Connection, cache: ProbeCache | None = None) -> object:
    """One read of pg_locks (joined to pg_activity and pg_class) for every backend whose
    transaction is at least MIN_AGE old; with the daemon's cache, the statements seen for
    each transaction identity are remembered across cycles (first seen / last seen)."""
    if _none_open(conn):
        # no transaction open in the database: the empty result the query would give, and
        # the memory of every transaction forgotten (each ended), as the full path below does
        kept = cache.get(MEMORY, float("inf")) if cache is not None else None
        if isinstance(kept, OrderedDict):
            kept.clear()
        return _NONE_OPEN[cache is not None]
    params = {"min_age": MIN_AGE, "limit": LOCK_ROWS, "database": conn.spec.scoped_database}
    rows = [as_row(r) for r in conn.rows(sql("postgresql", "txn_locks", conn.version), params)]
    locks = tuple(PgTxnLock.from_row(r) for r in rows if r.get("locktype") is not None)
    now = datetime.now(UTC).isoformat(timespec="seconds")
    seen: dict[Key, str] = {}
    for r in rows:
        if r.get("locktype") is not None:
            continue  # a lock row; the backend's own row (kind 0) carries its identity
        key = (
            to_int(r.get("pid")),
            opt_datetime(r.get("backend_start")),
            opt_datetime(r.get("xact_start")),
        )
        seen.setdefault(key, to_str(r.get("query")))
    memory = _remember(cache, seen, now)
    statements = tuple(
        PgTxnStatement(
            pid=k[0],
            backend_start=k[1],
            xact_start=k[2],
            query=q,
            first_seen=fl[0],
            last_seen=fl[1],
        )
        for k, kept in memory.items()
        if k in seen
        for q, fl in kept.items()
    )
    data = PgTxnDetail(
        locks=locks,
        statements=statements,
        min_age=MIN_AGE,
        lock_cap=len(rows) >= LOCK_ROWS,
        remembered=cache is not None,
    )
    if len(rows) < LOCK_ROWS:
        return data
    gap = CoverageGap(
        "txn_detail_cap",
        "pg.txn_detail",
        f"read the first {LOCK_ROWS} lock rows of open transactions (oldest first); the "
        "locks of younger ones were not examined",
    )
    return Covered(data, (gap,))


# pg_txn_detail's result when no transaction is open (by `remembered`): shared, never changed
_NONE_OPEN = {r: PgTxnDetail(min_age=MIN_AGE, remembered=r) for r in (False, True)}


def _none_open(conn: Connection) -> bool:
    """This pass's pg.sessions (read before this probe: the daemon's shared server-wide read,
    an audit's own) shows no client backend of the target's database in a transaction. Then
    txn_locks.sql has nothing to return but transactions begun since that read (at most the
    share interval ago, younger than any session rule sees in these rows), and the round trip
    is not made: an idle database's cycle sends 2 statements, not 3, an idle database's audit
    one fewer. Without that read the query runs."""
    rows = read_this_pass("pg.sessions")
    if not isinstance(rows, tuple):
        return False
    if not rows:
        return True  # no session at all (a read that leaves dbwatch's own out)
    pg = _PG[0] if _PG else _load_pg()  # here, once: a MySQL audit imports no PG rows
    # the section's own tuple (typed rows, one class): scoped() keeps its grouping by database
    # per tuple, so a copy here would regroup the server's sessions for every target
    if not isinstance(rows[0], pg.PgSession):
        return False
    mine = pg.scoped(rows, conn.spec.scoped_database)
    for r in mine:
        if r.client and r.xact_start is not None:
            return False
    return True


_PG: list[ModuleType] = []


def _load_pg() -> ModuleType:
    from ..snapshot import pg

    _PG.append(pg)
    return pg


def _remember(cache: ProbeCache | None, seen: dict[Key, str], now: str) -> Memory:
    """The daemon's memory of each live transaction's statements, updated with this cycle's
    (a transaction no longer seen is forgotten: it ended). Audit: this cycle only."""
    memory: Memory = OrderedDict()
    if cache is not None:
        kept = cache.get(MEMORY, float("inf"))
        if isinstance(kept, OrderedDict):
            memory = kept
    for key in [k for k in memory if k not in seen]:
        del memory[key]
    for key, query in seen.items():
        stmts = memory.setdefault(key, OrderedDict())
        if not query or is_deallocate(query):
            continue  # PDO's DEALLOCATE after each statement says nothing of the transaction
        if query in stmts:
            stmts[query][1] = now
        elif len(stmts) < KEPT_PER_TXN:
            stmts[query] = [now, now]
        else:  # keep the first ones (the transaction when young) and the latest
            stmts.popitem(last=True)
            stmts[query] = [now, now]
    while len(memory) > KEPT_TXNS:
        memory.popitem(last=False)
    if cache is not None:
        cache.put(MEMORY, memory)
    return memory


def is_deallocate(query: str) -> bool:
    return query[:11].upper() == "DEALLOCATE "


@probe("my.txn_detail", "mysql", grant=PFS_GRANT)
def my_txn_detail(conn: Connection) -> object:
    """Connection attributes, statement history and the transaction event of the threads
    whose InnoDB transaction is at least MIN_AGE old; each source off is said, with its fix.
    The threads are found once; each source is then one scan by a bound id list."""
    c = consumers(conn)
    if not c.performance_schema:
        off = f"performance_schema is OFF; to enable: {PFS_ON_FIX}"
        return MyTxnDetail(min_age=MIN_AGE, history_off=off, transactions_off=off, attrs_off=off)
    enabled = {
        to_str(r.get("name")): to_str(r.get("enabled")).upper() == "YES"
        for r in map(as_row, conn.rows(sql("mysql", "txn_consumers", conn.version)))
    }
    threads = _read(conn, "txn_threads", {"min_age": MIN_AGE, "limit": THREAD_ROWS + 1})
    me = next((to_int(r.get("pfs_thread_id")) for r in threads if r.get("is_self")), None)
    pfs_of = {
        to_int(r.get("pfs_thread_id")): to_int(r.get("thread_id"))
        for r in threads
        if not r.get("is_self")
    }
    ids = ",".join(str(t) for t in pfs_of.values())
    pfs_ids = ",".join(str(t) for t in pfs_of)
    attrs = _read(conn, "txn_connect_attrs", {"ids": ids, "limit": ATTR_ROWS}) if ids else []
    history_on = c.history_size > 0 and all(
        enabled.get(n, False)
        for n in (
            "global_instrumentation",
            "thread_instrumentation",
            "events_statements_current",
            "events_statements_history",
        )
    )
    statements: list[dict[str, object]] = []
    if history_on and pfs_ids:
        now = _read(conn, "txn_timer", {"self": me})[0].get("timer_start") if me else None
        for r in _read(conn, "txn_statements", {"ids": pfs_ids, "limit": STATEMENT_ROWS}):
            start, ref = opt_num(r.get("timer_start")), opt_num(now)
            ago = (ref - start) / 1e12 if start is not None and ref is not None else None
            statements.append(
                r | {"thread_id": pfs_of.get(to_int(r.get("pfs_thread_id"))), "seconds_ago": ago}
            )
    events_on = bool(enabled.get("events_transactions_current") and enabled.get("transaction"))
    events = [
        r | {"thread_id": pfs_of.get(to_int(r.get("pfs_thread_id")))}
        for r in (
            _read(conn, "txn_events", {"ids": pfs_ids, "limit": EVENT_ROWS})
            if events_on and pfs_ids
            else []
        )
    ]
    data = MyTxnDetail.from_row(
        {
            "attrs": attrs,
            "statements": statements,
            "transactions": events,
            "min_age": MIN_AGE,
            "history_size": c.history_size,
            "history_off": None
            if history_on
            else "statement history is off (performance_schema consumer "
            f"events_statements_history or its prerequisites); to enable: {HISTORY_FIX}",
            "transactions_off": None
            if events_on
            else "transaction events are off (consumer events_transactions_current or "
            f"instrument `transaction`); to enable: {TRANSACTIONS_FIX}",
            "statement_cap": len(statements) >= STATEMENT_ROWS,
        }
    )
    capped = [
        what
        for what, n, cap in (
            ("threads", len(pfs_of), THREAD_ROWS),
            ("connection attributes", len(attrs), ATTR_ROWS),
            ("statement history", len(statements), STATEMENT_ROWS),
            ("transaction events", len(events), EVENT_ROWS),
        )
        if n >= cap
    ]
    if not capped:
        return data
    gap = CoverageGap(
        "txn_detail_cap",
        "my.txn_detail",
        f"read the first rows only of: {', '.join(capped)}; the rest of the open "
        "transactions' detail was not examined",
    )
    return Covered(data, (gap,))


def _read(conn: Connection, name: str, params: dict[str, object]) -> list[dict[str, object]]:
    try:
        return [dict(as_row(r)) for r in conn.rows(sql("mysql", name, conn.version), params)]
    except ProbeError as exc:
        if exc.privilege:
            raise ProbeError(name, exc.detail, PFS_GRANT, privilege=True) from None
        raise
