"""Read-only, bounded queries over the daemon's state DB (dbwatch.daemon.state's schema).

Opens SQLite with mode=ro, one connection per call, so a web request or `dbwatch status`
can never write, lock out or grow the daemon's state. Every query has a LIMIT. Below
commands/ and web/: `dbwatch status`, `history` and the dashboard all read through it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from .daemon.journal import expand_rows
from .daemon.state import State
from .daemon.statedb import Param
from .daemon.statedb import dict_row as _dict_row
from .findings import severity_rank
from .frozen import frozen
from .records import row_json
from .snapshot.values import JSONObject, Row, to_float, to_int, to_str

# critical first, then unknown (could not be read), then warning: the Nagios precedence
SEVERITY_ORDER = {"critical": 0, "unknown": 1, "warning": 2}


@frozen
class Page:
    """One page of rows, each a JSON object (JSON columns decoded)."""

    rows: list[JSONObject]
    total: int
    offset: int
    limit: int


class StateReader:
    """Queries for the dashboard and the CLI; raises FileNotFoundError if there is no state."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.dialect = "sqlite"
        self._query: Callable[[str, tuple[Param, ...]], list[Row]] | None = None
        self._close: Callable[[], None] | None = None
        if not self.path.exists():
            raise FileNotFoundError(str(self.path))

    @classmethod
    def over(cls, state: State) -> StateReader:
        """Reads through a State's `query` (a PostgreSQL state: `[state] url`, a fleet)."""
        reader = cls.__new__(cls)
        reader.path = Path(str(state.path))
        reader.dialect = state.dialect
        reader._query = state.query
        reader._close = state.close
        return reader

    def close(self) -> None:
        """Closes the State it reads through, if any (a SQLite reader holds no connection)."""
        if self._close is not None:
            self._close()

    def _json(self, expr: str, *keys: str) -> str:
        """One text value out of a JSON column, in the state's SQL dialect."""
        if self.dialect == "sqlite":
            return f"json_extract({expr}, '$.{'.'.join(keys)}')"
        return f"(({expr})::jsonb #>> '{{{','.join(keys)}}}')"

    def _int(self, expr: str) -> str:
        return f"CAST({expr} AS INTEGER)" if self.dialect == "sqlite" else f"floor({expr})"

    @contextmanager
    def _db(self) -> Iterator[sqlite3.Connection]:
        uri = f"file:{self.path.resolve()}?mode=ro"
        db = sqlite3.connect(uri, uri=True, timeout=5, check_same_thread=False)
        db.row_factory = _dict_row
        try:
            db.execute("PRAGMA query_only = 1")
            yield db
        finally:
            db.close()

    def _rows(self, sql: str, params: tuple[Param, ...] = (), *decode: str) -> list[JSONObject]:
        """Rows as JSON objects; the columns in `decode` hold JSON text and are decoded."""
        if self._query is not None:
            return [row_json(r, *decode) for r in self._query(sql, tuple(params))]
        with self._db() as db:
            try:
                rows: list[Row] = db.execute(sql, params).fetchall()
                return [row_json(r, *decode) for r in rows]
            except sqlite3.OperationalError as exc:
                if "no such table" in str(exc):  # a state DB the daemon has not written yet
                    return []
                raise

    def series_last(self, key: str) -> dict[str, tuple[float, float]]:
        """target -> (ts, value) of one series' newest point (the daemon's own query)."""
        from .daemon.journal import series_last

        return series_last(lambda sql, p: self._rows(sql, p), key)

    # -- targets and findings ---------------------------------------------------------

    def cycles(self) -> list[JSONObject]:
        return self._rows("SELECT * FROM cycles ORDER BY target LIMIT 10000")

    def findings(
        self, status: str = "firing", target: str | None = None, limit: int = 200, offset: int = 0
    ) -> Page:
        """Findings in one status, most severe first, then oldest first."""
        where = "status = ?"
        params: list[Param] = [status]
        if target:
            where += " AND target = ?"
            params.append(target)
        order = (
            "CASE severity WHEN 'critical' THEN 0 WHEN 'unknown' THEN 1 ELSE 2 END, "
            "coalesce(fired_at, first_seen), target, rule, subject"
        )
        total = self._rows(f"SELECT count(*) AS n FROM findings WHERE {where}", tuple(params))
        rows = self._rows(
            f"SELECT * FROM findings WHERE {where} ORDER BY {order} LIMIT ? OFFSET ?",
            (*params, limit, offset),
            "data",
        )
        for r in rows:
            r["data"] = r["data"] or {}
        return Page(rows, _count(total), offset, limit)

    def severity_counts(self) -> dict[str, int]:
        rows = self._rows(
            "SELECT severity, count(*) AS n FROM findings WHERE status = 'firing' GROUP BY severity"
        )
        return {to_str(r["severity"]): to_int(r["n"]) for r in rows}

    def resolved_since(
        self, since: float, limit: int = 500, target: str | None = None
    ) -> list[JSONObject]:
        rows = self._rows(
            "SELECT * FROM findings WHERE status = 'resolved' AND resolved_at >= ? "
            + ("AND target = ? " if target else "")
            + "ORDER BY resolved_at DESC LIMIT ?",
            (since, *([target] if target else []), limit),
            "data",
        )
        for r in rows:
            r["data"] = r["data"] or {}
        return rows

    def fired_since(
        self, since: float, until: float, limit: int = 2000, target: str | None = None
    ) -> list[JSONObject]:
        """Findings that fired in [since, until], newest `limit`, oldest first, without data."""
        rows = self._rows(
            "SELECT target, rule, severity, subject, fired_at, resolved_at FROM findings "
            "WHERE fired_at BETWEEN ? AND ? "
            + ("AND target = ? " if target else "")
            + "ORDER BY fired_at DESC LIMIT ?",
            (since, until, *([target] if target else []), limit),
        )
        return rows[::-1]

    def dropped(self) -> list[JSONObject]:
        """Receivers whose queued alerts were dropped because they left the config (an older
        state has no such table: nothing dropped)."""
        try:
            return self._rows("SELECT * FROM dropped ORDER BY ts DESC LIMIT 100")
        except Exception:  # noqa: BLE001 — the table comes with state schema 3
            return []

    def outbox_size(self) -> dict[str, int]:
        rows = self._rows("SELECT receiver, count(*) AS n FROM outbox GROUP BY receiver LIMIT 1000")
        return {to_str(r["receiver"]): to_int(r["n"]) for r in rows}

    # -- actions -------------------------------------------------------------------------

    def actions(
        self, since: float = 0.0, target: str | None = None, limit: int = 100, offset: int = 0
    ) -> Page:
        where = "ts >= ?"
        params: list[Param] = [since]
        if target:
            where += " AND target = ?"
            params.append(target)
        total = self._rows(f"SELECT count(*) AS n FROM actions WHERE {where}", tuple(params))
        rows = self._rows(
            f"SELECT * FROM actions WHERE {where} ORDER BY id DESC LIMIT ? OFFSET ?",
            (*params, limit, offset),
            "detail",
        )
        return Page(rows, _count(total), offset, limit)

    # -- deadlocks -----------------------------------------------------------------------

    def _deadlock_filter(
        self, target: str | None, table: str | None, pattern: str | None, since: float
    ) -> tuple[str, list[Param]]:
        where: list[str] = ["seen_at >= ?"]
        params: list[Param] = [since]
        if target:
            where.append("target = ?")
            params.append(target)
        if pattern:
            where.append(f"{self._json('data', 'diagnosis', 'pattern')} = ?")
            params.append(pattern)
        if table:
            # "jobs" matches any schema's jobs; "app.jobs" only that one
            if self.dialect == "sqlite":
                each, tbl, db = (
                    "json_each(data, '$.locks')",
                    "json_extract(value, '$.table')",
                    ("json_extract(value, '$.db')"),
                )
            else:
                each = "jsonb_array_elements(coalesce(data::jsonb -> 'locks', '[]'::jsonb)) AS e"
                tbl, db = "(e.value ->> 'table')", "(e.value ->> 'db')"
            where.append(
                f"EXISTS (SELECT 1 FROM {each} WHERE {tbl} = ? "
                f"OR (coalesce({db}, '') || '.' || {tbl}) = ?)"
            )
            params += [table, table]
        return " AND ".join(where), params

    def deadlocks(
        self,
        target: str | None = None,
        table: str | None = None,
        pattern: str | None = None,
        since: float = 0.0,
        limit: int = 25,
        offset: int = 0,
        total: int | None = None,
    ) -> Page:
        """Newest first; pass `total` when it is known (a filtered count scans every row)."""
        where, params = self._deadlock_filter(target, table, pattern, since)
        if total is None:
            total = self.deadlock_total(target, table, pattern, since)
        rows = self._rows(
            f"SELECT * FROM deadlocks WHERE {where} "
            f"ORDER BY seen_at DESC, {'rowid' if self.dialect == 'sqlite' else 'key'} DESC "
            "LIMIT ? OFFSET ?",
            (*params, limit, offset),
            "data",
        )
        return Page(expand_rows(rows), total, offset, limit)

    def deadlock_total(
        self, target: str | None, table: str | None, pattern: str | None, since: float = 0.0
    ) -> int:
        where, params = self._deadlock_filter(target, table, pattern, since)
        total = self._rows(f"SELECT count(*) AS n FROM deadlocks WHERE {where}", tuple(params))
        return _count(total)

    def deadlock_version(self) -> tuple[int, int]:
        """Changes whenever a deadlock is recorded or pruned (keys the dashboard's cache)."""
        last = "max(rowid)" if self.dialect == "sqlite" else "max(seen_at)"
        r = self._rows(f"SELECT coalesce({last}, 0) AS m, count(*) AS n FROM deadlocks")
        return (to_int(r[0]["m"]), to_int(r[0]["n"])) if r else (0, 0)

    def deadlocks_per_hour(
        self, target: str | None, table: str | None, pattern: str | None, since: float
    ) -> list[tuple[float, int]]:
        """(hour start, count) by the time dbwatch recorded each deadlock."""
        where, params = self._deadlock_filter(target, table, pattern, since)
        rows = self._rows(
            f"SELECT {self._int('seen_at / 3600')} * 3600 AS hour, count(*) AS n "
            f"FROM deadlocks WHERE {where} GROUP BY hour ORDER BY hour LIMIT 10000",
            tuple(params),
        )
        return [(to_float(r["hour"]), to_int(r["n"])) for r in rows]

    def deadlock_patterns(self, target: str | None, since: float) -> dict[str, int]:
        where, params = self._deadlock_filter(target, None, None, since)
        rows = self._rows(
            f"SELECT coalesce({self._json('data', 'diagnosis', 'pattern')}, 'generic') AS p, "
            f"count(*) AS n FROM deadlocks WHERE {where} GROUP BY p ORDER BY n DESC LIMIT 100",
            tuple(params),
        )
        return {to_str(r["p"]): to_int(r["n"]) for r in rows}

    def deadlock_facets(self, limit: int = 50) -> dict[str, list[str]]:
        """The targets, patterns and tables the filter form offers (bounded)."""
        targets = self._rows(
            "SELECT DISTINCT target FROM deadlocks ORDER BY target LIMIT ?", (limit,)
        )
        # patterns of the latest 2,000: the form stays cheap however many are stored
        patterns = self._rows(
            f"SELECT {self._json('data', 'diagnosis', 'pattern')} AS p, count(*) AS n FROM "
            "(SELECT data FROM deadlocks ORDER BY seen_at DESC LIMIT 2000) AS latest "
            "GROUP BY p ORDER BY n DESC LIMIT ?",
            (limit,),
        )
        return {
            "targets": [to_str(r["target"]) for r in targets],
            "patterns": [to_str(r["p"]) for r in patterns if r["p"]],
        }

    # -- time series -----------------------------------------------------------------------

    def series_keys(self, since: float, limit: int = 2000) -> list[JSONObject]:
        """Every (target, key) with points in the window, with its largest value."""
        return self._rows(
            "SELECT target, key, max(value) AS peak, count(*) AS n FROM series WHERE ts >= ? "
            "GROUP BY target, key ORDER BY target, key LIMIT ?",
            (since, limit),
        )

    def series(
        self, target: str, key: str, since: float, until: float, points: int = 240
    ) -> list[tuple[float, float]]:
        """At most `points` (bucket start, max value) pairs: the peak in each bucket."""
        bucket = max(1.0, (until - since) / max(points, 1))
        rows = self._rows(
            "SELECT min(ts) AS ts, max(value) AS v FROM series "
            "WHERE target = ? AND key = ? AND ts >= ? AND ts <= ? "
            f"GROUP BY {self._int('(ts - ?) / ?')} ORDER BY ts LIMIT ?",
            (target, key, since, until, since, bucket, points + 1),
        )
        return [(to_float(r["ts"]), to_float(r["v"])) for r in rows]


def worst(severities: list[str]) -> str:
    return max(severities, key=severity_rank, default="ok")


def _count(rows: list[JSONObject]) -> int:
    """The `n` of a count(*) query's one row."""
    return to_int(rows[0]["n"]) if rows else 0
