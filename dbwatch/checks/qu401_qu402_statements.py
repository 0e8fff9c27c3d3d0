"""QU401/QU402 from live statement sources: performance_schema statement history grouped into
transactions (high confidence) and statement digests / pg_stat_statements (call counts only:
QU401 probable; a claim's shape alone is enough for QU402). Same detectors as `audit --log`.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..findings import Finding
from ..frozen import mutable
from ..snapshot import Snapshot
from ..snapshot.sections import SectionKey
from ..snapshot.statements import (
    MY_STATEMENT_DIGESTS,
    MY_STATEMENT_HISTORY,
    PG_STATEMENT_DIGESTS,
    Digests,
    StatementDigests,
    StatementHistory,
)
from ..snapshot.values import str_list
from . import CheckContext, check, pure

if TYPE_CHECKING:  # the SQL classifiers are imported by the checks when they have text to read
    from ..sqlpatterns.detect import PatternDetector, ServerVersion
    from ..sqlpatterns.detect import _Pattern as Pattern

HISTORY = "my.statement_history"
HISTORY_BUDGET_S = 2.0  # parse time for one cycle's statement history (10,000 statements)
DIGESTS = {"mysql": "my.statement_digests", "postgresql": "pg.statement_digests"}


def _family(snap: Snapshot) -> str:
    return "postgresql" if snap.engine == "postgresql" else "mysql"


def _digests_key(snap: Snapshot) -> SectionKey[Digests]:
    return PG_STATEMENT_DIGESTS if snap.engine == "postgresql" else MY_STATEMENT_DIGESTS


def _digests(snap: Snapshot) -> StatementDigests | None:
    """The engine's digests, when the source was available."""
    data = snap.get(_digests_key(snap))
    return data if isinstance(data, StatementDigests) else None


@mutable
class HistoryAnalysis:
    detector: PatternDetector
    source: str
    statements: int
    threads: int
    transactions: int = 0
    unparsable: int = 0
    not_examined: int = 0  # statements past the time budget

    def evidence(self) -> dict[str, object]:
        return {
            "not_examined": self.not_examined,
            "source": self.source,
            "statements_read": self.statements,
            "threads": self.threads,
            "transactions_seen": self.transactions,
            "unparsable": self.unparsable,
        }


# Both checks read the same history: the last analysis is kept with its section (held, so
# `is` cannot match a new object at a recycled address) and reused, never mutated.
_last: list[tuple[object, HistoryAnalysis]] = []


def analyse_history(raw: object) -> HistoryAnalysis | None:
    """Statements ordered by (thread, event) → transactions → the pattern detector. `raw`
    is the section (its typed data, or the probe's rows)."""
    section = None if raw is None else MY_STATEMENT_HISTORY.build(raw)
    if not isinstance(section, StatementHistory):
        return None
    last = list(_last)
    if last and last[0][0] is raw:
        return last[0][1]
    result = _analyse(section)
    _last[:] = [(raw, result)]
    return result


def _analyse(section: StatementHistory) -> HistoryAnalysis:
    from ..sqlpatterns.detect import PatternDetector
    from ..sqlpatterns.fingerprint import MAX_STATEMENT, Classifier
    from ..sqlpatterns.transactions import TransactionGrouper

    det = PatternDetector(Classifier("mysql"))
    grouper = TransactionGrouper(det.feed, "mysql")
    current: int | None = None
    threads = 0
    rows = section.statements
    deadline = time.monotonic() + HISTORY_BUDGET_S
    skipped = 0
    for i, s in enumerate(rows):
        # Other sessions' text is untrusted: a time budget bounds the whole analysis, and
        # what it did not reach is counted, never silently dropped.
        if i % 256 == 255 and time.monotonic() > deadline:
            skipped = len(rows) - i
            break
        if s.thread_id != current:
            if current is not None:
                grouper.disconnect(current)  # its window ends here; ids are never reused
            current, threads = s.thread_id, threads + 1
        grouper.feed(s.thread_id, None, s.text[:MAX_STATEMENT])
    grouper.flush()
    return HistoryAnalysis(
        det,
        section.source,
        grouper.stats.statements,
        threads,
        det.transactions,
        det.classifier.stats.unparsable,
        skipped,
    )


def server_of(snap: Snapshot) -> ServerVersion | None:
    from ..sqlpatterns.detect import parse_server_version

    """The server, when SKIP LOCKED was detected on it; else None (no QU402)."""
    if "skip_locked" not in snap.features:
        return None
    return parse_server_version(snap.server_version, _family(snap))


def _digest_rows(
    section: StatementDigests | None, max_idle: float
) -> dict[str, list[tuple[str, int]]]:
    """Digest rows by scope (MySQL: default schema; PostgreSQL: database), stale ones dropped."""
    out: dict[str, list[tuple[str, int]]] = {}
    for d in section.digests if section is not None else ():
        if d.idle_seconds is not None and d.idle_seconds > max_idle:
            continue
        out.setdefault(d.scope or "", []).append((d.text, d.calls))
    return out


def _max_idle(ctx: CheckContext) -> float:
    return ctx.duration("digest_max_idle")


def _key(f: Finding) -> str:
    return repr(f.identity)


