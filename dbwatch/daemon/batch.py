"""The threads that run cycles and commit their bookkeeping are SCHED_BATCH (Linux).

A fleet's cycles run on a pool of threads sharing one interpreter lock: a cycle hands the
lock over at every round trip and every SQLite call, waking another thread, and the woken
thread, an ordinary (SCHED_OTHER) one, preempted the thread that woke it — a second context
switch before the waker had reached its own wait (its `poll`, the lock it wanted back). A
SCHED_BATCH thread that is woken does not preempt the running one: it runs when that one
blocks or its slice ends (the kernel treats it as throughput work, with the same fair share
of the CPU). What was an involuntary switch per hand-over becomes none (docs/cycle-cost.md
"The kernel's share").

Only the cycle threads (the runner's pool and own-lane threads) and the state's group-commit
flusher: APScheduler's thread, which wakes them on the grid's instants, stays an ordinary
thread, so its wake still preempts and the cycles' due times keep their precision. Set per
thread, by the thread itself (its first act); an unprivileged process may always lower itself
to SCHED_BATCH. What such a thread starts (the flusher, an alert command's process) inherits
it: the same fair share, only no wakeup preemption. A no-op where the call or the policy does
not exist (not Linux).
"""

from __future__ import annotations

import logging
import os

log = logging.getLogger(__name__)

# switched off (tests, a comparison): the threads stay ordinary
ENABLED = True


def batch_thread() -> bool:
    """Make the calling thread SCHED_BATCH; whether it is now."""
    setter = getattr(os, "sched_setscheduler", None)
    policy = getattr(os, "SCHED_BATCH", None)
    if not ENABLED or setter is None or policy is None:
        return False
    try:
        setter(0, policy, os.sched_param(0))
    except OSError:  # a seccomp filter, an exotic kernel: the thread stays as it was
        log.debug("SCHED_BATCH refused", exc_info=True)
        return False
    return True
