"""The one queue model by meaning: a job table's columns read as ROLES (when a job may run,
whether and since when it is claimed, by whom, its status, attempts, failure markers ...),
a status column's values mapped to the five states, and whether a table is a queue at all.
Pure: the probe feeds it catalog rows; docs/queues.md shows the role table.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

# Role -> column names seen in the wild (the twelve known libraries and the job libraries of
# docs/queues.md), most specific first. A role takes the first name present with a fitting type.
# fmt: off
ROLES: dict[str, tuple[str, ...]] = {
    "job_id": ("id", "job_id", "msg_id", "message_id", "jid", "uuid", "key",),
    "queue": ("queue", "queue_name", "q_name", "qname", "tube", "channel", "queue_id",),
    "payload": (
        "payload", "args", "arguments", "kwargs", "params", "task_params", "job_args", "data",
        "message", "body", "job_data", "job", "func_args", "handler",
    ),
    "job_type": (
        "handler", "job_class", "job_type", "task_name", "task_identifier", "task", "worker", "kind",
        "entrypoint", "function", "func", "func_name", "job_name", "class_name", "handler_name",
        "callable", "method",
    ),
    "runnable_at": (
        "run_at", "available_at", "scheduled_at", "scheduled_for", "execute_at",
        "execute_after", "start_after", "not_before", "visible_at", "vt", "run_after",
        "next_run_at", "process_at", "perform_at", "schedule_at", "eta", "ready_at", "retry_at",
        "next_attempt_at", "wait_until", "delay_until",
    ),
    "claimed_at": (
        "reserved_at", "locked_at", "claimed_at", "dequeued_at", "picked_at", "leased_at",
        "attempted_at", "fetched_at", "taken_at", "started_at", "started_on", "lock",
        "processing_started_at", "acquired_at",
    ),
    "claimed_by": (
        "locked_by", "claimed_by", "reserved_by", "worker_id", "lock_owner", "picked_by",
        "lease_owner", "worker_name", "queue_manager_id",
    ),
    "claim_expires_at": (
        "locked_until", "lease_expires_at", "lease_until", "lock_expires_at", "reserved_until",
        "claim_expires_at", "lease_expiry", "visible_until", "invisible_until",
    ),
    "heartbeat": (
        "heartbeat", "heartbeat_at", "last_heartbeat", "last_heartbeat_at", "heartbeat_on",
        "alive_at", "pinged_at", "keepalive_at", "touched_at",
    ),
    "timeout": (
        "timeout", "timeout_seconds", "lock_timeout", "visibility_timeout", "expire_seconds",
        "expire_in", "lease_seconds", "max_run_time",
    ),
    "status": ("status", "state", "job_status", "job_state",),
    "attempts": (
        "attempts", "attempt", "retries", "retry_count", "attempt_count", "tries", "try_count",
        "error_count", "executions_count", "read_ct", "retried", "failure_count", "run_count",
    ),
    "max_attempts": (
        "max_attempts", "max_retries", "max_tries", "retry_limit", "attempts_limit",
        "max_attempt", "retry_max",
    ),
    "finished_at": (
        "finished_at", "completed_at", "done_at", "succeeded_at", "processed_at", "ended_at",
        "completed_on", "finished_on", "performed_at",
    ),
    "failed_at": (
        "failed_at", "discarded_at", "errored_at", "dead_at", "died_at", "failed_on",
        "dead_lettered_at",
    ),
    "error": (
        "last_error", "error", "errors", "error_message", "exception", "failure_reason",
        "error_text", "last_exception", "traceback", "failed_reason", "last_error_message",
    ),
    "priority": ("priority", "prio",),
    "created_at": (
        "created_at", "enqueued_at", "inserted_at", "queued_at", "created_on", "submitted_at",
        "added_at", "created",
    ),
    "updated_at": ("updated_at", "modified_at", "mtime", "updated_on", "changed_at", "updated",),
}
# fmt: on
TIME_ROLES = frozenset(
    {
        "runnable_at",
        "claimed_at",
        "claim_expires_at",
        "heartbeat",
        "finished_at",
        "failed_at",
        "created_at",
        "updated_at",
    }
)
INT_ROLES = frozenset({"attempts", "max_attempts", "priority"})
CLAIM_ROLES = ("claimed_at", "claimed_by", "claim_expires_at", "heartbeat")
# Every name the catalog query asks for, and the ones that make a table worth a look alone.
ROLE_COLUMNS: frozenset[str] = frozenset(n for names in ROLES.values() for n in names)
CORE_COLUMNS: frozenset[str] = frozenset(
    n for r in ("runnable_at", *CLAIM_ROLES, "attempts", "max_attempts") for n in ROLES[r]
)

# Business nouns: a table so named is an application's record, not a job (even with a status,
# timestamps, attempts and an error), unless a worker's claim says otherwise.
# fmt: off
BUSINESS = frozenset((
    "order", "orders", "order_items", "payment", "payments", "invoice", "invoices", "user",
    "users", "account", "accounts", "customer", "customers", "product", "products",
    "subscription", "subscriptions", "shipment", "shipments", "cart", "carts", "transaction",
    "transactions", "refund", "refunds", "charge", "charges", "booking", "bookings",
    "reservation", "reservations", "appointment", "appointments", "ticket", "tickets", "post",
    "posts", "comment", "comments", "article", "articles", "payout", "payouts", "transfer",
    "transfers", "checkout", "checkouts", "application", "applications", "job_applications",
    "candidate", "candidates", "listing", "listings", "quote", "quotes", "contract",
    "contracts", "lead", "leads", "campaign", "campaigns", "coupon", "coupons", "sessions",
    "session", "inventory", "stock",
))
# fmt: on
# Words of a queue's table name; a POSIX regex too (the PostgreSQL catalog query uses it).
QUEUE_WORDS_PATTERN = r"(^|_)(jobs?|queues?|tasks?|q|outbox|work_items?|deferred)(_|$)"
_QUEUE_WORDS = re.compile(QUEUE_WORDS_PATTERN)


def queue_named(table: str) -> bool:
    """A job / queue / task / outbox word in the table's name."""
    return _QUEUE_WORDS.search(table.rsplit(".", 1)[-1].strip('`"').lower()) is not None


