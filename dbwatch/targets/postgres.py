"""PostgreSQL sessions through psycopg 3: autocommit, read-only, labelled, short timeouts."""

from __future__ import annotations

from typing import Any, NoReturn

from . import pgversions

pgversions.preset()  # before psycopg: its version modules without importlib.metadata

import psycopg
from psycopg.adapt import Transformer
from psycopg.rows import dict_row, tuple_row

pgversions.attach()

from ..errors import ProbeError, TargetError
from .base import (
    APP_NAME,
    CONNECT_TIMEOUT_S,
    DEFAULT_PG_URL,
    LOCK_TIMEOUT_MS,
    STATEMENT_TIMEOUT_MS,
    DriverRow,
    Params,
    TargetSpec,
    password_of,
    scrub,
)
from .own import OWN_SESSIONS, server_key
from .urls import parse_url
from .version import ServerVersion

_OPTIONS = (
    "-c default_transaction_read_only=on "
    # statements shown to people or run by terminate quote literals the standard way
    "-c standard_conforming_strings=on"
)
# The timeouts are SET after connecting, not sent as startup options: a startup option
# becomes the session's reset value (pg_settings.reset_val), which would hide the value the
# server gives every other session from PG501. One round trip (simple query protocol).
_SESSION_SETS = (
    f"SET statement_timeout = {STATEMENT_TIMEOUT_MS}; SET lock_timeout = {LOCK_TIMEOUT_MS}; "
    "SET idle_in_transaction_session_timeout = 10000"
)


_TUPLES_OK = psycopg.pq.ExecStatus.TUPLES_OK
_FATAL = psycopg.pq.ExecStatus.FATAL_ERROR
_SQLSTATE = psycopg.pq.DiagnosticField.SQLSTATE
# the prepared statement is not there (a DEALLOCATE ALL, a pooler in front): prepare again
_NO_STATEMENT = b"26000"
# (client encoding, the result's raw column names) -> the names decoded: the same statement
# gives the same columns every cycle; bounded, as statements and encodings are few
_NAMES: dict[tuple[str, tuple[bytes | None, ...]], tuple[str, ...]] = {}


def _names(res: psycopg.pq.abc.PGresult, enc: str) -> tuple[str, ...]:
    """The result's column names (as psycopg's dict_row names them, decoded with `enc`: what
    psycopg's own row factories decode them with)."""
    key = (enc, tuple(map(res.fname, range(res.nfields))))
    hit = _NAMES.get(key)
    if hit is None:
        hit = tuple(b.decode(enc) if b is not None else "" for b in key[1])
        if len(_NAMES) > 4096:
            _NAMES.clear()
        _NAMES[key] = hit
    return hit


def _grant_hint(exc: Exception) -> str | None:
    if isinstance(exc, psycopg.errors.InsufficientPrivilege):
        return "GRANT pg_monitor TO <monitor_user>;"
    return None


