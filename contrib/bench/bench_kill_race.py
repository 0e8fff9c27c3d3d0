"""Wrong kills per 1,000: the kill race of tests/live/killrace.py at full size, on throwaway
servers (a PgCluster and a MariaDbInstance), so nothing shared is touched.

Client threads run short transactions (idle in them ~hold ms, then commit, then begin
again) while dbwatch's terminate path lists and kills the ones idle in a transaction.
Each client transaction records its identity as dbwatch sees it; after the run every
`terminated` is judged: correct, wrong (landed in a younger transaction begun before the
kill did), in flight (the same, the victim having committed while the kill was in flight:
README's known window) or late (landed during the selected transaction's commit).

    python contrib/bench/bench_kill_race.py --kills 1000 --engines postgresql mariadb
"""
from __future__ import annotations

import argparse
import json
import sys
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "live"))

from killrace import Race  # noqa: E402
from mariadb_instance import MariaDbInstance  # noqa: E402
from pgcluster import PgCluster  # noqa: E402


def run(engine: str, kills: int, budget: float, clients: int, hold: float) -> dict[str, object]:
    server = PgCluster.create() if engine == "postgresql" else MariaDbInstance.create()
    with server:
        race = Race("postgresql" if engine == "postgresql" else "mysql", server.url(),
                    uuid.uuid4().hex[:8], clients=clients, hold_ms=hold)
        race.setup()
        try:
            res = race.run(kills, budget)
        finally:
            race.close()
    print(res.line(engine), flush=True)
    for d in res.details[:20]:
        print("   ", d)
    return {"engine": engine, "kills": res.kills, "gone": res.gone, "wrong": res.wrong, "in_flight": res.in_flight,
            "late": res.late, "unmatched": res.unmatched, "other": res.other,
            "seconds": round(res.seconds, 1),
            "wrong_per_1000": round(1000 * res.wrong / res.kills, 2) if res.kills else None}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=1000)
    ap.add_argument("--budget", type=float, default=900.0, help="seconds per engine at most")
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--hold-ms", type=float, default=25.0)
    ap.add_argument("--engines", nargs="+", default=["postgresql", "mariadb"])
    ap.add_argument("--json", help="write the figures here")
    a = ap.parse_args()
    out = [run(e, a.kills, a.budget, a.clients, a.hold_ms) for e in a.engines]
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