def business_named(table: str) -> bool:
    """An application's record by name (orders, shop_order_items), unless a queue word says
    it holds jobs (order_jobs, payment_tasks)."""
    base = table.rsplit(".", 1)[-1].strip('`"').lower()
    return base in BUSINESS or (
        not queue_named(base) and any(w in BUSINESS for w in base.split("_"))
    )


TypeKind = Literal["time", "epoch", "interval", "int", "text", "enum", "bool", "json", "other"]


def type_kind(ctype: str) -> TypeKind:
    """What a column's SQL type (format_type / COLUMN_TYPE) holds, for role fitting."""
    t = ctype.lower().strip()
    if t.startswith(("enum(", "set(")):
        return "enum"
    if t.endswith("[]"):
        return "other"
    if t.startswith(("timestamp", "datetime", "date")):
        return "time"
    if t.startswith("interval"):
        return "interval"
    if t.startswith(("tinyint(1)", "boolean", "bool", "bit")):
        return "bool"
    if t.startswith(("smallint", "integer", "int", "bigint", "mediumint", "tinyint")):
        return "int"
    if t.startswith(("numeric", "decimal", "double", "real", "float")):
        return "epoch"
    if t.startswith(("json", "jsonb")):
        return "json"
    if t.startswith(
        (
            "character",
            "varchar",
            "char",
            "text",
            "tinytext",
            "mediumtext",
            "longtext",
            "uuid",
            "citext",
            "name",
        )
    ):
        return "text"
    return "other"  # a user-defined type: PostgreSQL enums come with their labels


def _fits(role: str, kind: TypeKind, enum: bool) -> bool:
    if role in TIME_ROLES:
        return kind in ("time", "int", "epoch")
    if role in INT_ROLES:
        return kind in ("int", "epoch")
    if role == "timeout":
        return kind in ("int", "epoch", "interval")
    if role == "status":
        return kind in ("text", "enum", "int") or enum
    if role in ("queue", "job_type", "claimed_by", "job_id"):
        return kind in ("text", "int", "enum") or enum
    if role == "error":
        return kind in ("text", "json", "other")
    return True  # payload: any type


