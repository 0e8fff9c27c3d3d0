"""Typed records of the daemon's state: what `State` returns and what its readers narrow.

Kept below both `daemon/` (which writes them) and `alerts/`, `web/`, `commands/` (which read
them), so none of those readers has to import the daemon.

A state row is read once, here, into a frozen record (or a JSON object, for the reads that
are shown as they are); nothing downstream sees the driver's untyped rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import field, replace
from functools import cached_property

from .findings import Finding, SessionIdentity
from .frozen import frozen, mutable
from .scope import same
from .snapshot.values import (
    JSON,
    JSONObject,
    Row,
    as_json,
    opt_float,
    opt_int,
    opt_str,
    str_list,
    to_float,
    to_int,
    to_str,
)
from .targets.secrets import scrub_tree, secrets_known

__all__ = [
    "ActionRecord",
    "AlertMessage",
    "DeadlockRecord",
    "Diagnosis",
    "FindingRow",
    "LockRecord",
    "OutboxMessage",
    "SentRow",
    "Transitions",
    "TrxRecord",
    "finding_data",
    "json_object",
    "loads",
    "row_json",
]


def loads(text: object) -> JSON:
    """A JSON column: its value; text that is not JSON stays text; anything else as JSON."""
    if not isinstance(text, str):
        return as_json(text)
    try:
        value: JSON = json.loads(text)  # JSON text decodes to JSON values: nothing to convert
    except ValueError:
        return text
    return value


def json_object(value: JSON) -> JSONObject:
    """`value` if it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


# the journal's compact deadlock rows (deadlocks.stored): the diagnosis says its explanation
# and fix were left out, to be derived again on read
DERIVED = "derived"


def is_compact(data: object) -> bool:
    """Whether a decoded deadlock row's data is the compact form (deadlocks.stored)."""
    if not isinstance(data, dict):
        return False
    diag = data.get("diagnosis")
    return isinstance(diag, dict) and diag.get(DERIVED) is True


def row_json(row: Row, *decode: str) -> JSONObject:
    """A state row as a JSON object; the columns in `decode` hold JSON text and are decoded."""
    return {k: loads(v) if k in decode else as_json(v) for k, v in row.items()}


def finding_data(f: Finding) -> tuple[JSONObject, str]:
    """What `findings.data` stores of a finding (secrets never stored): the JSON object the
    state keeps in its rows and its text for the column, made together (the text is the
    object's; nothing is parsed back). The object is what `json.loads` of the text would give:
    keys sorted, values that are not JSON as their str()."""
    d = f.to_dict()
    d["identity"] = f.identity
    # without a registered password scrub_tree changes no string: no copy
    data = json_object(stored_json(scrub_tree(d) if secrets_known() else d))
    return data, json.dumps(data)


def stored_json(v: object, sort_keys: bool = True) -> JSON:
    """`json.loads(json.dumps(v, default=str, sort_keys=sort_keys))`, without the text: dicts
    (in sorted key order unless told), keys as JSON writes them, tuples as lists, anything
    else as str()."""
    if v is None or isinstance(v, str | bool):
        return v
    if isinstance(v, int):
        return int(v)
    if isinstance(v, float):
        return float(v)
    if isinstance(v, dict):
        items = sorted(v.items()) if sort_keys else v.items()
        return {_json_key(k): stored_json(x, sort_keys) for k, x in items}
    if isinstance(v, list | tuple):
        return [stored_json(x, sort_keys) for x in v]
    return str(v)


