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
        "dead_letter", "dlq", "poisoned", "revoked", "stuck", "gave_up",
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
    queue_only: bool = False  # values only a queue uses
    observed: bool = False  # read from the rows (not an enum's labels): what is there now

    def values(self, state: str) -> tuple[str, ...]:
        return self.states.get(state, ())


def map_statuses(values: list[str] | tuple[str, ...], observed: bool = False) -> StatusMap:
    states: dict[str, list[str]] = {s: [] for s in STATE_WORDS}
    unmapped: list[str] = []
    numeric = bool(values) and all(re.fullmatch(r"-?\d+", v.strip()) for v in values)
    for v in values:
        st = None if numeric else state_of(v)
        (states[st] if st else unmapped).append(v)
    norm = {v.strip().lower().replace("-", "_").replace(" ", "_") for v in values}
    queue_like = bool(states["running"]) or bool(norm & QUEUE_ONLY)
    return StatusMap(
        {k: tuple(v) for k, v in states.items()},
        tuple(unmapped),
        numeric,
        queue_like,
        bool(norm & QUEUE_ONLY),
        observed,
    )


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
    strict_status: bool = False  # ... and only a queue uses them (no claim column beside)
    results: bool = False  # finished runs beside a queue: only its failures are read
    columns: tuple[str, ...] = ()
    enums: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def unjudged(self, statuses: StatusMap | None) -> dict[str, str]:
        """backlog / stuck / failed -> why the table cannot tell it (empty: all judged)."""
        return unjudged(self.roles, statuses)


# Words of a table that keeps finished runs (results, completed tasks) beside a queue table.
RESULT_WORDS = frozenset(("completed", "finished", "done", "result", "results", "meta", "history"))
_JOB_WORDS = frozenset(("task", "tasks", "job", "jobs", "run", "runs"))


# Words of a table whose every row is a failure (a dead-letter table beside a queue).
FAILURE_WORDS = frozenset(("failed", "failures", "failure", "dead", "dlq", "deadletter", "errors"))


def failures_named(table: str) -> bool:
    """failed_tasks, job_failures, dead_letter_jobs (with a queue word, not failed_logins)."""
    base = table.rsplit(".", 1)[-1].strip('`"').lower()
    return queue_named(base) and not FAILURE_WORDS.isdisjoint(base.split("_"))


def results_named(table: str) -> bool:
    """completed_jobs, background_task_completedtask, celery_taskmeta, job_results."""
    base = table.rsplit(".", 1)[-1].strip('`"').lower()
    for word in base.split("_"):
        if word in RESULT_WORDS:
            return True
        for stem in RESULT_WORDS:
            if (word.startswith(stem) and word[len(stem) :] in _JOB_WORDS) or (
                word.endswith(stem) and word[: -len(stem)] in _JOB_WORDS
            ):
                return True
    return False


