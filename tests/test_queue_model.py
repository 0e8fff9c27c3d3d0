"""The one queue model by meaning (dbwatch/queues/roles.py): columns read as roles, a table
read as a queue only with queue semantics, business tables never, partial evidence a question,
status values mapped by meaning, and what a table cannot tell named. Layouts are written as
their libraries' (or applications') DDL declares them, with the types the catalog prints."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from dbwatch.probes.queue_generic import fold_summary, fragments, window_text
from dbwatch.probes.queue_shape import GenericTable
from dbwatch.queues import LIBRARIES, SHAPES, library_family, recognise
from dbwatch.queues.recognition import recognise_shape, unjudged
from dbwatch.queues.roles import ROLES, map_roles, queue_named, type_kind
from dbwatch.queues.statuses import map_statuses, state_of

TS = "timestamp with time zone"
DT = "datetime"

# Job tables of libraries dbwatch has no module for (and app-made ones), as created.
QUEUES: dict[str, tuple[str, dict[str, str], dict[str, str]]] = {
    # django-background-tasks 1.2 (models.py: Task)
    "background_task": ("background_task", {
        "id": "integer", "task_name": "character varying(190)", "task_params": "text",
        "task_hash": "character varying(40)", "verbose_name": "character varying(255)",
        "priority": "integer", "run_at": TS, "repeat": "bigint", "repeat_until": TS,
        "queue": "character varying(190)", "attempts": "integer", "failed_at": TS,
        "last_error": "text", "locked_by": "character varying(64)", "locked_at": TS,
    }, {"runnable_at": "run_at", "claimed_at": "locked_at", "claimed_by": "locked_by",
        "failed_at": "failed_at", "job_type": "task_name", "payload": "task_params"}),
    # pq (Python, PostgreSQL): create.sql
    "pq": ("queue", {
        "id": "bigint", "enqueued_at": TS, "dequeued_at": TS, "expected_at": TS,
        "schedule_at": TS, "q_name": "text", "data": "json",
    }, {"runnable_at": "schedule_at", "claimed_at": "dequeued_at", "queue": "q_name",
        "payload": "data", "created_at": "enqueued_at"}),
    # an app's own MySQL job table with datetimes (Laravel's names, not Laravel's types)
    "app_jobs": ("jobs", {
        "id": "bigint(20) unsigned", "queue": "varchar(255)", "payload": "longtext",
        "attempts": "tinyint(3) unsigned", "reserved_at": DT, "available_at": DT,
        "created_at": DT,
    }, {"runnable_at": "available_at", "claimed_at": "reserved_at"}),
    # a heartbeat-leased work table (Node app)
    "work_items": ("work_items", {
        "id": "uuid", "kind": "text", "args": "jsonb", "state": "text", "run_after": TS,
        "heartbeat_at": TS, "worker_id": "text", "attempts": "smallint",
        "max_attempts": "smallint", "last_error": "text", "finished_at": TS, "created_at": TS,
    }, {"heartbeat": "heartbeat_at", "claimed_by": "worker_id", "status": "state",
        "job_type": "kind", "runnable_at": "run_after"}),
    # a transactional outbox with a lease column (MySQL, epoch integers)
    "outbox": ("event_outbox", {
        "id": "bigint(20)", "topic": "varchar(200)", "payload": "json",
        "created_at": "int(10) unsigned", "processed_at": "int(10) unsigned",
        "attempts": "int(11)", "next_attempt_at": "int(10) unsigned",
        "locked_until": "int(10) unsigned", "error": "text",
    }, {"claim_expires_at": "locked_until", "runnable_at": "next_attempt_at",
        "finished_at": "processed_at"}),
    # a status-only queue: no claim column, the status says who runs (MariaDB enum)
    "status_only": ("mail_queue", {
        "id": "int(11)", "status": "enum('pending','processing','sent','failed')",
        "send_at": DT, "body": "mediumtext", "handler": "varchar(100)", "scheduled_at": DT,
        "tries": "int(11)",
    }, {"status": "status", "runnable_at": "scheduled_at", "attempts": "tries"}),
}

# Application tables that are not queues: statuses, timestamps, attempts, even errors.
BUSINESS: dict[str, tuple[str, dict[str, str]]] = {
    "orders": ("orders", {"id": "bigint", "status": "text", "created_at": TS,
                          "updated_at": TS, "scheduled_at": TS, "attempts": "integer",
                          "last_error": "text", "data": "jsonb", "processed_at": TS}),
    "payments": ("payments", {"id": "int(11)", "status": "varchar(20)",
                              "amount": "decimal(10,2)", "attempts": "int(11)",
                              "last_error": "text", "next_attempt_at": DT, "locked_at": DT,
                              "payload": "json", "created_at": DT}),
    "invoices": ("invoices", {"id": "integer", "status": "text", "due_at": TS, "sent_at": TS,
                              "data": "jsonb", "created_at": TS, "updated_at": TS}),
    "users": ("users", {"id": "bigint", "email": "text", "status": "text", "locked_at": TS,
                        "failed_attempts": "integer", "created_at": TS, "updated_at": TS}),
    "subscriptions": ("subscriptions", {"id": "bigint", "status": "text", "started_at": TS,
                                        "ended_at": TS, "created_at": TS, "data": "jsonb"}),
    "shop_order_items": ("shop_order_items", {"id": "bigint", "status": "text",
                                              "scheduled_at": TS, "data": "jsonb",
                                              "processed_at": TS}),
    # Laravel's notifications, sessions and cache tables
    "notifications": ("notifications", {"id": "char(36)", "type": "varchar(255)",
                                        "data": "text", "read_at": "timestamp",
                                        "created_at": "timestamp"}),
    "sessions": ("sessions", {"id": "varchar(255)", "user_id": "bigint", "payload": "longtext",
                              "last_activity": "int(11)"}),
    "cache": ("cache", {"key": "varchar(255)", "value": "mediumtext", "expiration": "int(11)"}),
    "posts": ("posts", {"id": "bigint", "status": "varchar(20)", "body": "text",
                        "scheduled_at": DT, "published_at": DT, "created_at": DT}),
}

# Partial evidence: a DW002 question, never a finding.
QUESTIONS: dict[str, tuple[str, dict[str, str]]] = {
    # huey's SqlHuey: a payload blob, a queue name, a priority, and no time at all
    "huey": ("task", {"id": "int(11)", "queue": "varchar(255)", "data": "blob",
                      "priority": "float"}),
    # kombu's SQL transport: a visibility flag, no time a waiting message carries
    "kombu": ("kombu_message", {"id": "int(11)", "visible": "tinyint(1)", "timestamp": "datetime",
                                "payload": "text", "version": "smallint(6)",
                                "queue_id": "int(11)"}),
}

# Queues read in part: what is due is the backlog; what the table cannot tell is named.
PARTIAL: dict[str, tuple[str, dict[str, str], set[str]]] = {
    # pgmq: a read message's vt moves ahead (a visibility time, runnable from then on); nothing
    # says it is claimed, nothing says failed
    "pgmq": ("q_emails", {"msg_id": "bigint", "read_ct": "integer", "enqueued_at": TS,
                          "vt": TS, "message": "jsonb"}, {"stuck", "failed"}),
    # django-q2's ORM broker: a bare `lock` time is when the row's lock ends (its available-at)
    "django_q": ("django_q_ormq", {"id": "integer", "key": "character varying(100)",
                                   "payload": "text", "lock": TS}, {"stuck", "failed"}),
    # saq (PostgreSQL): `scheduled` is an epoch integer (0: now), a status, no claim time
    "saq": ("saq_jobs", {"key": "text", "lock_key": "integer", "job": "bytea", "queue": "text",
                         "status": "text", "priority": "smallint", "scheduled": "bigint",
                         "expire_at": "bigint"}, {"stuck", "failed"}),
    # pq: dequeued_at and nothing that says finished or failed
    "pq": ("queue", {"id": "bigint", "enqueued_at": TS, "dequeued_at": TS, "expected_at": TS,
                     "schedule_at": TS, "q_name": "text", "data": "json"}, {"stuck", "failed"}),
}

# Results tables beside a queue: finished runs, read for their failures only.
RESULTS: dict[str, tuple[str, dict[str, str]]] = {
    "django_q_task": ("django_q_task", {"name": "character varying(100)", "func": "text",
                                        "args": "text", "started": TS, "stopped": TS,
                                        "success": "boolean", "id": "character varying(32)",
                                        "attempt_count": "integer"}),
    "celery_taskmeta": ("celery_taskmeta", {"id": "int(11)", "task_id": "varchar(155)",
                                            "status": "varchar(50)", "date_done": DT,
                                            "traceback": "text", "args": "blob",
                                            "retries": "int(11)"}),
    # a dead-letter table beside a queue: every row a failure, timed by its creation
    "failed_tasks": ("failed_tasks", {"id": "bigint", "task_name": "text", "payload": "jsonb",
                                      "error": "text", "created_at": TS}),
    "completedtask": ("background_task_completedtask", {
        "id": "int(11)", "task_name": "varchar(190)", "task_params": "longtext",
        "run_at": DT, "attempts": "int(11)", "failed_at": DT, "last_error": "longtext",
        "locked_by": "varchar(64)", "locked_at": DT}),
}


@pytest.mark.parametrize("name", sorted(PARTIAL))
def test_a_queue_read_in_part_names_what_it_cannot_tell(name: str) -> None:
    table, cols, missing = PARTIAL[name]
    reading = recognise_shape(cols, table)
    assert reading is not None and reading.verdict == "queue" and not reading.results, name
    assert set(unjudged(reading.roles, None)) == missing, (name, reading.roles)


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_results_tables_are_read_for_failures_only(name: str) -> None:
    table, cols = RESULTS[name]
    reading = recognise_shape(cols, table)
    assert reading is not None and reading.results, (name, reading)


def test_roles_by_the_meaning_of_a_name() -> None:
    # times no exact name places, by a word of the name (oxen-queue, django-q2, celery)
    roles = map_roles({"created_ts": DT, "started_ts": DT, "body": "varchar(100)",
                       "status": "varchar(100)", "job_type": "varchar(200)"})
    assert roles["created_at"] == "created_ts" and roles["claimed_at"] == "started_ts"
    assert map_roles({"date_done": DT})["finished_at"] == "date_done"
    assert map_roles({"stopped": TS, "started": TS}) == {"finished_at": "stopped",
                                                         "claimed_at": "started"}
    # an integer is a time only when its name says so; a word alone is not a role
    assert map_roles({"created_ms": "bigint"})["created_at"] == "created_ms"
    assert "created_at" not in map_roles({"created_count": "integer"})
    # a boolean outcome and a visibility flag need a boolean type
    assert map_roles({"success": "boolean"}) == {"succeeded": "success"}
    assert "succeeded" not in map_roles({"success": "text"})
    assert map_roles({"visible": "tinyint(1)"}) == {"visible": "visible"}
    # dramatiq-pg: a state whose labels only a queue uses, with its last change as the time
    enums = {"state": ("queued", "consumed", "rejected", "done")}
    dramatiq = recognise_shape({"message_id": "uuid", "queue_name": "text", "state": "x.state",
                                "mtime": TS, "message": "jsonb"}, "queue", enums=enums)
    assert dramatiq is not None and dramatiq.verdict == "queue" and dramatiq.strict_status
    assert map_statuses(enums["state"]).queue_only
    assert not map_statuses(["pending", "processing", "completed"]).queue_only
    assert map_statuses(["SUCCESS", "FAILURE", "REVOKED"]).values("failed") == ("FAILURE", "REVOKED")


@pytest.mark.parametrize("name", sorted(QUEUES))
def test_job_tables_of_unknown_libraries_are_queues_by_their_roles(name: str) -> None:
    table, cols, expect = QUEUES[name]
    assert recognise(cols, "postgresql", table) is None  # no library module knows it
    assert not library_family(table, set(cols))
    reading = recognise_shape(cols, table)
    assert reading is not None and reading.verdict == "queue", name
    for role, col in expect.items():
        assert reading.roles.get(role) == col, (name, role, reading.roles)


@pytest.mark.parametrize("name", sorted(BUSINESS))
def test_business_tables_are_never_queues(name: str) -> None:
    table, cols = BUSINESS[name]
    assert recognise_shape(cols, table) is None, name


@pytest.mark.parametrize("name", sorted(QUESTIONS))
def test_partial_evidence_is_a_question(name: str) -> None:
    table, cols = QUESTIONS[name]
    reading = recognise_shape(cols, table)
    assert reading is not None and reading.verdict == "question", (name, reading)


def test_a_status_only_table_needs_queue_values() -> None:
    table, cols, _ = QUEUES["status_only"]
    reading = recognise_shape(cols, table)
    assert reading is not None and reading.needs_status
    assert map_statuses(["pending", "processing", "sent", "failed"]).queue_like  # processing
    # an order's life is not a queue's: pending, paid, shipped, completed, cancelled
    assert not map_statuses(["pending", "paid", "shipped", "completed", "cancelled"]).queue_like


def test_status_values_by_meaning() -> None:
    m = map_statuses(["queued", "running", "failed", "done", "Scheduled", "in-progress",
                      "job_failed", "succeeded", "discarded", "snoozed"])
    assert m.values("waiting") == ("queued", "Scheduled")
    assert m.values("running") == ("running", "in-progress")
    assert m.values("failed") == ("failed", "job_failed", "discarded")
    assert m.values("done") == ("done", "succeeded")
    assert m.unmapped == ("snoozed",) and not m.numeric and m.queue_like
    for value, state in (("available", "waiting"), ("todo", "waiting"), ("doing", "running"),
                         ("picked", "running"), ("dead", "failed"), ("cancelled", "failed"),
                         ("completed", "done"), ("ok", "done"), ("42", None), ("paid", None)):
        assert state_of(value) == state, value
    codes = map_statuses(["0", "1", "2", "-1"])
    assert codes.numeric and codes.unmapped == ("0", "1", "2", "-1") and not codes.values("done")


def test_roles_fit_by_type() -> None:
    # a text 'lock' (procrastinate's queueing lock) is no time; a datetime one is when the
    # row's lock ends: runnable from then on
    assert "lock" not in map_roles({"lock": "text", "run_at": TS}).values()
    assert map_roles({"lock": DT})["runnable_at"] == "lock"
    # epoch integers are times; a JSON 'status' is no status
    assert map_roles({"available_at": "int(10) unsigned"})["runnable_at"] == "available_at"
    assert "status" not in map_roles({"status": "jsonb"})
    assert type_kind("enum('a','b')") == "enum" and type_kind("timestamp(6) without time zone") == "time"
    assert type_kind("jsonb[]") == "other" and type_kind("interval") == "interval"
    # one column, one role
    roles = map_roles({"handler": "text", "payload": "json"})
    assert roles == {"payload": "payload", "job_type": "handler"}


def test_what_a_table_cannot_tell_is_named() -> None:
    _, cols, _ = QUEUES["pq"]
    roles = map_roles(cols)
    gaps = unjudged(roles, None)
    assert set(gaps) == {"failed", "stuck"} and "failures unknown" in gaps["failed"]
    assert "finished, failed or orphaned" in gaps["stuck"]
    # no claim time, no update time: stuck unknown; integer status codes: states unknown
    roles = {"runnable_at": "run_at", "status": "state", "payload": "args", "claimed_by": "w"}
    gaps = unjudged(roles, map_statuses(["0", "1", "2"]))
    assert {"states", "stuck", "failed"} <= set(gaps)
    full = map_roles(QUEUES["work_items"][1])
    assert unjudged(full, map_statuses(["queued", "running", "failed", "done"])) == {}
    # a value the model does not understand is said, never guessed
    odd = unjudged(full, map_statuses(["queued", "running", "snoozed", "done"]))
    assert set(odd) == {"states"} and "snoozed" in odd["states"]


def test_library_tables_are_not_read_twice() -> None:
    # the libraries' own other tables (archives, logs, locks) are theirs, not the model's
    archive = {c: "text" for c in next(s for s in SHAPES if s.kind == "pg_boss").columns}
    assert library_family("archive", set(archive) | {"archived_on"})
    assert library_family("_private_job_queues", {"queue_name", "locked_at", "locked_by"})
    assert library_family("oban_peers", {"name", "node", "started_at", "expires_at"})
    assert not library_family("jobs", {"queue", "payload"})  # a job table name: read it


def test_library_declarations_map_to_their_own_columns() -> None:
    # each module is a declaration on the model: its roles are the model's, on its own
    # columns (a sibling table's as sibling.column)
    for lib in LIBRARIES.values():
        columns = set().union(*(s.columns for s in lib.shapes))
        assert lib.roles and set(lib.roles) <= set(ROLES), lib.name
        own = {c for c in lib.roles.values() if "." not in c}
        assert own <= columns | {"priority", "completed_at", "attempted_by", "args", "created_at",
                                 "heartbeat_on", "expire_seconds", "errors", "scheduled_at"}, (lib.name, own - columns)


def test_queue_words_in_names() -> None:
    for name in ("job_queue", "jobs", "q_emails", "mail_tasks", "event_outbox", "que_jobs"):
        assert queue_named(name), name
    for name in ("orders", "jobseekers", "taskforce", "queueing_stats_x"):
        assert not queue_named(name), name


def _generic(cols: dict[str, str], table: str, indexed: frozenset[str]) -> GenericTable:
    reading = recognise_shape(cols, table, indexed)
    assert reading is not None
    return GenericTable("app", table, reading, cols, indexed, 1000, True)


def test_generic_queries_are_bounded_and_quote_names() -> None:
    cols = dict(QUEUES["background_task"][1]) | {'we"ird': "text"}
    g = _generic(cols, "background_task", frozenset({"id"}))
    frags = fragments("postgresql", g)
    assert frags["order"] == '"id"' and frags["second"] == "%(window)s"
    # a far-future time is a placeholder (django-tasks' maximum date, `infinity`): no time
    assert ("""extract(epoch FROM (CASE WHEN "run_at" < '9000-01-01' THEN "run_at" END)"""
            "::timestamptz)") in frags["cols"]
    assert "oldest and the newest" in window_text(g)
    # no index to order by: one window of the first rows, said so
    g2 = _generic(cols, "background_task", frozenset())
    assert fragments("mysql", g2)["second"] == "0" and "no index" in window_text(g2)
    assert ("UNIX_TIMESTAMP(CASE WHEN `run_at` < '9000-01-01' THEN `run_at` END)"
            in fragments("mysql", g2)["cols"])


def test_fold_summary_per_queue() -> None:
    rows = [
        {"queue": "mail", "state": "waiting", "n": 300, "oldest_seconds": 7200, "repeated": 0,
         "max_attempts": 0},
        {"queue": "mail", "state": "running", "n": 3, "oldest_seconds": 3600, "repeated": 1,
         "max_attempts": 2},
        {"queue": "mail", "state": "done", "n": 40, "oldest_seconds": None, "repeated": 0,
         "max_attempts": 1},
        {"queue": "mail", "state": "failed", "n": 10, "oldest_seconds": None, "repeated": 10,
         "max_attempts": 25},
    ]
    summary, states = fold_summary(rows)
    (s,) = summary
    assert (s["available"], s["oldest_available_seconds"], s["reserved"]) == (300, 7200, 3)
    assert s["total"] == 303 and s["repeated"] == 1 and s["max_attempts"] == 2
    assert states == [{"queue": "mail", "states": {"waiting": 300, "running": 3, "done": 40,
                                                   "failed": 10}}]


def test_generic_claims_by_lease_heartbeat_else_claim_timeout() -> None:
    """QU002 on a generic table: its own lease (locked-until) first, a heartbeat against
    heartbeat_timeout (5 min), else the claim's age against claim_timeout (15 min); the
    summary says which, never a library's retry_after."""
    from dbwatch.catalogue import load_catalogue
    from dbwatch.config import Config
    from dbwatch.evaluate import Selection, evaluate
    from dbwatch.snapshot import Snapshot

    table = {
        "schema": "app", "table": "work", "kind": "generic", "library": "generic",
        "rows_estimate": 50, "window": 20000, "groups": 500,
        "roles": [["claimed_at", "locked_at"], ["heartbeat", "heartbeat_at"],
                  ["claim_expires_at", "locked_until"]],
        "reserved": [
            {"queue": "q", "reserved_seconds": 100, "n": 2, "lease_overdue": 5},
            {"queue": "q", "reserved_seconds": 100, "n": 7, "lease_overdue": -50},
            {"queue": "q", "reserved_seconds": 400, "n": 3, "heartbeat": True},
            {"queue": "q", "reserved_seconds": 200, "n": 4, "heartbeat": True},
            {"queue": "q", "reserved_seconds": 800, "n": 1},
            {"queue": "r", "reserved_seconds": 1000, "n": 6},
        ],
    }
    snap = Snapshot(target="t", engine="postgresql", server_version="15.0", version_num=150000,
                    taken_at=1_800_000_000.0, sections={"pg.queues": {"tables": [table]}},
                    failures=(), features=frozenset(), gaps=())
    result = evaluate(snap, load_catalogue(), Config(), Selection(select=("QU002",)))
    (f,) = [f for f in result.findings if f.rule == "QU002"]
    assert f.evidence["count"] == 11 and f.evidence["queues"] == {"q": 5, "r": 6}
    assert f.evidence["library"] == "generic" and len(f.evidence["stuck_by"]) == 3
    assert "retry_after" not in f.summary and "artisan" not in f.fix
    assert "locked_until" in f.summary and "heartbeat_timeout" in f.summary


# Framework sample apps' own tables (Django 5 auth/admin/sessions, Rails 7 Active Storage /
# Action Mailbox / Action Text, Laravel 11's default migrations but its queue tables).
FRAMEWORK_TABLES: dict[str, dict[str, str]] = {
    "django_admin_log": {"id": "integer", "action_time": TS, "object_id": "text",
                         "object_repr": "character varying(200)", "action_flag": "smallint",
                         "change_message": "text", "content_type_id": "integer",
                         "user_id": "integer"},
    "django_session": {"session_key": "character varying(40)", "session_data": "text",
                       "expire_date": TS},
    "auth_user": {"id": "integer", "password": "character varying(128)", "last_login": TS,
                  "is_superuser": "boolean", "username": "character varying(150)",
                  "date_joined": TS, "is_active": "boolean"},
    "action_mailbox_inbound_emails": {"id": "bigint", "status": "integer",
                                      "message_id": "character varying", "message_checksum":
                                      "character varying", "created_at": "timestamp(6) without time zone",
                                      "updated_at": "timestamp(6) without time zone"},
    "active_storage_blobs": {"id": "bigint", "key": "character varying", "filename":
                             "character varying", "content_type": "character varying",
                             "metadata": "text", "service_name": "character varying",
                             "byte_size": "bigint", "checksum": "character varying",
                             "created_at": "timestamp(6) without time zone"},
    "action_text_rich_texts": {"id": "bigint", "name": "character varying", "body": "text",
                               "record_type": "character varying", "record_id": "bigint",
                               "created_at": TS, "updated_at": TS},
    "cache_locks": {"key": "varchar(255)", "owner": "varchar(255)", "expiration": "int(11)"},
    "password_reset_tokens": {"email": "varchar(255)", "token": "varchar(255)",
                              "created_at": "timestamp"},
    "personal_access_tokens": {"id": "bigint(20) unsigned", "tokenable_type": "varchar(255)",
                               "tokenable_id": "bigint(20) unsigned", "name": "varchar(255)",
                               "token": "varchar(64)", "abilities": "text",
                               "last_used_at": "timestamp", "expires_at": "timestamp",
                               "created_at": "timestamp", "updated_at": "timestamp"},
}


@pytest.mark.parametrize("table", sorted(FRAMEWORK_TABLES))
def test_framework_sample_app_tables_are_not_queues(table: str) -> None:
    assert recognise_shape(FRAMEWORK_TABLES[table], table) is None, table


LAYOUTS = Path(__file__).parent / "fixtures" / "queue_layouts" / "layouts.yaml"
# Layouts the model cannot read at all, and why (silence about them is the honest answer):
UNREADABLE = {
    "kv": "huey's results are pickled blobs under a key: no outcome to read",
    "schedule": "huey's delayed tasks: an id, a queue, a pickled blob and a bare `timestamp`",
}


def test_layouts_seen_in_the_wild_are_read_by_their_label() -> None:
    """Every layout a real library or Django created (tests/fixtures/queue_layouts): queue
    tables are read (a queue, or a named question), results tables for failures only, and
    nothing else ever as a queue or results table."""
    doc = yaml.safe_load(LAYOUTS.read_text())
    for e in doc["layouts"]:
        table = e["table"].split(".")[-1]
        cols = {c[0]: c[1] for c in e["columns"]}
        status = e.get("roles", {}).get("status")
        # a user-defined enum: the catalog query returns its labels with the columns
        enums = ({status: tuple(e["statuses"])} if status and "." in cols.get(status, "")
                 else {})
        reading = recognise_shape(cols, table, enums=enums)
        where = f"{e['source']} {e['engine']} {e['table']}"
        if e["label"] == "not-queue":
            assert reading is None or (reading.verdict == "question" and not reading.results), where
        elif table in UNREADABLE:
            assert reading is None, where
        elif e["label"] == "results":
            assert reading is not None and reading.results, where
        else:
            assert reading is not None and not reading.results, where
            if all(r in e["roles"] for r in ("run_at", "claimed_at", "payload", "status")):
                assert reading.verdict == "queue", where  # every queue role: a queue


def test_failures_told_by_the_status_values_read_from_the_rows() -> None:
    roles = {"status": "status", "created_at": "created_ts", "claimed_at": "started_ts",
             "payload": "body"}
    # the rows record outcomes (a done value): a failure would be a word too — judged
    assert "failed" not in unjudged(roles, map_statuses(["success", "waiting"], observed=True))
    # no rows at all: nothing to judge
    assert "failed" not in unjudged(roles, map_statuses([], observed=True))
    # only waiting rows seen: whether failures are kept here is unknown — said
    assert "failed" in unjudged(roles, map_statuses(["waiting"], observed=True))
    # an enum's labels without a failed one: the table holds no failure
    assert "failed" in unjudged(roles, map_statuses(["queued", "running", "done"]))