def _json_key(k: object) -> str:
    if isinstance(k, str):
        return k
    if k is None or isinstance(k, bool):
        return json.dumps(k)
    if isinstance(k, int | float):
        return json.dumps(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


@frozen
class FindingRow:
    fingerprint: str
    target: str
    rule: str
    severity: str
    subject: str
    status: str
    first_seen: float
    fired_at: float | None
    last_seen: float
    resolved_at: float | None
    data: JSONObject

    @classmethod
    def from_row(cls, r: Row) -> FindingRow:
        return cls(
            to_str(r["fingerprint"]),
            to_str(r["target"]),
            to_str(r["rule"]),
            to_str(r["severity"]),
            to_str(r["subject"]),
            to_str(r["status"]),
            to_float(r["first_seen"]),
            opt_float(r["fired_at"]),
            to_float(r["last_seen"]),
            opt_float(r["resolved_at"]),
            json_object(loads(r["data"])),
        )

    @property
    def summary(self) -> str:
        return to_str(self.data.get("summary"))

    @property
    def finding(self) -> Finding:
        d = self.data
        evidence = d.get("evidence")
        return Finding(
            rule=self.rule,
            severity=self.severity,
            target=self.target,
            subject=self.subject,
            summary=to_str(d.get("summary")),
            fix=to_str(d.get("fix")),
            evidence=dict(evidence) if isinstance(evidence, dict) else {},
            identity=d.get("identity"),
            confidence=to_str(d.get("confidence"), "high"),
            session=SessionIdentity.from_dict(d.get("session")),
        )


@mutable
class Transitions:
    """What one `State.update` changed, and what fires for the target afterwards (the rows
    just written, so routing and actions need not read them back)."""

    fired: list[FindingRow] = field(default_factory=list)
    resolved: list[FindingRow] = field(default_factory=list)
    pending: int = 0
    firing: list[FindingRow] = field(default_factory=list)


@frozen
class SentRow:
    """The last alert one receiver got for one finding."""

    fingerprint: str
    status: str
    severity: str
    first_sent: float
    last_sent: float

    @classmethod
    def from_row(cls, r: Row) -> SentRow:
        return cls(
            to_str(r["fingerprint"]),
            to_str(r["status"]),
            to_str(r["severity"]),
            to_float(r["first_sent"]),
            to_float(r["last_sent"]),
        )


@frozen
class AlertMessage:
    """What one alert message says (an outbox row's payload): a finding firing or resolved,
    or an action taken. The payload builders (alerts/payloads.py, pagerduty.py) read it."""

    kind: str  # finding | action
    status: str  # firing | resolved
    fingerprint: str
    rule: str
    severity: str
    target: str
    subject: str
    summary: str
    fix: str
    evidence: JSON
    starts_at: float
    ends_at: float | None
    valid_for: float
    queued_at: float
    confidence: str | None = None  # a finding's
    action: str | None = None  # an action's: terminated, would_terminate, ...
    idempotency_key: str | None = None  # set when it is sent (fingerprint-revision)

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "kind": self.kind,
            "status": self.status,
            "fingerprint": self.fingerprint,
            "rule": self.rule,
            "severity": self.severity,
            "target": self.target,
            "subject": self.subject,
        }
        if self.action is not None:
            out["action"] = self.action
        out |= {"summary": self.summary, "fix": self.fix, "evidence": self.evidence}
        if self.confidence is not None:
            out["confidence"] = self.confidence
        out |= {
            "starts_at": self.starts_at,
            "ends_at": self.ends_at,
            "valid_for": self.valid_for,
            "queued_at": self.queued_at,
        }
        if self.idempotency_key is not None:
            out["idempotency_key"] = self.idempotency_key
        return out

    @classmethod
    def from_json(cls, value: object) -> AlertMessage:
        d = json_object(as_json(value))
        return cls(
            kind=to_str(d.get("kind"), "finding"),
            status=to_str(d.get("status")),
            fingerprint=to_str(d.get("fingerprint")),
            rule=to_str(d.get("rule")),
            severity=to_str(d.get("severity")),
            target=to_str(d.get("target")),
            subject=to_str(d.get("subject")),
            summary=to_str(d.get("summary")),
            fix=to_str(d.get("fix")),
            evidence=d.get("evidence", {}),
            starts_at=to_float(d.get("starts_at")),
            ends_at=opt_float(d.get("ends_at")),
            valid_for=to_float(d.get("valid_for")),
            queued_at=to_float(d.get("queued_at")),
            confidence=opt_str(d.get("confidence")),
            action=opt_str(d.get("action")),
            idempotency_key=opt_str(d.get("idempotency_key")) or None,
        )


