"""django-q2 1.11 with its ORM broker, driven by its own code: Django's migrate creates
`django_q_ormq` (the queue) and `django_q_task` (results), async_task() enqueues, the qcluster
command (pusher, workers, monitor processes) runs them.

Usage: djangoq_app.py CELL   (healthy | backlog | failed | stuck | worker)
django_q_ormq: (id, key = cluster/queue name, payload = signed pickle, lock). `lock` is when the
row may be delivered: the enqueue time, then claim + `retry` (300 s here) on each dequeue, and
the row is deleted on acknowledgement. An expired claim looks exactly like a waiting job.
django_q_task: success false + attempt_count; a failed task stays in ormq and is delivered again
until attempt_count reaches max_attempts (2), then acknowledged (deleted from ormq).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import django
from common import DB, kill_when, me, wait_for
from django.conf import settings

settings.configure(
    DATABASES={"default": {"ENGINE": "django.db.backends.postgresql", "NAME": DB,
                           "USER": "postgres", "HOST": "127.0.0.1", "PORT": "5432"}},
    USE_TZ=True, TIME_ZONE="UTC", SECRET_KEY="test-only", LOGGING_CONFIG=None,
    INSTALLED_APPS=["django.contrib.contenttypes", "django_q"],
    Q_CLUSTER={"name": "dbw", "orm": "default", "workers": 3, "timeout": 250, "retry": 300,
               "max_attempts": 2, "poll": 0.2, "catch_up": False, "save_limit": 0,
               "ack_failures": False, "log_level": "WARNING"},
)
django.setup()

from django.core.management import call_command
from django.db import connection
from django_q.models import OrmQ, Task
from django_q.tasks import async_task


def count(sql: str) -> int:
    with connection.cursor() as cur:
        cur.execute(sql)
        return int(cur.fetchone()[0])


def cluster() -> list[str]:
    return [*me(), "worker"]


def run_until(what: str, cond: object) -> None:
    """Run the cluster until `cond`; every task is then acknowledged or recorded, so the
    cluster is SIGKILLed (its graceful stop takes seconds and changes nothing here)."""
    proc = subprocess.Popen(cluster(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ), start_new_session=True)
    try:
        wait_for(what, cond)  # type: ignore[arg-type]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)


def main(cell: str) -> None:
    if cell == "worker":
        call_command("qcluster")
        return
    call_command("migrate", verbosity=0)
    if cell == "healthy":
        for _ in range(5):
            async_task("math.floor", 1.5)
        run_until("5 successes", lambda: Task.objects.filter(success=True).count() == 5
                  and OrmQ.objects.count() == 0)
    elif cell == "backlog":
        for _ in range(300):
            async_task("math.floor", 1.5)
    elif cell == "failed":
        for _ in range(10):
            async_task("math.sqrt", "boom")  # TypeError in the worker
        run_until("10 first failures", lambda: Task.objects.filter(
            success=False, attempt_count=1).count() == 10 and count(
            "SELECT count(*) FROM django_q_ormq WHERE lock > now()") == 10)
        # the second delivery waits `retry` (300 s) after the claim: moved to now instead
        OrmQ.objects.update(lock=django.utils.timezone.now())
        run_until("10 exhausted", lambda: Task.objects.filter(
            success=False, attempt_count=2).count() == 10 and OrmQ.objects.count() == 0)
    elif cell == "stuck":
        for _ in range(3):
            async_task("time.sleep", 600)
        kill_when(cluster(), lambda: count(
            "SELECT count(*) FROM django_q_ormq WHERE lock > now()") == 3, "3 claimed tasks")
    else:
        raise SystemExit(f"unknown cell {cell}")


if __name__ == "__main__":
    main(sys.argv[1])
