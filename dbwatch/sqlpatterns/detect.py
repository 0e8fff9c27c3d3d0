"""Pure detectors over transactions and digest rows: QU401 fetch-before-delete, QU402 claims
without SKIP LOCKED. No I/O; the findings say table, counts, an example and the fix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dbwatch.catalogue import rule_summary
from dbwatch.findings import Finding
from dbwatch.queues import is_queue_like
from dbwatch.sqlpatterns.fingerprint import Classifier, Shape, Value, Values
from dbwatch.sqlpatterns.transactions import NON_DATA, Statement, Transaction
from dbwatch.targets.version import SKIP_LOCKED_SINCE

from ..frozen import frozen, mutable

EXAMPLE_CHARS = 300
QUEUE_COLUMNS = frozenset({"queue", "reserved_at", "available_at"})
# Statement kinds whose text the detector reads; it needs only the kind of the others.
RELEVANT_KINDS = frozenset({"select", "delete"})
VERSION_CHARS = 200
# Anchored on a digit that follows no digit, so a long digit run is scanned once, not once
# per position.
_VERSION_NUMBER = re.compile(r"(?<!\d)(\d{1,6})\.(\d{1,6})(?:\.(\d{1,6}))?")
_BARE_NUMBER = re.compile(r"(?<!\d)(\d{1,6})()()")


@frozen
class ServerVersion:
    engine: str  # mysql | mariadb | postgresql
    version: tuple[int, ...]
    text: str

    def supports_skip_locked(self) -> bool:
        padded = (*self.version, 0, 0, 0)[: max(3, len(self.version))]
        return padded >= SKIP_LOCKED_SINCE[self.engine]


def _times(count: int, transactions: int) -> str:
    return (
        f"{count} {'time' if count == 1 else 'times'} in {transactions} "
        f"{'transaction' if transactions == 1 else 'transactions'}"
    )


def parse_server_version(text: str, default_engine: str | None = None) -> ServerVersion | None:
    """'10.11.19-MariaDB-0+deb12u1', '8.0.36', 'mariadb 10.5', 'postgresql 15.2' → ServerVersion."""
    text = text[:VERSION_CHARS]  # untrusted (a log header): bounded before any search
    m = _VERSION_NUMBER.search(text)
    if m is None:
        m = _BARE_NUMBER.search(text)
        if m is None:
            return None
    version = tuple(int(g) for g in m.groups() if g)
    low = text.lower()
    if "mariadb" in low:
        engine = "mariadb"
    elif "postgres" in low or low.startswith("pg"):
        engine = "postgresql"
    elif "mysql" in low:
        engine = "mysql"
    elif default_engine == "mysql" and version >= (10,):
        engine = "mariadb"  # MySQL never had a 10.x; a bare 10.x/11.x is MariaDB
    elif default_engine in SKIP_LOCKED_SINCE:
        engine = default_engine
    else:
        return None
    return ServerVersion(engine, version, text.strip()[:80])


def _base(table: str | None) -> str:
    return (table or "").rsplit(".", 1)[-1]


def _value(raw: Value, params: dict[str, str] | None) -> str | None:
    """A comparable key value, or None when the log does not show it (a placeholder)."""
    if not isinstance(raw, str):
        return None
    v: str = raw
    if v.startswith("$") and params:
        v = params.get(v, "?")
    if v in ("?", "%s") or v.startswith("$"):
        return None
    if len(v) >= 2 and v[0] == v[-1] == "'":
        v = v[1:-1]
    return v


def is_queue_shaped(shape: Shape) -> bool:
    """A queue's table by name (the registry's words) or by the columns a claim reads."""
    return is_queue_like(_base(shape.table)) or bool(shape.columns & QUEUE_COLUMNS)


def is_claim(shape: Shape) -> bool:
    return (
        shape.kind == "select"
        and shape.lock == "update"
        and shape.order_by
        and shape.limit
        and not shape.skip_locked
        and not shape.nowait
        and is_queue_shaped(shape)
    )


_MEMO_SIZE = 4096
# (pattern key, [(value index in the SELECT, value index in the DELETE) per key column])
_Plan = tuple[tuple[str, tuple[str, ...]], list[tuple[int, int]]]


def _pair_plan(shape: Shape, nvalues: int, dshape: Shape, ndvalues: int) -> _Plan | None:
    """Whether a SELECT … FOR UPDATE shape and the DELETE shape after it can name the same
    row (same table, same key columns), and which values to compare to know."""
    if shape.key_eq is None or dshape.key_eq is None or _base(dshape.table) != _base(shape.table):
        return None
    skeys = {col: k for col, k in shape.key_eq if k < nvalues}
    dkeys = {col: k for col, k in dshape.key_eq if k < ndvalues}
    if set(skeys) != set(dkeys) or len(skeys) != len(shape.key_eq):
        return None
    key = (_base(shape.table), tuple(sorted(skeys)))
    return key, [(k, dkeys[col]) for col, k in skeys.items()]


@mutable
class _Pattern:
    count: int = 0
    transactions: int = 0
    example: list[str] = field(default_factory=list)
    fingerprints: list[str] = field(default_factory=list)


class PatternDetector:
    """Accumulates QU401/QU402 occurrences over transactions in constant memory."""

    def __init__(self, classifier: Classifier | None = None) -> None:
        self.classifier = classifier or Classifier()
        self.qu401: dict[tuple[str, tuple[str, ...]], _Pattern] = {}
        self.qu402: dict[str, _Pattern] = {}
        self.transactions = 0
        # Per shape object (kept, so an id is never reused while remembered).
        self._claims: dict[int, tuple[Shape, str | None]] = {}
        self._pairs: dict[tuple[int, int, int, int], tuple[Shape, Shape, _Plan | None]] = {}

    def _classify(self, s: Statement) -> tuple[Shape, Values] | None:
        return self.classifier.classify(s.text)

    def feed(self, txn: Transaction) -> None:
        self.transactions += 1
        stmts = txn.statements
        seen401: set[tuple[str, tuple[str, ...]]] | None = None
        seen402: set[str] | None = None
        for i, s in enumerate(stmts):
            if s.kind != "select":
                continue
            low = s.text[:4096].lower()  # cheap gate before any parsing
            if "for " not in low and "share" not in low:
                continue
            c = self.classifier.classify(s.text)
            if c is None or c[0].lock is None:
                continue
            shape, values = c
            if self._claim_table(shape) is not None:
                table = self._record402(shape, s)
                if seen402 is None:
                    seen402 = set()
                if table not in seen402:
                    seen402.add(table)
                    self.qu402[table].transactions += 1
            if shape.key_eq:
                key = self._match_delete(shape, values, s, stmts, i)
                if seen401 is None:
                    seen401 = set()
                if key is not None and key not in seen401:
                    seen401.add(key)
                    self.qu401[key].transactions += 1

    def _claim_table(self, shape: Shape) -> str | None:
        """is_claim, remembered per shape object (the classifier hands out the same one)."""
        hit = self._claims.get(id(shape))
        if hit is None or hit[0] is not shape:
            if len(self._claims) >= _MEMO_SIZE:
                self._claims.clear()
            hit = self._claims[id(shape)] = (shape, _base(shape.table) if is_claim(shape) else None)
        return hit[1]

    def _record402(self, shape: Shape, s: Statement) -> str:
        table = _base(shape.table)
        p = self.qu402.get(table)
        if p is None:
            p = self.qu402[table] = _Pattern()
        p.count += 1
        if not p.example:
            p.example.append(s.text[:EXAMPLE_CHARS])
            p.fingerprints.append(shape.fingerprint)
        return table

    def _match_delete(
        self, shape: Shape, values: Values, s: Statement, stmts: list[Statement], i: int
    ) -> tuple[str, tuple[str, ...]] | None:
        """The next data statement deletes the same row by the same key: record it."""
        j = i + 1
        while j < len(stmts) and stmts[j].kind in NON_DATA:
            j += 1
        if j >= len(stmts) or stmts[j].kind != "delete":
            return None
        d = stmts[j]
        c = self.classifier.classify(d.text)
        if c is None:
            return None
        dshape, dvalues = c
        memo = (id(shape), len(values), id(dshape), len(dvalues))
        hit = self._pairs.get(memo)
        if hit is None or hit[0] is not shape or hit[1] is not dshape:
            if len(self._pairs) >= _MEMO_SIZE:
                self._pairs.clear()
            hit = self._pairs[memo] = (
                shape,
                dshape,
                _pair_plan(shape, len(values), dshape, len(dvalues)),
            )
        plan = hit[2]
        if plan is None:
            return None
        key, columns = plan
        no_params = s.params is None and d.params is None
        for k, dk in columns:
            v, w = values[k], dvalues[dk]
            if no_params and v == w:
                continue  # the same literal: the same value, whatever it is
            sv, dv = _value(v, s.params), _value(w, d.params)
            if sv is not None and dv is not None and sv != dv:
                return None
        p = self.qu401.get(key)
        if p is None:
            p = self.qu401[key] = _Pattern()
        p.count += 1
        if not p.example:
            p.example.extend([s.text[:EXAMPLE_CHARS], d.text[:EXAMPLE_CHARS]])
            p.fingerprints.extend([shape.fingerprint, dshape.fingerprint])
        return key

    def findings(self, server: ServerVersion | None, target: str) -> list[Finding]:
        out = [qu401_finding(t, cols, p, target) for (t, cols), p in sorted(self.qu401.items())]
        for table, p in sorted(self.qu402.items()):
            f = qu402_finding(table, p, server, target)
            if f is not None:
                out.append(f)
        return out


def _qu401_fix(table: str, cols: tuple[str, ...]) -> str:
    where = " AND ".join(f"{c} = ?" for c in cols)
    return (
        f"Delete with one statement, `DELETE FROM {table} WHERE {where}`, without the "
        "SELECT … FOR UPDATE before it: the DELETE locks the same row itself. For Laravel's "
        "database queue (DatabaseQueue::deleteReserved does select-for-update + delete), use "
        "a queue driver whose deleteReserved issues a single DELETE, e.g. one of the "
        "optimistic-locking database queue packages."
    )


def shown_name(table: str, examples: list[str]) -> str:
    """The table as the statements spell it: shapes compare names lower-cased, but MySQL
    table names are case-sensitive on Linux, so the report must keep the original case."""
    pattern = re.compile(
        r"[`\"\[]?"
        + r"[`\"\]]?\.[`\"\[]?".join(re.escape(part) for part in table.split("."))
        + r"(?![\w$])",
        re.IGNORECASE,
    )
    for text in examples:
        m = pattern.search(text or "")
        if m:
            return re.sub(r"[`\"\[\]]", "", m.group(0))
    return table


def qu401_finding(
    table: str,
    cols: tuple[str, ...],
    p: _Pattern,
    target: str,
    confidence: str = "high",
    extra: dict[str, Any] | None = None,
) -> Finding:
    key_table, table = table, shown_name(table, p.example)
    key = ", ".join(cols)
    summary = rule_summary(
        "QU401",
        table=table,
        how=f"SELECT … WHERE {key} = ? FOR UPDATE then DELETE of the same row, "
        f"{_times(p.count, p.transactions)}",
    )
    if confidence != "high":
        summary += " (probable: from statement digests, not transactions)"
    evidence: dict[str, Any] = {
        "table": table,
        "key_columns": list(cols),
        "count": p.count,
        "transactions": p.transactions,
        "example": {
            "select": p.example[0] if p.example else None,
            "delete": p.example[1] if len(p.example) > 1 else None,
        },
        "fingerprints": p.fingerprints,
    }
    evidence.update(extra or {})
    return Finding(
        rule="QU401",
        severity="warning",
        target=target,
        subject=f"table {table}",
        summary=summary,
        fix=_qu401_fix(table, cols),
        evidence=evidence,
        identity=["QU401", key_table, list(cols)],
        confidence=confidence,
    )


def qu402_finding(
    table: str, p: _Pattern, server: ServerVersion | None, target: str
) -> Finding | None:
    if server is not None and not server.supports_skip_locked():
        return None
    key_table, table = table, shown_name(table, p.example)
    summary = rule_summary("QU402", table=table, how_often=_times(p.count, p.transactions))
    if server is None:
        summary += (
            "; server version unknown (SKIP LOCKED needs MySQL ≥ 8.0.1, "
            "MariaDB ≥ 10.6, PostgreSQL ≥ 9.5): pass --server-version"
        )
    else:
        summary += f"; {server.engine} {server.text} supports SKIP LOCKED"
    fix = (
        f"Claim with `… ORDER BY … LIMIT n FOR UPDATE SKIP LOCKED` on {table}, so workers "
        "skip rows another worker holds instead of queueing on the same row. Laravel adds "
        "SKIP LOCKED from 6.14 (on MariaDB from 8.69) and only when it detects the server "
        "version: upgrade the framework, or set the connection's `version` in "
        "config/database.php when detection is wrong."
    )
    return Finding(
        rule="QU402",
        severity="warning",
        target=target,
        subject=f"table {table}",
        summary=summary,
        fix=fix,
        evidence={
            "table": table,
            "count": p.count,
            "example": p.example[0],
            "fingerprint": p.fingerprints[0],
            "server_version": server.text if server else None,
        },
        identity=["QU402", key_table],
        confidence="high" if server is not None else "probable",
    )


def detect_transactions(
    transactions: Iterable[Transaction],
    server: ServerVersion | None,
    target: str,
    dialect: str = "mysql",
) -> list[Finding]:
    det = PatternDetector(Classifier(dialect))
    for t in transactions:
        det.feed(t)
    return det.findings(server, target)


@dataclass(slots=True)
class _Digest:
    calls: int
    example: str
    fingerprint: str


def detect_digests(
    rows: Iterable[tuple[str, int]],
    target: str,
    dialect: str = "mysql",
    min_calls: int = 10,
    tolerance: float = 0.2,
) -> list[Finding]:
    """Weak signal: `SELECT … WHERE id = ? FOR UPDATE` and `DELETE … WHERE id = ?` on one
    table called about equally often (performance_schema digests / pg_stat_statements)."""
    clf = Classifier(dialect)
    sel: dict[tuple[str, tuple[str, ...]], _Digest] = {}
    dele: dict[tuple[str, tuple[str, ...]], _Digest] = {}
    for text, calls in rows:
        c = clf.classify(text or "")
        if c is None or c[0].key_eq is None or not c[0].table:
            continue
        shape = c[0]
        key = (_base(shape.table), tuple(sorted(col for col, _ in c[0].key_eq)))
        if shape.kind == "select" and shape.lock is not None:
            bucket = sel
        elif shape.kind == "delete":
            bucket = dele
        else:
            continue
        slot = bucket.setdefault(key, _Digest(0, text[:EXAMPLE_CHARS], shape.fingerprint))
        slot.calls += int(calls)
    out = []
    for key in sorted(sel.keys() & dele.keys()):
        s, d = sel[key], dele[key]
        lo, hi = sorted((s.calls, d.calls))
        if lo < min_calls or hi == 0 or lo / hi < 1 - tolerance:
            continue
        p = _Pattern(
            count=lo,
            transactions=lo,
            example=[s.example, d.example],
            fingerprints=[s.fingerprint, d.fingerprint],
        )
        out.append(
            qu401_finding(
                key[0],
                key[1],
                p,
                target,
                confidence="probable",
                extra={"select_calls": s.calls, "delete_calls": d.calls, "source": "digest"},
            )
        )
    return out