@frozen
class ActionRecord:
    """An action the daemon took or would take on a firing finding (terminate): what
    `actions.detail` stores and what is announced. `decision` is the session and the decision
    as actions/guards.Decision describes them; the rest is the finding acted on."""

    decision: JSONObject
    rule: str
    fingerprint: str
    subject: str
    severity: str
    finding: str  # the finding's summary
    dry_run: bool
    summary: str

    @property
    def action(self) -> str:
        return to_str(self.decision.get("action"))

    @property
    def target(self) -> str:
        return to_str(self.decision.get("target"))

    @property
    def reason(self) -> str:
        return to_str(self.decision.get("reason"))

    @property
    def who(self) -> str:
        """user@application, as far as the session said."""
        user, app = to_str(self.decision.get("user")), opt_str(self.decision.get("application"))
        return f"{user}@{app}" if app else user

    def text(self, key: str) -> str:
        """One of the decision's texts (statement, query, error, ...); '' when it has none."""
        return to_str(self.decision.get(key))

    def to_json(self) -> JSONObject:
        return self.decision | {
            "rule": self.rule,
            "fingerprint": self.fingerprint,
            "subject": self.subject,
            "severity": self.severity,
            "finding": self.finding,
            "dry_run": self.dry_run,
            "summary": self.summary,
        }

    @classmethod
    def from_json(cls, value: object) -> ActionRecord:
        d = json_object(as_json(value))
        own = ("rule", "fingerprint", "subject", "severity", "finding", "dry_run", "summary")
        return cls(
            decision={k: v for k, v in d.items() if k not in own},
            rule=to_str(d.get("rule")),
            fingerprint=to_str(d.get("fingerprint")),
            subject=to_str(d.get("subject")),
            severity=to_str(d.get("severity"), "warning"),
            finding=to_str(d.get("finding")),
            dry_run=bool(d.get("dry_run")),
            summary=to_str(d.get("summary")),
        )


@frozen
class OutboxMessage:
    """One queued alert message (a row of `outbox`, its payload read as an AlertMessage)."""

    id: int
    receiver: str
    fingerprint: str
    event: str
    payload: AlertMessage
    attempts: int
    rev: int

    @classmethod
    def of(cls, r: JSONObject) -> OutboxMessage:
        return cls(
            to_int(r.get("id")),
            to_str(r.get("receiver")),
            to_str(r.get("fingerprint")),
            to_str(r.get("event")),
            AlertMessage.from_json(r.get("payload")),
            to_int(r.get("attempts")),
            to_int(r.get("rev")),
        )


# -- deadlocks ---------------------------------------------------------------------------------
# A deadlock past its parser: built by deadlocks/record.py (diagnosed there, once), written to
# the state and to every output as `to_json()`, read back with `from_json()`.


def _unquote(name: str) -> str:
    return name.strip().strip('`"')


@frozen
class Diagnosis:
    """The shape a deadlock matches, the rules it concerns, why, and the fix (decided by
    deadlocks/diagnosis.py; carried by the DeadlockRecord)."""

    pattern: str  # queue-claim-vs-delete | queue-delete-vs-delete |
    # queue-maintenance-vs-workers | queue-legacy-index | queue-claim-vs-claim |
    # queue-claim-pileup | queue-unclear | gap-insert-intention | opposite-order-rows |
    # lock-upgrade | too-deep | ambiguous | generic
    rules: tuple[str, ...]
    explanation: str
    fix: str

    @property
    def is_queue_problem(self) -> bool:
        return self.pattern.startswith("queue-")

    def to_dict(self) -> JSONObject:
        return {
            "pattern": self.pattern,
            "rules": [*self.rules],
            "explanation": self.explanation,
            "fix": self.fix,
        }

    @classmethod
    def from_json(cls, value: object) -> Diagnosis:
        """A diagnosis as a record stored it (anything missing reads as the generic shape)."""
        d = value if isinstance(value, dict) else {}
        return cls(
            pattern=to_str(d.get("pattern"), "generic"),
            rules=str_list(d.get("rules")),
            explanation=to_str(d.get("explanation")),
            fix=to_str(d.get("fix")),
        )