def map_roles(
    columns: dict[str, str], enums: dict[str, tuple[str, ...]] | None = None
) -> dict[str, str]:
    """role -> column: the first name of each role present with a type that fits it; a column
    serves one role only (the first role listing it)."""
    cols = {c.lower(): t for c, t in columns.items()}
    enums = enums or {}
    out: dict[str, str] = {}
    used: set[str] = set()
    for role, names in ROLES.items():
        for name in names:
            if (
                name in cols
                and name not in used
                and _fits(role, type_kind(cols[name]), name in enums)
            ):
                out[role] = name
                used.add(name)
                break
    return out


# Status words by meaning (lower case); a value matches a word exactly or as a word of it.
# fmt: off
STATE_WORDS: dict[str, frozenset[str]] = {
    "waiting": frozenset((
        "queued", "enqueued", "pending", "available", "scheduled", "new", "waiting", "ready",
        "todo", "created", "retry", "retryable", "retrying", "runnable", "delayed", "deferred",
        "open", "idle", "unprocessed",
    )),
    "running": frozenset((
        "running", "active", "picked", "doing", "started", "processing", "locked", "reserved",
        "in_progress", "inprogress", "executing", "claimed", "consumed", "working", "busy",
        "leased", "taken", "dequeued", "acquired",
    )),
    "failed": frozenset((
        "failed", "failure", "dead", "error", "errored", "discarded", "cancelled", "canceled",
        "abandoned", "aborted", "rejected", "killed", "expired", "timeout", "timed_out",
        "dead_letter", "dlq", "poisoned",
    )),
    "done": frozenset((
        "done", "succeeded", "success", "successful", "completed", "complete", "finished", "ok",
        "processed", "archived", "acked",
    )),
}
# fmt: on
# Values only a queue uses (an order can be 'pending' or 'completed', not 'queued' or 'doing').
# fmt: off
QUEUE_ONLY = frozenset((
    "queued", "enqueued", "available", "retryable", "retrying", "runnable", "picked", "doing",
    "executing", "claimed", "consumed", "todo", "reserved", "dequeued", "discarded",
    "dead_letter", "leased", "in_progress",
))
# fmt: on


def state_of(value: str) -> str | None:
    """waiting / running / failed / done for a status value, None when it means none of them
    (a number, or a word of no queue)."""
    v = value.strip().lower().replace("-", "_").replace(" ", "_")
    for state, words in STATE_WORDS.items():
        if v in words:
            return state
    parts = [p for p in v.split("_") if p]
    for state, words in STATE_WORDS.items():
        if parts and parts[-1] in words:  # job_failed, task_done
            return state
    return None


@dataclass(frozen=True)
class StatusMap:
    """A status column's values read from the data (or the enum's labels), by state."""

    states: dict[str, tuple[str, ...]]  # waiting/running/failed/done -> values
    unmapped: tuple[str, ...]
    numeric: bool  # integer codes: their meaning is not in the table
    queue_like: bool  # values only a queue uses, or a claimed (running) state

    def values(self, state: str) -> tuple[str, ...]:
        return self.states.get(state, ())


def map_statuses(values: list[str] | tuple[str, ...]) -> StatusMap:
    states: dict[str, list[str]] = {s: [] for s in STATE_WORDS}
    unmapped: list[str] = []
    numeric = bool(values) and all(re.fullmatch(r"-?\d+", v.strip()) for v in values)
    for v in values:
        st = None if numeric else state_of(v)
        (states[st] if st else unmapped).append(v)
    norm = {v.strip().lower().replace("-", "_").replace(" ", "_") for v in values}
    queue_like = bool(states["running"]) or bool(norm & QUEUE_ONLY)
    return StatusMap({k: tuple(v) for k, v in states.items()}, tuple(unmapped), numeric, queue_like)


Verdict = Literal["queue", "question"]


@dataclass(frozen=True)
class Reading:
    """What the model makes of one table from its catalog entry: roles, and whether it is a
    queue ('queue'), looks like one without enough to judge it ('question', a DW002), or is
    not one (recognise returns None)."""

    roles: dict[str, str]
    verdict: Verdict
    evidence: tuple[str, ...]  # why, in words
    needs_status: bool = False  # a queue only if its status values are queue-like
    columns: tuple[str, ...] = ()
    enums: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def unjudged(self, statuses: StatusMap | None) -> dict[str, str]:
        """backlog / stuck / failed -> why the table cannot tell it (empty: all judged)."""
        return unjudged(self.roles, statuses)


