"""Kill race: client threads run short transactions back to back while dbwatch's terminate
path (read_sessions -> plan -> execute) kills the ones it sees idle in a transaction.

A wrong kill is detectable: every client transaction inserts a row (conn, seq) and learns
its own transaction's identity the way dbwatch sees it (PostgreSQL: now() = xact_start;
MariaDB: the trx id InnoDB stamps on a row of a transaction-precise system-versioned
table). For each `terminated`, the client log of that connection says which transaction
was open when the connection died; the table says whether the selected one committed.

- correct: the selected transaction was open and never committed;
- wrong:   the selected transaction had committed and a younger one had started, and that
           COMMIT had returned to the client before the kill began: the server had ended the
           transaction before any live re-check, which must have refused it;
- in flight: the same, but the COMMIT returned while the kill was in flight (after `execute`
           began): the known window between the server's last check and its signal/KILL
           (README "Known limit"), open while that server thread is descheduled. Counted and
           reported apart, and bounded by the tests;
- late:    the selected transaction had committed and the connection died before a
           younger one ran a statement: the kill landed during the commit (the signal or
           KILL was sent while it was open). Counted and reported apart.
- unmatched: selected before its first statement returned to the client (PostgreSQL:
           after BEGIN): it died in that very transaction (correct).

Used by tests/live/test_kill_safety_live.py and contrib/bench/bench_kill_race.py.
"""

from __future__ import annotations

import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import psycopg
import pymysql

from dbwatch.actions.guards import Criteria, Policy, plan
from dbwatch.actions.sessions import read_sessions
from dbwatch.actions.terminate import execute
from dbwatch.targets import open_target, spec_for


@dataclass
class ConnLog:
    key: Any  # PostgreSQL (pid, backend_start); MariaDB thread id
    tags: list[Any] = field(default_factory=list)  # tag of txn seq i+1, once it ran a statement
    begun: int = 0  # the last seq whose first statement (PostgreSQL: BEGIN) returned
    committed: list[float] = field(default_factory=list)  # monotonic: COMMIT of seq i+1 returned
    died: bool = False


@dataclass
class Result:
    kills: int = 0
    gone: int = 0
    other: int = 0
    wrong: int = 0
    in_flight: int = 0
    late: int = 0
    unmatched: int = 0
    seconds: float = 0.0
    details: list[str] = field(default_factory=list)

    def line(self, engine: str) -> str:
        per = 1000.0 * (self.wrong + self.in_flight + self.late) / self.kills if self.kills else 0.0
        return (
            f"{engine}: {self.kills} kills in {self.seconds:.1f}s, {self.gone} refused as gone, "
            f"wrong {self.wrong}, in flight {self.in_flight}, late {self.late}, "
            f"unmatched {self.unmatched} "
            f"({per:.2f} per 1,000)"
        )


