"""The daemon's state in SQLite (WAL, every transition in one transaction, safe under SIGKILL).

Holds the finding lifecycle, alerts sent, the alert outbox, deadlocks seen, actions taken,
time series and the last cycle of each target. One `State` is shared by all daemon threads.
The connection and transactions are in statebase.py, the alert side in outbox.py, deadlocks,
actions, series and cycles in journal.py, the typed records in records.py.

API other modules code against (all methods are thread-safe):
  State(path)                                   open/create; path ":memory:" for tests
  with state.transaction(): ...                 group several calls into one atomic commit
  update(target, findings, now, for_seconds, keep_rules) -> Transitions
      pending -> firing after for_seconds(rule) (0 = at once) -> resolved when it clears;
      findings of rules in keep_rules (could not run this cycle) are left as they are.
      Transitions.firing: what fires for the target now (no need to read it back).
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

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from operator import is_
from pathlib import Path

from ..findings import Finding, severity_rank
from ..records import FindingRow, Transitions, finding_data, json_object, loads
from ..targets.secrets import secrets_generation
from .journal import JournalStore
from .outbox import AlertStore
from .statedb import SCHEMA_VERSION, Param, StateConn

__all__ = ["SCHEMA_VERSION", "FindingRow", "State", "Transitions", "default_state_path"]


# a finding row's columns but its data (State.update reads the live rows without decoding it)
_HEAD = (
    "fingerprint, target, rule, severity, subject, status, first_seen, fired_at, last_seen,"
    " resolved_at"
)


def default_state_path() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "dbwatch" / "state.db"


def _by_place(rows: Iterable[FindingRow]) -> list[FindingRow]:
    """The order `firing()` reads in: target, rule, subject."""
    return sorted(rows, key=lambda r: (r.target, r.rule, r.subject))


class State(AlertStore, JournalStore):
    """The daemon's state: the finding lifecycle here, the rest in the stores it extends."""

    def __init__(
        self, path: str | Path, retention: float = 7 * 86400.0, schema: str | None = None
    ) -> None:
        super().__init__(path, retention, schema)
        # target -> its pending and firing rows as the last update left them (StateBase's
        # in-memory copies: they hold while nobody else wrote): what update reads back
        self._live: dict[str, dict[str, _Live]] = self._memo_dict()
        # target -> (the findings its last update was given, the secrets generation, the
        # fingerprints of its firing rows in order) when that update left every live row
        # firing and written from those very findings (`_quiet_update`)
        self._quiet: dict[str, tuple[tuple[Finding, ...], int, tuple[str, ...]]] = self._memo_dict()

    def update(
        self,
        target: str,
        findings: Iterable[Finding],
        now: float | None = None,
        for_seconds: Callable[[str], float] | None = None,
        keep_rules: Iterable[str] = (),
    ) -> Transitions:
        """Apply one cycle's findings for `target`; returns what fired, what resolved and
        what fires now (built from what was written, not read back).

        A finding that is the very `Finding` this State wrote last time for its row (an
        idle cycle: the rules' memo gives the same objects), with the same status to write,
        has all its columns as they are but `last_seen`: those rows get one UPDATE of
        last_seen together, not each its JSON data again (the data written from that same
        object, under the same secrets, is the text it would be)."""
        now = time.time() if now is None else now
        if not isinstance(findings, (list, tuple)):
            findings = list(findings)
        with self.transaction(durable=False) as db:
            quiet = self._quiet_update(db, target, findings, now) if self._memo_ok() else None
            if quiet is not None:
                return quiet
            return self._update(db, target, findings, now, for_seconds, keep_rules)

    def _update(
        self,
        db: StateConn,
        target: str,
        findings: list[Finding] | tuple[Finding, ...],
        now: float,
        for_seconds: Callable[[str], float] | None,
        keep_rules: Iterable[str],
    ) -> Transitions:
        """`update` in full, inside its transaction."""
        wait = for_seconds or (lambda rule: 0.0)
        keep = set(keep_rules)
        current: dict[str, Finding] = {}
        for f in findings:
            old = current.get(f.fingerprint)
            if old is None or severity_rank(f.severity) > severity_rank(old.severity):
                current[f.fingerprint] = f
        out = Transitions()
        firing: list[FindingRow] = []
        # a cycle that only sees its findings again (last_seen, evidence) need not wait for
        # the disk; a transition does (want_sync): see StateBase.transaction
        memo = self._memo_ok()
        # the rows as the last update left them (gone until this one is done), else read
        # without their data: a finding seen again is written from this cycle's Finding,
        # so only the rows kept or resolved below read theirs (_with_data)
        live = self._live.pop(target, None) if memo else None
        if live is None:
            live = {r.fingerprint: _Live(r, False) for r in self._live_heads(target)}
        now_live: dict[str, _Live] = {}
        seen: list[str] = []  # rows of which only last_seen changes
        generation = secrets_generation()
        for fp, f in current.items():
            had = live.get(fp)
            row = had.row if had is not None else None
            if had is not None and row is not None and had.same(f, generation):
                status = _status(row, now, wait(f.rule))
                if status == row.status and (row.fired_at is not None or status != "firing"):
                    written = _seen(row, now)
                    seen.append(fp)
                    if status == "pending":
                        out.pending += 1
                    now_live[fp] = _Live(written, True, f, generation)
                    if status == "firing":
                        firing.append(written)
                    continue
            written = self._advance(db, f, row, now, wait(f.rule), out)
            now_live[fp] = _Live(written, True, f, generation)
            if written.status == "firing":
                firing.append(written)
        self._write_seen(db, now, seen)
        for fp, had in live.items():
            if fp in current:
                continue
            row = had.row
            if row.rule in keep:
                if row.status == "firing":
                    if not had.data:
                        had = _Live(self._with_data(row), True)
                    firing.append(had.row)
                now_live[fp] = had
                continue
            self.want_sync()
            if row.status == "pending":
                db.execute("DELETE FROM findings WHERE fingerprint = ?", (fp,))
                continue
            db.execute(
                "UPDATE findings SET status = 'resolved', resolved_at = ? WHERE fingerprint = ?",
                (now, fp),
            )
            out.resolved.append(_resolved(row if had.data else self._with_data(row), now))
        if memo:
            self._live[target] = now_live
        out.firing = _by_place(firing)
        if memo:
            self._note_quiet(target, findings, current, now_live, out.firing, generation)
        return out

    def _quiet_update(
        self, db: StateConn, target: str, findings: list[Finding] | tuple[Finding, ...], now: float
    ) -> Transitions | None:
        """An idle cycle's update, when it can be told apart in O(findings): the very
        `Finding` objects of the target's last update, in the same order (the rules' memo
        gives them), every row of the target firing and written from them under the same
        secrets, no other live row (`_note_quiet` kept that). Then every row is only seen
        again — exactly what the full update would decide (no transition: a firing row stays
        firing whatever `for_seconds` and `keep_rules` say; nothing else to resolve or keep)
        — so only last_seen moves, one write for all. None: the full update."""
        quiet = self._quiet.get(target)
        if quiet is None:
            return None
        last, generation, order = quiet
        live = self._live.get(target)
        if (
            live is None
            or len(last) != len(findings)
            or not all(map(is_, last, findings))
            or generation != secrets_generation()
        ):
            return None
        firing = [_seen(live[fp].row, now) for fp in order]
        self._write_seen(db, now, order)
        for fp, written in zip(order, firing, strict=True):  # written: the copies follow
            live[fp].row = written
        out = Transitions()
        out.firing = firing
        return out

    def _note_quiet(
        self,
        target: str,
        findings: list[Finding] | tuple[Finding, ...],
        current: dict[str, Finding],
        now_live: dict[str, _Live],
        firing: list[FindingRow],
        generation: int,
    ) -> None:
        """After a full update: whether the target's next update of the same findings may be
        `_quiet_update` (every live row firing, written from this cycle's own Finding: none
        kept for a rule that could not run, none pending)."""
        if len(now_live) == len(current) == len(firing) and all(
            had.finding is not None and had.finding is current.get(fp)
            for fp, had in now_live.items()
        ):
            self._quiet[target] = (
                tuple(findings),
                generation,
                tuple(r.fingerprint for r in firing),
            )
        else:
            self._quiet.pop(target, None)

    def _write_seen(self, db: StateConn, now: float, seen: Sequence[str]) -> None:
        """The last_seen of rows seen again with nothing else changed."""
        if seen and self._deferring:  # waits for the group (statebase): one statement
            self._write_many(_SEEN_ONE, [(now, fp) for fp in seen])
            return
        for i in range(0, len(seen), _SEEN_CHUNK):
            part = seen[i : i + _SEEN_CHUNK]
            db.execute(
                "UPDATE findings SET last_seen = ? WHERE fingerprint IN "
                f"({', '.join('?' * len(part))})",  # only placeholders
                (now, *part),
            )

    def _advance(
        self,
        db: StateConn,
        f: Finding,
        row: FindingRow | None,
        now: float,
        wait: float,
        out: Transitions,
    ) -> FindingRow:
        """Write one current finding; returns the row as it now stands."""
        data, text = finding_data(f)  # the object for the row returned, the text for the table
        if row is None:
            self.want_sync()
            status = "firing" if wait <= 0 else "pending"
            head = (f.fingerprint, f.target, f.rule, f.severity, f.subject, status, now)
            fired_last = (now if status == "firing" else None, now)
            written = FindingRow(*head, *fired_last, None, data)
            db.execute(
                "INSERT INTO findings(fingerprint, target, rule, severity, "
                "subject, status, first_seen, fired_at, last_seen, resolved_at, data) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?) ON CONFLICT(fingerprint) DO UPDATE"
                " SET target = excluded.target, rule = excluded.rule,"
                " severity = excluded.severity, subject = excluded.subject,"
                " status = excluded.status, first_seen = excluded.first_seen,"
                " fired_at = excluded.fired_at, last_seen = excluded.last_seen,"
                " resolved_at = NULL, data = excluded.data",
                (*head, *fired_last, text),  # the same values as the row returned
            )
        else:
            status = _status(row, now, wait)
            if (status, f.severity, f.subject) != (row.status, row.severity, row.subject):
                self.want_sync()
            db.execute(
                "UPDATE findings SET severity = ?, subject = ?, status = ?, last_seen = ?,"
                " fired_at = coalesce(fired_at, CASE WHEN ? = 'firing' THEN ? END),"
                " data = ? WHERE fingerprint = ?",
                (f.severity, f.subject, status, now, status, now, text, f.fingerprint),
            )
            fired_at = row.fired_at
            if fired_at is None and status == "firing":
                fired_at = now
            written = FindingRow(
                row.fingerprint,
                row.target,
                row.rule,
                f.severity,
                f.subject,
                status,
                row.first_seen,
                fired_at,
                now,
                row.resolved_at,
                data,
            )
        if status == "pending":
            out.pending += 1
        elif row is None or row.status == "pending":
            out.fired.append(written)
        return written

    def _live_heads(self, target: str) -> list[FindingRow]:
        """The target's pending and firing rows with an empty `data` (not decoded)."""
        rows = self._rows(
            f"SELECT {_HEAD} FROM findings WHERE target = ? AND status IN ('pending', 'firing')"
            " ORDER BY target, rule, subject",  # the order _finding_rows reads in
            (target,),
        )
        return [FindingRow.from_row({**r, "data": "{}"}) for r in rows]

    def _with_data(self, row: FindingRow) -> FindingRow:
        """`row` with its stored data (read in the transaction that read the row)."""
        got = self._rows("SELECT data FROM findings WHERE fingerprint = ?", (row.fingerprint,))
        return replace(row, data=json_object(loads(got[0]["data"]))) if got else row

    def _finding_rows(self, where: str, params: Iterable[Param] = ()) -> list[FindingRow]:
        rows = self._rows(
            f"SELECT * FROM findings WHERE {where} ORDER BY target, rule, subject", params
        )
        return [FindingRow.from_row(r) for r in rows]

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


