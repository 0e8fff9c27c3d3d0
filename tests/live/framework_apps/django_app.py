"""A Django app with Google's sqlcommenter middleware (issue 23 live test): the view
`orders/<pk>/lock` opens a transaction, locks a row, updates another, and leaves the
transaction idle. Protocol: prints `ID <session id>`, `STEP1` after the first statement and
`READY` after the second, each time waiting for a line on stdin; then rolls back.

    python django_app.py postgresql|mysql HOST PORT DATABASE TABLE
"""
from __future__ import annotations

import sys

engine, host, port, database, table = sys.argv[1:6]
if engine == "mysql":
    import pymysql

    pymysql.install_as_MySQLdb()

import django
from django.conf import settings
from django.urls import include, path

settings.configure(
    DEBUG=False,
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=["google.cloud.sqlcommenter.django.middleware.SqlCommenter"],
    SQLCOMMENTER_WITH_APP_NAME=True,
    DATABASES={"default": {
        "ENGINE": f"django.db.backends.{engine}", "HOST": host, "PORT": port,
        "NAME": database, "USER": "postgres" if engine == "postgresql" else "root",
        "PASSWORD": "",
    }},
)
django.setup()

from django.db import connection, transaction  # noqa: E402
from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.test import Client  # noqa: E402


def _say(word: str) -> None:
    print(word, flush=True)
    sys.stdin.readline()


def lock_order(request: HttpRequest, pk: int) -> HttpResponse:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_backend_pid()" if engine == "postgresql" else "SELECT CONNECTION_ID()")
        print(f"ID {cur.fetchone()[0]}", flush=True)
    transaction.set_autocommit(False)
    try:
        with connection.cursor() as cur:
            cur.execute(f"SELECT id, s FROM {table} WHERE id = %s FOR UPDATE", [pk])
            _say("STEP1")
            cur.execute(f"UPDATE {table} SET s = %s WHERE id = %s", ["paid", pk + 1])
            _say("READY")
    finally:
        transaction.rollback()
        transaction.set_autocommit(True)
    return HttpResponse("ok")


shop = ([path("orders/<int:pk>/lock", lock_order, name="lock-order")], "shop")
urlpatterns = [path("", include(shop))]

if __name__ == "__main__":
    response = Client().get("/orders/1/lock")
    print(f"DONE {response.status_code}", flush=True)
