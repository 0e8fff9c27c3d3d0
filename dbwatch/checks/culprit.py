"""Every session finding names its culprit: evidence.origin (who opened the transaction),
evidence.transaction (what it did), a short phrase in the summary, the code to fix in the
fix. Applied once, after the checks, to the findings of the session rules.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..deadlocks.record import DeadlockRecord
from ..findings import Finding
from ..frozen import frozen
from ..snapshot import Snapshot
from ..snapshot.my import MY_TRX, MyThread
from ..snapshot.origin import MY_TXN_DETAIL, PG_TXN_DETAIL
from ..snapshot.values import opt_int
from .culprit_rules import CHAIN_RULES, DEADLOCK_RULES, SESSION_RULES, enriched
from .origin import Origin, tag_unknown, tags_of
from .txn_activity import Activity, MyIndex, PgIndex, my_activity, pg_activity

if TYPE_CHECKING:
    from ..snapshot.pg import PgSession

log = logging.getLogger(__name__)


def enrich(findings: list[Finding], snap: Snapshot) -> list[Finding]:
    if not any(enriched(f.rule) for f in findings):
        return findings
    view = _View.of(snap)
    out = []
    for f in findings:
        try:
            out.append(_enriched(f, snap, view))
        except Exception:  # a bug here must never hide the finding itself
            log.exception("origin of %s %s on %s failed", f.rule, f.subject, snap.target)
            out.append(f)
    return out


@frozen
class _View:
    """The snapshot's sessions and detail, indexed once for all findings."""

    pg: Mapping[int, PgSession]
    my: Mapping[int, MyThread]
    pg_index: PgIndex
    my_index: MyIndex

    @classmethod
    def of(cls, snap: Snapshot) -> _View:
        if snap.engine == "postgresql":
            from ..snapshot.pg import PG_SESSIONS  # here: a MySQL audit imports no PG rows

            pg = {r.pid: r for r in snap.get(PG_SESSIONS) or ()}
            return cls(pg, {}, PgIndex.of(snap.get(PG_TXN_DETAIL)), MyIndex.of(None))
        my = {t.thread_id: t for t in snap.get(MY_TRX) or ()}
        return cls({}, my, PgIndex.of(None), MyIndex.of(snap.get(MY_TXN_DETAIL)))


def _enriched(f: Finding, snap: Snapshot, view: _View) -> Finding:
    if f.rule in DEADLOCK_RULES:
        return _deadlock(f)
    if f.rule not in SESSION_RULES:
        return f
    act = _activity(f, snap, view)
    if act is None and not _names_a_session(f):
        return f  # a slot, a prepared transaction, a standby, no open transaction: no session
    act = act or _from_statement(f)
    return _named(f, act, snap.engine != "postgresql")


def _activity(f: Finding, snap: Snapshot, view: _View) -> Activity | None:
    ev = f.evidence
    s = f.session
    if snap.engine == "postgresql":
        pid = s.pid if s is not None and s.pid is not None else None
        if pid is None:
            pid = opt_int(ev.get("root_pid") if f.rule in CHAIN_RULES else ev.get("pid"))
        row = view.pg.get(pid) if pid is not None else None
        return None if row is None else pg_activity(row, view.pg_index)
    thread = s.thread_id if s is not None and s.thread_id is not None else None
    if thread is None:
        oldest = ev.get("oldest")
        thread = opt_int(
            ev.get("root_thread_id")
            if f.rule in CHAIN_RULES
            else oldest.get("thread_id")
            if isinstance(oldest, Mapping)
            else ev.get("thread_id")
        )
    t = view.my.get(thread) if thread is not None else None
    return None if t is None else my_activity(t, view.my_index)


def _names_a_session(f: Finding) -> bool:
    ev = f.evidence
    s = f.session
    keys = ("root_pid", "root_thread_id") if f.rule in CHAIN_RULES else ("pid", "thread_id")
    return (s is not None and (s.pid is not None or s.thread_id is not None)) or any(
        ev.get(k) is not None for k in keys
    )


def _from_statement(f: Finding) -> Activity:
    """The session is not in the listing (a capped read, a test's sections): the tags of
    the statement the finding quotes, and nothing else claimed."""
    chain = f.rule in CHAIN_RULES
    ev = f.evidence
    text = ev.get("root_query") if chain else ev.get("query")
    tags, label = tags_of([("statement in the finding", text if isinstance(text, str) else None)])
    unknown = tag_unknown(tags, [text] if text else [])
    unknown.append("session detail: the session was not in this look's session listing")
    return Activity(Origin(tags=tags, tags_from=label, unknown=tuple(unknown)), {}, None)


def _named(f: Finding, act: Activity, mysql: bool) -> Finding:
    ev = dict(f.evidence)
    ev["origin"] = act.origin.to_json()
    ev["transaction"] = act.transaction
    if mysql:
        # MySQL/MariaDB: the application is what the client or its tags say, never the user
        ev["application"] = act.origin.application
    chain = f.rule in CHAIN_RULES
    phrase = act.phrase(
        with_idle=chain or f.rule in ("PG201", "MY201", "MY001", "PG001"),
        with_client=mysql or chain,  # PG001/PG002/PG201 show application_name already
    )
    summary = f.summary
    if phrase:
        who = _root_name(f) if chain else None
        summary += f" — {who}: {phrase}" if who else f" — {phrase}"
    return dataclasses.replace(f, evidence=ev, summary=summary, fix=f.fix + _prevention(act))


def _root_name(f: Finding) -> str | None:
    ev = f.evidence
    if ev.get("root_pid") is not None:
        return f"pid {ev['root_pid']}"
    if ev.get("root_thread_id") is not None:
        return f"thread {ev['root_thread_id']}"
    return None


def _prevention(act: Activity) -> str:
    """The application's part of the fix, when its tags name the code (a client's own
    application_name alone may be a console: no code to fix is named from it)."""
    culprit = act.origin.culprit() if act.origin.tags else None
    if not culprit:
        return ""
    app = act.origin.application
    who = f"{culprit} ({app})" if app and app != culprit else culprit
    if act.idle is not None:
        return (
            f" In the application: {who} leaves its transaction open — commit or roll back "
            "before slow work (HTTP calls, sleeps, waiting for input) and on every error "
            "path; the server-side timeout is the backstop."
        )
    return (
        f" In the application: {who} keeps one transaction open"
        + (f" for {act.transaction.get('age')}" if act.transaction.get("age") else "")
        + " — commit in smaller batches, and move slow work outside the transaction."
    )


def _deadlock(f: Finding) -> Finding:
    """MY102: what each participant's statement says of where it came from (the record's
    own reading of its statements' tags, made once when it was built)."""
    dl = f.evidence.get("deadlock")
    if not isinstance(dl, dict) or not isinstance(dl.get("transactions"), list):
        return f
    parts: list[dict[str, object]] = []
    phrases: list[str] = []
    for t in DeadlockRecord.from_json(dl).transactions:
        parts.append({"n": t.n, "thread_id": t.thread_id, **t.origin})
        phrase = t.origin.get("phrase")
        if phrase:
            phrases.append(f"T{t.n}: {phrase}")
    ev = dict(f.evidence)
    ev["origin"] = {"participants": parts}
    summary = f.summary + (f" ({'; '.join(phrases)})" if phrases else "")
    return dataclasses.replace(f, evidence=ev, summary=summary)
