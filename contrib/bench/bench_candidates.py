"""CPU time of terminate's candidates and plan over 5,000 pg.sessions rows: no I/O, no
database (the daemon's PostgreSQL terminate builds them from the cycle's snapshot rows).

    python contrib/bench/bench_candidates.py
    DBWATCH_BENCH_ROOT=/path/to/other/checkout python contrib/bench/bench_candidates.py
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

# DBWATCH_BENCH_ROOT: another checkout to measure (the "before" of a change)
sys.path.insert(0, os.environ.get("DBWATCH_BENCH_ROOT") or str(Path(__file__).resolve().parents[2]))

from dbwatch.actions.guards import Criteria, Policy, plan
from dbwatch.actions.sessions import candidates
from dbwatch.snapshot.pg import PgSession

ROWS, ROUNDS, REPEAT = 5000, 10, 5
T0 = datetime(2026, 1, 1, tzinfo=UTC)


def rows() -> tuple[PgSession, ...]:
    """A listing: two thirds idle in transaction, one chain root per 50 sessions."""
    return tuple(
        PgSession.from_row(
            {
                "pid": i,
                "backend_start": T0,
                "xact_start": T0 + timedelta(seconds=i % 60),
                "state": "idle in transaction" if i % 3 else "active",
                "user": "app",
                "application": "worker",
                "database": "app",
                "backend_type": "client backend",
                "xact_seconds": float(i % 900),
                "state_seconds": float(i % 300),
                "blocked_by": [i - 1] if i % 50 == 1 else [],
            }
        )
        for i in range(1, ROWS + 1)
    )


def main() -> None:
    listing = rows()
    criteria = Criteria(older_than=300, idle_in_transaction=True)
    best = float("inf")
    for _ in range(REPEAT):
        t = time.process_time()
        for _ in range(ROUNDS):
            plan(candidates(listing, "t", seen=0.0), criteria, Policy())
        best = min(best, (time.process_time() - t) / ROUNDS)
    print(f"candidates + plan, {ROWS:,} rows: {best * 1000:.1f} ms CPU (best of {REPEAT})")


if __name__ == "__main__":
    main()