class PgConnection:
    engine = "postgresql"
    flavour = "postgresql"

    def __init__(self, spec: TargetSpec, conn: psycopg.Connection[Any]) -> None:
        self.spec = spec
        self.conn = conn
        self.version_num = int(conn.info.server_version)
        self.version = ServerVersion.from_pg_num(self.version_num)
        self.server_version = str(conn.info.parameter_status("server_version") or self.version_num)
        self.database = conn.info.dbname
        self._jit_on = self.version_num >= 110000
        self.backend_pid = conn.info.backend_pid
        # the probes' one cursor, made on first use and kept with the session: a cursor per
        # statement was a fifth of the Python work of an idle cycle's one round trip
        self._cursor: psycopg.Cursor[Any] | None = None
        # fixed_rows: the session's prepared statements (text -> name) and the loader of their
        # text results (psycopg's own, with the connection's adapters: rows()' values)
        self._prepared: dict[str, tuple[bytes, tuple[str, ...] | None]] = {}
        self._loader: Any = None
        self._made = 0
        self.server_key = server_key("postgresql", conn.info.host, conn.info.port)
        OWN_SESSIONS.add(self.server_key, self.backend_pid)

    @classmethod
    def open(cls, spec: TargetSpec, database: str | None = None) -> PgConnection:
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "application_name": APP_NAME,
            "options": _OPTIONS,
            "connect_timeout": CONNECT_TIMEOUT_S,
            "row_factory": dict_row,
        }
        if database:
            kwargs["dbname"] = database
        url = ""
        if spec.url != DEFAULT_PG_URL:
            # libpq gets the URL without its password (any character parses: targets.urls)
            url = parse_url(spec.url).without_password()
        password = password_of(spec)
        if password is not None:
            kwargs["password"] = password
        try:
            conn = psycopg.connect(url, **kwargs)
        except (psycopg.Error, ValueError) as exc:
            raise TargetError(spec.name, f"cannot connect: {scrub(str(exc), spec)}") from None
        return cls(spec, conn)

    def set_timeouts(self) -> None:
        """The probe session's own timeouts; called once the daemon's deadline knows this
        connection (targets.open_target), so a server that freezes here is still cut. With
        them `SET jit = off` (PostgreSQL 11+, see rows()): one round trip for both."""
        sets = _SESSION_SETS + "; SET jit = off" if self._jit_on else _SESSION_SETS
        try:
            self.conn.execute(sets)
            self._jit_on = False
        except psycopg.Error as exc:
            self.close()
            raise TargetError(
                self.spec.name, f"cannot connect: {scrub(str(exc), self.spec)}"
            ) from None

    def _cur(self) -> psycopg.Cursor[Any]:
        cur = self._cursor
        if cur is None or cur.closed:
            # plain tuples from the driver (its C fast path, no row maker made per
            # statement); the dicts are made here, with the column names kept per shape
            cur = self._cursor = self.conn.cursor(row_factory=tuple_row)
        if self._jit_on:
            # once per session, not per cycle: with cold statistics a 1 M-row queue
            # table's estimates pass jit_above_cost and JIT compilation alone took
            # seconds (3.5 s for a query reading no row). Not in _OPTIONS: PostgreSQL 10
            # has no jit; not in open(): a server that stops answering there would
            # hang before the cycle's deadline knows of the session. Sent with the
            # timeouts (set_timeouts); here for a session opened without them
            cur.execute("SET jit = off")
            self._jit_on = False
        return cur

    def rows(self, sql: str, params: Params = None, limit: int | None = None) -> list[DriverRow]:
        try:
            cur = self._cur()
            cur.execute(sql, params)
            res = cur.pgresult  # not cur.description: that builds every column's object
            if res is None or res.status != _TUPLES_OK:
                return []
            got = cur.fetchmany(limit) if limit else cur.fetchall()
            if not got:
                return []
            names = _names(res, cur._encoding)
            return [dict(zip(names, r, strict=True)) for r in got]
        except psycopg.Error as exc:
            self._failed(exc)

    def _failed(self, exc: psycopg.Error) -> NoReturn:
        """A statement failed: the session is gone (TargetError: the daemon replaces it) or
        the server refused this statement (ProbeError; a privilege named when it is one)."""
        if isinstance(exc, psycopg.OperationalError):
            if self.conn.closed:
                raise TargetError(
                    self.spec.name, f"connection lost: {scrub(str(exc), self.spec)}"
                ) from None
            raise ProbeError("query", scrub(str(exc), self.spec), _grant_hint(exc)) from None
        raise ProbeError(
            "query",
            scrub(str(exc), self.spec),
            _grant_hint(exc),
            privilege=_grant_hint(exc) is not None,
        ) from None

    def fixed_rows(self, sql: str) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        """(column names, rows as tuples) of one of dbwatch's own constant statements (no
        parameters) on this session: the daemon's idle-cycle statement. Around psycopg's
        cursor: prepared once per session under a name of dbwatch's own (the cursor had
        psycopg prepare it too, from its sixth run) and run through the connection's libpq
        wrapper (PQexecPrepared, the GIL released while it waits, as in the cursor's wait),
        the text results typed by psycopg's own loaders for this connection: the values
        rows() gives. Errors as rows(): a lost session is a TargetError, a refused statement
        a ProbeError (statement_timeout included); the deadline's socket shutdown ends the
        wait as before."""
        conn = self.conn
        try:
            if self._jit_on:
                self._cur()
            with conn.lock:  # as the cursor takes it
                pgconn = conn.pgconn
                name, names = self._prepared.get(sql) or self._prepare(pgconn, sql)
                res = pgconn.exec_prepared(name, None)
                if res.status == _FATAL and res.error_field(_SQLSTATE) == _NO_STATEMENT:
                    # gone from the session (a DEALLOCATE ALL): prepared again, once
                    name, names = self._prepare(pgconn, sql)
                    res = pgconn.exec_prepared(name, None)
                if res.status != _TUPLES_OK:
                    raise self._error(res)
                loader = self._loader
                if loader is None:
                    loader = self._loader = Transformer(conn)
                loader.set_pgresult(res)
                got: list[tuple[Any, ...]] = loader.load_rows(0, res.ntuples, tuple)
                if names is None:  # a prepared statement's columns are its own
                    names = _names(res, loader.encoding)
                    self._prepared[sql] = (name, names)
                return names, got
        except psycopg.Error as exc:
            self._failed(exc)

    def _prepare(self, pgconn: Any, sql: str) -> tuple[bytes, None]:
        name = f"dbwatch_{self._made}".encode()  # psycopg's own are _pg3_N
        self._made += 1
        res = pgconn.prepare(name, sql.encode(self._encoding()))
        if res.status == _FATAL:
            raise self._error(res)
        self._prepared[sql] = (name, None)
        return name, None

    def _encoding(self) -> str:
        return str(self.conn.info.encoding)

    def _error(self, res: psycopg.pq.abc.PGresult) -> psycopg.Error:
        """The psycopg error of a failed result, as the cursor would raise it; the session
        gone under the statement is an OperationalError (rows() calls it lost)."""
        if self.conn.closed:  # the session's message: the server's FATAL, then libpq's
            raw = self.conn.pgconn.error_message or res.error_message or b""
            msg = raw.decode(self._encoding(), "replace").removeprefix("FATAL:  ")
            return psycopg.OperationalError(msg or "the connection is lost")
        return psycopg.errors.error_from_result(res, encoding=self._encoding())

    def execute(self, sql: str, params: Params = None) -> int:
        """For actions (terminate): the only write path, used outside probes."""
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql, params)
                return cur.rowcount
        except psycopg.Error as exc:
            raise ProbeError(
                "execute",
                scrub(str(exc), self.spec),
                _grant_hint(exc),
                privilege=_grant_hint(exc) is not None,
            ) from None

    def close(self) -> None:
        OWN_SESSIONS.discard(self.server_key, self.backend_pid)
        try:
            self.conn.close()
        except psycopg.Error:
            pass