class Race:
    """One engine's race. `setup()` creates a role/user and a table; `close()` drops them."""

    def __init__(self, engine: str, admin_url: str, uniq: str, clients: int = 4,
                 hold_ms: float = 25.0, gap_ms: float = 2.0) -> None:
        self.engine, self.admin_url, self.uniq = engine, admin_url, uniq
        self.user, self.table = f"dbw_race_{uniq}", f"dbw_race_{uniq}"
        self.clients, self.hold, self.gap = clients, hold_ms / 1000, gap_ms / 1000
        self.stop = threading.Event()
        self.logs: list[ConnLog] = []
        self.lock = threading.Lock()

    # -- setup -------------------------------------------------------------------------

    def setup(self) -> None:
        if self.engine == "postgresql":
            with psycopg.connect(self.admin_url, autocommit=True) as c:
                c.execute(f"CREATE ROLE {self.user} LOGIN")
                c.execute(f"CREATE TABLE {self.table} (conn text, seq int)")
                c.execute(f"GRANT SELECT, INSERT ON {self.table} TO {self.user}")
        else:
            with self._my_admin() as c, c.cursor() as cur:
                cur.execute(f"CREATE USER '{self.user}'@'%' IDENTIFIED BY 'pw'")
                cur.execute(
                    f"CREATE TABLE {self.table} (conn BIGINT, seq INT, "
                    "rs BIGINT UNSIGNED GENERATED ALWAYS AS ROW START INVISIBLE, "
                    "re BIGINT UNSIGNED GENERATED ALWAYS AS ROW END INVISIBLE, "
                    "PERIOD FOR SYSTEM_TIME(rs, re)) WITH SYSTEM VERSIONING ENGINE=InnoDB")
                cur.execute(f"GRANT SELECT, INSERT ON test.{self.table} TO '{self.user}'@'%'")

    def close(self) -> None:
        self.stop.set()
        if self.engine == "postgresql":
            with psycopg.connect(self.admin_url, autocommit=True) as c:
                c.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                          "WHERE usename = %s", (self.user,))
                c.execute(f"DROP TABLE IF EXISTS {self.table}")
                c.execute(f"DROP ROLE IF EXISTS {self.user}")
        else:
            with self._my_admin() as c, c.cursor() as cur:
                cur.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = %s",
                            (self.user,))
                for (tid,) in cur.fetchall():
                    try:
                        cur.execute("KILL %s", (int(tid),))
                    except pymysql.Error:
                        pass
                cur.execute(f"DROP TABLE IF EXISTS {self.table}")
                cur.execute(f"DROP USER IF EXISTS '{self.user}'@'%'")

    def _my_where(self) -> dict[str, Any]:
        parts = urlsplit(self.admin_url)
        return {"host": parts.hostname or "127.0.0.1", "port": parts.port or 3306}

    def _my_admin(self) -> Any:
        return pymysql.connect(**self._my_where(), user="root", database="test", autocommit=True)

    # -- clients -----------------------------------------------------------------------

    def _client(self, n: int) -> None:
        rnd = random.Random(n)
        while not self.stop.is_set():
            try:
                conn, log = self._connect()
            except (psycopg.Error, pymysql.Error):
                time.sleep(0.01)
                continue
            with self.lock:
                self.logs.append(log)
            try:
                while not self.stop.is_set():
                    seq = len(log.tags) + 1
                    tag = self._begin(conn, log, seq)
                    log.tags.append(tag)
                    log.begun = seq
                    time.sleep(rnd.uniform(0, 2 * self.hold))   # idle in the transaction
                    conn.execute("COMMIT") if self.engine == "postgresql" else conn.commit()
                    log.committed.append(time.monotonic())
                    time.sleep(rnd.uniform(0, 2 * self.gap))    # between transactions
            except (psycopg.Error, pymysql.Error):
                log.died = True
            finally:
                try:
                    conn.close()
                except (psycopg.Error, pymysql.Error):
                    pass

    def _connect(self) -> tuple[Any, ConnLog]:
        if self.engine == "postgresql":
            url = re.sub(r"//[^@/]*@", f"//{self.user}@", self.admin_url)
            # explicit BEGIN/COMMIT, so the log knows when a younger transaction had begun
            conn = psycopg.connect(url, application_name="race-client", autocommit=True)
            row = conn.execute("SELECT pid, backend_start FROM pg_stat_activity "
                               "WHERE pid = pg_backend_pid()").fetchone()
            assert row is not None
            return conn, ConnLog((row[0], row[1]))
        conn = pymysql.connect(**self._my_where(), user=self.user, password="pw",
                               database="test", autocommit=False)
        return conn, ConnLog(conn.thread_id())

    def _begin(self, conn: Any, log: ConnLog, seq: int) -> Any:
        if self.engine == "postgresql":
            conn.execute("BEGIN")
            log.begun = seq
            row = conn.execute(f"INSERT INTO {self.table} VALUES (%s, %s) RETURNING now()",
                               (str(log.key[0]) + "@" + log.key[1].isoformat(), seq)).fetchone()
            return row[0]
        with conn.cursor() as cur:
            cur.execute(f"INSERT INTO {self.table} (conn, seq) VALUES (%s, %s)", (log.key, seq))
            cur.execute(f"SELECT rs FROM {self.table} WHERE conn = %s AND seq = %s",
                        (log.key, seq))
            return str(cur.fetchone()[0])

    # -- the killer --------------------------------------------------------------------

    def run(self, kills: int, budget: float) -> Result:
        threads = [threading.Thread(target=self._client, args=(n,), daemon=True)
                   for n in range(self.clients)]
        for t in threads:
            t.start()
        spec = spec_for(self.admin_url, "race")
        crit = Criteria(idle_in_transaction=True, match_user=re.compile(f"^{self.user}$"))
        selected: list[tuple[Any, Any, float]] = []
        res = Result()
        started = time.monotonic()
        conn = open_target(spec)
        try:
            while res.kills < kills and time.monotonic() - started < budget:
                sessions = read_sessions(conn, spec.name, database=spec.scoped_database)
                decisions, _ = plan(sessions, crit, Policy())
                before = res.kills
                for d in decisions:
                    began = time.monotonic()
                    done = execute(conn, d, Policy())
                    s = done.session
                    if done.action == "terminated":
                        res.kills += 1
                        if self.engine == "postgresql":
                            selected.append(((s.pid, s.backend_start), s.xact_start, began))
                        else:
                            selected.append((s.thread_id, s.trx_id, began))
                    elif done.action == "gone":
                        res.gone += 1
                    else:
                        res.other += 1
                        res.details.append(f"{done.action}: {done.reason} {done.error}")
                if res.kills == before:
                    # nothing killed: let InnoDB refresh its INNODB_TRX cache (it does so only
                    # after 0.1 s without readers), else every listing stays stale
                    time.sleep(0.11 if self.engine != "postgresql" else 0.002)
        finally:
            conn.close()
            res.seconds = time.monotonic() - started
            self.stop.set()
            for t in threads:
                t.join(10)
        self._judge(selected, res)
        return res

    def _committed(self) -> set[tuple[str, int]]:
        if self.engine == "postgresql":
            with psycopg.connect(self.admin_url) as c:
                return {(str(a), int(b)) for a, b in c.execute(f"SELECT conn, seq FROM {self.table}")}
        with self._my_admin() as c, c.cursor() as cur:
            cur.execute(f"SELECT conn, seq FROM {self.table}")
            return {(str(a), int(b)) for a, b in cur.fetchall()}

    def _conn_name(self, key: Any) -> str:
        if self.engine == "postgresql":
            return str(key[0]) + "@" + key[1].isoformat()
        return str(key)

    def _judge(self, selected: list[tuple[Any, Any, float]], res: Result) -> None:
        committed = self._committed()
        by_key = {log.key: log for log in self.logs}
        for key, tag, began in selected:
            log = by_key.get(key)
            if log is None:
                res.unmatched += 1
                res.details.append(f"unmatched kill {key} {tag}")
                continue
            if tag not in log.tags:
                # selected before its first statement returned: it died in that transaction
                res.unmatched += 1
                continue
            seq = log.tags.index(tag) + 1
            if (self._conn_name(key), seq) not in committed:
                continue  # the selected transaction was open and was rolled back: correct
            if log.begun > seq:
                done = log.committed[seq - 1] if len(log.committed) >= seq else None
                if done is not None and done > began:
                    res.in_flight += 1
                    res.details.append(f"in flight: {key} selected seq {seq}, committed "
                                       f"{1000 * (done - began):.1f} ms after the kill began, "
                                       f"died in seq {log.begun}")
                else:
                    res.wrong += 1
                    res.details.append(f"wrong: {key} selected seq {seq}, died in seq {log.begun}")
            else:
                res.late += 1
                res.details.append(f"late: {key} selected seq {seq} had committed")
