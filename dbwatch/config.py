"""Configuration (SPEC §4): TOML with ${VAR} expansion, validated with every error collected."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from .catalogue import Param, Rule, Thresholds, as_param, build_thresholds
from .durations import parse_count, parse_duration
from .errors import ConfigError, TargetError
from .targets.secrets import register_secret

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
ALERT_KINDS = ("webhook", "slack", "alertmanager", "pagerduty")
# kind = "pagerduty": the Events API v2 enqueue endpoint unless `url` says otherwise
PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"


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
    params: dict[str, Param] = field(default_factory=dict)
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
    routing_key: str | None = None  # kind = "pagerduty": the integration key (a secret)

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


Table = dict[str, object]
_D = TypeVar("_D")


def _table(value: object) -> Table | None:
    """A TOML table as a str-keyed dict; None if the value is not a table."""
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else None


class _Collector:
    """Reads typed values out of a TOML table, recording 'file: key: problem' lines."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[str] = []

    def err(self, key: str, msg: str) -> None:
        self.problems.append(f"{self.file}: {key}: {msg}")

    def known(self, table: Table, where: str, keys: set[str]) -> None:
        for key in table:
            if key not in keys:
                self.err(f"{where}.{key}" if where else key, "unknown key")

    def _read(self, table: Table, where: str, key: str, kind: str) -> object:
        """The converted value; _MISSING if absent or invalid (the problem recorded)."""
        if key not in table:
            return _MISSING
        try:
            return _convert(kind, table[key])
        except (ValueError, TypeError) as exc:
            self.err(f"{where}.{key}" if where else key, str(exc))
            return _MISSING

    def text(self, table: Table, where: str, key: str, default: _D) -> str | _D:
        value = self._read(table, where, key, "str")
        return value if isinstance(value, str) else default

    def duration(self, table: Table, where: str, key: str, default: _D) -> float | _D:
        value = self._read(table, where, key, "duration")
        return value if isinstance(value, float) else default

    def flag(self, table: Table, where: str, key: str, default: bool) -> bool:
        value = self._read(table, where, key, "bool")
        return value if isinstance(value, bool) else default

    def integer(self, table: Table, where: str, key: str, default: int) -> int:
        value = self._read(table, where, key, "int")
        return value if isinstance(value, int) else default

    def strings(
        self, table: Table, where: str, key: str, default: tuple[str, ...]
    ) -> tuple[str, ...]:
        value = self._read(table, where, key, "strlist")
        return tuple(str(v) for v in value) if isinstance(value, tuple) else default


_MISSING = object()


def _convert(kind: str, value: object) -> object:
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


def expand_vars(value: object, where: str, col: _Collector) -> object:
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


def param_problem(default: Param, value: object) -> str | None:
    """A rule parameter must have the kind of its default: bool, number, list, duration, count."""
    if isinstance(default, bool):
        return None if isinstance(value, bool) else f"expected true or false, got {value!r}"
    if isinstance(default, (int, float)):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return None if ok else f"expected a number, got {value!r}"
    if isinstance(default, list):
        if not isinstance(value, list):
            return f"expected a list, got {value!r}"
        ok = all(isinstance(v, str) for v in value)
        return None if ok else f"expected a list of strings, got {value!r}"
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