def in_scope(databases: Iterable[str], scope: str | None) -> bool:
    """DeadlockRecord.in_scope of a record touching these databases (as printed, unquoted)."""
    dbs = tuple(databases)
    return scope is None or not dbs or any(same(d, scope) for d in dbs)


def _obj(value: object) -> JSONObject:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[JSON]:
    return value if isinstance(value, list) else []


@frozen
class TrxRecord:
    """One participant as the record shows it (DeadlockTrx.to_dict's keys, and what its
    statement says of where it came from)."""

    n: int
    trx_id: str | None
    thread_id: int | None
    user: str | None
    host: str | None
    query: str | None
    active_seconds: int | None
    lock_structs: int | None
    row_locks: int | None
    undo_entries: int | None
    tables: tuple[str, ...]
    victim: bool
    blocked_by: int | None = None  # n of the transaction whose lock it waits for
    origin: JSONObject = field(default_factory=dict)  # framework tags (sqlpatterns.tags)
    absent: frozenset[str] = frozenset()  # keys an older version did not store

    def to_json(self) -> JSONObject:
        out: JSONObject = {
            "n": self.n,
            "trx_id": self.trx_id,
            "thread_id": self.thread_id,
            "user": self.user,
            "host": self.host,
            "query": self.query,
            "active_seconds": self.active_seconds,
            "lock_structs": self.lock_structs,
            "row_locks": self.row_locks,
            "undo_entries": self.undo_entries,
            "tables": list(self.tables),
            "victim": self.victim,
            "blocked_by": self.blocked_by,
            "origin": {k: as_json(v) for k, v in self.origin.items()},
        }
        return {k: v for k, v in out.items() if k not in self.absent}

    @classmethod
    def from_json(cls, value: object) -> TrxRecord:
        d = _obj(value)
        return cls(
            n=to_int(d.get("n")),
            trx_id=opt_str(d.get("trx_id")),
            thread_id=opt_int(d.get("thread_id")),
            user=opt_str(d.get("user")),
            host=opt_str(d.get("host")),
            query=opt_str(d.get("query")),
            active_seconds=opt_int(d.get("active_seconds")),
            lock_structs=opt_int(d.get("lock_structs")),
            row_locks=opt_int(d.get("row_locks")),
            undo_entries=opt_int(d.get("undo_entries")),
            tables=str_list(d.get("tables")),
            victim=bool(d.get("victim")),
            blocked_by=opt_int(d.get("blocked_by")),
            origin=dict(_obj(d.get("origin"))),
            absent=frozenset(k for k in ("blocked_by", "origin") if k not in d),
        )


@frozen
class LockRecord:
    """One lock as the record shows it (DeadlockLock.to_dict's keys)."""

    n: int
    waiting: bool
    mode: str | None
    db: str | None
    table: str | None
    index: str | None
    special: str | None
    insert_intention: bool

    def to_json(self) -> JSONObject:
        return {
            "n": self.n,
            "waiting": self.waiting,
            "mode": self.mode,
            "db": self.db,
            "table": self.table,
            "index": self.index,
            "special": self.special,
            "insert_intention": self.insert_intention,
        }

    @classmethod
    def from_json(cls, value: object) -> LockRecord:
        d = _obj(value)
        return cls(
            n=to_int(d.get("n")),
            waiting=bool(d.get("waiting")),
            mode=opt_str(d.get("mode")),
            db=opt_str(d.get("db")),
            table=opt_str(d.get("table")),
            index=opt_str(d.get("index")),
            special=opt_str(d.get("special")),
            insert_intention=bool(d.get("insert_intention")),
        )


