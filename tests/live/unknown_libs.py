"""The job libraries dbwatch has no module for, as tests/live/test_queue_unknown_libs.py drives
them: where each keeps its jobs, the SQL that proves a cell holds what the library was made to
do (independent of dbwatch), the timestamps moved back, and the answer the generic queue model
owes for each cell. docs/queues-unknown.md gives the reasons, library by library.

SQL text may use {1h} / {2h}: an interval in the cell's engine syntax. Also the two helpers
both tests share: a throwaway MariaDB database and the DW002 gaps that name a table.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pymysql
from queue_libs import by_rule

CELLS = ("healthy", "backlog", "failed", "stuck")


@dataclass(frozen=True)
class Finding:
    """An exact finding: `rule` on `table` (default: the library's queue table) with
    evidence[key] == n."""

    rule: str
    key: str
    n: int
    table: str | None = None


@dataclass(frozen=True)
class Gap:
    """A DW002 whose evidence.gaps names `table` (default: the queue table) and says that
    `what` (backlog | stuck | failed) could not be judged from it."""

    what: str
    table: str | None = None


@dataclass(frozen=True)
class Quiet:
    """No QU finding at all (a DW002 saying what cannot be judged is allowed)."""


Expect = Finding | Gap | Quiet


@dataclass(frozen=True)
class Lib:
    key: str
    version: str
    engine: str  # postgresql | mariadb
    language: str  # python | node
    driver: str  # file in tests/live/queue_apps/unknown
    needs: tuple[str, ...]  # py module dirs or npm packages that must be installed
    table: str  # the queue table (schema-less; "dramatiq.queue" keeps its own schema)
    proof: dict[str, tuple[str, int]]  # per cell: SELECT count(*) ... that must equal n
    aging: dict[str, tuple[str, ...]] = field(default_factory=dict)  # UPDATEs run after
    expect: dict[str, Expect] = field(default_factory=dict)


def _bgtasks(engine: str) -> Lib:
    return Lib(
        "django-background-tasks", "1.2.8 (Django 5.2.8)", engine, "python", "bgtasks_app.py",
        ("background_task", "django"), "background_task",
        proof={
            "healthy": (("SELECT count(*) FROM background_task_completedtask "
                        "WHERE failed_at IS NULL AND attempts = 1"), 5),
            "backlog": ("SELECT count(*) FROM background_task WHERE locked_by IS NULL", 300),
            "failed": (("SELECT count(*) FROM background_task_completedtask "
                       "WHERE failed_at IS NOT NULL AND attempts = 2 AND last_error <> ''"), 10),
            "stuck": ("SELECT count(*) FROM background_task WHERE locked_by IS NOT NULL", 3),
        },
        aging={
            "healthy": (("UPDATE background_task_completedtask SET run_at = run_at - {2h}, "
                        "locked_at = locked_at - {2h}"),),
            "backlog": ("UPDATE background_task SET run_at = run_at - {1h}",),
            "stuck": (("UPDATE background_task SET run_at = run_at - {2h}, "
                      "locked_at = locked_at - {2h}"),),  # past MAX_RUN_TIME (3600 s)
        },
        expect={
            "healthy": Quiet(),
            "backlog": Finding("QU001", "depth", 300),
            "failed": Finding("QU004", "count", 10, "background_task_completedtask"),
            "stuck": Finding("QU002", "count", 3),
        },
    )


DRAMATIQ = Lib(
    "dramatiq-pg", "0.12.0 (dramatiq 1.17.1)", "postgresql", "python", "dramatiq_app.py",
    ("dramatiq_pg", "dramatiq", "psycopg2"), "dramatiq.queue",
    proof={
        "healthy": ("SELECT count(*) FROM dramatiq.queue WHERE state = 'done'", 5),
        "backlog": ("SELECT count(*) FROM dramatiq.queue WHERE state = 'queued'", 300),
        "failed": (("SELECT count(*) FROM dramatiq.queue WHERE state = 'rejected' "
                   "AND (message->'options'->>'retries')::int = 2"), 10),
        "stuck": ("SELECT count(*) FROM dramatiq.queue WHERE state = 'consumed'", 3),
    },
    aging={
        "healthy": ("UPDATE dramatiq.queue SET mtime = mtime - {2h}",),
        "backlog": ("UPDATE dramatiq.queue SET mtime = mtime - {1h}",),
        "stuck": ("UPDATE dramatiq.queue SET mtime = mtime - {1h}",),  # > 10 min time limit
    },
    expect={
        "healthy": Quiet(),
        "backlog": Finding("QU001", "depth", 300),
        "failed": Finding("QU004", "count", 10),
        "stuck": Finding("QU002", "count", 3),
    },
)

PQ = Lib(
    "pq", "1.9.1", "postgresql", "python", "pq_app.py", ("pq", "psycopg2"), "queue",
    proof={
        "healthy": ("SELECT count(*) FROM queue WHERE dequeued_at IS NOT NULL", 5),
        "backlog": ("SELECT count(*) FROM queue WHERE dequeued_at IS NULL", 300),
        # 10 jobs, each put again once by pq's retry: 20 rows, all dequeued, none marked
        "failed": (("SELECT count(*) FROM queue WHERE dequeued_at IS NOT NULL "
                   "AND data->>'function' LIKE '%boom'"), 20),
        "stuck": ("SELECT count(*) FROM queue WHERE dequeued_at IS NOT NULL", 3),
    },
    aging={
        "healthy": (("UPDATE queue SET enqueued_at = enqueued_at - {2h}, "
                    "dequeued_at = dequeued_at - {2h}"),),
        "backlog": ("UPDATE queue SET enqueued_at = enqueued_at - {1h}",),
        "stuck": (("UPDATE queue SET enqueued_at = enqueued_at - {1h}, "
                  "dequeued_at = dequeued_at - {1h}"),),
    },
    expect={
        "healthy": Quiet(),
        "backlog": Finding("QU001", "depth", 300),
        "failed": Gap("failed"),  # pq only logs an exhausted job: no failure record
        "stuck": Gap("stuck"),  # a dequeued row looks the same finished, failed or orphaned
    },
)

HUEY = Lib(
    "huey (SqlHuey)", "3.5.4 (peewee 3.18.3)", "mariadb", "python", "huey_app.py",
    ("huey", "peewee.py"), "task",
    proof={
        "healthy": ("SELECT count(*) FROM task", 0),
        "backlog": ("SELECT count(*) FROM task", 300),
        "failed": ("SELECT count(*) FROM kv", 10),  # the pickled errors
        "stuck": ("SELECT count(*) FROM task", 0),  # the dequeue deleted them
    },
    expect={
        "healthy": Quiet(),
        "backlog": Gap("backlog"),  # 300 rows and no time on any of them
        "failed": Gap("failed"),  # errors are pickled blobs in kv
        "stuck": Gap("stuck"),  # claimed tasks leave no row at all
    },
)

CELERY = Lib(
    "celery + kombu SQLAlchemy transport", "celery 5.5.3, kombu 5.5.4, SQLAlchemy 2.0.44",
    "mariadb", "python", "celery_app.py", ("celery", "kombu", "sqlalchemy"), "kombu_message",
    proof={
        "healthy": ("SELECT count(*) FROM celery_taskmeta WHERE status = 'SUCCESS'", 5),
        "backlog": (("SELECT count(*) FROM kombu_message WHERE visible = 1 "
                    "AND timestamp IS NULL"), 300),
        "failed": (("SELECT count(*) FROM celery_taskmeta WHERE status = 'FAILURE' "
                   "AND traceback LIKE '%boom%'"), 10),
        "stuck": ("SELECT count(*) FROM kombu_message WHERE visible = 0", 3),
    },
    aging={
        "healthy": ("UPDATE kombu_message SET timestamp = timestamp - {2h}",
                    "UPDATE celery_taskmeta SET date_done = date_done - {2h}"),
        "stuck": ("UPDATE kombu_message SET timestamp = timestamp - {1h}",),
    },
    expect={
        "healthy": Quiet(),
        "backlog": Gap("backlog"),  # waiting messages have timestamp NULL
        "failed": Finding("QU004", "count", 10, "celery_taskmeta"),
        "stuck": Gap("stuck"),  # visible = 0 forever: done and orphaned look the same
    },
)


def _sidequest(engine: str) -> Lib:
    return Lib(
        "sidequest", "1.16.4", engine, "node", "sidequest_app.cjs",
        ("sidequest", "@sidequest/postgres-backend", "@sidequest/mysql-backend"),
        "sidequest_jobs",
        proof={
            "healthy": ("SELECT count(*) FROM sidequest_jobs WHERE state = 'completed'", 5),
            "backlog": ("SELECT count(*) FROM sidequest_jobs WHERE state = 'waiting'", 300),
            "failed": (("SELECT count(*) FROM sidequest_jobs WHERE state = 'failed' "
                       "AND attempt = max_attempts AND failed_at IS NOT NULL"), 10),
            "stuck": ("SELECT count(*) FROM sidequest_jobs WHERE state = 'running'", 3),
        },
        aging={
            "healthy": (("UPDATE sidequest_jobs SET inserted_at = inserted_at - {2h}, "
                        "available_at = available_at - {2h}, attempted_at = attempted_at - {2h},"
                        " claimed_at = claimed_at - {2h}, completed_at = completed_at - {2h}"),),
            "backlog": (("UPDATE sidequest_jobs SET inserted_at = inserted_at - {1h}, "
                        "available_at = available_at - {1h}"),),
            "stuck": (("UPDATE sidequest_jobs SET inserted_at = inserted_at - {1h}, "
                      "available_at = available_at - {1h}, attempted_at = attempted_at - {1h}, "
                      "claimed_at = claimed_at - {1h}"),),  # > releaseStaleJobsMaxStaleMs 10 min
        },
        expect={
            "healthy": Quiet(),
            "backlog": Finding("QU001", "depth", 300),
            "failed": Finding("QU004", "count", 10),
            "stuck": Finding("QU002", "count", 3),
        },
    )


OXEN = Lib(
    "oxen-queue", "0.1.12", "mariadb", "node", "oxen_app.cjs", ("oxen-queue",), "oxen_queue",
    proof={
        "healthy": ("SELECT count(*) FROM oxen_queue WHERE status = 'success'", 5),
        "backlog": ("SELECT count(*) FROM oxen_queue WHERE status = 'waiting'", 300),
        "failed": (("SELECT count(*) FROM oxen_queue WHERE status = 'error' "
                   "AND result LIKE 'Error: boom%'"), 10),
        "stuck": ("SELECT count(*) FROM oxen_queue WHERE status = 'processing'", 3),
    },
    aging={
        "healthy": (("UPDATE oxen_queue SET created_ts = created_ts - {2h}, "
                    "started_ts = started_ts - {2h}"),),
        "backlog": ("UPDATE oxen_queue SET created_ts = created_ts - {1h}",),
        "stuck": (("UPDATE oxen_queue SET created_ts = created_ts - {1h}, "
                  "started_ts = started_ts - {1h}"),),  # > process({timeout}) 60 s
    },
    expect={
        "healthy": Quiet(),
        "backlog": Finding("QU001", "depth", 300),
        "failed": Finding("QU004", "count", 10),
        "stuck": Finding("QU002", "count", 3),
    },
)

DATAQUEUE = Lib(
    "@nicnocquee/dataqueue", "1.24.0", "postgresql", "node", "dataqueue_app.cjs",
    ("@nicnocquee/dataqueue", "node-pg-migrate"), "job_queue",
    proof={
        "healthy": ("SELECT count(*) FROM job_queue WHERE status = 'completed'", 5),
        "backlog": ("SELECT count(*) FROM job_queue WHERE status = 'pending'", 300),
        "failed": (("SELECT count(*) FROM job_queue WHERE status = 'failed' "
                   "AND attempts = max_attempts AND next_attempt_at IS NULL"), 10),
        "stuck": ("SELECT count(*) FROM job_queue WHERE status = 'processing'", 3),
    },
    aging={
        "healthy": (("UPDATE job_queue SET created_at = created_at - {2h}, "
                    "updated_at = updated_at - {2h}, locked_at = locked_at - {2h}, "
                    "run_at = run_at - {2h}, started_at = started_at - {2h}, "
                    "completed_at = completed_at - {2h}"),),
        "backlog": (("UPDATE job_queue SET created_at = created_at - {1h}, "
                    "updated_at = updated_at - {1h}, run_at = run_at - {1h}"),),
        "stuck": (("UPDATE job_queue SET created_at = created_at - {1h}, "
                  "updated_at = updated_at - {1h}, run_at = run_at - {1h}, "
                  "locked_at = locked_at - {1h}, started_at = started_at - {1h}"),),  # > 10 min
    },
    expect={
        "healthy": Quiet(),
        "backlog": Finding("QU001", "depth", 300),
        "failed": Finding("QU004", "count", 10),
        "stuck": Finding("QU002", "count", 3),
    },
)

DJANGOQ = Lib(
    "django-q2 (ORM broker)", "1.11.1 (Django 5.2.8)", "postgresql", "python",
    "djangoq_app.py", ("django_q", "django", "picklefield"), "django_q_ormq",
    proof={
        "healthy": ("SELECT count(*) FROM django_q_task WHERE success", 5),
        "backlog": ("SELECT count(*) FROM django_q_ormq WHERE lock <= now()", 300),
        "failed": (("SELECT count(*) FROM django_q_task WHERE NOT success "
                    "AND attempt_count = 2"), 10),
        "stuck": ("SELECT count(*) FROM django_q_ormq WHERE lock > now()", 3),  # claimed
    },
    aging={
        "healthy": (("UPDATE django_q_task SET started = started - {2h}, "
                    "stopped = stopped - {2h}"),),
        "backlog": ("UPDATE django_q_ormq SET lock = lock - {1h}",),
        "stuck": ("UPDATE django_q_ormq SET lock = lock - {1h}",),  # past claim + retry (300 s)
    },
    expect={
        "healthy": Quiet(),
        "backlog": Finding("QU001", "depth", 300),  # lock <= now: its own queue_size()
        "failed": Finding("QU004", "count", 10, "django_q_task"),
        "stuck": Gap("stuck"),  # an expired claim is a row whose lock passed: a waiting job
    },
)

LIBS = (
    _bgtasks("mariadb"), DJANGOQ, DRAMATIQ, PQ, HUEY, CELERY,
    _sidequest("postgresql"), _sidequest("mariadb"), OXEN, DATAQUEUE,
)


@contextmanager
def my_database(name: str) -> Iterator[str]:
    conn = pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)
    conn.cursor().execute(f"CREATE DATABASE `{name}`")
    try:
        yield name
    finally:
        conn.cursor().execute(f"DROP DATABASE `{name}`")
        conn.close()


def gaps_for(data: dict[str, Any], table: str) -> list[dict[str, Any]]:
    """DW002 gap entries that name `table` (a DW002 whose own evidence.table is it counts too)."""
    bare = table.split(".")[-1]

    def names(name: object) -> bool:
        return name == table or str(name or "").split(".")[-1] == bare

    found = []
    for f in by_rule(data, "DW002"):
        if names(f["evidence"].get("table")):
            found.append(f["evidence"])
        found += [g for g in f["evidence"].get("gaps", []) if names(g.get("name"))]
    return found
