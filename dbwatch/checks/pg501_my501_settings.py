"""PG501 missing PostgreSQL safety settings; MY501 risky InnoDB settings."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

from ..findings import Finding
from ..snapshot.settings import MY_SETTINGS, PG_SETTINGS, MySettings
from ..snapshot.values import to_float
from . import CheckContext, check, pure

_PG_SUGGEST = {
    "idle_in_transaction_session_timeout": "'5min'",
    "statement_timeout": "'30s'",
    "lock_timeout": "'5s'",
    "transaction_timeout": "'10min'",
    "idle_session_timeout": "'1h'",
}


_OFF = re.compile(r"0+(?:\.0*)?\s*(?:us|ms|s|min|h|d)?", re.IGNORECASE)


def _is_off(value: str | None) -> bool:
    """0 in any unit (`0`, `0s`, `'0ms'`) or empty; None is not off but unknown."""
    text = str(value or "").strip().strip("'\"").strip()
    return not text or text.lower() == "off" or _OFF.fullmatch(text) is not None


@pure()
@check("pg_settings", postgresql=["pg.settings"])
def pg_settings(ctx: CheckContext) -> Iterator[Finding]:
    rows = ctx.snapshot.get(PG_SETTINGS) or ()
    server = {r.name: r.setting for r in rows if r.scope == "server"}
    overrides: dict[str, list[str]] = {}
    for r in rows:
        if r.scope == "override" and not _is_off(r.setting):
            who = r.role or "all roles"
            where = f" in {r.database}" if r.database else ""
            overrides.setdefault(r.name, []).append(f"{who}{where}")
    for name in ctx.strings("required"):
        if name not in server:
            continue  # not on this version (transaction_timeout is 17+)
        hidden = server[name] is None  # an override for dbwatch's own role/database
        if not (hidden or _is_off(server[name])) or overrides.get(name):
            continue
        reason = "nothing ends a forgotten transaction or a runaway query"
        if hidden:  # every override is 0 and the server-wide value cannot be seen: say so
            reason += (
                " (the server-wide value is hidden by the 0 set for dbwatch's own role or "
                "database; check it with SHOW on a session of another role)"
            )
        value = _PG_SUGGEST.get(name, "'<value>'")
        yield ctx.finding(
            severity=ctx.rule.severity,
            subject=f"setting {name}",
            summary=ctx.summary(setting=name, reason=reason),
            fix=f"ALTER ROLE <app_role> SET {name} = {value}; (or server-wide: "
            f"ALTER SYSTEM SET {name} = {value}; SELECT pg_reload_conf();)",
            evidence={"setting": name, "value": server[name]},
            identity=name,
        )


def _log_path(value: str | None) -> str:
    """The server's error log as a shell argument; a placeholder when it logs to stderr."""
    text = str(value or "").strip()
    if not text or text in ("stderr", "./stderr"):
        return "<error log file>"
    return shlex.quote(text)


@pure()
@check("my_settings", mysql=["my.settings"])
def my_settings(ctx: CheckContext) -> Iterator[Finding]:
    s = ctx.snapshot.get(MY_SETTINGS) or MySettings()
    sev = ctx.rule.severity
    if str(s.get("innodb_deadlock_detect", "ON")).upper() == "OFF":
        yield ctx.finding(
            severity=sev,
            subject="setting innodb_deadlock_detect",
            summary=ctx.summary(
                setting="innodb_deadlock_detect",
                value="OFF",
                reason="deadlocked transactions wait for the full innodb_lock_wait_timeout "
                f"({s.get('innodb_lock_wait_timeout')}s) instead of one being rolled back at once",
            ),
            fix="SET GLOBAL innodb_deadlock_detect = ON; (and in my.cnf) -- only turn it off "
            "with a short innodb_lock_wait_timeout on very high concurrency",
            evidence={"setting": "innodb_deadlock_detect", "value": "OFF"},
            identity="innodb_deadlock_detect",
        )
    if str(s.get("innodb_print_all_deadlocks", "OFF")).upper() == "OFF":
        persist = "SET PERSIST" if ctx.snapshot.engine == "mysql" else "SET GLOBAL"
        yield ctx.finding(
            severity=sev,
            subject="setting innodb_print_all_deadlocks",
            summary=ctx.summary(
                setting="innodb_print_all_deadlocks",
                value="OFF",
                reason="only the latest deadlock is visible in SHOW ENGINE INNODB STATUS; "
                "every earlier one is lost",
            ),
            fix=f"{persist} innodb_print_all_deadlocks = ON; (MariaDB: also "
            "innodb_print_all_deadlocks=ON under [mysqld] in my.cnf), then "
            f"`dbwatch deadlocks --error-log {_log_path(s.get('log_error'))}` reads them all",
            evidence={
                "setting": "innodb_print_all_deadlocks",
                "value": "OFF",
                "log_error": s.get("log_error"),
            },
            identity="innodb_print_all_deadlocks",
        )
    limit = ctx.number("max_lock_wait_timeout")
    lwt = to_float(s.get("innodb_lock_wait_timeout", "50"))  # unreadable: 0, no finding
    if lwt > limit:
        yield ctx.finding(
            severity=sev,
            subject="setting innodb_lock_wait_timeout",
            summary=ctx.summary(
                setting="innodb_lock_wait_timeout",
                value=f"{lwt:g}s",
                reason=f"a worker blocked on a row lock hangs that long before failing "
                f"(over {limit:g}s)",
            ),
            fix="SET GLOBAL innodb_lock_wait_timeout = 50; (and in my.cnf)",
            evidence={"setting": "innodb_lock_wait_timeout", "value": lwt},
            identity="innodb_lock_wait_timeout",
        )
