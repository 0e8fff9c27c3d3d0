"""Per-connection transaction grouper: explicit BEGIN/COMMIT, autocommit off, and autocommit.

Bounded: at most `max_statements` per open transaction and `max_connections` open
connections (the idlest is evicted); finished transactions go to a sink at once.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from dbwatch.sqlpatterns.fingerprint import _FAST_KIND, EXACT_KIND, KINDS, quick_kind

# Kinds that carry no data and never start a transaction of their own.
NON_DATA = frozenset({"set", "savepoint", "empty", "other", "prepare"})
_MYSQL_IMPLICIT_COMMIT = frozenset({"ddl", "lock"})
MAX_HELD = 16 * 1024  # text kept per held statement: what the classifier would look at
_CONTROL = frozenset({"begin", "commit", "rollback", "autocommit_on", "autocommit_off"})


@dataclass(slots=True)
class Statement:
    text: str
    kind: str  # quick_kind(text)
    ts: str | None = None  # as written in the log; never parsed here
    params: dict[str, str] | None = None  # PostgreSQL `$n` values from a DETAIL line


# Stand-ins held for statements whose text no sink will read (see `relevant`).
_PLACEHOLDER = {k: Statement("", k) for k in KINDS}


@dataclass(slots=True)
class Transaction:
    connection: Hashable
    statements: list[Statement]
    end: str  # commit | rollback | autocommit | implicit | disconnect | evicted | eof | split
    explicit: bool  # began with BEGIN/START TRANSACTION (else autocommit off or autocommit)


@dataclass(slots=True)
class _Conn:
    # None: the session began before the log did (or its SET was not logged, as in a slow
    # log): statements are held until a COMMIT shows autocommit is off, or BEGIN/the cap
    # shows it is on.
    autocommit: bool | None = None
    explicit: bool = False
    stmts: list[Statement] = field(default_factory=list)
    chars: int = 0


@dataclass(slots=True)
class GrouperStats:
    statements: int = 0
    transactions: int = 0
    evicted: int = 0
    split: int = 0
    inferred_autocommit_off: int = 0
    dropped: int = 0  # single-statement transactions of no `relevant` kind: counted only


class TransactionGrouper:
    """Feed statements in log order; completed transactions are passed to `sink`."""

    def __init__(
        self,
        sink: Callable[[Transaction], None],
        dialect: str = "mysql",
        max_statements: int = 256,
        max_connections: int = 10_000,
        max_buffered_chars: int = 64 << 20,
    ) -> None:
        self.sink = sink
        self.dialect = dialect
        # The statement kinds whose text the sink reads (None: all). Others are held as a
        # shared kind-only Statement, and alone they are counted, not sent.
        self.relevant: frozenset[str] | None = None
        self._control = _CONTROL | _MYSQL_IMPLICIT_COMMIT if dialect == "mysql" else _CONTROL
        self.max_statements = max_statements
        self.max_connections = max_connections
        self.max_buffered_chars = max_buffered_chars
        self.stats = GrouperStats()
        self._conns: OrderedDict[Hashable, _Conn] = OrderedDict()
        self._chars = 0  # statement text held over all open transactions

    def _state(self, conn: Hashable) -> _Conn:
        st = self._conns.get(conn)
        if st is None:
            st = self._conns[conn] = _Conn()
            if len(self._conns) > self.max_connections:
                self._evict_one()
        else:
            self._conns.move_to_end(conn)
        return st

    def _evict_one(self) -> None:
        old, old_st = self._conns.popitem(last=False)
        self.stats.evicted += 1
        self._close(old, old_st, "evicted")

    def _close(self, conn: Hashable, st: _Conn, end: str) -> None:
        if st.stmts:
            self._chars -= st.chars
            if st.autocommit is None and not st.explicit and end not in ("commit", "rollback"):
                # Never shown to be in a transaction: each statement stood alone.
                keep = self.relevant
                for s in st.stmts:
                    if keep is None or s.kind in keep:
                        self._emit(Transaction(conn, [s], "autocommit", False))
                    else:
                        self.stats.transactions += 1
                        self.stats.dropped += 1
            else:
                self._emit(Transaction(conn, st.stmts, end, st.explicit))
            st.stmts = []
            st.chars = 0
        st.explicit = False

    def _emit(self, txn: Transaction) -> None:
        self.stats.transactions += 1
        self.sink(txn)

    def feed(
        self,
        conn: Hashable,
        ts: str | None,
        text: str,
        params: dict[str, str] | None = None,
        kind: str | None = None,
    ) -> None:
        """One statement as the server received it on connection `conn`."""
        # The hot path of log analysis: quick_kind and _state inlined (one call per statement).
        if kind is None:
            kind = _FAST_KIND.get(text[:6])
            if kind is None or text[6:7].isalnum() or text[6:7] == "_":
                kind = EXACT_KIND.get(text) or quick_kind(text)
        self.stats.statements += 1
        conns = self._conns
        st = conns.get(conn)
        if st is None:
            st = self._state(conn)
        else:
            conns.move_to_end(conn)
        if kind in self._control:
            # The two commonest cases inline: BEGIN on an idle session of known mode, and
            # COMMIT of held statements (what _control_statement and _close would do).
            if kind == "begin" and not st.stmts and st.autocommit is not None:
                st.explicit = True
            elif kind == "commit" and st.stmts and (st.autocommit is not None or st.explicit):
                self._chars -= st.chars
                self.stats.transactions += 1
                self.sink(Transaction(conn, st.stmts, "commit", st.explicit))
                st.stmts = []
                st.chars = 0
                st.explicit = False
            else:
                self._control_statement(conn, st, kind)
        elif st.explicit or not st.autocommit:
            if kind in NON_DATA and not st.stmts:
                return  # SET before the first statement does not open a transaction
            keep = self.relevant
            if keep is None or kind in keep:
                stmt = Statement(text[:MAX_HELD], kind, ts, params)
                n = len(stmt.text)
            else:
                stmt = _PLACEHOLDER.get(kind) or Statement("", kind)
                n = min(len(text), MAX_HELD)
            st.stmts.append(stmt)  # _hold, inlined
            st.chars += n
            self._chars += n
            if len(st.stmts) >= self.max_statements or self._chars > self.max_buffered_chars:
                self._bound(conn, st)
        elif kind not in NON_DATA:
            keep = self.relevant
            if keep is None or kind in keep:
                self._emit(
                    Transaction(conn, [Statement(text, kind, ts, params)], "autocommit", False)
                )
            else:
                self.stats.transactions += 1  # its own transaction, of no interest
                self.stats.dropped += 1

    def _control_statement(self, conn: Hashable, st: _Conn, kind: str) -> None:
        """BEGIN, COMMIT/ROLLBACK, autocommit switches and (MySQL) implicit commits."""
        if kind == "begin":
            unknown = st.autocommit is None and not st.explicit
            if st.stmts:
                self._close(conn, st, "implicit")
            if unknown:
                st.autocommit = True  # BEGIN is how autocommit clients open transactions
            st.explicit = True
        elif kind == "commit" or kind == "rollback":
            if st.autocommit is None and not st.explicit:
                st.autocommit = False
                self.stats.inferred_autocommit_off += 1
            self._close(conn, st, kind)
        elif kind == "autocommit_on":
            self._close(conn, st, "commit")  # switching autocommit on commits (MySQL)
            st.autocommit = True
        elif kind == "autocommit_off":
            st.autocommit = False
        else:  # ddl, lock: MySQL commits implicitly
            self._close(conn, st, "implicit")

    def _bound(self, conn: Hashable, st: _Conn) -> None:
        """Split a transaction at max_statements; evict connections over max_buffered_chars."""
        if len(st.stmts) >= self.max_statements:
            self.stats.split += 1
            if st.autocommit is None and not st.explicit:
                st.autocommit = True  # hundreds of statements and no COMMIT: autocommit
                self._close(conn, st, "autocommit")
            else:
                explicit = st.explicit
                self._close(conn, st, "split")
                st.explicit = explicit
        while self._chars > self.max_buffered_chars and len(self._conns) > 1:
            self._evict_one()

    def connect(self, conn: Hashable) -> None:
        """A new session with this id: whatever was open belongs to the previous one; a new
        session starts in autocommit (the server default)."""
        self.disconnect(conn)
        self._state(conn).autocommit = True

    def disconnect(self, conn: Hashable) -> None:
        st = self._conns.pop(conn, None)
        if st is not None:
            self._close(conn, st, "disconnect")

    def flush(self) -> None:
        """End of input: hand over what is still open."""
        while self._conns:
            conn, st = self._conns.popitem(last=False)
            self._close(conn, st, "eof")

    def open_connections(self) -> int:
        return len(self._conns)


def group_transactions(
    events: Iterable[tuple[Hashable, Any, str]], dialect: str = "mysql", **limits: int
) -> Iterator[Transaction]:
    """Convenience for tests and small inputs: (connection, ts, text) → transactions."""
    done: list[Transaction] = []
    grouper = TransactionGrouper(done.append, dialect, **limits)
    for conn, ts, text in events:
        grouper.feed(conn, ts, text)
        yield from done
        done.clear()
    grouper.flush()
    yield from done
