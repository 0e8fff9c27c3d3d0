"""The one queue model by meaning: a job table's columns read as ROLES (when a job may run,
whether and since when it is claimed, by whom, its status, attempts, failure markers ...), by
name in any spelling and by the words of a name. Status values: queues/statuses.py; whether a
table is a queue: queues/recognition.py. Pure; docs/queues.md shows the role table.
"""

from __future__ import annotations

import re
from typing import Literal

# Role -> column names seen in the wild (the twelve known libraries and the job libraries of
# docs/queues.md), most specific first. A role takes the first name present with a fitting type.
# fmt: off
ROLES: dict[str, tuple[str, ...]] = {
    "job_id": ("id", "job_id", "msg_id", "message_id", "jid", "uuid", "key",),
    "queue": ("queue", "queue_name", "q_name", "qname", "tube", "channel", "queue_id",),
    "payload": (
        "payload", "args", "arguments", "kwargs", "params", "task_params", "job_args", "data",
        "message", "body", "job_data", "job", "func_args", "handler", "args_kwargs",
        "task_args", "task_kwargs", "job_payload", "input",
    ),
    "job_type": (
        "handler", "job_class", "job_type", "task_name", "task_identifier", "task", "worker", "kind",
        "entrypoint", "function", "func", "func_name", "job_name", "class_name", "handler_name",
        "callable", "method", "task_path", "task_type", "func_path", "job_kind",
        "callable_path",
    ),
    "runnable_at": (
        "run_at", "available_at", "scheduled_at", "scheduled_for", "execute_at",
        "execute_after", "start_after", "not_before", "visible_at", "vt", "run_after",
        "next_run_at", "process_at", "perform_at", "schedule_at", "eta", "ready_at", "retry_at",
        "next_attempt_at", "wait_until", "delay_until", "scheduled", "execution_time",
        "next_execution_time", "scheduled_time",
        # a bare lock/lease time (not locked_at) is when the row's lock ENDS: the row is
        # runnable from then on, like pgmq's vt (django-q2's ORM broker)
        "lock", "lease",
    ),
    "claimed_at": (
        "reserved_at", "locked_at", "claimed_at", "dequeued_at", "picked_at", "leased_at",
        "attempted_at", "fetched_at", "taken_at", "started_at", "started_on",
        "processing_started_at", "acquired_at",
    ),
    "claimed_by": (
        "locked_by", "claimed_by", "reserved_by", "worker_id", "lock_owner", "picked_by",
        "lease_owner", "worker_name", "queue_manager_id", "taken_by", "processed_by",
    ),
    # a visibility flag: false while a consumer holds the row (kombu's SQL transport)
    "visible": ("visible", "is_visible",),
    # a flag set while a worker holds the row (db-scheduler's picked)
    "claimed_flag": (
        "picked", "locked", "is_locked", "claimed", "is_claimed", "reserved", "is_reserved",
        "taken", "in_progress", "is_running", "processing", "is_processing",
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
    "status": (
        "status", "state", "job_status", "job_state", "statename", "state_name", "status_name",
    ),
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
    # the outcome of a finished run as a boolean (a results table: django-q2's Task)
    "succeeded": ("success", "succeeded", "successful", "is_success", "ok",),
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
CLAIM_ROLES = (
    "claimed_at",
    "claimed_by",
    "claim_expires_at",
    "heartbeat",
    "visible",
    "claimed_flag",
)
BOOL_ROLES = frozenset({"visible", "succeeded", "claimed_flag"})
# Every name the catalog query asks for, and the ones that make a table worth a look alone.


def snake(name: str) -> str:
    """runAt / RunAt / run_at -> run_at (ORMs spell columns in camelCase: Prisma, TypeORM)."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def spellings(name: str) -> tuple[str, ...]:
    """A role name as catalogs hold it: run_at, runAt (quoted camelCase), runat (unquoted)."""
    head, *rest = name.split("_")
    return (name, head + "".join(w.capitalize() for w in rest), name.replace("_", ""))


ROLE_COLUMNS: frozenset[str] = frozenset(
    v for names in ROLES.values() for n in names for v in spellings(n)
)
CORE_COLUMNS: frozenset[str] = frozenset(
    v
    for r in ("runnable_at", *CLAIM_ROLES, "attempts", "max_attempts")
    for n in ROLES[r]
    for v in (*spellings(n), spellings(n)[1].lower())
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
    if role in BOOL_ROLES:
        return kind == "bool"
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
    """role -> column (as the catalog spells it): the first name of each role present, in any
    spelling (run_at, runAt, runat), with a type that fits it; a column serves one role only
    (the first role listing it). Then time columns by the words of their names."""
    enums = {k.lower(): v for k, v in (enums or {}).items()}
    index: dict[str, str] = {}  # spelling -> the column
    for c in columns:
        for key in (snake(c), c.lower(), c.lower().replace("_", "")):
            index.setdefault(key, c)
    out: dict[str, str] = {}
    used: set[str] = set()
    for role, names in ROLES.items():
        for name in names:
            col = index.get(name) or index.get(name.replace("_", ""))
            if (
                col is not None
                and col not in used
                and _fits(role, type_kind(columns[col]), col.lower() in enums)
            ):
                out[role] = col
                used.add(col)
                break
    # then by meaning: a time column no exact name placed, by the words of its name
    # (created_ts, started, stopped, date_done, last_failed_at, createdAt, fetchedat)
    for col, ctype in columns.items():
        if col in used or not _timeish(snake(col), type_kind(ctype)):
            continue
        words = _words(snake(col))
        for role, stems in TIME_STEMS:
            if role not in out and words & stems:
                out[role] = col
                used.add(col)
                break
    return out


def _words(name: str) -> set[str]:
    """The words of a column name, and a time suffix split off a squashed one (fetchedat)."""
    words = set(name.split("_"))
    for w in list(words):
        for suffix in ("at", "on", "ts", "time"):
            if w.endswith(suffix) and len(w) > len(suffix) + 3:
                words.add(w[: -len(suffix)])
    return words


# Time roles by a word of the column's name, most decisive first.
TIME_STEMS: tuple[tuple[str, frozenset[str]], ...] = (
    ("failed_at", frozenset(("failed", "errored", "died"))),
    ("finished_at", frozenset(("finished", "completed", "done", "ended", "stopped", "succeeded"))),
    (
        "claimed_at",
        frozenset(("started", "locked", "claimed", "reserved", "dequeued", "picked", "fetched")),
    ),
    ("created_at", frozenset(("created", "inserted", "enqueued", "queued", "submitted", "added"))),
    ("updated_at", frozenset(("updated", "modified", "changed"))),
)
_TIME_WORDS = frozenset(("ts", "time", "timestamp", "epoch", "ms", "at", "on"))


def _timeish(name: str, kind: TypeKind) -> bool:
    """A date/time column, or an integer one its name calls a time (created_ts, started_ms)."""
    return kind == "time" or (
        kind in ("int", "epoch")
        and (not _TIME_WORDS.isdisjoint(name.split("_")) or name.endswith(("at", "ts")))
    )
