"""django-background-tasks 1.2.8 driven by its own code: Django's migrate creates
`background_task` / `background_completedtask`, `@background` enqueues, `process_tasks` and
`tasks.run_next_task()` (the library's worker loop) run them.

Usage: bgtasks_app.py CELL   (healthy | backlog | failed | stuck | worker-slow)
MAX_ATTEMPTS = 2: a task that raises is rescheduled once (run_at + 6 s), then moved to
background_completedtask with failed_at set. MAX_RUN_TIME = 3600 (the default) is its lock
expiry: a lock older than that is taken again by the next worker.
"""

from __future__ import annotations

import sys
import time

import django
import pymysql
from common import DB, ENGINE, kill_when, me
from django.conf import settings

if ENGINE == "mariadb":
    pymysql.version_info = (2, 2, 1, "final", 0)  # Django checks mysqlclient's version
    pymysql.install_as_MySQLdb()
    DATABASE = {"ENGINE": "django.db.backends.mysql", "NAME": DB, "USER": "root",
                "HOST": "127.0.0.1", "PORT": "3306"}
else:
    DATABASE = {"ENGINE": "django.db.backends.postgresql", "NAME": DB, "USER": "postgres",
                "HOST": "127.0.0.1", "PORT": "5432"}
settings.configure(
    DATABASES={"default": DATABASE}, USE_TZ=True, TIME_ZONE="UTC",
    INSTALLED_APPS=["django.contrib.contenttypes", "background_task"],
    MAX_ATTEMPTS=2, BACKGROUND_TASK_RUN_ASYNC=len(sys.argv) > 1 and sys.argv[1] == "worker-slow",
    BACKGROUND_TASK_ASYNC_THREADS=4, LOGGING_CONFIG=None,
)
django.setup()

from background_task import background
from background_task.models import CompletedTask, Task
from background_task.tasks import tasks
from django.core.management import call_command
from django.utils import timezone


@background(queue="default", name="ok")
def ok() -> None:
    pass


@background(queue="default", name="boom")
def boom() -> None:
    raise RuntimeError("boom")


@background(queue="slow", name="slow")
def slow() -> None:
    time.sleep(600)


def drain(queue: str) -> None:
    while tasks.run_next_task(queue):
        pass


def main(cell: str) -> None:
    if cell == "worker-slow":  # the library's own worker command, 4 threads
        call_command("process_tasks", queue="slow", sleep=0.1)
        return
    call_command("migrate", verbosity=0)
    if cell == "healthy":
        for _ in range(5):
            ok()
        drain("default")
    elif cell == "backlog":
        for _ in range(300):
            ok()
    elif cell == "failed":
        for _ in range(10):
            boom()
        drain("default")  # first attempt: rescheduled 6 s later (attempts ** 4 + 5)
        Task.objects.update(run_at=timezone.now())  # moved forward instead of waiting 6 s
        drain("default")  # second attempt: MAX_ATTEMPTS reached, moved to completed, failed_at
    elif cell == "stuck":
        for _ in range(3):
            slow()
        kill_when([*me(), "worker-slow"],
                  lambda: Task.objects.filter(locked_by__isnull=False).count() == 3,
                  "3 locked slow tasks")
    else:
        raise SystemExit(f"unknown cell {cell}")
    print(Task.objects.count(), CompletedTask.objects.count())


if __name__ == "__main__":
    main(sys.argv[1])
