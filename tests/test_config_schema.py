"""The config's schema is its dataclasses (dbwatch/config/schema.py): every field is reachable
from TOML, every key's bad value is one collected problem naming it, and the documented keys
(contrib/dbwatch.example.toml, the TOML blocks of the docs) are exactly the schema's."""
from __future__ import annotations

import dataclasses
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from dbwatch.catalogue import load_catalogue
from dbwatch.config import AlertConfig, Config, TargetConfig, parse_config
from dbwatch.config.schema import (
    ENTRY,
    At,
    Collector,
    Duration,
    build,
    key_table,
    read_values,
    slots,
    spec,
)
from dbwatch.errors import ConfigError

ROOT = Path(__file__).resolve().parent.parent
CATALOGUE = load_catalogue()

# every key set to a value other than its default (alerts: one of each kind of URL key)
FULL = '''
[[targets]]
name = "main"
url = "postgresql://monitor@db1/app"
interval = "15s"
databases = ["app", "jobs"]
all_databases = true
retry_after = "90s"
primary = "other"
log_file = "/var/log/postgresql.log"
password_file = "/etc/dbwatch/pw"

[rules.PG001]
thresholds = { warning = "1m" }
params = { ignore_users = ["replicator"] }
ignore = ["^pid 1$"]
for = "2m"
enabled = false

[terminate]
enabled = true
dry_run = false
rules = ["PG002"]
after = "10m"
protect_users = ["replicator"]
protect_apps = ["pg_dump"]
max_per_cycle = 1
include_superusers = true

[[alerts]]
kind = "alertmanager"
url = ["http://am-1:9093", "http://am-2:9093"]
min_severity = "critical"
secret = "a-webhook-secret"
repeat_interval = "1h"
send_resolved = false
timeout = "2s"
name = "am"

[[alerts]]
kind = "pagerduty"
routing_key = "0123456789abcdef0123456789abcdef"

[daemon]
cycle_timeout = "10s"
missed_cycles = 5
log_format = "json"
state = "/var/lib/dbwatch/state.db"
metrics_address = "127.0.0.1:9187"
retention = "2d"
max_connections_per_server = 2

[state]
url = "postgresql://dbwatch@statedb/dbwatch"
schema = "watch"
lease_ttl = "15s"

[http]
token = "a-long-enough-token"
address = "127.0.0.1:9188"
'''


def _keys_in_toml(text: str) -> set[tuple[str, str]]:
    """(table, key) of every `key =` line, commented out or not; [rules.X] is rules.ID."""
    out: set[tuple[str, str]] = set()
    table = ""
    for line in text.splitlines():
        header = re.match(r"\s*#?\s*\[\[?([\w.]+)\]\]?\s*(#.*)?$", line)
        if header:
            top, _, entry = header.group(1).partition(".")
            out.add(("", top))
            if entry:
                out.add((top, ENTRY))
            table = f"{top}.{ENTRY}" if entry else top
            continue
        key = re.match(r"\s*#?\s*(\w+)\s*=", line)
        if key:
            out.add((table, key.group(1)))
    return out


def _schema_keys() -> set[tuple[str, str]]:
    out = {(table, key) for table, key, _kind in key_table(Config)}
    out.add(("rules", ENTRY))  # [rules.PG001] names an entry of the table of tables
    return out


def test_the_full_config_sets_every_key_of_the_schema() -> None:
    assert _keys_in_toml(FULL) == _schema_keys()


def test_every_field_is_reachable_from_toml() -> None:
    """Read from the FULL config, every field differs from its default: no field is dropped
    on the way (the derived ones included: path, the Alertmanager peers)."""
    cfg = parse_config(tomllib.loads(FULL), "full.toml", CATALOGUE)
    objects: list[tuple[object, object]] = [
        (cfg, Config()),
        (cfg.targets[0], TargetConfig(name="", url="")),
        (cfg.rules["PG001"], type(cfg.rules["PG001"])()),
        (cfg.terminate, type(cfg.terminate)()),
        (cfg.alerts[0], AlertConfig(kind="", url="")),
        (cfg.daemon, type(cfg.daemon)()),
        (cfg.state, type(cfg.state)()),
        (cfg.http, type(cfg.http)()),
    ]
    alert_only = {"routing_key"}  # kind = "pagerduty" only: checked on the second alert
    for obj, default in objects:
        assert dataclasses.is_dataclass(obj)
        for f in dataclasses.fields(obj):
            if isinstance(obj, AlertConfig) and f.name in alert_only:
                continue
            assert getattr(obj, f.name) != getattr(default, f.name), (type(obj), f.name)
    assert cfg.alerts[1].routing_key == "0123456789abcdef0123456789abcdef"
    assert cfg.alerts[0].peers == ("http://am-1:9093", "http://am-2:9093")
    assert cfg.path == "full.toml" and cfg.rules["PG001"].for_seconds == 120


def test_the_example_config_shows_exactly_the_schemas_keys() -> None:
    """contrib/dbwatch.example.toml is the reference ("every key is shown"): a key added to a
    dataclass and not shown there, or shown there and not read, fails here."""
    text = (ROOT / "contrib" / "dbwatch.example.toml").read_text()
    shown, known = _keys_in_toml(text), _schema_keys()
    assert sorted(known - shown) == [], "keys not shown in the example"
    assert sorted(shown - known) == [], "keys shown in the example that the config rejects"


