"""Configuration (SPEC §4): TOML with ${VAR} expansion, validated with every error collected.

The dataclasses below are the schema: `schema.read_values` reads each field from the TOML key of
its name, by its type; `spec(...)` in a field's metadata adds a check or a reader of its own.
Adding a key is adding a typed field (and a line to contrib/dbwatch.example.toml).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import field
from pathlib import Path

from ..catalogue import Param, Rule, Thresholds, as_param, build_thresholds
from ..durations import parse_count, parse_duration
from ..errors import ConfigError, TargetError
from ..frozen import frozen
from ..targets.secrets import register_secret
from .schema import At, Collector, Duration, as_table, build, read_values, spec, unknown_keys

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
ALERT_KINDS = ("webhook", "slack", "alertmanager", "pagerduty")
# kind = "pagerduty": the Events API v2 enqueue endpoint unless `url` says otherwise
PAGERDUTY_URL = "https://events.pagerduty.com/v2/enqueue"


def _one_of(*choices: str) -> Callable[[object, At], None]:
    said = " or ".join(choices) if len(choices) == 2 else "one of " + ", ".join(choices)

    def check(value: object, at: At) -> None:
        if value not in choices:
            at.err(f"must be {said}")

    return check


def _at_least(low: float, said: str) -> Callable[[object, At], None]:
    def check(value: object, at: At) -> None:
        if isinstance(value, int | float) and value < low:
            at.err(f"must be at least {said}")

    return check


def _positive(value: object, at: At) -> None:
    if isinstance(value, int | float) and value <= 0:
        at.err("must be positive")


def _unique_name(value: object, at: At) -> None:
    if any(earlier.get("name") == value for earlier in at.siblings):
        at.err(f"duplicate target name {value!r}")


def _target_url(value: object, at: At) -> None:
    """Present, and it parses (scheme, port, brackets); the message never shows its password."""
    from ..targets import spec_for  # targets never imports config: no cycle

    if not at.present or at.raw == "":
        at.err("missing")
        return
    if not value:
        return  # not a string: said so
    try:
        spec_for(str(value))
    except TargetError as exc:
        at.err(exc.detail if exc.detail else str(exc))


def _regexes(value: object, at: At) -> None:
    for pat in value if isinstance(value, tuple) else ():
        try:
            re.compile(pat)
        except re.error as exc:
            at.err(f"bad regex {pat!r}: {exc}")


def _secret(value: object, at: At) -> None:
    register_secret(value if isinstance(value, str) else None)  # never echoed anywhere


def _state_url(value: object, at: At) -> None:
    if isinstance(value, str) and not value.startswith(("postgresql://", "postgres://")):
        at.err("must be a postgresql:// URL (the SQLite file is [daemon] state)")


def _token(value: object, at: At) -> None:
    if isinstance(value, str) and len(value) < 8:
        at.err("too short: use at least 8 characters (e.g. from ${VAR})")


@frozen
class TargetConfig:
    # a second [[targets]] of the same name is an error; default: target1, target2 …
    name: str = field(
        metadata=spec(default=lambda at: f"target{at.index + 1}", blank=True, check=_unique_name)
    )
    url: str = field(metadata=spec(default=lambda at: "", check=_target_url))
    interval: Duration = field(default=60.0, metadata=spec(check=_positive))
    databases: tuple[str, ...] = ()  # PostgreSQL: extra databases for per-table probes
    all_databases: bool = False
    retry_after: Duration | None = None  # queue tables: Laravel's retry_after
    primary: str | None = None  # for a standby: the name of its primary target
    log_file: str | None = None  # server log the daemon tails for every deadlock
    # the password's file (keeps it out of the config and ps)
    password_file: str | None = field(default=None, metadata=spec(blank=True))


def _thresholds(at: At) -> Thresholds | None:
    """thresholds = { warning = …, critical = … }: over the rule file's own thresholds."""
    if not at.present:
        return None
    table = as_table(at.raw)
    if table is None:
        at.err(f'expected a table like {{ warning = "5m", critical = "30m" }}, got {at.raw!r}')
        return None
    rule = at.col.catalogue[at.entry] if at.col.catalogue else None
    base = dict(rule.raw_thresholds) if rule else {}
    base.update(table)
    return build_thresholds(base, f"{at.col.file}: {at.path}", at.col.problems)


