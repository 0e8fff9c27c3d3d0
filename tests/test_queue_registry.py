"""The queue registry (one module per library): recognition from each library's published DDL,
names for other modules, library-own failure texts and fixes, and one-pass identifier
composition of the probe (hostile names stay inside their quotes)."""

from __future__ import annotations

import pytest

from dbwatch.probes.queue import compose
from dbwatch.queues import (
    LIBRARIES,
    SHAPES,
    classify_failure,
    failure_fix,
    is_queue_table,
    library,
    recognise,
)
from dbwatch.queues.symfony_messenger import error_head, message_class

SPEC_NAMES = {"laravel", "pg-boss", "graphile-worker", "procrastinate", "pgqueuer",
              "symfony-messenger", "solid-queue", "good_job", "que", "delayed_job", "oban", "river"}

# Column lists as each library's own DDL creates them (procrastinate 3.10 schema.sql,
# pgqueuer 1.6 `pgq install`, Symfony 5.4 Doctrine Connection::addTableToSchema,
# pg-boss 12 plans.js, graphile-worker 0.18 migration 000011).
DDL = {
    "procrastinate": ("procrastinate_jobs", ["id", "queue_name", "task_name", "priority", "lock",
                      "queueing_lock", "args", "status", "scheduled_at", "attempts",
                      "abort_requested", "worker_id"]),
    "pgqueuer": ("pgqueuer", ["id", "priority", "queue_manager_id", "created", "updated",
                 "heartbeat", "execute_after", "status", "entrypoint", "dedupe_key", "payload",
                 "headers", "attempts", "slot"]),
    "pgqueuer_log": ("pgqueuer_log", ["id", "created", "job_id", "status", "priority",
                     "entrypoint", "traceback", "aggregated"]),
    "symfony_messenger": ("messenger_messages", ["id", "body", "headers", "queue_name",
                          "created_at", "available_at", "delivered_at"]),
    "pg_boss": ("job", ["id", "name", "priority", "data", "state", "retry_limit", "retry_count",
                "retry_delay", "retry_backoff", "expire_seconds", "start_after", "created_on",
                "started_on", "completed_on", "keep_until", "output", "heartbeat_on",
                "heartbeat_seconds"]),
    "graphile_worker": ("_private_jobs", ["id", "job_queue_id", "task_id", "payload", "priority",
                        "run_at", "attempts", "max_attempts", "last_error", "created_at",
                        "updated_at", "key", "locked_at", "locked_by", "revision", "flags"]),
}


def test_every_library_has_its_spec_name_and_words() -> None:
    assert {lib.name for lib in LIBRARIES.values()} == SPEC_NAMES
    assert {s.library for s in SHAPES} == SPEC_NAMES
    for lib in LIBRARIES.values():
        assert set(lib.states) == {"available", "claimed", "retrying", "failed", "done"}
        assert lib.stuck and lib.backlog_fix and lib.versions
    for name in SPEC_NAMES - {"laravel"}:  # nobody but Laravel is told about artisan
        lib = library(name)
        assert lib is not None
        texts = [lib.backlog_fix, lib.expired_fix, lib.attempts_fix, *lib.failure_fix.values()]
        assert not any("artisan" in t or "failed_jobs" in t for t in texts), name


@pytest.mark.parametrize("kind", sorted(DDL))
def test_recognised_from_the_libraries_own_ddl(kind: str) -> None:
    table, cols = DDL[kind]
    shape = recognise(dict.fromkeys(cols, ""), "postgresql", table)
    assert shape is not None and shape.kind == kind


def test_symfony_on_both_engines_and_pg_only_libraries() -> None:
    table, cols = DDL["symfony_messenger"]
    assert recognise(dict.fromkeys(cols, ""), "mysql", table).kind == "symfony_messenger"  # type: ignore[union-attr]
    table, cols = DDL["procrastinate"]
    assert recognise(dict.fromkeys(cols, ""), "mysql", table) is None


def test_is_queue_table_by_name() -> None:
    assert is_queue_table("jobs") == "laravel"
    assert is_queue_table('"app"."procrastinate_jobs"') == "procrastinate"
    assert is_queue_table("`shop`.`messenger_messages`") == "symfony-messenger"
    assert is_queue_table("pgqueuer") == "pgqueuer"
    assert is_queue_table("oban_jobs") == "oban" and is_queue_table("orders") is None


def test_pg_boss_own_failures_are_not_the_jobs_exception() -> None:
    own = library("pg-boss").failure_texts  # type: ignore[union-attr]
    assert classify_failure("Error: job heartbeat timeout", own).kind == "worker_lost"
    assert classify_failure("Error: job timed out", own).kind == "timeout"
    assert classify_failure("Error: job failed by timeout in active state", own).kind == "timeout"
    assert classify_failure("Error: handler execution exceeded 5000ms", own).kind == "timeout"
    assert classify_failure("TypeError: x is undefined", own).kind == "other"
    assert "boss.retry" in failure_fix("pg-boss", "timeout")
    assert "artisan" in failure_fix("laravel", "max_attempts")


def test_symfony_error_details_from_php_and_json_serializers() -> None:
    php = (r'\0exceptionClass\";s:16:\"RuntimeException\";s:55:\"\0x\0exceptionCode\";i:0;'
           r's:58:\"\0x\0exceptionMessage\";s:4:\"boom\";')
    assert error_head(php) == "RuntimeException: boom"
    assert error_head(r'{"exceptionClass":"App\\E","exceptionMessage":"bad"}') == "App\\E: bad"
    assert message_class(r'message\";O:19:\"App\\Message\\Hello\";a:0') == "App\\Message\\Hello"
    assert error_head("x" * 100_000) is None


HOSTILE = "x{tasks}*/,pg_terminate_backend(1)--jobs%s\"`'\nü"


@pytest.mark.parametrize("engine", ["postgresql", "mysql"])
def test_compose_is_one_pass_and_quotes_every_name(engine: str) -> None:
    text = compose(engine, "SELECT 1 FROM {table} JOIN {tasks} -- {1,2} {value,message}",
                   {"table": ("s", HOSTILE), "tasks": ("s", "t")}, {})
    q = '"' if engine == "postgresql" else "`"
    inner = HOSTILE.replace(q, q + q).replace("%", "%%")
    assert f"{q}s{q}.{q}{inner}{q} JOIN {q}s{q}.{q}t{q}" in text
    assert text.count("pg_terminate_backend") == 1 and "{1,2} {value,message}" in text
