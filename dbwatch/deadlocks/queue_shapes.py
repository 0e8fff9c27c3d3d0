"""Queue deadlock shapes beyond claim-vs-delete: delete vs delete through two indexes, a
purge/archive run vs the workers (a completing update vs a claim is claim-vs-delete's
QU402 branch in diagnosis.py). Decided by what each
statement does to the queue table (dbwatch.parsers.statements); the fix in the words of the
library that owns the table, when the queue registry knows it.
"""

from __future__ import annotations

from dbwatch.parsers.deadlock_model import Deadlock, DeadlockTrx
from dbwatch.parsers.statements import CLAIM_SIDE, DELETE, delete_target
from dbwatch.queues import is_job_table, is_queue_like, is_queue_table, library
from dbwatch.records import Diagnosis

MAX_SHOWN = 200  # query characters quoted in an explanation

SKIP_LOCKED = (
    "claim with `FOR UPDATE SKIP LOCKED` where the server has it "
    "(MySQL 8.0.1+, MariaDB 10.6+; Laravel uses it from 6.14 / 8.69)"
)
RETRY = "retry the transaction on a deadlock (MySQL error 1213, PostgreSQL SQLSTATE 40P01)"


def is_queue_table_name(name: str | None) -> bool:
    """A table jobs or messages are taken from: a library's job table or a generic queue name
    (is_job_table), or a queue-like name no library owns (a library's sibling tables, such as
    failed_jobs or job_batches, are not queues)."""
    if not name:
        return False
    return is_job_table(name) or (is_queue_like(name) and is_queue_table(name) is None)


def short(query: str | None) -> str:
    q = " ".join((query or "?").split())
    return q if len(q) <= MAX_SHOWN else q[:MAX_SHOWN] + "…"


def who(t: DeadlockTrx | None) -> str:
    if t is None:
        return "an unknown transaction"
    about = [f"thread {t.thread_id}"] if t.thread_id is not None else []
    if t.query:
        about.append(f"`{short(t.query)}`")
    return f"transaction ({t.n})" + (f" ({', '.join(about)})" if about else "")


def victim_of(dl: Deadlock) -> DeadlockTrx | None:
    return dl.trx(dl.victim) if dl.victim is not None else None


def inferred(dl: Deadlock) -> str:
    return "(Victim inferred, not printed.) " if dl.victim_inferred else ""


def rolled_back(dl: Deadlock) -> str:
    if dl.victim is None:
        return "The report does not say which side was rolled back."
    return f"{inferred(dl)}Rolled back: {who(victim_of(dl))}."


def _title(table: str) -> str | None:
    lib = library(is_queue_table(table))
    return lib.title if lib else None


def delete_targets(dl: Deadlock, kinds: dict[int, str]) -> dict[int, str | None]:
    """How each deleting transaction picks its rows: id, key or range (a purge)."""
    return {t.n: delete_target(t.query) for t in dl.transactions if kinds.get(t.n) == DELETE}


def queue_indexes(dl: Deadlock, queue: set[str]) -> set[str]:
    return {lk.index for lk in dl.locks if lk.index and lk.table and lk.table.lower() in queue}


def maintenance_vs_workers(
    dl: Deadlock, table: str, purge: list[int], workers: list[int], kinds: dict[int, str]
) -> Diagnosis:
    purger = dl.trx(purge[0])
    worker = dl.trx(workers[0])
    doing = {"claim": "claiming", "reserve": "reserving", "delete": "deleting", "fetch": "deleting"}
    text = (
        f"A maintenance run on the queue table `{table}` deadlocked with the workers: "
        f"{who(purger)} deletes finished or old jobs by a range (a purge or archive), locking "
        f"many rows and the gaps between them in index order, while {who(worker)} was "
        f"{doing.get(kinds[worker.n] if worker else '', 'working on')} a job and locks in "
        f"another order. {rolled_back(dl)}"
    )
    lib = _title(table)
    fix = (
        "Purge in small batches by primary key, each its own short transaction (select the "
        "ids of finished jobs without a locking read, then `DELETE … WHERE id IN (…)` of at "
        "most a few hundred, commit, repeat), run it when the queue is quiet, and "
        f"{RETRY}; {SKIP_LOCKED}."
    )
    if lib == "Solid Queue":
        fix += " Solid Queue clears finished jobs in batches itself (`clear_finished_jobs_after`)."
    elif lib == "GoodJob":
        fix += " GoodJob's own `GoodJob.cleanup_preserved_jobs` deletes in batches."
    rules: tuple[str, ...] = ("QU402",) if any(kinds[n] in CLAIM_SIDE for n in workers) else ()
    return Diagnosis("queue-maintenance-vs-workers", rules, text, fix)


def delete_vs_delete(
    dl: Deadlock, table: str, dels: list[int], targets: dict[int, str | None], indexes: set[str]
) -> Diagnosis:
    by = {n: targets[n] for n in dels}
    one = next((dl.trx(n) for n in dels if by[n] == "id"), dl.trx(dels[0]))
    other = next((dl.trx(n) for n in dels if dl.trx(n) is not one), dl.trx(dels[-1]))
    through = f" (indexes {', '.join(sorted(indexes))})" if len(indexes) > 1 else ""
    text = (
        f"Two consumers deleting from the queue table `{table}` deadlocked: {who(one)} and "
        f"{who(other)} reach the same rows through different indexes{through}: a delete by "
        f"a unique key locks that index first and the primary key second, a delete by id "
        f"the other way round. {rolled_back(dl)} The rolled-back side's message was not "
        f"removed and will be delivered again."
    )
    lib = _title(table)
    fix = (
        "Make every consumer remove a message the same way: by primary key only (`DELETE … "
        "WHERE id = ?`; look the id up by the other key first, without a locking read), so "
        f"every delete locks the primary key first; {RETRY}."
    )
    if lib == "Symfony Messenger":
        fix += (
            " Symfony Messenger's Doctrine transport acknowledges a message by deleting it "
            "by id; the delete by another key is the application's own code."
        )
    elif lib:
        fix += f" {lib} removes its jobs by id; the delete by another key is the application's."
    return Diagnosis("queue-delete-vs-delete", (), text, fix)