def _params(at: At) -> dict[str, Param]:
    """[rules.ID.params]: each of the rule's parameters, of the kind of its default."""
    raw = at.raw if at.present else {}
    table = as_table(raw)
    if table is None:
        at.err(f"expected a table of parameters, got {raw!r}")
        return {}
    rule = at.col.catalogue[at.entry] if at.col.catalogue else None
    params: dict[str, Param] = {}
    for key, value in table.items():
        where = f"{at.path}.{key}"
        if rule is not None and key not in rule.params:
            at.col.err(where, "unknown parameter for this rule")
            continue
        problem = param_problem(rule.params[key], value) if rule is not None else None
        param = as_param(value)
        if problem is None and param is None:
            problem = f"expected a string, number, boolean or string list, got {value!r}"
        if problem:
            at.col.err(where, problem)
        elif param is not None:
            params[key] = param
    return params


@frozen
class RuleOverride:
    thresholds: Thresholds | None = field(default=None, metadata=spec(read=_thresholds))
    params: dict[str, Param] = field(default_factory=dict, metadata=spec(read=_params))
    # regexes matched against the finding's subject
    ignore: tuple[str, ...] = field(default=(), metadata=spec(check=_regexes))
    for_seconds: Duration | None = field(default=None, metadata=spec(key="for"))
    enabled: bool = True


@frozen
class TerminateConfig:
    enabled: bool = False
    dry_run: bool = True
    rules: tuple[str, ...] = ("PG001", "PG002", "PG201", "MY001", "MY002")
    after: Duration = 1800.0
    protect_users: tuple[str, ...] = ()
    protect_apps: tuple[str, ...] = ()
    max_per_cycle: int = 3
    include_superusers: bool = False


def _alert_url(at: At) -> str:
    """One URL (the default for kind = "pagerduty": PAGERDUTY_URL), or for kind =
    "alertmanager" a list of every peer's; http:// or https:// only."""
    kind = at.values["kind"]
    default = PAGERDUTY_URL if kind == "pagerduty" else ""
    raw = at.raw if at.present else default
    if isinstance(raw, list) and kind == "alertmanager":
        urls = tuple(u for u in raw if isinstance(u, str))
        if not urls or len(urls) != len(raw):
            at.err("must be a URL or a non-empty list of URLs")
    else:
        urls = (str(at.value(default)),)
    for u in urls:
        if not u.startswith(("http://", "https://")):
            at.err(f"{u!r} must be an http:// or https:// URL")
    return urls[0] if urls else ""


def _alert_peers(at: At) -> tuple[str, ...]:
    """kind = "alertmanager" with url = [ … ]: every peer (url is the first)."""
    raw = at.table.get("url")
    if at.values["kind"] != "alertmanager" or not isinstance(raw, list):
        return ()
    urls = tuple(u for u in raw if isinstance(u, str))
    return urls if len(urls) > 1 else ()


def _routing_key(at: At) -> str | None:
    """PagerDuty's integration key: required for kind = "pagerduty" (32 characters), a secret."""
    value = at.value(None)
    key = value if isinstance(value, str) and value else None
    register_secret(key)
    if at.values["kind"] != "pagerduty":
        if key is not None:
            at.err('only for kind = "pagerduty"')
        return None
    if key is None:
        at.err('required for kind = "pagerduty" (e.g. "${PD_ROUTING_KEY}")')
    elif len(key) != 32:
        at.err(f"must be the 32-character integration key, not {len(key)}")
    if at.table.get("secret") is not None:
        at.err('not used by kind = "pagerduty" (the routing_key authenticates)', key="secret")
    return key


