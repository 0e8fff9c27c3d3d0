"""Whether a table no library module knows is a queue, a results or dead-letter table beside
one, or a question (DW002), from its roles; and what such a table cannot tell (backlog, stuck,
failed). Pure: the probe feeds it catalog rows and status values.
"""

from __future__ import annotations

from dataclasses import field
from typing import Literal

from ..frozen import frozen
from .roles import CLAIM_ROLES, business_named, map_roles, queue_named
from .statuses import StatusMap

Verdict = Literal["queue", "question"]


@frozen
class Reading:
    """What the model makes of one table from its catalog entry: roles, and whether it is a
    queue ('queue'), looks like one without enough to judge it ('question', a DW002), or is
    not one (recognise returns None)."""

    roles: dict[str, str]
    verdict: Verdict
    evidence: tuple[str, ...]  # why, in words
    needs_status: bool = False  # a queue only if its status values are queue-like
    strict_status: bool = False  # ... and only a queue uses them (no claim column beside)
    results: bool = False  # finished runs beside a queue: only its failures are read
    columns: tuple[str, ...] = ()
    enums: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def unjudged(self, statuses: StatusMap | None) -> dict[str, str]:
        """backlog / stuck / failed -> why the table cannot tell it (empty: all judged)."""
        return unjudged(self.roles, statuses)


# Words of a table that keeps finished runs (results, completed tasks) beside a queue table.
RESULT_WORDS = frozenset(("completed", "finished", "done", "result", "results", "meta", "history"))
_JOB_WORDS = frozenset(("task", "tasks", "job", "jobs", "run", "runs"))


# Words of a table whose every row is a failure (a dead-letter table beside a queue).
FAILURE_WORDS = frozenset(("failed", "failures", "failure", "dead", "dlq", "deadletter", "errors"))


def failures_named(table: str) -> bool:
    """failed_tasks, job_failures, dead_letter_jobs (with a queue word, not failed_logins)."""
    base = table.rsplit(".", 1)[-1].strip('`"').lower()
    return queue_named(base) and not FAILURE_WORDS.isdisjoint(base.split("_"))


def results_named(table: str) -> bool:
    """completed_jobs, background_task_completedtask, celery_taskmeta, job_results."""
    base = table.rsplit(".", 1)[-1].strip('`"').lower()
    for word in base.split("_"):
        if word in RESULT_WORDS:
            return True
        for stem in RESULT_WORDS:
            if (word.startswith(stem) and word[len(stem) :] in _JOB_WORDS) or (
                word.endswith(stem) and word[: -len(stem)] in _JOB_WORDS
            ):
                return True
    return False


def recognise_shape(
    columns: dict[str, str],
    table: str,
    indexed: frozenset[str] = frozenset(),
    enums: dict[str, tuple[str, ...]] | None = None,
) -> Reading | None:
    """A table no library module knows, by its shape: a queue needs a runnable-at time, work
    (a payload or job type) and a claim (claimed at/by, lease, heartbeat) or a status whose
    values are a queue's; a results table (finished runs: a success flag, or a results name
    with an outcome) is read for its failures only. Partial evidence is a question (DW002),
    never a finding."""
    enums = {k.lower(): v for k, v in (enums or {}).items()}
    roles = map_roles(columns, enums)
    claim = [r for r in CLAIM_ROLES if r in roles]
    work = "payload" in roles or "job_type" in roles
    runnable = "runnable_at" in roles
    timed = "created_at" in roles or "updated_at" in roles
    evidence = [f"{r}={roles[r]}" for r in roles if r not in ("job_id", "created_at", "updated_at")]
    lower = {c.lower() for c in (roles.get(r) for r in ("runnable_at", "status", "queue")) if c}
    if indexed & lower:
        evidence.append("indexed: " + ", ".join(sorted(indexed & lower)))
    named = queue_named(table)
    if named:
        evidence.append("queue-like name")
    cols = tuple(sorted(columns, key=str.lower))

    def read(verdict: Verdict = "queue", **kw: bool) -> Reading:
        return Reading(roles, verdict, tuple(evidence), columns=cols, enums=enums, **kw)

    if business_named(table):
        # an application's record: only a worker's identity or heartbeat makes it a job table
        if runnable and work and ("claimed_by" in roles or "heartbeat" in roles):
            return read()
        return None
    outcome = "status" in roles or "failed_at" in roles or "error" in roles
    if work and outcome and failures_named(table) and "status" not in roles:
        # a dead-letter table: every row is a failure, timed by its failed-at, else creation
        if "failed_at" not in roles and "created_at" in roles:
            roles["failed_at"] = roles.pop("created_at")
        if "failed_at" in roles:
            evidence.append("failures table: every row a failure")
            return read(results=True)
    # (a run-at time beside a status: rows live through a queue's states there, the finished
    # ones kept — a queue, whatever its name says)
    kept = results_named(table) and outcome and not (runnable and "status" in roles)
    if work and ("succeeded" in roles or kept):
        evidence.append("results table: finished runs, read for failures only")
        return read(results=True)
    # a payload or job type says work; so does a queue's name beside a worker's own claim
    # (who holds it, a lease, a heartbeat, a held flag: not a to-do list's started_at)
    strong = [r for r in claim if r != "claimed_at"]
    if runnable and (work or (named and strong)) and claim:
        return read()
    if runnable and work and "status" in roles:
        return read(needs_status=True)
    if timed and work and "status" in roles:
        # no runnable-at: the enqueue / last-change time stands for it; a queue's name and a
        # claim say queue, else the status values must (a claim beside them: a running
        # value; no claim: words only a queue uses)
        if claim and named:
            return read()
        return read(needs_status=True, strict_status=not claim)
    if runnable and "payload" in roles and named:
        return read()  # a due time, a payload, a queue's name: what is due is the backlog
    signals = [
        r
        for r in (
            "runnable_at",
            *CLAIM_ROLES,
            "attempts",
            "max_attempts",
            "status",
            "failed_at",
            "error",
        )
        if r in roles
    ]
    if work:  # work in a named queue, with a priority: huey's task (no time at all)
        signals += ["work"] + [r for r in ("queue", "priority") if r in roles]
    if (named and len(signals) >= 2) or ((runnable or claim) and len(signals) >= 3):
        return read("question")
    return None


