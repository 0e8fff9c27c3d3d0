"""The state's journal: deadlocks seen, actions taken, time series (the history checks read
through `checks.History`) and each target's last cycle; pruned after the retention."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal

from ..records import is_compact, json_object, row_json
from ..snapshot.values import JSONObject, to_float, to_int, to_str
from ..targets.secrets import scrub_opt
from .statebase import StateBase

log = logging.getLogger(__name__)


def _as_json(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def expand_rows(rows: list[JSONObject]) -> list[JSONObject]:
    """Deadlock rows with their data as the full record JSON: the log tail stores a compact
    form (deadlocks.stored: the diagnosis' explanation and fix derived again on read)."""
    for r in rows:
        data = r.get("data")
        if is_compact(data):
            from ..deadlocks.stored import expand  # the diagnosis: only for compact rows

            try:
                r["data"] = expand(json_object(data))
            except Exception:
                log.exception("deadlock %s: its diagnosis could not be derived", r.get("key"))
    return rows


def _at(value: object) -> str | None:
    """A deadlock's time as text on both backends (the parsers give text or nothing)."""
    return None if value is None else str(value)


_RECORD_DEADLOCK = (
    "INSERT INTO deadlocks(target, key, at, data, seen_at) "
    "VALUES (?, ?, ?, ?, ?) ON CONFLICT(target, key) DO NOTHING"
)


_INSERT_POINT = "INSERT INTO series(target, key, ts, value) VALUES (?, ?, ?, ?)"
_RECORD_CYCLE = (
    "INSERT INTO cycles(target, started, duration, status, error, "
    "findings, lateness) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(target) DO UPDATE"
    " SET started = excluded.started, duration = excluded.duration,"
    " status = excluded.status, error = excluded.error,"
    " findings = excluded.findings, lateness = excluded.lateness"
)


class JournalStore(StateBase):
    def __init__(
        self, path: str | Path, retention: float = 7 * 86400.0, schema: str | None = None
    ) -> None:
        super().__init__(path, retention, schema)
        # (target, key) -> the series' newest point (ts, value) as last read or written here,
        # or (bound, None): no point at or after `bound`. Only keys last_point was asked for;
        # a point written updates its key's entry (StateBase._memo_ok says when they hold).
        self._newest: dict[tuple[str, str], tuple[float, float | None]] = self._memo_dict()

    # -- deadlocks, actions ------------------------------------------------------------

    def record_deadlock(self, target: str, key: str, at: object, data_json: object) -> bool:
        row = (target, key, _at(at), _as_json(data_json), time.time())
        with self._lock:
            if self._depth:  # inside this thread's transaction (the log tail's 100 a read)
                return self._view.execute(_RECORD_DEADLOCK, row).rowcount == 1
        with self.transaction() as db:
            return db.execute(_RECORD_DEADLOCK, row).rowcount == 1

    def record_deadlocks(
        self, target: str, rows: Iterable[tuple[str, object, object]]
    ) -> list[bool]:
        """record_deadlock of each (key, at, data) in one transaction (the caller's when one
        is open: the log tail's, with its position), in order; True where the key is new.
        One loop over one statement: the log tail's 100 a read without a call each."""
        with self.transaction() as db:
            execute, now = db.execute, time.time
            return [
                execute(_RECORD_DEADLOCK, (target, key, _at(at), _as_json(data), now())).rowcount
                == 1
                for key, at, data in rows
            ]

    def deadlocks(self, target: str | None = None, limit: int = 100) -> list[JSONObject]:
        """Newest first: target, key, at, data (decoded), seen_at."""
        where, params = ("WHERE target = ?", [target]) if target is not None else ("", [])
        rows = self._rows(
            f"SELECT * FROM deadlocks {where} ORDER BY seen_at DESC, key DESC LIMIT ?",
            [*params, limit],
        )
        return expand_rows([row_json(r, "data") for r in rows])

    def deadlock_count(self, target: str) -> int:
        rows = self._rows("SELECT count(*) AS n FROM deadlocks WHERE target = ?", (target,))
        return to_int(rows[0]["n"])

    def deadlock_counts(self) -> dict[str, int]:
        """Deadlocks recorded per target (the metrics, at scrape time)."""
        rows = self._rows("SELECT target, count(*) AS n FROM deadlocks GROUP BY target")
        return {to_str(r["target"]): to_int(r["n"]) for r in rows}

    def record_action(
        self,
        target: str,
        rule: str,
        fingerprint: str,
        subject: str,
        action: str,
        detail_json: object,
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO actions(ts, target, rule, fingerprint, subject, action, "
                "detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (time.time(), target, rule, fingerprint, subject, action, _as_json(detail_json)),
            )

    def actions(self, target: str | None = None, limit: int = 100) -> list[JSONObject]:
        """Newest first, the detail decoded."""
        where, params = ("WHERE target = ?", [target]) if target is not None else ("", [])
        rows = self._rows(
            f"SELECT * FROM actions {where} ORDER BY id DESC LIMIT ?", [*params, limit]
        )
        return [row_json(r, "detail") for r in rows]

    # -- time series -------------------------------------------------------------------

    def record_metric(self, target: str, key: str, value: float, ts: float | None = None) -> None:
        self.record_metrics(target, {key: value}, ts)

    def record_metrics(
        self, target: str, values: dict[str, float], ts: float | None = None
    ) -> None:
        ts = time.time() if ts is None else ts
        points = [(target, k, ts, float(v)) for k, v in values.items()]
        with self.transaction():
            newest = self._newest
            known = [(k, newest.pop((target, k))) for k in values if (target, k) in newest]
            self._write_many(_INSERT_POINT, points)
            for k, (t, v) in known:  # written: the newest point is this one, or still the one known
                if v is None:
                    newest[(target, k)] = (ts, float(values[k])) if ts >= t else (t, None)
                elif ts != t:  # equal times: which one a read gives is SQLite's choice
                    newest[(target, k)] = (ts, float(values[k])) if ts > t else (t, v)

    def history(self, target: str, key: str, since_seconds: float) -> list[tuple[float, float]]:
        """(ts, value) of one series over the last `since_seconds`, oldest first."""
        since = time.time() - since_seconds
        rows = self._rows(
            "SELECT ts, value FROM series WHERE target = ? AND key = ? AND ts >= ? ORDER BY ts",
            (target, key, since),
        )
        return [(to_float(r["ts"]), to_float(r["value"])) for r in rows]

    def series_last(self, key: str) -> dict[str, tuple[float, float]]:
        """target -> (ts, value) of one series' newest point, for every target that has it."""
        return series_last(self._rows, key)

    def last_point(self, target: str, key: str, since_seconds: float) -> list[tuple[float, float]]:
        """The newest (ts, value) of one series within `since_seconds` ([] when none): one
        row by the (target, key, ts) order, not the window's thousands; from memory when this
        connection read or wrote that key's newest point and nobody else wrote since (the
        daemon's three reads a cycle of what it wrote itself the cycle before)."""
        with self._lock:
            since = time.time() - since_seconds
            if not self._memo_ok():
                return self._edge_rows(target, key, since, "DESC")
            hit = self._newest.get((target, key))
            if hit is not None:
                t, v = hit
                if v is not None:
                    return [(t, v)] if t >= since else []
                if since >= t:  # nothing at or after t, so nothing at or after since
                    return []
            got = self._edge_rows(target, key, since, "DESC")
            self._newest[(target, key)] = got[0] if got else (since, None)
            return got

    def first_point(self, target: str, key: str, since_seconds: float) -> list[tuple[float, float]]:
        """The oldest (ts, value) of one series within `since_seconds` ([] when none)."""
        return self._edge_point(target, key, since_seconds, "ASC")

    def _edge_point(
        self, target: str, key: str, since_seconds: float, order: Literal["ASC", "DESC"]
    ) -> list[tuple[float, float]]:
        return self._edge_rows(target, key, time.time() - since_seconds, order)

    def _edge_rows(
        self, target: str, key: str, since: float, order: Literal["ASC", "DESC"]
    ) -> list[tuple[float, float]]:
        rows = self._rows(
            "SELECT ts, value FROM series WHERE target = ? AND key = ? AND ts >= ? "
            f"ORDER BY ts {order} LIMIT 1",  # one of two constants
            (target, key, since),
        )
        return [(to_float(r["ts"]), to_float(r["value"])) for r in rows]

    def rate(self, target: str, key: str, since_seconds: float) -> float | None:
        """Growth per second between the oldest and newest point of the window."""
        points = self.history(target, key, since_seconds)
        if len(points) < 2 or points[-1][0] <= points[0][0]:
            return None
        return (points[-1][1] - points[0][1]) / (points[-1][0] - points[0][0])

    def prune(self, now: float | None = None, every: float = 300.0) -> None:
        """Drop series points and resolved findings older than the retention (at most every 5 min)."""
        now = time.time() if now is None else now
        if now - self._last_prune < every:
            return
        self._last_prune = now
        cutoff = now - self.retention
        with self.transaction() as db:
            db.execute("DELETE FROM series WHERE ts < ?", (cutoff,))
            for k, (t, v) in list(self._newest.items()):
                if v is not None and t < cutoff:  # deleted: none at or after the cutoff now
                    self._newest[k] = (cutoff, None)
            db.execute(
                "DELETE FROM findings WHERE status = 'resolved' AND resolved_at < ?", (cutoff,)
            )
            db.execute(
                "DELETE FROM alerts_sent WHERE status = 'resolved' AND last_sent < ?", (cutoff,)
            )
            self._forget_sent()

    def _forget_sent(self) -> None:
        """Rows of alerts_sent were deleted: the alert store's copies go (outbox.py)."""

    # -- cycles --------------------------------------------------------------------------

    def record_cycle(
        self,
        target: str,
        started: float,
        duration: float,
        status: str,
        error: str | None = None,
        findings: int = 0,
        lateness: float = 0.0,
    ) -> None:
        with self.transaction():
            self._write(
                _RECORD_CYCLE,
                (target, started, duration, status, scrub_opt(error), findings, lateness),
            )

    def cycles(self) -> list[JSONObject]:
        return [row_json(r) for r in self._rows("SELECT * FROM cycles ORDER BY target")]


SERIES_LAST = (
    "SELECT s.target, s.ts, s.value FROM series s JOIN (SELECT target, max(ts) AS ts FROM series "
    "WHERE key = ? GROUP BY target) m ON s.target = m.target AND s.ts = m.ts WHERE s.key = ?"
)


def series_last(
    rows: Callable[[str, tuple[str, str]], Sequence[Mapping[str, object]]], key: str
) -> dict[str, tuple[float, float]]:
    return {
        str(r["target"]): (to_float(r["ts"]), to_float(r["value"]))
        for r in rows(SERIES_LAST, (key, key))
    }