def _targets(raw: object, col: _Collector) -> tuple[TargetConfig, ...]:
    if not isinstance(raw, list):
        col.err("targets", "must be an array of tables ([[targets]])")
        return ()
    out: list[TargetConfig] = []
    names: set[str] = set()
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
    for i, item in enumerate(raw):
        where = f"targets[{i}]"
        t = _table(item)
        if t is None:
            col.err(where, "must be a table")
            continue
        col.known(t, where, keys)
        url = col.text(t, where, "url", "")
        if not isinstance(t.get("url"), str | None):
            pass  # a wrong type: col.text said so, once
        elif not url:
            col.err(f"{where}.url", "missing")
        else:
            _check_url(url, f"{where}.url", col)
        name = col.text(t, where, "name", "") or f"target{i + 1}"
        if name in names:
            col.err(f"{where}.name", f"duplicate target name {name!r}")
        names.add(name)
        interval = col.duration(t, where, "interval", 60.0)
        if interval <= 0:
            col.err(f"{where}.interval", "must be positive")
        out.append(
            TargetConfig(
                name=name,
                url=url,
                interval=interval,
                databases=col.strings(t, where, "databases", ()),
                all_databases=col.flag(t, where, "all_databases", False),
                retry_after=col.duration(t, where, "retry_after", None),
                primary=col.text(t, where, "primary", None),
                log_file=col.text(t, where, "log_file", None),
                password_file=col.text(t, where, "password_file", None) or None,
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
    raw: object, catalogue: dict[str, Rule] | None, col: _Collector
) -> dict[str, RuleOverride]:
    rules = _table(raw)
    if rules is None:
        col.err("rules", "must be a table of [rules.ID] tables")
        return {}
    out = {}
    for rid, item in rules.items():
        where = f"rules.{rid}"
        if catalogue is not None and rid not in catalogue:
            col.err(where, "no such rule")
            continue
        table = _table(item)
        if table is None:
            col.err(where, "must be a table")
            continue
        col.known(table, where, {"thresholds", "for", "params", "ignore", "enabled"})
        thr = None
        raw_thr = _table(table.get("thresholds"))
        if "thresholds" in table and raw_thr is None:
            col.err(
                f"{where}.thresholds",
                f'expected a table like {{ warning = "5m", critical = "30m" }}, '
                f"got {table['thresholds']!r}",
            )
        elif raw_thr is not None:
            base = dict(catalogue[rid].raw_thresholds) if catalogue else {}
            base.update(raw_thr)
            thr = build_thresholds(base, f"{col.file}: {where}.thresholds", col.problems)
        params = _params(table.get("params", {}), where, catalogue[rid] if catalogue else None, col)
        ignore = col.strings(table, where, "ignore", ())
        for pat in ignore:
            try:
                re.compile(pat)
            except re.error as exc:
                col.err(f"{where}.ignore", f"bad regex {pat!r}: {exc}")
        out[rid] = RuleOverride(
            thresholds=thr,
            for_seconds=col.duration(table, where, "for", None),
            params=params,
            ignore=ignore,
            enabled=col.flag(table, where, "enabled", True),
        )
    return out


def _params(raw: object, where: str, rule: Rule | None, col: _Collector) -> dict[str, Param]:
    """[rules.ID.params]: each of the rule's parameters, of the kind of its default."""
    table = _table(raw)
    if table is None:
        col.err(f"{where}.params", f"expected a table of parameters, got {raw!r}")
        return {}
    params: dict[str, Param] = {}
    for key, value in table.items():
        if rule is not None and key not in rule.params:
            col.err(f"{where}.params.{key}", "unknown parameter for this rule")
            continue
        problem = param_problem(rule.params[key], value) if rule is not None else None
        param = as_param(value)
        if problem is None and param is None:
            problem = f"expected a string, number, boolean or string list, got {value!r}"
        if problem:
            col.err(f"{where}.params.{key}", problem)
        elif param is not None:
            params[key] = param
    return params


def _terminate(data: object, col: _Collector) -> TerminateConfig:
    raw = _table(data)
    if raw is None:
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
    return TerminateConfig(
        enabled=col.flag(raw, "terminate", "enabled", d.enabled),
        dry_run=col.flag(raw, "terminate", "dry_run", d.dry_run),
        rules=col.strings(raw, "terminate", "rules", d.rules),
        after=col.duration(raw, "terminate", "after", d.after),
        protect_users=col.strings(raw, "terminate", "protect_users", ()),
        protect_apps=col.strings(raw, "terminate", "protect_apps", ()),
        max_per_cycle=col.integer(raw, "terminate", "max_per_cycle", d.max_per_cycle),
        include_superusers=col.flag(raw, "terminate", "include_superusers", False),
    )


def _alerts(raw: object, col: _Collector) -> tuple[AlertConfig, ...]:
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
        "routing_key",
    }
    for i, item in enumerate(raw):
        where = f"alerts[{i}]"
        a = _table(item)
        if a is None:
            col.err(where, "must be a table")
            continue
        col.known(a, where, keys)
        kind = col.text(a, where, "kind", "webhook")
        if kind not in ALERT_KINDS:
            col.err(f"{where}.kind", f"must be one of {', '.join(ALERT_KINDS)}")
        default_url = PAGERDUTY_URL if kind == "pagerduty" else ""
        raw_url = a.get("url", default_url)
        if isinstance(raw_url, list) and kind == "alertmanager":
            urls = tuple(u for u in raw_url if isinstance(u, str))
            if not urls or len(urls) != len(raw_url):
                col.err(f"{where}.url", "must be a URL or a non-empty list of URLs")
        else:
            urls = (col.text(a, where, "url", default_url),)
        for u in urls:
            if not u.startswith(("http://", "https://")):
                col.err(f"{where}.url", f"{u!r} must be an http:// or https:// URL")
        url = urls[0] if urls else ""
        sev = col.text(a, where, "min_severity", "warning")
        if sev not in ("warning", "critical"):
            col.err(f"{where}.min_severity", "must be warning or critical")
        secret = col.text(a, where, "secret", None) or None
        register_secret(secret)  # never echoed in a message, log line or payload
        routing_key = _routing_key(a, where, kind, col)
        out.append(
            AlertConfig(
                kind=kind,
                url=url,
                secret=secret,
                min_severity=sev,
                repeat_interval=col.duration(a, where, "repeat_interval", 4 * 3600.0),
                send_resolved=col.flag(a, where, "send_resolved", True),
                timeout=col.duration(a, where, "timeout", 5.0),
                name=col.text(a, where, "name", "") or f"{kind}{i + 1}",
                urls=urls if len(urls) > 1 else (),
                routing_key=routing_key,
            )
        )
    return tuple(out)


