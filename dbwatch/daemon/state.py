"""The daemon's state in SQLite (WAL, every transition in one transaction, safe under SIGKILL).

Holds the finding lifecycle, alerts sent, the alert outbox, deadlocks seen, actions taken,
time series and the last cycle of each target. One `State` is shared by all daemon threads.

API other modules code against (all methods are thread-safe):
  State(path)                                   open/create; path ":memory:" for tests
  with state.transaction(): ...                 group several calls into one atomic commit
  update(target, findings, now, for_seconds, keep_rules) -> Transitions
      pending -> firing after for_seconds(rule) (0 = at once) -> resolved when it clears;
      findings of rules in keep_rules (could not run this cycle) are left as they are.
  firing(target=None) -> list[FindingRow]       what fires now (FindingRow.finding rebuilds it)
  record_deadlock(target, key, at, data_json) -> bool   True if the key was not seen before
  deadlocks(target=None, limit=100) -> list[dict]       newest first: target, key, at, data, seen_at
  record_action(target, rule, fingerprint, subject, action, detail_json) -> None
  actions(target=None, limit=100) -> list[dict]
  record_metric(target, key, value, ts=None)    time series, pruned after `retention` seconds
  history(target, key, since_seconds) -> list[tuple[float, float]]   (ts, value), oldest first
  rate(target, key, since_seconds) -> float | None                   per-second growth
  record_cycle(target, started, duration, status, error, findings, lateness); cycles()
Outbox and alerts-sent methods are used by dbwatch.alerts (router and delivery).
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..findings import Finding, SessionIdentity, severity_rank
from ..targets.secrets import scrub_opt, scrub_tree
from .statedb import SCHEMA_VERSION, StateConn, is_pg_url, migrate, open_conn

__all__ = ["SCHEMA_VERSION", "FindingRow", "State", "Transitions", "default_state_path"]


def default_state_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "dbwatch" / "state.db"


@dataclass(frozen=True)
class FindingRow:
    fingerprint: str
    target: str
    rule: str
    severity: str
    subject: str
    status: str
    first_seen: float
    fired_at: float | None
    last_seen: float
    resolved_at: float | None
    data: dict[str, Any]

    @property
    def finding(self) -> Finding:
        d = self.data
        return Finding(
            rule=self.rule,
            severity=self.severity,
            target=self.target,
            subject=self.subject,
            summary=d.get("summary", ""),
            fix=d.get("fix", ""),
            evidence=d.get("evidence", {}),
            identity=d.get("identity"),
            confidence=d.get("confidence", "high"),
            session=SessionIdentity.from_dict(d.get("session")),
        )


@dataclass
class Transitions:
    fired: list[FindingRow] = field(default_factory=list)
    resolved: list[FindingRow] = field(default_factory=list)
    pending: int = 0


def _finding_data(f: Finding) -> str:
    d = f.to_dict()
    d["identity"] = f.identity
    return json.dumps(scrub_tree(d), default=str, sort_keys=True)  # secrets never stored


def _as_json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)


def _at(value: Any) -> str | None:
    """A deadlock's time as text on both backends (the parsers give text or nothing)."""
    return None if value is None else str(value)


def _redact(url: str) -> str:
    from ..targets import redact_url

    return redact_url(url)