def test_the_config_examples_in_the_docs_use_known_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("MYSQL_MONITOR_PASSWORD", "DBWATCH_WEBHOOK_SECRET", "PD_ROUTING_KEY"):
        monkeypatch.setenv(var, "x")
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    seen = 0
    for doc in docs:
        for block in re.findall(r"```toml\n(.*?)```", doc.read_text(), re.DOTALL):
            seen += 1
            try:
                parse_config(tomllib.loads(block), doc.name, CATALOGUE)
            except ConfigError as exc:
                unknown = [p for p in exc.problems if "unknown key" in p or "no such rule" in p]
                assert not unknown, unknown
    assert seen >= 2


def _minimal(table: str, key: str, value: object) -> dict[str, object]:
    """A config whose only questionable value is `key` in `table`."""
    if table == "targets":
        return {"targets": [{"url": "postgresql://h/db", key: value}]}
    if table == "alerts":
        return {"alerts": [{"kind": "webhook", "url": "http://x", key: value}]}
    if table == f"rules.{ENTRY}":
        return {"rules": {"PG001": {key: value}}}
    return {table: {key: value}} if table else {key: value}


BAD = {"str": 5, "bool": "yes", "int": "x", "duration": "soon", "strlist": "x", "table": 5,
       "array": 5, "tables": 5, "custom": 5}


@pytest.mark.parametrize("table,key,kind", key_table(Config))
def test_a_bad_value_of_every_key_is_a_problem_naming_it(table: str, key: str, kind: str) -> None:
    where = _where(table, key)
    with pytest.raises(ConfigError) as exc:
        parse_config(_minimal(table, key, BAD[kind]), "f.toml", CATALOGUE)
    assert any(p.startswith(f"f.toml: {where}: ") for p in exc.value.problems), exc.value.problems
    assert all("\n" not in p for p in exc.value.problems)


def _where(table: str, key: str) -> str:
    """The key as a problem names it in _minimal's config."""
    where = f"{table}.{key}" if table else key
    where = re.sub(r"^(targets|alerts)\.", r"\1[0].", where)
    return where.replace(f"rules.{ENTRY}.", "rules.PG001.")


def test_every_bad_value_at_once_is_collected() -> None:
    """A bad value in every key of every table, all in one file: each one is said."""
    tables: dict[str, dict[str, object]] = {}
    for table, key, kind in key_table(Config):
        if table:
            tables.setdefault(table, {})[key] = BAD[kind]
    doc: dict[str, object] = {
        "rules": {"PG001": tables.pop(f"rules.{ENTRY}")},
        **{t: [v] if t in ("targets", "alerts") else v for t, v in tables.items()},
    }
    with pytest.raises(ConfigError) as exc:
        parse_config(doc, "f.toml", CATALOGUE)
    named = {p.split(": ")[1] for p in exc.value.problems}
    expected = {_where(t, k) for t, k, _kind in key_table(Config) if t}
    assert len(expected) > 40 and sorted(expected - named) == [], exc.value.problems


# the schema reader itself, on dataclasses of its own


def _no_zero(value: object, at: At) -> None:
    if value == 0:
        at.err("must not be 0")


@dataclass(frozen=True)
class Leaf:
    name: str = field(metadata=spec(default=lambda at: f"leaf{at.index + 1}", blank=True))
    size: int = field(default=1, metadata=spec(check=_no_zero))
    wait: Duration | None = None
    tags: tuple[str, ...] = ()
    seen: int = field(default=0, metadata=spec(derived=True, read=lambda at: len(at.siblings)))


@dataclass(frozen=True)
class Branch:
    on: bool = False
    every: Duration = field(default=60.0, metadata=spec(key="each"))


@dataclass(frozen=True)
class Tree:
    leaves: tuple[Leaf, ...] = ()
    branch: Branch = Branch()
    named: dict[str, Branch] = field(default_factory=dict)


def _read(doc: dict[str, object]) -> tuple[Tree, list[str]]:
    col = Collector("t.toml")
    return build(Tree, read_values(Tree, doc, "", col)), col.problems


def test_types_defaults_renamed_and_derived_keys() -> None:
    tree, problems = _read({"leaves": [{"name": "a", "wait": "1m", "tags": ["x"]}, {"name": ""}],
                            "branch": {"on": True, "each": "2s"}, "named": {"n": {}}})
    assert problems == []
    assert tree.leaves == (Leaf("a", 1, 60.0, ("x",), 0), Leaf("leaf2", 1, None, (), 1))
    assert tree.branch == Branch(True, 2.0) and tree.named == {"n": Branch()}


def test_every_problem_is_collected_in_field_order_and_a_bad_value_reads_as_default() -> None:
    tree, problems = _read({"leaves": [{"name": 5, "size": 0, "wait": "soon", "x": 1}, 7],
                            "branch": {"every": "1s", "on": "yes"}, "named": 3, "top": 1})
    assert problems == [
        "t.toml: top: unknown key",
        "t.toml: leaves[0].x: unknown key",
        "t.toml: leaves[0].name: expected a string, got 5",
        "t.toml: leaves[0].size: must not be 0",
        "t.toml: leaves[0].wait: not a duration: 'soon' (use e.g. 30s, 5m, 1h30m)",
        "t.toml: leaves[1]: must be a table",
        "t.toml: branch.every: unknown key",
        "t.toml: branch.on: expected true or false, got 'yes'",
        "t.toml: named: must be a table of [named.ID] tables",
    ]
    assert tree.leaves == (Leaf("leaf1", 0, None),) and tree.branch == Branch() and tree.named == {}


def test_a_field_no_reader_knows_is_refused_when_the_schema_is_built() -> None:
    @dataclass(frozen=True)
    class Ratio:
        share: float = 0.5  # a float must say what it is (Duration), or bring a reader

    @dataclass(frozen=True)
    class NoDefault:
        needed: str

    with pytest.raises(TypeError, match="no reader"):
        slots(Ratio)
    with pytest.raises(TypeError, match="no default"):
        slots(NoDefault)
