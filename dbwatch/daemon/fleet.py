"""A fleet: several daemons sharing one PostgreSQL state, each target probed by one of them.

Leases live in the state database (`leases`: name, holder, expires, epoch). A daemon
probes a target only while it holds the target's lease; it renews what it holds from a
heartbeat thread every ttl/3, so a daemon that dies loses its leases within `ttl` and
another live daemon takes the targets at its next tick (within ttl + one interval). A
daemon takes a free lease only while it holds fewer than its fair share (targets / live
daemons) and gives back what it holds beyond share + 1, so the fleet stays balanced when
daemons come and go. Alert receivers are leased the same way ("receiver:NAME"): one daemon
delivers a receiver's outbox at a time, in order.

The acquire is one upsert whose WHERE re-checks the holder under the row lock, so two
daemons can never both win; every cycle re-checks its lease in the database (a daemon cut
off from the state database probes nothing).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import uuid

from ..snapshot.values import JSONObject, to_float, to_int, to_str
from .state import State
from .statedb import StateConn

log = logging.getLogger(__name__)
TARGET = "target:"
RECEIVER = "receiver:"


def default_ttl(intervals: list[float]) -> float:
    """The shortest target interval, kept within 5 s … 60 s."""
    return min(60.0, max(5.0, min(intervals, default=15.0)))


class Fleet:
    def __init__(self, state: State, ttl: float, daemon_id: str | None = None) -> None:
        self.state = state
        self.ttl = ttl
        host = socket.gethostname()
        self.id = daemon_id or f"{host}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.host = host
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.started = time.time()

    # -- membership ------------------------------------------------------------------

    def start(self) -> None:
        self.heartbeat()
        self._thread = threading.Thread(target=self._beat, name="dbwatch-fleet", daemon=True)
        self._thread.start()
        log.info("fleet member %s (lease ttl %.0fs)", self.id, self.ttl)

    def stop(self, release: bool = True) -> None:
        """Stop renewing; with `release`, hand every lease back at once (clean shutdown)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        if release:
            try:
                with self.state.transaction() as db:
                    db.execute("DELETE FROM leases WHERE holder = ?", (self.id,))
                    db.execute("DELETE FROM daemons WHERE id = ?", (self.id,))
            except Exception:
                log.exception("could not release the leases of %s", self.id)

    def _beat(self) -> None:
        while not self._stop.wait(self.ttl / 3.0):
            try:
                self.heartbeat()
            except Exception:  # the state DB is away: our leases lapse, others take over
                log.warning("fleet heartbeat failed; leases will lapse", exc_info=True)

    def heartbeat(self) -> None:
        now = time.time()
        with self.state.transaction() as db:
            db.execute(
                "INSERT INTO daemons(id, host, pid, started, heartbeat) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET heartbeat = excluded.heartbeat",
                (self.id, self.host, os.getpid(), self.started, now),
            )
            db.execute(
                "UPDATE leases SET expires = ? WHERE holder = ? AND expires >= ?",
                (now + self.ttl, self.id, now),
            )
            # forget daemons dead for long (their leases expired long ago)
            db.execute("DELETE FROM daemons WHERE heartbeat < ?", (now - 20 * self.ttl,))

    # -- leases --------------------------------------------------------------------------

    def claim_target(self, target: str, total: int) -> bool:
        """True when this daemon is to probe `target` now (it holds or just took its lease)."""
        return self._claim(TARGET + target, total)

    def claim_receiver(self, receiver: str) -> bool:
        return self._claim(RECEIVER + receiver, None)

    def _claim(self, name: str, total: int | None) -> bool:
        now = time.time()
        with self.state.transaction() as db:
            row = db.execute(
                "SELECT holder, expires FROM leases WHERE name = ?", (name,)
            ).fetchone()
            live = row is not None and to_float(row["expires"]) >= now
            held = live and row is not None and row["holder"] == self.id
            if live and not held:
                return False  # another live daemon has it
            share = self._share(db, now, total) if total is not None else None
            mine = self._held(db, now, name[: name.index(":") + 1]) if share else 0
            if held:
                if share is not None and mine > share + 1:
                    db.execute("DELETE FROM leases WHERE name = ? AND holder = ?", (name, self.id))
                    log.info("fleet: handing %s back (holding %d, share %d)", name, mine, share)
                    return False
                db.execute(
                    "UPDATE leases SET expires = ? WHERE name = ? AND holder = ?",
                    (now + self.ttl, name, self.id),
                )
                return True
            if share is not None and mine >= share:
                return False
            got = db.execute(
                "INSERT INTO leases(name, holder, expires, epoch, acquired) "
                "VALUES (?, ?, ?, 1, ?) ON CONFLICT(name) DO UPDATE SET "
                "holder = excluded.holder, expires = excluded.expires, "
                "epoch = leases.epoch + 1, acquired = excluded.acquired "
                "WHERE leases.holder = excluded.holder OR leases.expires < ? "
                "RETURNING holder, epoch",
                (name, self.id, now + self.ttl, now, now),
            ).fetchone()
        if got is None or got["holder"] != self.id:
            return False
        if row is not None:
            log.warning(
                "fleet: took over %s from %s (lease expired; epoch %s)",
                name,
                row["holder"],
                got["epoch"],
            )
        return True

    def _share(self, db: StateConn, now: float, total: int) -> int:
        live = db.execute(
            "SELECT count(*) AS n FROM daemons WHERE heartbeat >= ?", (now - self.ttl,)
        ).fetchone()
        return max(1, math.ceil(total / max(1, to_int(live["n"] if live else 0))))

    def _held(self, db: StateConn, now: float, prefix: str) -> int:
        row = db.execute(
            "SELECT count(*) AS n FROM leases WHERE holder = ? AND expires >= ? "
            "AND substr(name, 1, ?) = ?",
            (self.id, now, len(prefix), prefix),
        ).fetchone()
        return to_int(row["n"] if row else 0)


def holders(state: State) -> dict[str, JSONObject]:
    """Live leases by target name: holder, since, expires (for `dbwatch status`)."""
    now = time.time()
    rows = state.query(
        "SELECT name, holder, acquired, expires, epoch FROM leases WHERE expires >= ?", (now,)
    )
    return {
        to_str(r["name"])[len(TARGET) :]: {
            "holder": to_str(r["holder"]),
            "since": to_float(r["acquired"]),
            "expires": to_float(r["expires"]),
            "epoch": to_int(r["epoch"]),
        }
        for r in rows
        if str(r["name"]).startswith(TARGET)
    }
