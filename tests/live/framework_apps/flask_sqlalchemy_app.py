"""A Flask + SQLAlchemy app with Google's sqlcommenter before_cursor_execute hook (issue 23
live test): the endpoint `/orders/<pk>/lock` opens a transaction, locks a row, updates
another and leaves it idle. The client names itself (application_name / program_name).
Same protocol as django_app.py.

    python flask_sqlalchemy_app.py postgresql|mysql HOST PORT DATABASE TABLE
"""
from __future__ import annotations

import sys

import flask
import sqlalchemy
from google.cloud.sqlcommenter.sqlalchemy.executor import BeforeExecuteFactory
from sqlalchemy import event, text

engine_name, host, port, database, table = sys.argv[1:6]
if engine_name == "postgresql":
    url = f"postgresql+psycopg://postgres@{host}:{port}/{database}"
    connect_args: dict[str, object] = {"application_name": "shop-api"}
else:
    url = f"mysql+pymysql://root@{host}:{port}/{database}"
    connect_args = {"program_name": "shop-api"}
engine = sqlalchemy.create_engine(url, connect_args=connect_args)
event.listen(engine, "before_cursor_execute",
             BeforeExecuteFactory(with_db_driver=True, with_db_framework=True), retval=True)
app = flask.Flask("shop")


def _say(word: str) -> None:
    print(word, flush=True)
    sys.stdin.readline()


@app.route("/orders/<int:pk>/lock")
def lock_order(pk: int) -> str:
    with engine.connect() as conn:
        ident = "SELECT pg_backend_pid()" if engine_name == "postgresql" else "SELECT CONNECTION_ID()"
        print(f"ID {conn.execute(text(ident)).scalar()}", flush=True)
        conn.commit()
        with conn.begin():
            conn.execute(text(f"SELECT id, s FROM {table} WHERE id = :pk FOR UPDATE"), {"pk": pk})
            _say("STEP1")
            conn.execute(text(f"UPDATE {table} SET s = 'paid' WHERE id = :pk"), {"pk": pk + 1})
            _say("READY")
            conn.rollback()
    return "ok"


if __name__ == "__main__":
    response = app.test_client().get("/orders/1/lock")
    print(f"DONE {response.status_code}", flush=True)
