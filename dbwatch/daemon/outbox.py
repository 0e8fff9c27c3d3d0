"""The state's alert side (used by dbwatch.alerts): what each receiver was sent, the outbox
of messages still to deliver, and receivers dropped from the config."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path

from ..records import SentRow, row_json
from ..snapshot.values import JSONObject, to_int, to_str
from ..targets.secrets import scrub_tree
from .statebase import StateBase
from .statedb import StateConn


class AlertStore(StateBase):
    def __init__(
        self, path: str | Path, retention: float = 7 * 86400.0, schema: str | None = None
    ) -> None:
        super().__init__(path, retention, schema)
        # (target, receiver) -> what `sent` read or `mark_sent` wrote since (StateBase's
        # in-memory copies: they hold while nobody else wrote). An idle cycle routes its
        # firing findings to every receiver: without it each cycle read alerts_sent, and
        # that read sent the lazy transaction's BEGIN (no group commit with receivers).
        self._sent: dict[tuple[str, str], dict[str, SentRow]] = self._memo_dict()

    def sent(self, target: str, receiver: str) -> dict[str, SentRow]:
        """What `receiver` was last sent for each finding of `target`. The caller must not
        change the mapping (the in-memory copy; `mark_sent` replaces it, never changes it)."""
        with self._lock:
            memo = self._memo_ok()
            if memo:
                hit = self._sent.get((target, receiver))
                if hit is not None:
                    return hit
            rows = self._rows(
                "SELECT * FROM alerts_sent WHERE target = ? AND receiver = ?", (target, receiver)
            )
            got = {str(r["fingerprint"]): SentRow.from_row(r) for r in rows}
            if memo:
                self._sent[(target, receiver)] = got
            return got

    def _forget_sent(self) -> None:
        """Rows of alerts_sent deleted (prune): the copies are read afresh."""
        self._sent.clear()

    def mark_sent(
        self, receiver: str, fingerprint: str, target: str, status: str, severity: str, now: float
    ) -> None:
        with self.transaction() as db:
            self.want_sync()  # inside a cycle's relaxed transaction too: an alert must last
            db.execute(
                "INSERT INTO alerts_sent(receiver, fingerprint, target, status, severity, "
                "first_sent, last_sent) VALUES (?, ?, ?, ?, ?, ?, ?) "
                "ON CONFLICT(receiver, fingerprint) DO UPDATE SET status = excluded.status,"
                " severity = excluded.severity, last_sent = excluded.last_sent",
                (receiver, fingerprint, target, status, severity, now, now),
            )
            # the copy follows the row (a new mapping: a caller may be iterating the old one)
            key = (target, receiver)
            had = self._sent.get(key)
            if had is None:
                return
            old = had.get(fingerprint)
            if old is not None:
                row = SentRow(fingerprint, status, severity, old.first_sent, now)
                self._sent[key] = {**had, fingerprint: row}
                return
            # a row the copy does not hold: new, or another target's (the key is the
            # receiver's and the fingerprint's, the target stays the row's): as it stands
            got = db.execute(
                "SELECT * FROM alerts_sent WHERE receiver = ? AND fingerprint = ?",
                (receiver, fingerprint),
            ).fetchone()
            if got is not None and str(got["target"]) == target:
                self._sent[key] = {**had, fingerprint: SentRow.from_row(got)}

    def enqueue(
        self,
        receiver: str,
        fingerprint: str,
        event: str,
        payload: JSONObject,
        now: float | None = None,
    ) -> int:
        """Queue a message; a repeat of the newest queued message for the same alert replaces
        its content. Every content gets a new revision: a worker that sent the old content
        (in flight meanwhile) removes the row only if the revision it sent is still the
        row's, so the newer content goes out next (outbox_done)."""
        now = time.time() if now is None else now
        body = json.dumps(scrub_tree(payload), default=str, sort_keys=True)
        with self.transaction() as db:
            self.want_sync()  # inside a cycle's relaxed transaction too: an alert must last
            rev = self._next_rev(db)
            last = db.execute(
                "SELECT id, event FROM outbox WHERE receiver = ? AND fingerprint = ?"
                " ORDER BY id DESC LIMIT 1",
                (receiver, fingerprint),
            ).fetchone()
            if last is not None and last["event"] == event and event != "action":
                last_id = to_int(last["id"])
                db.execute(
                    "UPDATE outbox SET payload = ?, rev = ? WHERE id = ?", (body, rev, last_id)
                )
                return last_id
            row = db.execute(
                "INSERT INTO outbox(receiver, fingerprint, event, payload, created, rev) "
                "VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                (receiver, fingerprint, event, body, now, rev),
            ).fetchone()
            assert row is not None  # RETURNING gives the row it inserted
            return to_int(row["id"])

    def _next_rev(self, db: StateConn) -> int:
        row = db.execute("SELECT value FROM meta WHERE key = 'outbox_rev'").fetchone()
        rev = to_int(row["value"]) + 1 if row is not None else 1
        db.execute(
            "INSERT INTO meta(key, value) VALUES ('outbox_rev', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (str(rev),),
        )
        return rev

    def outbox_head(self, receiver: str, limit: int = 20) -> list[JSONObject]:
        """The oldest queued messages of one receiver, in order (records.OutboxMessage.of
        reads one)."""
        rows = self._rows(
            "SELECT * FROM outbox WHERE receiver = ? ORDER BY id LIMIT ?", (receiver, limit)
        )
        return [row_json(r, "payload") for r in rows]

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
                to_str(r["receiver"]): to_int(r["n"])
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
                to_str(r["receiver"])
                for r in db.execute("SELECT DISTINCT receiver FROM alerts_sent").fetchall()
            }
            for receiver in sent - names:
                db.execute("DELETE FROM alerts_sent WHERE receiver = ?", (receiver,))
                self._forget_sent()
        return out

    def dropped(self) -> list[JSONObject]:
        """Receivers whose queued alerts were dropped because they left the config."""
        return [row_json(r) for r in self._rows("SELECT * FROM dropped ORDER BY ts DESC")]

    def outbox_size(self) -> dict[str, int]:
        rows = self._rows("SELECT receiver, count(*) AS n FROM outbox GROUP BY receiver")
        return {to_str(r["receiver"]): to_int(r["n"]) for r in rows}