@frozen
class AlertConfig:
    kind: str = field(metadata=spec(default=lambda at: "webhook", check=_one_of(*ALERT_KINDS)))
    url: str = field(metadata=spec(read=_alert_url))
    min_severity: str = field(
        default="warning", metadata=spec(check=_one_of("warning", "critical"))
    )
    secret: str | None = field(default=None, metadata=spec(blank=True, check=_secret))
    # kind = "pagerduty": the integration key (a secret)
    routing_key: str | None = field(default=None, metadata=spec(read=_routing_key))
    repeat_interval: Duration = 4 * 3600.0
    send_resolved: bool = True
    timeout: Duration = 5.0
    name: str = field(
        default="",
        metadata=spec(blank=True, default=lambda at: f"{at.values['kind']}{at.index + 1}"),
    )
    # kind = "alertmanager": every peer of the Alertmanager cluster (url is the first)
    urls: tuple[str, ...] = field(default=(), metadata=spec(derived=True, read=_alert_peers))

    @property
    def peers(self) -> tuple[str, ...]:
        return self.urls or (self.url,)


@frozen
class DaemonConfig:
    # a cycle past this is abandoned, the target "not answering"
    cycle_timeout: Duration = field(default=30.0, metadata=spec(check=_at_least(1.0, "1s")))
    # DW001 "target not answering" fires after this many missed cycles
    missed_cycles: int = field(default=3, metadata=spec(check=_at_least(1, "1")))
    log_format: str = field(default="text", metadata=spec(check=_one_of("text", "json")))
    state: str | None = None
    metrics_address: str | None = None
    retention: Duration = 7 * 86400.0
    # sessions kept between cycles, never more than this many to one server (0: a new one
    # per cycle, the one-shot way)
    max_connections_per_server: int = 10


@frozen
class StateConfig:
    """[state]: where the daemon keeps its state. url = "postgresql://…" shares it by a fleet."""

    url: str | None = field(default=None, metadata=spec(check=_state_url))
    schema: str = "dbwatch"
    lease_ttl: Duration | None = None  # default: the shortest target interval (5 s … 60 s)


@frozen
class HttpConfig:
    """[http]: the dashboard of `dbwatch watch --http`."""

    # every page but /metrics needs it (Bearer or ?token=)
    token: str | None = field(default=None, metadata=spec(check=_token))
    address: str | None = None  # HOST:PORT; --http overrides it


def _known_rule(rid: str, col: Collector) -> str | None:
    return "no such rule" if col.catalogue is not None and rid not in col.catalogue else None


@frozen
class Config:
    path: str | None = field(default=None, metadata=spec(derived=True, read=lambda at: at.col.file))
    targets: tuple[TargetConfig, ...] = ()
    rules: dict[str, RuleOverride] = field(default_factory=dict, metadata=spec(entry=_known_rule))
    terminate: TerminateConfig = TerminateConfig()
    alerts: tuple[AlertConfig, ...] = ()
    daemon: DaemonConfig = DaemonConfig()
    state: StateConfig = StateConfig()
    http: HttpConfig = HttpConfig()


def expand_vars(value: object, where: str, col: Collector) -> object:
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


def parse_config(
    raw: dict[str, object], file: str, catalogue: dict[str, Rule] | None = None
) -> Config:
    """The Config of a parsed TOML document; ConfigError with every problem found."""
    col = Collector(file, catalogue)
    unknown_keys(Config, raw, "", col)  # before ${VAR}: an unknown key is said first
    data = as_table(expand_vars(raw, "", col)) or {}
    cfg = build(Config, read_values(Config, data, "", col, unknown=False))
    if cfg.terminate.enabled and catalogue is not None:
        for rid in cfg.terminate.rules:
            if rid not in catalogue:
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
    import tomllib  # only with a config file (startup: ~15 M instructions)

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