def _loads(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


class State:
    """One SQLite connection behind a re-entrant lock; writes are short transactions."""

    def __init__(
        self, path: str | Path, retention: float = 7 * 86400.0, schema: str | None = None
    ) -> None:
        """`path`: a SQLite file (":memory:" for tests) or a postgresql:// URL (a fleet), whose
        tables live in `schema` (default $DBWATCH_STATE_SCHEMA, else "dbwatch")."""
        schema = schema or os.environ.get("DBWATCH_STATE_SCHEMA") or "dbwatch"
        location = str(path)
        self.path = _redact(location) if is_pg_url(location) else location
        self.retention = retention
        self._lock = threading.RLock()
        self._depth = 0
        db, self.dialect = open_conn(location, schema)
        self._db: StateConn = db
        self._begin = "BEGIN IMMEDIATE" if self.dialect == "sqlite" else "BEGIN"
        with self._lock:
            migrate(self._db, self.dialect)
        self._last_prune = 0.0

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[StateConn]:
        """BEGIN (IMMEDIATE on SQLite) … COMMIT; nested uses join the outer transaction."""
        with self._lock:
            if self._depth:
                self._depth += 1
                try:
                    yield self._db
                finally:
                    self._depth -= 1
                return
            self._db.execute(self._begin)
            self._depth = 1
            try:
                yield self._db
            except BaseException:
                self._depth = 0
                self._db.execute("ROLLBACK")
                raise
            self._depth = 0
            self._db.execute("COMMIT")

    def query(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """Rows of one read (mapping-like), in the shared `?` dialect."""
        return self._rows(sql, params)

    def _rows(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        with self._lock:
            return list(self._db.execute(sql, tuple(params)).fetchall())

    # -- finding lifecycle -------------------------------------------------------------

    def update(
        self,
        target: str,
        findings: Iterable[Finding],
        now: float | None = None,
        for_seconds: Callable[[str], float] | None = None,
        keep_rules: Iterable[str] = (),
    ) -> Transitions:
        """Apply one cycle's findings for `target`; returns what fired and what resolved."""
        now = time.time() if now is None else now
        wait = for_seconds or (lambda rule: 0.0)
        keep = set(keep_rules)
        current: dict[str, Finding] = {}
        for f in findings:
            old = current.get(f.fingerprint)
            if old is None or severity_rank(f.severity) > severity_rank(old.severity):
                current[f.fingerprint] = f
        out = Transitions()
        with self.transaction() as db:
            live = {
                r.fingerprint: r
                for r in self._finding_rows(
                    "target = ? AND status IN ('pending', 'firing')", (target,)
                )
            }
            for fp, f in current.items():
                row = live.get(fp)
                self._advance(db, f, row, now, wait(f.rule), out)
            for fp, row in live.items():
                if fp in current or row.rule in keep:
                    continue
                if row.status == "pending":
                    db.execute("DELETE FROM findings WHERE fingerprint = ?", (fp,))
                    continue
                db.execute(
                    "UPDATE findings SET status = 'resolved', resolved_at = ? "
                    "WHERE fingerprint = ?",
                    (now, fp),
                )
                out.resolved.append(self._finding_rows("fingerprint = ?", (fp,))[0])
        return out

    def _advance(
        self,
        db: StateConn,
        f: Finding,
        row: FindingRow | None,
        now: float,
        wait: float,
        out: Transitions,
    ) -> None:
        data = _finding_data(f)
        if row is None:
            status = "firing" if wait <= 0 else "pending"
            db.execute(
                "INSERT INTO findings(fingerprint, target, rule, severity, "
                "subject, status, first_seen, fired_at, last_seen, resolved_at, data) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?) ON CONFLICT(fingerprint) DO UPDATE"
                " SET target = excluded.target, rule = excluded.rule,"
                " severity = excluded.severity, subject = excluded.subject,"
                " status = excluded.status, first_seen = excluded.first_seen,"
                " fired_at = excluded.fired_at, last_seen = excluded.last_seen,"
                " resolved_at = NULL, data = excluded.data",
                (
                    f.fingerprint,
                    f.target,
                    f.rule,
                    f.severity,
                    f.subject,
                    status,
                    now,
                    now if status == "firing" else None,
                    now,
                    data,
                ),
            )
        else:
            status = row.status
            if status == "pending" and now - row.first_seen >= wait:
                status = "firing"
            db.execute(
                "UPDATE findings SET severity = ?, subject = ?, status = ?, last_seen = ?,"
                " fired_at = coalesce(fired_at, CASE WHEN ? = 'firing' THEN ? END),"
                " data = ? WHERE fingerprint = ?",
                (f.severity, f.subject, status, now, status, now, data, f.fingerprint),
            )
        if status == "pending":
            out.pending += 1
        elif row is None or row.status == "pending":
            out.fired.append(self._finding_rows("fingerprint = ?", (f.fingerprint,))[0])

    def _finding_rows(self, where: str, params: Iterable[Any] = ()) -> list[FindingRow]:
        rows = self._rows(
            f"SELECT * FROM findings WHERE {where} ORDER BY target, rule, subject", params
        )
        return [
            FindingRow(
                r["fingerprint"],
                r["target"],
                r["rule"],
                r["severity"],
                r["subject"],
                r["status"],
                r["first_seen"],
                r["fired_at"],
                r["last_seen"],
                r["resolved_at"],
                json.loads(r["data"]),
            )
            for r in rows
        ]

    def firing(self, target: str | None = None) -> list[FindingRow]:
        if target is None:
            return self._finding_rows("status = 'firing'")
        return self._finding_rows("status = 'firing' AND target = ?", (target,))

    def pending(self, target: str | None = None) -> list[FindingRow]:
        if target is None:
            return self._finding_rows("status = 'pending'")
        return self._finding_rows("status = 'pending' AND target = ?", (target,))

    def finding(self, fingerprint: str) -> FindingRow | None:
        rows = self._finding_rows("fingerprint = ?", (fingerprint,))
        return rows[0] if rows else None

    # -- alerts sent and the outbox (dbwatch.alerts) ------------------------------------

    def sent(self, target: str, receiver: str) -> dict[str, Any]:
        rows = self._rows(
            "SELECT * FROM alerts_sent WHERE target = ? AND receiver = ?", (target, receiver)
        )
        return {r["fingerprint"]: r for r in rows}

    def mark_sent(
        self, receiver: str, fingerprint: str, target: str, status: str, severity: str, now: float
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO alerts_sent(receiver, fingerprint, target, status, severity, "
                "first_sent, last_sent) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(receiver, fingerprint) DO UPDATE SET status = excluded.status,"
                " severity = excluded.severity, last_sent = excluded.last_sent",
                (receiver, fingerprint, target, status, severity, now, now),
            )

    def enqueue(
        self,
        receiver: str,
        fingerprint: str,
        event: str,
        payload: dict[str, Any],
        now: float | None = None,
    ) -> int:
        """Queue a message; a repeat of the newest queued message for the same alert replaces
        its content. Every content gets a new revision: a worker that sent the old content
        (in flight meanwhile) removes the row only if the revision it sent is still the
        row's, so the newer content goes out next (outbox_done)."""
        now = time.time() if now is None else now
        body = json.dumps(scrub_tree(payload), default=str, sort_keys=True)
        with self.transaction() as db:
            rev = self._next_rev(db)
            last = db.execute(
                "SELECT id, event FROM outbox WHERE receiver = ? AND fingerprint = ?"
                " ORDER BY id DESC LIMIT 1",
                (receiver, fingerprint),
            ).fetchone()
            if last is not None and last["event"] == event and event != "action":
                db.execute(
                    "UPDATE outbox SET payload = ?, rev = ? WHERE id = ?", (body, rev, last["id"])
                )
                return int(last["id"])
            row = db.execute(
                "INSERT INTO outbox(receiver, fingerprint, event, payload, created, rev) "
                "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                (receiver, fingerprint, event, body, now, rev),
            ).fetchone()
            return int(row["id"])

    def _next_rev(self, db: StateConn) -> int:
        row = db.execute("SELECT value FROM meta WHERE key = 'outbox_rev'").fetchone()
        rev = int(row["value"]) + 1 if row is not None else 1
        db.execute(
            "INSERT INTO meta(key, value) VALUES ('outbox_rev', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (str(rev),),
        )
        return rev

    def outbox_head(self, receiver: str, limit: int = 20) -> list[dict[str, Any]]:
        """The oldest queued messages of one receiver, in order."""
        rows = self._rows(
            "SELECT * FROM outbox WHERE receiver = ? ORDER BY id LIMIT ?", (receiver, limit)
        )
        return [dict(r) | {"payload": json.loads(r["payload"])} for r in rows]

    def outbox_done(self, msg_id: int, rev: int | None = None) -> bool:
        """Remove a delivered message — unless its content changed since (rev); True if gone."""
        with self.transaction() as db:
            if rev is None:
                cur = db.execute("DELETE FROM outbox WHERE id = ?", (msg_id,))
            else:
                cur = db.execute("DELETE FROM outbox WHERE id = ? AND rev = ?", (msg_id, rev))
            return cur.rowcount == 1

    def outbox_failed(self, msg_id: int, error: str, next_attempt: float) -> None:
        with self.transaction() as db:
            db.execute(
                "UPDATE outbox SET attempts = attempts + 1, next_attempt = ?, "
                "last_error = ? WHERE id = ?",
                (next_attempt, error[:300], msg_id),
            )

    def drop_receivers(self, keep: Iterable[str], now: float | None = None) -> dict[str, int]:
        """Queued messages and sent-records of receivers no longer configured: removed, and
        counted in `dropped` (for `status`). Returns {receiver: messages dropped}."""
        now = time.time() if now is None else now
        names = set(keep)
        with self.transaction() as db:
            sizes = {
                r["receiver"]: int(r["n"])
                for r in db.execute(
                    "SELECT receiver, count(*) AS n FROM outbox GROUP BY receiver"
                ).fetchall()
            }
            out = {r: n for r, n in sizes.items() if r not in names}
            for receiver, n in out.items():
                db.execute("DELETE FROM outbox WHERE receiver = ?", (receiver,))
                db.execute(
                    "INSERT INTO dropped(receiver, messages, ts) VALUES (?, ?, ?) "
                    "ON CONFLICT(receiver) DO UPDATE SET"
                    " messages = dropped.messages + excluded.messages, ts = excluded.ts",
                    (receiver, n, now),
                )
            sent = {
                r["receiver"]
                for r in db.execute("SELECT DISTINCT receiver FROM alerts_sent").fetchall()
            }
            for receiver in sent - names:
                db.execute("DELETE FROM alerts_sent WHERE receiver = ?", (receiver,))
        return out

    def dropped(self) -> list[dict[str, Any]]:
        """Receivers whose queued alerts were dropped because they left the config."""
        return [dict(r) for r in self._rows("SELECT * FROM dropped ORDER BY ts DESC")]

    def outbox_size(self) -> dict[str, int]:
        rows = self._rows("SELECT receiver, count(*) AS n FROM outbox GROUP BY receiver")
        return {r["receiver"]: int(r["n"]) for r in rows}

    # -- deadlocks, actions ------------------------------------------------------------

    def record_deadlock(self, target: str, key: str, at: Any, data_json: Any) -> bool:
        with self.transaction() as db:
            cur = db.execute(
                "INSERT INTO deadlocks(target, key, at, data, seen_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT(target, key) DO NOTHING",
                (target, key, _at(at), _as_json(data_json), time.time()),
            )
            return cur.rowcount == 1

    def deadlocks(self, target: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        where, params = ("WHERE target = ?", [target]) if target is not None else ("", [])
        rows = self._rows(
            f"SELECT * FROM deadlocks {where} ORDER BY seen_at DESC, key DESC LIMIT ?",
            [*params, limit],
        )
        return [dict(r) | {"data": _loads(r["data"])} for r in rows]

    def deadlock_count(self, target: str) -> int:
        return int(
            self._rows("SELECT count(*) AS n FROM deadlocks WHERE target = ?", (target,))[0]["n"]
        )

    def record_action(
        self, target: str, rule: str, fingerprint: str, subject: str, action: str, detail_json: Any
    ) -> None:
        with self.transaction() as db:
            db.execute(
                "INSERT INTO actions(ts, target, rule, fingerprint, subject, action, "
                "detail) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (time.time(), target, rule, fingerprint, subject, action, _as_json(detail_json)),
            )

    def actions(self, target: str | None = None, limit: int = 100) -> list[dict[str, Any]]:
        where, params = ("WHERE target = ?", [target]) if target is not None else ("", [])
        rows = self._rows(
            f"SELECT * FROM actions {where} ORDER BY id DESC LIMIT ?", [*params, limit]
        )
        return [dict(r) | {"detail": _loads(r["detail"])} for r in rows]

    # -- time series -------------------------------------------------------------------

    def record_metric(self, target: str, key: str, value: float, ts: float | None = None) -> None:
        self.record_metrics(target, {key: value}, ts)

    def record_metrics(
        self, target: str, values: dict[str, float], ts: float | None = None
    ) -> None:
        ts = time.time() if ts is None else ts
        with self.transaction() as db:
            db.executemany(
                "INSERT INTO series(target, key, ts, value) VALUES (?, ?, ?, ?)",
                [(target, k, ts, float(v)) for k, v in values.items()],
            )

    def history(self, target: str, key: str, since_seconds: float) -> list[tuple[float, float]]:
        since = time.time() - since_seconds
        rows = self._rows(
            "SELECT ts, value FROM series WHERE target = ? AND key = ? AND ts >= ? ORDER BY ts",
            (target, key, since),
        )
        return [(float(r["ts"]), float(r["value"])) for r in rows]

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
            db.execute(
                "DELETE FROM findings WHERE status = 'resolved' AND resolved_at < ?", (cutoff,)
            )
            db.execute(
                "DELETE FROM alerts_sent WHERE status = 'resolved' AND last_sent < ?", (cutoff,)
            )

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
        with self.transaction() as db:
            db.execute(
                "INSERT INTO cycles(target, started, duration, status, error, "
                "findings, lateness) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(target) DO UPDATE"
                " SET started = excluded.started, duration = excluded.duration,"
                " status = excluded.status, error = excluded.error,"
                " findings = excluded.findings, lateness = excluded.lateness",
                (target, started, duration, status, scrub_opt(error), findings, lateness),
            )

    def cycles(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self._rows("SELECT * FROM cycles ORDER BY target")]
