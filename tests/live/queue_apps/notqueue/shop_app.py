"""Builds the Django shop (django.contrib auth/admin/sessions + the shop app) with Django's own
`migrate --run-syncdb` and fills it with rows in every status, old and overdue timestamps,
attempts and error texts. Usage: shop_app.py  (env DB_ENGINE, DB_NAME)."""

from __future__ import annotations

import os
import random
from datetime import timedelta
from decimal import Decimal

import django
import pymysql
from django.conf import settings

DB, ENGINE = os.environ["DB_NAME"], os.environ.get("DB_ENGINE", "postgresql")
if ENGINE == "mariadb":
    pymysql.version_info = (2, 2, 1, "final", 0)  # Django checks mysqlclient's version
    pymysql.install_as_MySQLdb()
    DATABASE = {"ENGINE": "django.db.backends.mysql", "NAME": DB, "USER": "root",
                "HOST": "127.0.0.1", "PORT": "3306"}
else:
    DATABASE = {"ENGINE": "django.db.backends.postgresql", "NAME": DB, "USER": "postgres",
                "HOST": "127.0.0.1", "PORT": "5432"}
settings.configure(
    DATABASES={"default": DATABASE}, USE_TZ=True, TIME_ZONE="UTC", SECRET_KEY="test-only",
    PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"],  # fast, test only
    INSTALLED_APPS=["django.contrib.contenttypes", "django.contrib.auth", "django.contrib.admin",
                    "django.contrib.sessions", "django.contrib.messages", "shop"],
)
django.setup()

from django.contrib.admin.models import LogEntry
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from django.core.management import call_command
from django.utils import timezone
from shop import models as m

rnd = random.Random(27)
now = timezone.now()


def ago(max_days: float, min_hours: float = 1) -> timezone.datetime:
    return now - timedelta(hours=rnd.uniform(min_hours, max_days * 24))


def fill() -> None:
    admin = User.objects.create_superuser("admin", "a@example.com", "pw")
    for i in range(20):
        User.objects.create_user(f"staff{i}", f"s{i}@example.com", "pw",
                                 last_login=ago(30), date_joined=ago(300))
    for i in range(30):
        s = SessionStore()
        s["cart"] = [i]
        s.create()
    LogEntry.objects.bulk_create(LogEntry(user=admin, action_flag=1 + i % 3, object_repr=f"o{i}",
                                          action_time=ago(30), change_message="[]")
                                 for i in range(50))
    customers = m.Customer.objects.bulk_create(
        m.Customer(email=f"c{i}@example.com", name=f"C {i}", created_at=ago(400),
                   last_login_at=ago(60)) for i in range(100))
    products = m.Product.objects.bulk_create(
        m.Product(sku=f"SKU{i}", name=f"P {i}", price=Decimal("9.99"), stock=i,
                  updated_at=ago(90)) for i in range(40))
    order_status = ["pending", "paid", "processing", "shipped", "delivered", "cancelled",
                    "refunded", "failed", "on_hold"]
    orders = m.Order.objects.bulk_create(
        m.Order(customer=rnd.choice(customers), status=order_status[i % len(order_status)],
                total=Decimal("19.98"), placed_at=ago(30), updated_at=ago(20),
                fulfillment_attempts=i % 5, last_error="warehouse API timeout" if i % 4 else "")
        for i in range(450))
    m.OrderItem.objects.bulk_create(m.OrderItem(order=o, product=rnd.choice(products), quantity=2,
                                                unit_price=Decimal("9.99")) for o in orders)
    pay_status = ["scheduled", "pending", "authorized", "captured", "failed", "refunded",
                  "processing", "requires_action"]
    m.Payment.objects.bulk_create(
        m.Payment(order=o, status=pay_status[i % len(pay_status)], amount=Decimal("19.98"),
                  provider="stripe", retry_count=i % 6,
                  last_error="card_declined: insufficient_funds" if i % 3 == 0 else "",
                  scheduled_at=ago(10), processed_at=ago(9) if i % 2 else None,
                  created_at=ago(30)) for i, o in enumerate(orders))
    inv_status = ["draft", "open", "paid", "void", "uncollectible"]
    m.Invoice.objects.bulk_create(
        m.Invoice(order=o, number=f"INV-{i}", status=inv_status[i % 5], attempt_count=i % 4,
                  next_payment_attempt_at=ago(5) if i % 5 == 1 else None, issued_at=ago(40),
                  due_at=ago(10), paid_at=ago(5) if i % 5 == 2 else None)
        for i, o in enumerate(orders))
    ship_status = ["label_created", "in_transit", "out_for_delivery", "delivered", "returned",
                   "lost", "failed_attempt"]
    m.Shipment.objects.bulk_create(
        m.Shipment(order=o, carrier="dhl", tracking_number=f"T{i}",
                   status=ship_status[i % len(ship_status)], shipped_at=ago(15),
                   estimated_delivery_at=ago(5), delivered_at=ago(3) if i % 7 == 3 else None)
        for i, o in enumerate(orders[:300]))
    m.Notification.objects.bulk_create(
        m.Notification(customer=rnd.choice(customers), channel=rnd.choice(["email", "sms"]),
                       template="order_shipped", status=s, sent_at=ago(30),
                       error="550 mailbox unavailable" if s in ("bounced", "failed") else "")
        for i in range(400) for s in [("sent", "delivered", "opened", "bounced", "failed")[i % 5]])
    m.SupportTicket.objects.bulk_create(
        m.SupportTicket(customer=rnd.choice(customers), subject=f"where is order {i}",
                        status=("open", "in_progress", "waiting", "resolved", "closed")[i % 5],
                        priority=i % 3, assigned_to=f"staff{i % 4}" if i % 5 == 1 else "",
                        opened_at=ago(20), updated_at=ago(10), due_at=ago(2))
        for i in range(200))


if __name__ == "__main__":
    call_command("migrate", run_syncdb=True, verbosity=0)
    fill()