def _any(statuses: StatusMap) -> bool:
    return bool(statuses.unmapped) or any(statuses.states.values())


def unjudged(roles: dict[str, str], statuses: StatusMap | None) -> dict[str, str]:
    """What a queue-shaped table cannot tell, and why (backlog / stuck / failed)."""
    out: dict[str, str] = {}
    has_status = "status" in roles
    if statuses is not None and statuses.numeric:
        out["states"] = (
            f"status {roles['status']} holds integer codes ({', '.join(statuses.unmapped[:8])}):"
            " their meaning is in the application, not the table"
        )
    elif statuses is not None and statuses.unmapped:
        out["states"] = (
            f"status values not understood ({', '.join(statuses.unmapped[:8])}): rows with them "
            "are counted in no state"
        )
    no_states = "states" in out and statuses is not None and statuses.numeric
    if not any(r in roles for r in ("runnable_at", "created_at", "updated_at")):
        # (a waiting row's last change is when it became waiting: its age, said in evidence)
        out["backlog"] = (
            "no runnable-at, created-at or last-change time on waiting rows: backlog age unknown"
        )
    elif no_states and not any(r in roles for r in CLAIM_ROLES):
        out["backlog"] = "waiting rows cannot be told from claimed or finished ones"
    claim_time = any(r in roles for r in ("claimed_at", "heartbeat", "claim_expires_at"))
    if not claim_time:
        if "updated_at" in roles and (
            has_status or "claimed_by" in roles or "claimed_flag" in roles
        ):
            pass  # claim age read from updated_at (said in evidence)
        else:
            out["stuck"] = "no claim time (locked/reserved at, heartbeat, lease): stuck unknown"
    elif no_states and "claimed_at" not in roles and "claimed_by" not in roles:
        out["stuck"] = "claimed rows cannot be told (status codes unknown, no claim marker)"
    outcome = has_status or any(r in roles for r in ("finished_at", "failed_at", "succeeded"))
    if "stuck" not in out and not outcome and any(r in roles for r in CLAIM_ROLES):
        out["stuck"] = (
            "no status and no finished or failed marker: a claimed row looks the same "
            "finished, failed or orphaned"
        )
    # failures are told by the status where it names a failed state, or where the values read
    # from the rows record outcomes (a done value: a failure would be written as a word too),
    # or where there are no rows to judge
    fail_states = statuses is not None and (
        bool(statuses.values("failed"))
        or (statuses.observed and (bool(statuses.values("done")) or not _any(statuses)))
    )
    markers = (
        "failed_at" in roles
        or "succeeded" in roles
        or ("attempts" in roles and "max_attempts" in roles)
    )
    if not fail_states and not markers:
        out["failed"] = (
            "no failure record (a failed status value, failed-at time, or attempts with max "
            "attempts): failures unknown"
        )
    return out