# fingerprints per UPDATE of last_seen (SQLite's default limit is 32,766 parameters)
_SEEN_CHUNK = 500
# a finding's last_seen deferred with the group: one statement text whatever the count, so
# the group's rows of it go in one executemany in order (statebase._send)
_SEEN_ONE = "UPDATE findings SET last_seen = ? WHERE fingerprint = ?"


class _Live:
    """A pending or firing row as the last update of its target left it: `data` whether the
    row holds its stored data (else an empty one: read without it); `finding`, `generation`:
    the Finding it was written from and the secrets generation its text was scrubbed under."""

    __slots__ = ("data", "finding", "generation", "row")

    def __init__(
        self, row: FindingRow, data: bool, finding: Finding | None = None, generation: int = -1
    ) -> None:
        self.row, self.data, self.finding, self.generation = row, data, finding, generation

    def same(self, f: Finding, generation: int) -> bool:
        """Written from this very Finding (held here: its id is not reused) and scrubbed
        under the same secrets: its data text is the one finding_data(f) gives now."""
        return self.finding is f and self.generation == generation and self.data


def _status(row: FindingRow, now: float, wait: float) -> str:
    """A live row's status once seen again: pending turns firing after `wait`."""
    if row.status == "pending" and now - row.first_seen >= wait:
        return "firing"
    return row.status


def _seen(row: FindingRow, now: float) -> FindingRow:
    """The row seen again this cycle with nothing else changed."""
    return _moved(row, row.status, now, row.resolved_at)


def _resolved(row: FindingRow, now: float) -> FindingRow:
    return _moved(row, "resolved", row.last_seen, now)


def _moved(row: FindingRow, status: str, last_seen: float, resolved_at: float | None) -> FindingRow:
    """The row with its status and times moved (positional: no dataclasses.replace per row)."""
    return FindingRow(
        row.fingerprint,
        row.target,
        row.rule,
        row.severity,
        row.subject,
        status,
        row.first_seen,
        row.fired_at,
        last_seen,
        resolved_at,
        row.data,
    )
