"""Failure texts of queue libraries, classified: the exception and what it means.

Generic kinds (deadlock, lock wait timeout) are read the same for every library; each
library adds its own texts (Library.failure_texts), checked first.
"""

from __future__ import annotations

import re

from ..frozen import frozen


@frozen
class Failure:
    exception: str  # exception class as written in the text
    kind: str  # max_attempts | timeout | deadlock | lock_wait_timeout | worker_lost
    # | batch | other
    variant: str  # which message version, for max_attempts


_MAX = "MaxAttemptsExceededException"
# Solid Queue fails (never re-runs) the claimed jobs of a worker that died or went silent.
_WORKER_LOST = ("ProcessPrunedError", "ProcessExitError", "ProcessMissingError")
BATCH_EXCEPTION = "Illuminate\\Bus\\Batch"  # the probe's label for a batch's failed jobs
_ELIXIR = re.compile(r"\*\* \(([\w.]{1,200})\) (.*)")
_KIND_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "deadlock",
        re.compile(
            r"SQLSTATE\[(40001|40P01)\]|\b1213\b.*deadlock|deadlock detected|"
            r"deadlock found",
            re.IGNORECASE,
        ),
    ),
    (
        "lock_wait_timeout",
        re.compile(
            r"\b1205\b.*lock wait timeout|lock wait timeout exceeded|"
            r"SQLSTATE\[55P03\]|canceling statement due to lock timeout",
            re.IGNORECASE,
        ),
    ),
)


def _split(text: str) -> tuple[str, str]:
    elixir = _ELIXIR.match(text)  # Oban: "** (RuntimeError) message"
    if elixir:
        exc, message = elixir.group(1), elixir.group(2)
    else:
        exc, _, message = text.partition(": ")
    if not message or " " in exc or len(exc) > 200:
        exc, message = "(unknown)", text
    return exc, message


def classify_failure(head: str | None, own: tuple[tuple[str, str], ...] = ()) -> Failure:
    """Exception class and meaning of the first line of a failure text; `own` are the
    library's own texts (substring, kind), read before the generic ones."""
    text = " ".join(str(head or "").split())[:400]
    exc, message = _split(text)
    lowered = text.lower()
    for needle, kind in own:
        if needle.lower() in lowered:
            return Failure(exc, kind, "")
    if _MAX in exc:
        if "run too long" in message:
            variant = "5.5-10.9"
        elif message.startswith("A queued job has been attempted too many times"):
            variant = "5.4"
        else:
            variant = "10.10+"
        return Failure(exc, "max_attempts", variant)
    if exc.endswith(_WORKER_LOST):
        return Failure(exc, "worker_lost", "")
    if exc == BATCH_EXCEPTION:
        return Failure(exc, "batch", "")
    if exc.endswith("TimeoutExceededException") or message.endswith("has timed out."):
        return Failure(exc, "timeout", "")
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(message):
            return Failure(exc, kind, "")
    return Failure(exc, "other", "")


# What each kind means, library-neutral; a library overrides with Library.failure_meaning.
MEANING = {
    "max_attempts": (
        "the job was handed to workers more times than its tries allow without finishing"
    ),
    "timeout": "the job ran longer than its time limit and was stopped",
    "deadlock": (
        "the queue's own statements deadlocked (SQLSTATE 40001 / 1213 on MySQL, 40P01 on "
        "PostgreSQL)"
    ),
    "lock_wait_timeout": (
        "a statement waited longer than innodb_lock_wait_timeout (1205) or "
        "lock_timeout: something held row locks on the queue or the job's "
        "tables for too long"
    ),
    "worker_lost": (
        "the worker running the job died or stopped sending heartbeats (OOM or "
        "SIGKILL, a deploy without a graceful stop, a hung or suspended host)"
    ),
    "batch": "jobs of this batch failed",
    "other": "the job threw this exception itself",
}

FIX = {
    "deadlock": (
        "Claim with FOR UPDATE SKIP LOCKED (MySQL 8.0.1+, MariaDB 10.6+), keep job "
        "transactions short; retry the failed jobs once fixed."
    ),
    "lock_wait_timeout": (
        "Find the long lock holder (MY001/MY101, PG001/PG101) and shorten its "
        "transaction; then retry the failed jobs."
    ),
    "other": "Read the error of the failed jobs and fix the job; then retry them.",
}
