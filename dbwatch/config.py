"""Configuration (SPEC §4): TOML with ${VAR} expansion, validated with every error collected."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .catalogue import Rule, Thresholds, build_thresholds
from .durations import parse_count, parse_duration
from .errors import ConfigError, TargetError
from .targets.secrets import register_secret

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
ALERT_KINDS = ("webhook", "slack", "alertmanager")


@dataclass(frozen=True)
class TargetConfig:
    name: str
    url: str
    interval: float = 60.0
    databases: tuple[str, ...] = ()  # PostgreSQL: extra databases for per-table probes
    all_databases: bool = False
    retry_after: float | None = None  # queue tables: Laravel's retry_after
    primary: str | None = None  # for a standby: the name of its primary target
    log_file: str | None = None  # server log the daemon tails for every deadlock
    password_file: str | None = None  # the password's file (keeps it out of the config and ps)


@dataclass(frozen=True)
class RuleOverride:
    thresholds: Thresholds | None = None
    for_seconds: float | None = None
    params: dict[str, Any] = field(default_factory=dict)
    ignore: tuple[str, ...] = ()  # regexes matched against the finding's subject
    enabled: bool = True


@dataclass(frozen=True)
class TerminateConfig:
    enabled: bool = False
    dry_run: bool = True
    rules: tuple[str, ...] = ("PG001", "PG002", "PG201", "MY001", "MY002")
    after: float = 1800.0
    protect_users: tuple[str, ...] = ()
    protect_apps: tuple[str, ...] = ()
    max_per_cycle: int = 3
    include_superusers: bool = False


@dataclass(frozen=True)
class AlertConfig:
    kind: str
    url: str
    secret: str | None = None
    min_severity: str = "warning"
    repeat_interval: float = 4 * 3600.0
    send_resolved: bool = True
    timeout: float = 5.0
    name: str = ""
    # kind = "alertmanager": every peer of the Alertmanager cluster (url is the first)
    urls: tuple[str, ...] = ()

    @property
    def peers(self) -> tuple[str, ...]:
        return self.urls or (self.url,)


@dataclass(frozen=True)
class DaemonConfig:
    state: str | None = None
    metrics_address: str | None = None
    log_format: str = "text"
    retention: float = 7 * 86400.0
    cycle_timeout: float = 30.0  # a cycle past this is abandoned, the target "not answering"
    missed_cycles: int = 3  # DW001 "target not answering" fires after this many missed cycles
    # sessions kept between cycles, never more than this many to one server (0: a new one
    # per cycle, the one-shot way)
    max_connections_per_server: int = 10


@dataclass(frozen=True)
class StateConfig:
    """[state]: where the daemon keeps its state. url = "postgresql://…" shares it by a fleet."""

    url: str | None = None
    schema: str = "dbwatch"
    lease_ttl: float | None = None  # default: the shortest target interval (5 s … 60 s)


@dataclass(frozen=True)
class HttpConfig:
    """[http]: the dashboard of `dbwatch watch --http`."""

    address: str | None = None  # HOST:PORT; --http overrides it
    token: str | None = None  # every page but /metrics needs it (Bearer or ?token=)


@dataclass(frozen=True)
class Config:
    path: str | None = None
    targets: tuple[TargetConfig, ...] = ()
    rules: dict[str, RuleOverride] = field(default_factory=dict)
    terminate: TerminateConfig = TerminateConfig()
    alerts: tuple[AlertConfig, ...] = ()
    daemon: DaemonConfig = DaemonConfig()
    state: StateConfig = StateConfig()
    http: HttpConfig = HttpConfig()


class _Collector:
    """Reads typed values out of a TOML table, recording 'file: key: problem' lines."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[str] = []

    def err(self, key: str, msg: str) -> None:
        self.problems.append(f"{self.file}: {key}: {msg}")

    def known(self, table: dict[str, Any], where: str, keys: set[str]) -> None:
        for key in table:
            if key not in keys:
                self.err(f"{where}.{key}" if where else key, "unknown key")

    def get(self, table: dict[str, Any], where: str, key: str, kind: str, default: Any) -> Any:
        if key not in table:
            return default
        value, path = table[key], f"{where}.{key}" if where else key
        try:
            return _convert(kind, value)
        except (ValueError, TypeError) as exc:
            self.err(path, str(exc))
            return default