@frozen
class DeadlockRecord:
    """One deadlock, diagnosed once, as every reader after the parser sees it."""

    at: str | None
    victim: int | None
    transactions: tuple[TrxRecord, ...]
    locks: tuple[LockRecord, ...]
    diagnosis: Diagnosis
    key: str
    too_deep: bool = False
    victim_inferred: bool = False
    victim_evidence: str | None = None
    ambiguity: str | None = None  # set: the structure is ambiguous, no victim named
    truncated: bool = False
    unverified: tuple[str, ...] = ()
    unparsed: tuple[str, ...] = ()
    inconsistencies: tuple[str, ...] = ()
    source: str | None = None  # "log_file" when the daemon's tail read it
    target: str | None = None  # `deadlocks --history`: the target it was recorded for

    # -- what readers ask --------------------------------------------------------------

    @property
    def victim_trx(self) -> TrxRecord | None:
        return next((t for t in self.transactions if t.victim), None)

    def databases(self) -> set[str]:
        """The databases (schemas) of the tables it touches, as printed (unquoted)."""
        return set(self._databases)

    @cached_property
    def _databases(self) -> frozenset[str]:
        """databases(), once per record (the latest deadlock's record is shared by a server's
        targets: MY102 and the journal ask every target-cycle)."""
        out = {_unquote(lk.db) for lk in self.locks if lk.db}
        for t in self.transactions:
            for table in t.tables:
                db, dot, _ = table.partition(".")
                if dot and db:
                    out.add(_unquote(db))
        return frozenset(out)

    def in_scope(self, scope: str | None) -> bool:
        """Whether it is the deadlock of a target scoped to `scope`: one of its tables is
        there, or none is known (truncated text: dropping it would hide what may be ours)."""
        return scope is None or in_scope(self._databases, scope)

    def tagged(self, *, source: str | None = None, target: str | None = None) -> DeadlockRecord:
        return replace(self, source=source or self.source, target=target or self.target)

    # -- JSON ----------------------------------------------------------------------------

    def to_json(self) -> JSONObject:
        """The SPEC §6 deadlock object with its diagnosis and key (key order as always)."""
        out: JSONObject = {
            "at": self.at,
            "victim": self.victim,
            "transactions": [t.to_json() for t in self.transactions],
            "locks": [lk.to_json() for lk in self.locks],
        }
        if self.victim_inferred:
            out["victim_inferred"] = True
        if self.victim_evidence is not None:
            out["victim_evidence"] = self.victim_evidence
        if self.ambiguity is not None:
            out["ambiguous"] = True
            out["ambiguity"] = self.ambiguity
        if self.truncated:
            out["truncated"] = True
        for name, items in (
            ("unverified", self.unverified),
            ("unparsed", self.unparsed),
            ("inconsistencies", self.inconsistencies),
        ):
            if items:
                out[name] = list(items)
        out["diagnosis"] = self.diagnosis.to_dict()
        out["key"] = self.key
        out["too_deep"] = self.too_deep
        if self.source is not None:
            out["source"] = self.source
        if self.target is not None:
            out["target"] = self.target
        return out

    @classmethod
    def from_json(cls, value: object) -> DeadlockRecord:
        """A record as `to_json` wrote it, or as an older version stored it in the state."""
        d = _obj(value)
        ambiguous = bool(d.get("ambiguous"))
        return cls(
            at=opt_str(d.get("at")),
            victim=opt_int(d.get("victim")),
            transactions=tuple(TrxRecord.from_json(t) for t in _list(d.get("transactions"))),
            locks=tuple(LockRecord.from_json(lk) for lk in _list(d.get("locks"))),
            diagnosis=Diagnosis.from_json(d.get("diagnosis")),
            key=to_str(d.get("key")),
            too_deep=bool(d.get("too_deep")),
            victim_inferred=bool(d.get("victim_inferred")),
            victim_evidence=opt_str(d.get("victim_evidence")),
            ambiguity=to_str(d.get("ambiguity")) if ambiguous else None,
            truncated=bool(d.get("truncated")),
            unverified=str_list(d.get("unverified")),
            unparsed=str_list(d.get("unparsed")),
            inconsistencies=str_list(d.get("inconsistencies")),
            source=opt_str(d.get("source")),
            target=opt_str(d.get("target")),
        )
