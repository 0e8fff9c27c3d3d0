"""Symfony Messenger's Doctrine transport (4.4–7.x): `messenger_messages`, both engines.

Stuck: a message delivered to a worker (delivered_at set) longer than redeliver_timeout
(3600 s by default) is redelivered to another worker. Failed messages sit in the same table
under the failure transport's queue name ('failed' by convention).
"""

from __future__ import annotations

import re

from .base import Library, Shape, queue_library

MESSAGES = Shape(
    "symfony_messenger",
    "symfony-messenger",
    frozenset(
        {"id", "body", "headers", "queue_name", "created_at", "available_at", "delivered_at"}
    ),
    scale_depth=False,  # failed messages stay in the table: its row estimate is not the queue
)

# ErrorDetailsStamp as PhpSerializer writes it (private properties, addslashes'd NULs) or as
# the Serializer's JSON header (exceptionClass / exceptionMessage).
_FIELD = re.compile(r'exception(Class|Message)[^:]{0,20}:(?:\d{1,6}:)?\\?"([^"]{1,300}?)\\?"')


def error_head(raw: str | None) -> str | None:
    """'Class: message' out of a bounded slice of a failed message's body or headers."""
    if not raw:
        return None
    found: dict[str, str] = {}
    for m in _FIELD.finditer(str(raw)[:2000]):
        found.setdefault(m.group(1), m.group(2))
    if "Class" not in found:
        return None
    cls = found["Class"].replace("\\\\", "\\")
    return f"{cls}: {found.get('Message', '')}".strip()


_CLASS = re.compile(r'(?:message\\?";O:\d{1,5}:\\?"|"type":\s{0,4}")([\w\\]{1,200}?)\\?"')


def message_class(raw: str | None) -> str | None:
    """The message class out of a bounded slice (PHP serializer or JSON 'type' header)."""
    m = _CLASS.search(str(raw or "")[:400])
    return m.group(1).replace("\\\\", "\\") if m else None


# The library on the one queue model: role -> its column (sibling.column in a sibling
# table); docs/queues.md shows them side by side.
ROLES = {
    "job_id": "id",
    "queue": "queue_name",
    "payload": "body",
    "runnable_at": "available_at",
    "claimed_at": "delivered_at",
    "created_at": "created_at",
}

LIBRARY = Library(
    roles=ROLES,
    name="symfony-messenger",
    title="Symfony Messenger",
    versions="4.4–7.x Doctrine transport (messenger_messages; tested live with 5.4)",
    shapes=(MESSAGES,),
    table_names=frozenset({"messenger_messages"}),
    states={
        "available": "delivered_at IS NULL AND available_at <= now",
        "claimed": "delivered_at IS NOT NULL",
        "retrying": "a RedeliveryStamp in the envelope (retry_strategy delay)",
        "failed": "in the failure transport's queue (queue_name 'failed')",
        "done": "deleted (acknowledged)",
    },
    stuck="delivered longer than redeliver_timeout (3600 s): redelivered to another worker",
    backlog_fix=(
        "Check the consumers run (php bin/console messenger:consume <transport> under "
        "supervisor/systemd); php bin/console messenger:stats shows the counts; add consumers "
        "only when the database is healthy."
    ),
    expired_fix=(
        "A consumer died or hangs with these messages (OOM, SIGKILL, deploy without "
        "php bin/console messenger:stop-workers); they are redelivered after "
        "redeliver_timeout; run consumers with --time-limit/--memory-limit, keep handlers "
        "idempotent, and raise redeliver_timeout above the slowest handler."
    ),
    expired_note=(
        "messages delivered to a consumer longer than",
        "the Doctrine transport redelivers them to another consumer",
    ),
    attempts_fix=(
        "Read why they were retried (php bin/console messenger:failed:show -vv); tune "
        "retry_strategy (max_retries, delay, multiplier) of the transport."
    ),
    expiry_source="Doctrine transport redeliver_timeout (default 3600 s)",
    failure_fix={
        "other": (
            "php bin/console messenger:failed:show -vv shows the exception; fix the handler, "
            "then php bin/console messenger:failed:retry (or messenger:failed:remove <id>)."
        ),
    },
)
queue_library(LIBRARY)
