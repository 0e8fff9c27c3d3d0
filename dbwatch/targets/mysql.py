"""MySQL/MariaDB sessions through PyMySQL: autocommit, read-only, labelled, short timeouts."""

from __future__ import annotations

import os
import ssl
import sys
from typing import TYPE_CHECKING, TypeAlias, TypedDict

from .mycrypto import import_pymysql

import_pymysql()  # `cryptography` only for an RSA password exchange (mycrypto.py)

import pymysql
import pymysql.connections
import pymysql.cursors

from ..errors import ProbeError, TargetError
from .base import (
    APP_NAME,
    CONNECT_TIMEOUT_S,
    IO_TIMEOUT_S,
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

# 1227: needs PROCESS/SUPER; 1142/1143: table/column denied; 1044: database denied.
_PRIV_ERRORS = {1227, 1142, 1143, 1044, 1045}

# PyMySQL ships no type information: what dbwatch uses of it, declared once here.
MySQLError: type[Exception] = pymysql.MySQLError
_LOST: tuple[type[Exception], ...] = (pymysql.err.OperationalError, pymysql.err.InterfaceError)


# The driver's connection, typed by types-PyMySQL (a test extra; without it mypy sees Any).
_Driver: TypeAlias = "pymysql.connections.Connection[pymysql.cursors.DictCursor]"


class _ConnectArgs(TypedDict, total=False):
    """The pymysql.connect() arguments dbwatch passes (typed against types-PyMySQL)."""

    connect_timeout: float
    read_timeout: float
    write_timeout: float
    autocommit: bool
    program_name: str
    charset: str
    cursorclass: type[pymysql.cursors.DictCursor]
    read_default_file: str
    host: str
    port: int
    user: str
    password: str
    database: str
    unix_socket: str


def preferred_tls_context() -> ssl.SSLContext:
    """The TLS context PyMySQL makes for its default mode (TLS when the server offers it, its
    certificate not verified: no CA given), without loading the system's CA store that
    ssl.create_default_context() reads and a context that verifies nothing never consults
    (~250 M instructions, 40 ms of CPU a connection on the slow machine)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.verify_flags &= ~ssl.VERIFY_X509_STRICT  # as PyMySQL does
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    keylog = os.environ.get("SSLKEYLOGFILE")  # as create_default_context does
    if keylog and not sys.flags.ignore_environment:
        ctx.keylog_filename = keylog
    return ctx


if TYPE_CHECKING:  # subscriptable in types-PyMySQL only
    _Base: TypeAlias = pymysql.connections.Connection[pymysql.cursors.DictCursor]
else:
    _Base = pymysql.connections.Connection


class _Connection(_Base):
    """PyMySQL's connection with preferred_tls_context() for its default mode; any TLS
    option given (~/.my.cnf's ssl-*) goes to PyMySQL's own context as before."""

    def _create_ssl_ctx(self, sslp: object) -> ssl.SSLContext:
        if isinstance(sslp, dict) and not sslp:
            return preferred_tls_context()
        made: ssl.SSLContext = super()._create_ssl_ctx(sslp)  # type: ignore[misc]
        return made


def _connect(kwargs: _ConnectArgs, spec: TargetSpec) -> _Driver:
    try:
        conn: _Driver = _Connection(**kwargs)
    except (OSError, ValueError, RuntimeError) as exc:
        raise TargetError(spec.name, f"cannot connect: {scrub(str(exc), spec)}") from None
    return conn


def _code(exc: BaseException) -> object:
    """The server's error number (1227, 2013 ...), 0 when the error carries none."""
    return exc.args[0] if exc.args else 0


class MyConnection:
    engine = "mysql"

    def __init__(self, spec: TargetSpec, conn: _Driver) -> None:
        self.spec = spec
        self.conn = conn
        row = self.rows("SELECT VERSION() AS v, CONNECTION_ID() AS id")[0]
        self.server_version = str(row.get("v"))
        self.thread_id = int(str(row.get("id")))
        where = getattr(conn, "unix_socket", None) or getattr(conn, "host", None)
        self.server_key = server_key("mysql", where, getattr(conn, "port", None))
        OWN_SESSIONS.add(self.server_key, self.thread_id)
        self.flavour = "mariadb" if "mariadb" in self.server_version.lower() else "mysql"
        self.version = ServerVersion.from_mysql_text(self.server_version)
        self.version_num = self.version.num
        self._limit_session()

    def _limit_session(self) -> None:
        sets = [
            "SET SESSION TRANSACTION READ ONLY",
            "SET SESSION innodb_lock_wait_timeout = 2",
            "SET SESSION lock_wait_timeout = 2",
        ]
        # the server ends a statement before the client's read timeout drops the connection
        limit_ms = min(STATEMENT_TIMEOUT_MS, int(IO_TIMEOUT_S * 1000) - 500)
        if self.flavour == "mariadb":
            sets.append(f"SET SESSION max_statement_time = {limit_ms / 1000:.1f}")
        else:
            sets.append(f"SET SESSION max_execution_time = {limit_ms}")
        for stmt in sets:
            try:
                self.rows(stmt)
            except ProbeError:
                pass  # an older server without the variable: the other limits still apply

    @classmethod
    def open(cls, spec: TargetSpec, database: str | None = None) -> MyConnection:
        p = parse_url(spec.url)
        kwargs: _ConnectArgs = {
            "connect_timeout": CONNECT_TIMEOUT_S,
            "read_timeout": IO_TIMEOUT_S,
            "write_timeout": IO_TIMEOUT_S,
            "autocommit": True,
            "program_name": APP_NAME,
            "charset": "utf8mb4",
            "cursorclass": pymysql.cursors.DictCursor,
        }
        mycnf = os.path.expanduser("~/.my.cnf")
        if os.path.exists(mycnf):
            kwargs["read_default_file"] = mycnf
        password = password_of(spec)
        if p.host is not None:
            kwargs["host"] = p.host
        if p.port is not None:
            kwargs["port"] = p.port
        if p.user is not None:
            kwargs["user"] = p.user
        if password is not None:
            kwargs["password"] = password
        if p.database is not None:
            kwargs["database"] = p.database
        if "unix_socket" in p.query:
            kwargs["unix_socket"] = p.query["unix_socket"]
        if database:
            kwargs["database"] = database
        if "read_default_file" not in kwargs:  # else ~/.my.cnf may name the host
            kwargs.setdefault("host", "127.0.0.1")
        try:
            conn = _connect(kwargs, spec)
        except MySQLError as exc:
            if not (_code(exc) == 1044 and kwargs.pop("database", "")):
                raise TargetError(spec.name, f"cannot connect: {scrub(_msg(exc), spec)}") from None
            # 1044: no privilege on the URL's schema. Connect without it (the scope stays the
            # URL's), so the privilege probe reports DW001 with the exact GRANT.
            try:
                conn = _connect(kwargs, spec)
            except MySQLError as again:
                msg = f"cannot connect: {scrub(_msg(again), spec)}"
                raise TargetError(spec.name, msg) from None
        return cls(spec, conn)

    def rows(self, sql: str, params: Params = None, limit: int | None = None) -> list[DriverRow]:
        try:
            with self.conn.cursor() as cur:
                cur.execute(sql, params)
                data = cur.fetchmany(limit) if limit else cur.fetchall()
                return [dict(r) for r in data]
        except _LOST as exc:
            code = _code(exc)
            if code in _PRIV_ERRORS:
                raise ProbeError(
                    "query",
                    scrub(_msg(exc), self.spec),
                    "GRANT PROCESS, SELECT ON *.* TO '<monitor>'@'%';",
                    privilege=True,
                ) from None
            if not self.conn.open or code in (2006, 2013):
                raise TargetError(
                    self.spec.name, f"connection lost: {scrub(_msg(exc), self.spec)}"
                ) from None
            raise ProbeError("query", scrub(_msg(exc), self.spec)) from None
        except MySQLError as exc:
            raise ProbeError("query", scrub(_msg(exc), self.spec)) from None

    def execute(self, sql: str, params: Params = None) -> int:
        try:
            with self.conn.cursor() as cur:
                return int(cur.execute(sql, params))
        except MySQLError as exc:
            code = _code(exc)
            raise ProbeError(
                "execute", scrub(_msg(exc), self.spec), privilege=code in _PRIV_ERRORS
            ) from None

    def close(self) -> None:
        OWN_SESSIONS.discard(self.server_key, self.thread_id)
        try:
            self.conn.close()
        except MySQLError:
            pass


def _msg(exc: BaseException) -> str:
    if len(exc.args) >= 2:
        return f"({exc.args[0]}) {exc.args[1]}"
    return str(exc)