def _from_history(ctx: CheckContext, rule: str, server: ServerVersion | None) -> dict[str, Finding]:
    """The rule's findings from the performance_schema statement history (MySQL family)."""
    snap = ctx.snapshot
    raw = snap.get(MY_STATEMENT_HISTORY) if _family(snap) == "mysql" else None
    history = analyse_history(raw)
    if history is None:
        return {}
    return {
        _key(f): _emit(ctx, f, f.summary + " (statement history)", f.evidence | history.evidence())
        for f in history.detector.findings(server, snap.target)
        if f.rule == rule
    }


def _digest_summary(f: Finding) -> str:
    ev = f.evidence
    key = ", ".join(str_list(ev["key_columns"]))
    return (
        f"probable redundant fetch-before-delete on {ev['table']}: "
        f"`SELECT … WHERE {key} = ? FOR UPDATE` and `DELETE … WHERE {key} = ?` on "
        f"`{ev['table']}` are called about equally often ({ev['select_calls']:,} and "
        f"{ev['delete_calls']:,} calls; statement digests do not show transactions)"
    )


def _emit(ctx: CheckContext, f: Finding, summary: str, evidence: dict[str, object]) -> Finding:
    return ctx.finding(
        severity=ctx.rule.severity,
        subject=f.subject,
        summary=summary,
        fix=f.fix,
        evidence=evidence,
        identity=f.identity,
        confidence=f.confidence,
    )


def _statement_inputs(snap: Snapshot) -> tuple[object, ...]:
    """QU401/QU402 read the statement history (MySQL family) and the digests, nothing else
    but the snapshot's identity fields. With neither readable as text (a source switched off:
    pg_stat_statements not installed, performance_schema OFF — an `Unavailable`, a new object
    each cycle) they find nothing, whatever else: nothing to compare then."""
    get = snap.sections.get
    history = get(HISTORY) if _family(snap) == "mysql" else None
    digests = get(DIGESTS[_family(snap)])
    if not isinstance(digests, StatementDigests) and not isinstance(history, StatementHistory):
        return ()
    return (history, digests)


@pure(_statement_inputs)
@check("fetch_before_delete", mysql=[HISTORY, DIGESTS["mysql"]], postgresql=[DIGESTS["postgresql"]])
def fetch_before_delete(ctx: CheckContext) -> Iterator[Finding]:
    snap = ctx.snapshot
    out = _from_history(ctx, "QU401", None)
    section = _digests(snap)
    source = section.source if section is not None else None
    for scope, rows in sorted(_digest_rows(section, _max_idle(ctx)).items()):
        from ..sqlpatterns.detect import detect_digests

        for f in detect_digests(rows, snap.target, _family(snap)):
            digest = {
                "select_calls": f.evidence["select_calls"],
                "delete_calls": f.evidence["delete_calls"],
                "scope": scope or None,
                "source": source,
            }
            prior = out.get(_key(f))
            if prior is not None:  # seen in transactions: the digest only adds the rate
                digests = prior.evidence.setdefault("digests", [])
                if isinstance(digests, list):
                    digests.append(digest)
                continue
            ev = f.evidence | {"source": source, "scope": scope or None}
            out[_key(f)] = _emit(ctx, f, _digest_summary(f), ev)
    yield from out.values()


def _digest_claims(
    section: StatementDigests | None, max_idle: float, dialect: str
) -> dict[str, Pattern]:
    """Claim-shaped digests without SKIP LOCKED, by table, with their calls."""
    from ..sqlpatterns.detect import EXAMPLE_CHARS, is_claim
    from ..sqlpatterns.detect import _Pattern as Pattern
    from ..sqlpatterns.fingerprint import Classifier

    clf = Classifier(dialect)
    claims: dict[str, Pattern] = {}
    for _scope, rows in sorted(_digest_rows(section, max_idle).items()):
        for text, calls in rows:
            c = clf.classify(text)
            if c is None or not is_claim(c[0]):
                continue
            table = (c[0].table or "").rsplit(".", 1)[-1]
            p = claims.setdefault(table, Pattern())
            p.count += calls
            p.transactions += calls
            if not p.example:
                p.example.append(text[:EXAMPLE_CHARS])
                p.fingerprints.append(c[0].fingerprint)
    return claims


@pure(_statement_inputs)
@check(
    "claim_without_skip_locked",
    mysql=[HISTORY, DIGESTS["mysql"]],
    postgresql=[DIGESTS["postgresql"]],
)
def claim_without_skip_locked(ctx: CheckContext) -> Iterator[Finding]:
    snap = ctx.snapshot
    history = snap.get(MY_STATEMENT_HISTORY) if _family(snap) == "mysql" else None
    if _digests(snap) is None and not isinstance(history, StatementHistory):
        return  # no statement text to read (the same outcome, without importing the parsers)
    from ..sqlpatterns.detect import qu402_finding

    server = server_of(snap)
    if server is None:
        return
    out = _from_history(ctx, "QU402", server)
    section = _digests(snap)
    source = section.source if section is not None else None
    for table, p in sorted(_digest_claims(section, _max_idle(ctx), _family(snap)).items()):
        g = qu402_finding(table, p, server, snap.target)
        if g is None:
            continue
        prior = out.get(_key(g))
        if prior is not None:
            prior.evidence["digest_calls"] = p.count
            continue
        summary = (
            f"claim query on {table} locks with FOR UPDATE without SKIP LOCKED, "
            f"{p.count:,} calls (statement digests); {server.engine} "
            f"{snap.server_version} supports SKIP LOCKED"
        )
        ev = dict(g.evidence) | {"source": source, "calls": p.count}
        out[_key(g)] = _emit(ctx, g, summary, ev)
    yield from out.values()
