"""Business tables are not queues: a Django app's own tables (auth, admin, sessions, created by
Django's migrate) and an e-commerce schema (orders, payments with status + retry_count +
last_error + scheduled_at, invoices with attempt_count + next_payment_attempt_at, shipments, a
notification log, support tickets with an assignee), filled with rows in every status with old
and overdue timestamps, on both engines. dbwatch must report no queue finding for any of them;
a DW002 question is allowed only for the tables whose shape is partly queue-like."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from queue_libs import PY_LIBS, audit, by_rule, pg_database, py_env
from unknown_libs import gaps_for, my_database

APP = Path(__file__).with_name("queue_apps") / "notqueue"
# a status with timestamps, attempts, an error text or an assignee: at most a DW002 question
QUESTION_OK = ("shop_order", "shop_payment", "shop_invoice", "shop_shipment",
               "shop_notification", "shop_supportticket")
NEVER = ("auth_user", "auth_group", "auth_permission", "auth_user_groups",
         "auth_user_user_permissions", "auth_group_permissions", "django_admin_log",
         "django_content_type", "django_migrations", "django_session", "shop_customer",
         "shop_product", "shop_orderitem")


@pytest.mark.parametrize("engine", ["postgresql", "mariadb"])
def test_business_schema_has_no_queue_findings(engine: str) -> None:
    if not (PY_LIBS / "django").is_dir():
        pytest.skip(f"Django not installed in {PY_LIBS} (.ci/run installs it)")
    db = f"dbw_notq_{engine[:2]}_{uuid.uuid4().hex[:8]}"
    ctx = pg_database(db) if engine == "postgresql" else my_database(db)
    with ctx:
        env = py_env(DB_ENGINE=engine, DB_NAME=db)
        env["PYTHONPATH"] += ":" + str(APP)
        out = subprocess.run([sys.executable, "shop_app.py"], cwd=APP, env=env, timeout=180,
                             capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr[-2000:]
        url = (f"postgresql://postgres@127.0.0.1:5432/{db}" if engine == "postgresql"
               else f"mysql://root@127.0.0.1:3306/{db}")
        data = audit(url, "--select", "QU,DW")
    qu = [f for f in data["findings"] if f["rule"].startswith("QU")]
    assert qu == [], qu
    assert not by_rule(data, "DW001"), by_rule(data, "DW001")
    for table in NEVER:
        assert gaps_for(data, table) == [], (table, gaps_for(data, table))