def _convert(kind: str, value: Any) -> Any:
    if kind == "duration":
        return parse_duration(value)
    if kind == "str":
        if not isinstance(value, str):
            raise TypeError(f"expected a string, got {value!r}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise TypeError(f"expected true or false, got {value!r}")
        return value
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise TypeError(f"expected a non-negative integer, got {value!r}")
        return value
    if kind == "strlist":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TypeError(f"expected a list of strings, got {value!r}")
        return tuple(value)
    raise AssertionError(kind)


def expand_vars(value: Any, where: str, col: _Collector) -> Any:
    """${VAR} from the environment, recursively; a missing variable is an error naming it."""
    if isinstance(value, str):

        def repl(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in os.environ:
                col.err(where, f"environment variable {name} is not set")
                return ""
            return os.environ[name]

        return _VAR.sub(repl, value)
    if isinstance(value, dict):
        return {k: expand_vars(v, f"{where}.{k}" if where else k, col) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_vars(v, f"{where}[{i}]", col) for i, v in enumerate(value)]
    return value


def param_problem(default: Any, value: Any) -> str | None:
    """A rule parameter must have the kind of its default: bool, number, list, duration, count."""
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"expected true or false, got {value!r}"
    if isinstance(default, (int, float)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"expected a number, got {value!r}"
    if isinstance(default, list):
        return None if isinstance(value, list) else f"expected a list, got {value!r}"
    try:
        if re.fullmatch(r"\d+(\.\d+)?(ms|s|m|h|d|w)+", str(default)):
            parse_duration(value)
        elif re.fullmatch(r"\d+(\.\d+)?[kKmMgG]?", str(default)):
            parse_count(value)
        elif not isinstance(value, str):
            return f"expected a string, got {value!r}"
    except (ValueError, TypeError) as exc:
        return str(exc)
    return None


def _targets(raw: Any, col: _Collector) -> tuple[TargetConfig, ...]:
    if not isinstance(raw, list):
        col.err("targets", "must be an array of tables ([[targets]])")
        return ()
    out, names = [], set()
    keys = {
        "name",
        "url",
        "interval",
        "databases",
        "all_databases",
        "retry_after",
        "primary",
        "log_file",
        "password_file",
    }
    for i, t in enumerate(raw):
        where = f"targets[{i}]"
        if not isinstance(t, dict):
            col.err(where, "must be a table")
            continue
        col.known(t, where, keys)
        url = col.get(t, where, "url", "str", "")
        if not url:
            col.err(f"{where}.url", "missing")
        else:
            _check_url(url, f"{where}.url", col)
        name = col.get(t, where, "name", "str", "") or f"target{i + 1}"
        if name in names:
            col.err(f"{where}.name", f"duplicate target name {name!r}")
        names.add(name)
        interval = col.get(t, where, "interval", "duration", 60.0)
        if interval <= 0:
            col.err(f"{where}.interval", "must be positive")
        out.append(
            TargetConfig(
                name=name,
                url=url,
                interval=interval,
                databases=col.get(t, where, "databases", "strlist", ()),
                all_databases=col.get(t, where, "all_databases", "bool", False),
                retry_after=col.get(t, where, "retry_after", "duration", None),
                primary=col.get(t, where, "primary", "str", None),
                log_file=col.get(t, where, "log_file", "str", None),
                password_file=col.get(t, where, "password_file", "str", None) or None,
            )
        )
    return tuple(out)


def _check_url(url: str, key: str, col: _Collector) -> None:
    """The URL parses (scheme, port, brackets); the message never shows its password."""
    from .targets import spec_for  # targets never imports config: no cycle

    try:
        spec_for(url)
    except TargetError as exc:
        col.err(key, exc.detail if exc.detail else str(exc))


def _rule_overrides(
    raw: Any, catalogue: dict[str, Rule] | None, col: _Collector
) -> dict[str, RuleOverride]:
    if not isinstance(raw, dict):
        col.err("rules", "must be a table of [rules.ID] tables")
        return {}
    out = {}
    for rid, table in raw.items():
        where = f"rules.{rid}"
        if catalogue is not None and rid not in catalogue:
            col.err(where, "no such rule")
            continue
        if not isinstance(table, dict):
            col.err(where, "must be a table")
            continue
        col.known(table, where, {"thresholds", "for", "params", "ignore", "enabled"})
        thr = None
        if "thresholds" in table and not isinstance(table["thresholds"], dict):
            col.err(
                f"{where}.thresholds",
                f'expected a table like {{ warning = "5m", critical = "30m" }}, '
                f"got {table['thresholds']!r}",
            )
        elif "thresholds" in table:
            base = dict(catalogue[rid].raw_thresholds) if catalogue else {}
            base.update(table["thresholds"])
            thr = build_thresholds(base, f"{col.file}: {where}.thresholds", col.problems)
        params = table.get("params", {})
        if not isinstance(params, dict):
            col.err(f"{where}.params", f"expected a table of parameters, got {params!r}")
            params = {}
        if catalogue is not None and isinstance(params, dict):
            for key, value in params.items():
                if key not in catalogue[rid].params:
                    col.err(f"{where}.params.{key}", "unknown parameter for this rule")
                    continue
                problem = param_problem(catalogue[rid].params[key], value)
                if problem:
                    col.err(f"{where}.params.{key}", problem)
        ignore = col.get(table, where, "ignore", "strlist", ())
        for pat in ignore:
            try:
                re.compile(pat)
            except re.error as exc:
                col.err(f"{where}.ignore", f"bad regex {pat!r}: {exc}")
        out[rid] = RuleOverride(
            thresholds=thr,
            for_seconds=col.get(table, where, "for", "duration", None),
            params=dict(params) if isinstance(params, dict) else {},
            ignore=ignore,
            enabled=col.get(table, where, "enabled", "bool", True),
        )
    return out


def _terminate(raw: Any, col: _Collector) -> TerminateConfig:
    if not isinstance(raw, dict):
        col.err("terminate", "must be a table")
        return TerminateConfig()
    col.known(
        raw,
        "terminate",
        {
            "enabled",
            "dry_run",
            "rules",
            "after",
            "protect_users",
            "protect_apps",
            "max_per_cycle",
            "include_superusers",
        },
    )
    d = TerminateConfig()
    g = col.get
    return TerminateConfig(
        enabled=g(raw, "terminate", "enabled", "bool", d.enabled),
        dry_run=g(raw, "terminate", "dry_run", "bool", d.dry_run),
        rules=g(raw, "terminate", "rules", "strlist", d.rules),
        after=g(raw, "terminate", "after", "duration", d.after),
        protect_users=g(raw, "terminate", "protect_users", "strlist", ()),
        protect_apps=g(raw, "terminate", "protect_apps", "strlist", ()),
        max_per_cycle=g(raw, "terminate", "max_per_cycle", "int", d.max_per_cycle),
        include_superusers=g(raw, "terminate", "include_superusers", "bool", False),
    )


def _alerts(raw: Any, col: _Collector) -> tuple[AlertConfig, ...]:
    if not isinstance(raw, list):
        col.err("alerts", "must be an array of tables ([[alerts]])")
        return ()
    out = []
    keys = {
        "kind",
        "url",
        "secret",
        "min_severity",
        "repeat_interval",
        "send_resolved",
        "timeout",
        "name",
    }
    for i, a in enumerate(raw):
        where = f"alerts[{i}]"
        if not isinstance(a, dict):
            col.err(where, "must be a table")
            continue
        col.known(a, where, keys)
        kind = col.get(a, where, "kind", "str", "webhook")
        if kind not in ALERT_KINDS:
            col.err(f"{where}.kind", f"must be one of {', '.join(ALERT_KINDS)}")
        raw_url = a.get("url", "")
        if isinstance(raw_url, list) and kind == "alertmanager":
            urls = tuple(u for u in raw_url if isinstance(u, str))
            if not urls or len(urls) != len(raw_url):
                col.err(f"{where}.url", "must be a URL or a non-empty list of URLs")
        else:
            urls = (col.get(a, where, "url", "str", ""),)
        for u in urls:
            if not u.startswith(("http://", "https://")):
                col.err(f"{where}.url", f"{u!r} must be an http:// or https:// URL")
        url = urls[0] if urls else ""
        sev = col.get(a, where, "min_severity", "str", "warning")
        if sev not in ("warning", "critical"):
            col.err(f"{where}.min_severity", "must be warning or critical")
        secret = col.get(a, where, "secret", "str", None) or None
        register_secret(secret)  # never echoed in a message, log line or payload
        out.append(
            AlertConfig(
                kind=kind,
                url=url,
                secret=secret,
                min_severity=sev,
                repeat_interval=col.get(a, where, "repeat_interval", "duration", 4 * 3600.0),
                send_resolved=col.get(a, where, "send_resolved", "bool", True),
                timeout=col.get(a, where, "timeout", "duration", 5.0),
                name=col.get(a, where, "name", "str", "") or f"{kind}{i + 1}",
                urls=urls if len(urls) > 1 else (),
            )
        )
    return tuple(out)


def _state(raw: Any, col: _Collector) -> StateConfig:
    if not isinstance(raw, dict):
        col.err("state", "must be a table")
        return StateConfig()
    col.known(raw, "state", {"url", "schema", "lease_ttl"})
    url = col.get(raw, "state", "url", "str", None)
    if url is not None and not url.startswith(("postgresql://", "postgres://")):
        col.err("state.url", "must be a postgresql:// URL (the SQLite file is [daemon] state)")
    return StateConfig(
        url=url,
        schema=col.get(raw, "state", "schema", "str", "dbwatch"),
        lease_ttl=col.get(raw, "state", "lease_ttl", "duration", None),
    )


def _daemon(raw: Any, col: _Collector) -> DaemonConfig:
    if not isinstance(raw, dict):
        col.err("daemon", "must be a table")
        return DaemonConfig()
    col.known(
        raw,
        "daemon",
        {
            "state",
            "metrics_address",
            "log_format",
            "retention",
            "max_connections_per_server",
            "cycle_timeout",
            "missed_cycles",
        },
    )
    timeout = col.get(raw, "daemon", "cycle_timeout", "duration", 30.0)
    if timeout < 1.0:
        col.err("daemon.cycle_timeout", "must be at least 1s")
    missed = col.get(raw, "daemon", "missed_cycles", "int", 3)
    if missed < 1:
        col.err("daemon.missed_cycles", "must be at least 1")
    fmt = col.get(raw, "daemon", "log_format", "str", "text")
    if fmt not in ("text", "json"):
        col.err("daemon.log_format", "must be text or json")
    return DaemonConfig(
        state=col.get(raw, "daemon", "state", "str", None),
        metrics_address=col.get(raw, "daemon", "metrics_address", "str", None),
        log_format=fmt,
        retention=col.get(raw, "daemon", "retention", "duration", 7 * 86400.0),
        max_connections_per_server=col.get(raw, "daemon", "max_connections_per_server", "int", 10),
        cycle_timeout=max(1.0, timeout),
        missed_cycles=max(1, missed),
    )


def _http(raw: Any, col: _Collector) -> HttpConfig:
    if not isinstance(raw, dict):
        col.err("http", "must be a table")
        return HttpConfig()
    col.known(raw, "http", {"address", "token"})
    token = col.get(raw, "http", "token", "str", None)
    if token is not None and len(token) < 8:
        col.err("http.token", "too short: use at least 8 characters (e.g. from ${VAR})")
    return HttpConfig(address=col.get(raw, "http", "address", "str", None), token=token)


def parse_config(
    data: dict[str, Any], file: str, catalogue: dict[str, Rule] | None = None
) -> Config:
    col = _Collector(file)
    col.known(data, "", {"targets", "rules", "terminate", "alerts", "daemon", "state", "http"})
    data = expand_vars(data, "", col)
    cfg = Config(
        path=file,
        targets=_targets(data.get("targets", []), col),
        rules=_rule_overrides(data.get("rules", {}), catalogue, col),
        terminate=_terminate(data.get("terminate", {}), col),
        alerts=_alerts(data.get("alerts", []), col),
        daemon=_daemon(data.get("daemon", {}), col),
        state=_state(data.get("state", {}), col),
        http=_http(data.get("http", {}), col),
    )
    if cfg.terminate.enabled:
        for rid in cfg.terminate.rules:
            if catalogue is not None and rid not in catalogue:
                col.err("terminate.rules", f"no such rule {rid}")
    if col.problems:
        raise ConfigError(col.problems)
    return cfg


def find_config_path(explicit: str | None) -> Path | None:
    """--config, else $DBWATCH_CONFIG, else ./dbwatch.toml if it exists."""
    if explicit:
        return Path(explicit)
    env = os.environ.get("DBWATCH_CONFIG")
    if env:
        return Path(env)
    local = Path("dbwatch.toml")
    return local if local.exists() else None


def load_config(path: Path | None, catalogue: dict[str, Rule] | None = None) -> Config:
    if path is None:
        return Config()
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        raise ConfigError([f"{path}: no such file"]) from None
    except OSError as exc:
        raise ConfigError([f"{path}: {exc.strerror}"]) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"{path}: {exc}"]) from None
    except UnicodeDecodeError:
        raise ConfigError([f"{path}: not a TOML file (binary data or not UTF-8)"]) from None
    return parse_config(data, str(path), catalogue)
