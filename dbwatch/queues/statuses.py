"""A status column's values mapped by meaning to the queue model's states (waiting, running,
failed, done), with what is not understood kept apart; pure.
"""

from __future__ import annotations

import re

from ..frozen import frozen

# Status words by meaning (lower case); a value matches a word exactly or as a word of it.
# fmt: off
STATE_WORDS: dict[str, frozenset[str]] = {
    "waiting": frozenset((
        "queued", "enqueued", "pending", "available", "scheduled", "new", "waiting", "ready",
        "todo", "created", "retry", "retryable", "retrying", "runnable", "delayed", "deferred",
        "open", "idle", "unprocessed",
    )),
    "running": frozenset((
        "running", "active", "picked", "doing", "started", "processing", "locked", "reserved",
        "in_progress", "inprogress", "executing", "claimed", "consumed", "working", "busy",
        "leased", "taken", "dequeued", "acquired",
    )),
    "failed": frozenset((
        "failed", "failure", "dead", "error", "errored", "discarded", "cancelled", "canceled",
        "abandoned", "aborted", "rejected", "killed", "expired", "timeout", "timed_out",
        "dead_letter", "dlq", "poisoned", "revoked", "stuck", "gave_up",
    )),
    "done": frozenset((
        "done", "succeeded", "success", "successful", "completed", "complete", "finished", "ok",
        "processed", "archived", "acked",
    )),
}
# fmt: on
# Values only a queue uses (an order can be 'pending' or 'completed', not 'queued' or 'doing').
# fmt: off
QUEUE_ONLY = frozenset((
    "queued", "enqueued", "available", "retryable", "retrying", "runnable", "picked", "doing",
    "executing", "claimed", "consumed", "todo", "reserved", "dequeued", "discarded",
    "dead_letter", "leased", "in_progress",
))
# fmt: on


def state_of(value: str) -> str | None:
    """waiting / running / failed / done for a status value, None when it means none of them
    (a number, or a word of no queue)."""
    v = value.strip().lower().replace("-", "_").replace(" ", "_")
    for state, words in STATE_WORDS.items():
        if v in words:
            return state
    parts = [p for p in v.split("_") if p]
    for state, words in STATE_WORDS.items():
        if parts and parts[-1] in words:  # job_failed, task_done
            return state
    return None


@frozen
class StatusMap:
    """A status column's values read from the data (or the enum's labels), by state."""

    states: dict[str, tuple[str, ...]]  # waiting/running/failed/done -> values
    unmapped: tuple[str, ...]
    numeric: bool  # integer codes: their meaning is not in the table
    queue_like: bool  # values only a queue uses, or a claimed (running) state
    queue_only: bool = False  # values only a queue uses
    observed: bool = False  # read from the rows (not an enum's labels): what is there now

    def values(self, state: str) -> tuple[str, ...]:
        return self.states.get(state, ())


def map_statuses(values: list[str] | tuple[str, ...], observed: bool = False) -> StatusMap:
    states: dict[str, list[str]] = {s: [] for s in STATE_WORDS}
    unmapped: list[str] = []
    numeric = bool(values) and all(re.fullmatch(r"-?\d+", v.strip()) for v in values)
    for v in values:
        st = None if numeric else state_of(v)
        (states[st] if st else unmapped).append(v)
    norm = {v.strip().lower().replace("-", "_").replace(" ", "_") for v in values}
    queue_like = bool(states["running"]) or bool(norm & QUEUE_ONLY)
    return StatusMap(
        {k: tuple(v) for k, v in states.items()},
        tuple(unmapped),
        numeric,
        queue_like,
        bool(norm & QUEUE_ONLY),
        observed,
    )
