"""A pgqueuer app for tests/live/test_queue_pgqueuer.py (run by pgqueuer's own `pgq run`)."""

import asyncio
import os
from datetime import timedelta

import psycopg
from pgqueuer import PgQueuer
from pgqueuer.db import PsycopgDriver
from pgqueuer.executors import DatabaseRetryEntrypointExecutor
from pgqueuer.models import Job


def _retry_once(params):  # type: ignore[no-untyped-def]
    return DatabaseRetryEntrypointExecutor(
        parameters=params, max_attempts=1, initial_delay=timedelta(0)
    )


async def main() -> PgQueuer:
    conn = await psycopg.AsyncConnection.connect(os.environ["DSN"], autocommit=True)
    pgq = PgQueuer(PsycopgDriver(conn))

    @pgq.entrypoint("ok")
    async def ok(job: Job) -> None:
        pass

    @pgq.entrypoint("boom", executor_factory=_retry_once)
    async def boom(job: Job) -> None:
        raise RuntimeError("boom")

    @pgq.entrypoint("slow")
    async def slow(job: Job) -> None:
        await asyncio.sleep(600)

    return pgq


async def enqueue(entrypoint: str, n: int) -> None:
    from pgqueuer.queries import Queries

    conn = await psycopg.AsyncConnection.connect(os.environ["DSN"], autocommit=True)
    await Queries(PsycopgDriver(conn)).enqueue([entrypoint] * n, [None] * n, [0] * n)
    await conn.close()


async def work(mode: str) -> None:
    """What `pgq run pgqueuer_app:main` does (its CLI's log setup fails on Python 3.11)."""
    from pgqueuer.types import QueueExecutionMode

    pgq = await main()
    await pgq.run(mode=QueueExecutionMode[mode])


if __name__ == "__main__":
    import sys

    asyncio.run(work(sys.argv[1]))