def recognise_shape(
    columns: dict[str, str],
    table: str,
    indexed: frozenset[str] = frozenset(),
    enums: dict[str, tuple[str, ...]] | None = None,
) -> Reading | None:
    """A table no library module knows, by its shape: a queue needs a runnable-at time, work
    (a payload or job type) and a claim (claimed at/by, lease, heartbeat) or a status whose
    values are a queue's. Partial evidence is a question (DW002), never a finding."""
    enums = {k.lower(): v for k, v in (enums or {}).items()}
    roles = map_roles(columns, enums)
    claim = [r for r in CLAIM_ROLES if r in roles]
    work = "payload" in roles or "job_type" in roles
    runnable = "runnable_at" in roles
    evidence = [f"{r}={roles[r]}" for r in roles if r not in ("job_id", "created_at", "updated_at")]
    if indexed & {roles.get("runnable_at"), roles.get("status"), roles.get("queue")} - {None}:
        evidence.append("indexed: " + ", ".join(sorted(indexed & set(roles.values()))))
    named = queue_named(table)
    if named:
        evidence.append("queue-like name")
    cols = tuple(sorted(c.lower() for c in columns))
    if business_named(table):
        # an application's record: only a worker's identity or heartbeat makes it a job table
        if runnable and work and ("claimed_by" in roles or "heartbeat" in roles):
            return Reading(roles, "queue", tuple(evidence), columns=cols, enums=enums)
        return None
    if runnable and work and claim:
        return Reading(roles, "queue", tuple(evidence), columns=cols, enums=enums)
    if runnable and work and "status" in roles:
        return Reading(
            roles, "queue", tuple(evidence), needs_status=True, columns=cols, enums=enums
        )
    signals = [
        r
        for r in (
            "runnable_at",
            *CLAIM_ROLES,
            "attempts",
            "max_attempts",
            "status",
            "failed_at",
            "error",
        )
        if r in roles
    ] + (["work"] if work else [])
    if (named and len(signals) >= 2) or ((runnable or claim) and len(signals) >= 3):
        return Reading(roles, "question", tuple(evidence), columns=cols, enums=enums)
    return None


def unjudged(roles: dict[str, str], statuses: StatusMap | None) -> dict[str, str]:
    """What a queue-shaped table cannot tell, and why (backlog / stuck / failed)."""
    out: dict[str, str] = {}
    has_status = "status" in roles
    if statuses is not None and statuses.numeric:
        out["states"] = (
            f"status {roles['status']} holds integer codes ({', '.join(statuses.unmapped[:8])}):"
            " their meaning is in the application, not the table"
        )
    elif statuses is not None and statuses.unmapped:
        out["states"] = (
            f"status values not understood ({', '.join(statuses.unmapped[:8])}): rows with them "
            "are counted in no state"
        )
    no_states = "states" in out and statuses is not None and statuses.numeric
    if "runnable_at" not in roles and "created_at" not in roles:
        out["backlog"] = "no runnable-at or created-at time on waiting rows: backlog age unknown"
    elif no_states and not any(r in roles for r in CLAIM_ROLES):
        out["backlog"] = "waiting rows cannot be told from claimed or finished ones"
    claim_time = any(r in roles for r in ("claimed_at", "heartbeat", "claim_expires_at"))
    if not claim_time:
        if "updated_at" in roles and (has_status or "claimed_by" in roles):
            pass  # claim age read from updated_at (said in evidence)
        else:
            out["stuck"] = "no claim time (locked/reserved at, heartbeat, lease): stuck unknown"
    elif no_states and "claimed_at" not in roles and "claimed_by" not in roles:
        out["stuck"] = "claimed rows cannot be told (status codes unknown, no claim marker)"
    fail_states = statuses is not None and bool(statuses.values("failed"))
    markers = "failed_at" in roles or ("attempts" in roles and "max_attempts" in roles)
    if not fail_states and not markers:
        out["failed"] = (
            "no failure record (a failed status value, failed-at time, or attempts with max "
            "attempts): failures unknown"
        )
    return out