def _routing_key(a: Table, where: str, kind: str, col: _Collector) -> str | None:
    """PagerDuty's integration key: required for kind = "pagerduty" (32 characters), a secret."""
    key = col.text(a, where, "routing_key", None) or None
    register_secret(key)
    if kind != "pagerduty":
        if key is not None:
            col.err(f"{where}.routing_key", 'only for kind = "pagerduty"')
        return None
    if key is None:
        col.err(
            f"{where}.routing_key", 'required for kind = "pagerduty" (e.g. "${PD_ROUTING_KEY}")'
        )
    elif len(key) != 32:
        col.err(f"{where}.routing_key", f"must be the 32-character integration key, not {len(key)}")
    if a.get("secret") is not None:
        col.err(f"{where}.secret", 'not used by kind = "pagerduty" (the routing_key authenticates)')
    return key


def _state(data: object, col: _Collector) -> StateConfig:
    raw = _table(data)
    if raw is None:
        col.err("state", "must be a table")
        return StateConfig()
    col.known(raw, "state", {"url", "schema", "lease_ttl"})
    url = col.text(raw, "state", "url", None)
    if url is not None and not url.startswith(("postgresql://", "postgres://")):
        col.err("state.url", "must be a postgresql:// URL (the SQLite file is [daemon] state)")
    return StateConfig(
        url=url,
        schema=col.text(raw, "state", "schema", "dbwatch"),
        lease_ttl=col.duration(raw, "state", "lease_ttl", None),
    )


def _daemon(data: object, col: _Collector) -> DaemonConfig:
    raw = _table(data)
    if raw is None:
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
    timeout = col.duration(raw, "daemon", "cycle_timeout", 30.0)
    if timeout < 1.0:
        col.err("daemon.cycle_timeout", "must be at least 1s")
    missed = col.integer(raw, "daemon", "missed_cycles", 3)
    if missed < 1:
        col.err("daemon.missed_cycles", "must be at least 1")
    fmt = col.text(raw, "daemon", "log_format", "text")
    if fmt not in ("text", "json"):
        col.err("daemon.log_format", "must be text or json")
    return DaemonConfig(
        state=col.text(raw, "daemon", "state", None),
        metrics_address=col.text(raw, "daemon", "metrics_address", None),
        log_format=fmt,
        retention=col.duration(raw, "daemon", "retention", 7 * 86400.0),
        max_connections_per_server=col.integer(raw, "daemon", "max_connections_per_server", 10),
        cycle_timeout=max(1.0, timeout),
        missed_cycles=max(1, missed),
    )


def _http(data: object, col: _Collector) -> HttpConfig:
    raw = _table(data)
    if raw is None:
        col.err("http", "must be a table")
        return HttpConfig()
    col.known(raw, "http", {"address", "token"})
    token = col.text(raw, "http", "token", None)
    if token is not None and len(token) < 8:
        col.err("http.token", "too short: use at least 8 characters (e.g. from ${VAR})")
    return HttpConfig(address=col.text(raw, "http", "address", None), token=token)


def parse_config(
    raw: dict[str, object], file: str, catalogue: dict[str, Rule] | None = None
) -> Config:
    col = _Collector(file)
    col.known(raw, "", {"targets", "rules", "terminate", "alerts", "daemon", "state", "http"})
    data = _table(expand_vars(raw, "", col)) or {}
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