def recognise_shape(
    columns: dict[str, str],
    table: str,
    indexed: frozenset[str] = frozenset(),
    enums: dict[str, tuple[str, ...]] | None = None,
) -> Reading | None:
    """A table no library module knows, by its shape: a queue needs a runnable-at time, work
    (a payload or job type) and a claim (claimed at/by, lease, heartbeat) or a status whose
    values are a queue's; a results table (finished runs: a success flag, or a results name
    with an outcome) is read for its failures only. Partial evidence is a question (DW002),
    never a finding."""
    enums = {k.lower(): v for k, v in (enums or {}).items()}
    roles = map_roles(columns, enums)
    claim = [r for r in CLAIM_ROLES if r in roles]
    work = "payload" in roles or "job_type" in roles
    runnable = "runnable_at" in roles
    timed = "created_at" in roles or "updated_at" in roles
    evidence = [f"{r}={roles[r]}" for r in roles if r not in ("job_id", "created_at", "updated_at")]
    lower = {c.lower() for c in (roles.get(r) for r in ("runnable_at", "status", "queue")) if c}
    if indexed & lower:
        evidence.append("indexed: " + ", ".join(sorted(indexed & lower)))
    named = queue_named(table)
    if named:
        evidence.append("queue-like name")
    cols = tuple(sorted(columns, key=str.lower))

    def read(verdict: Verdict = "queue", **kw: bool) -> Reading:
        return Reading(roles, verdict, tuple(evidence), columns=cols, enums=enums, **kw)

    if business_named(table):
        # an application's record: only a worker's identity or heartbeat makes it a job table
        if runnable and work and ("claimed_by" in roles or "heartbeat" in roles):
            return read()
        return None
    outcome = "status" in roles or "failed_at" in roles or "error" in roles
    if work and outcome and failures_named(table) and "status" not in roles:
        # a dead-letter table: every row is a failure, timed by its failed-at, else creation
        if "failed_at" not in roles and "created_at" in roles:
            roles["failed_at"] = roles.pop("created_at")
        if "failed_at" in roles:
            evidence.append("failures table: every row a failure")
            return read(results=True)
    # (a run-at time beside a status: rows live through a queue's states there, the finished
    # ones kept — a queue, whatever its name says)
    kept = results_named(table) and outcome and not (runnable and "status" in roles)
    if work and ("succeeded" in roles or kept):
        evidence.append("results table: finished runs, read for failures only")
        return read(results=True)
    # a payload or job type says work; so does a queue's name beside a worker's own claim
    # (who holds it, a lease, a heartbeat, a held flag: not a to-do list's started_at)
    strong = [r for r in claim if r != "claimed_at"]
    if runnable and (work or (named and strong)) and claim:
        return read()
    if runnable and work and "status" in roles:
        return read(needs_status=True)
    if timed and work and "status" in roles:
        # no runnable-at: the enqueue / last-change time stands for it; a queue's name and a
        # claim say queue, else the status values must (a claim beside them: a running
        # value; no claim: words only a queue uses)
        if claim and named:
            return read()
        return read(needs_status=True, strict_status=not claim)
    if runnable and "payload" in roles and named:
        return read()  # a due time, a payload, a queue's name: what is due is the backlog
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
    ]
    if work:  # work in a named queue, with a priority: huey's task (no time at all)
        signals += ["work"] + [r for r in ("queue", "priority") if r in roles]
    if (named and len(signals) >= 2) or ((runnable or claim) and len(signals) >= 3):
        return read("question")
    return None


def _any(statuses: StatusMap) -> bool:
    return bool(statuses.unmapped) or any(statuses.states.values())


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
    if not any(r in roles for r in ("runnable_at", "created_at", "updated_at")):
        # (a waiting row's last change is when it became waiting: its age, said in evidence)
        out["backlog"] = (
            "no runnable-at, created-at or last-change time on waiting rows: backlog age unknown"
        )
    elif no_states and not any(r in roles for r in CLAIM_ROLES):
        out["backlog"] = "waiting rows cannot be told from claimed or finished ones"
    claim_time = any(r in roles for r in ("claimed_at", "heartbeat", "claim_expires_at"))
    if not claim_time:
        if "updated_at" in roles and (
            has_status or "claimed_by" in roles or "claimed_flag" in roles
        ):
            pass  # claim age read from updated_at (said in evidence)
        else:
            out["stuck"] = "no claim time (locked/reserved at, heartbeat, lease): stuck unknown"
    elif no_states and "claimed_at" not in roles and "claimed_by" not in roles:
        out["stuck"] = "claimed rows cannot be told (status codes unknown, no claim marker)"
    outcome = has_status or any(r in roles for r in ("finished_at", "failed_at", "succeeded"))
    if "stuck" not in out and not outcome and any(r in roles for r in CLAIM_ROLES):
        out["stuck"] = (
            "no status and no finished or failed marker: a claimed row looks the same "
            "finished, failed or orphaned"
        )
    # failures are told by the status where it names a failed state, or where the values read
    # from the rows record outcomes (a done value: a failure would be written as a word too),
    # or where there are no rows to judge
    fail_states = statuses is not None and (
        bool(statuses.values("failed"))
        or (statuses.observed and (bool(statuses.values("done")) or not _any(statuses)))
    )
    markers = (
        "failed_at" in roles
        or "succeeded" in roles
        or ("attempts" in roles and "max_attempts" in roles)
    )
    if not fail_states and not markers:
        out["failed"] = (
            "no failure record (a failed status value, failed-at time, or attempts with max "
            "attempts): failures unknown"
        )
    return out
