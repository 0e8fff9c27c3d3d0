"""Config validation: every error collected, with file and key; ${VAR} expansion."""
from __future__ import annotations

from pathlib import Path

import pytest

from dbwatch.catalogue import load_catalogue
from dbwatch.config import load_config
from dbwatch.durations import format_duration, parse_count, parse_duration
from dbwatch.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "dbwatch.toml"
    p.write_text(text)
    return p


def test_durations_and_counts() -> None:
    assert parse_duration("90s") == 90 and parse_duration("1h30m") == 5400
    assert parse_duration("250ms") == 0.25 and parse_duration(15) == 15
    assert parse_count("10k") == 10000 and parse_count("100000") == 100000
    assert format_duration(725) == "12m05s"
    for bad in ("5 minutes", "m5", "", "-1s"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_valid_config_with_env_vars(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DBW_PW", "s3cret")
    cfg = load_config(write(tmp_path, '''
[[targets]]
name = "q"
url = "mysql://monitor:${DBW_PW}@db2/app"
interval = "15s"
[rules.PG001]
thresholds = { warning = "1m" }
for = "30s"
[terminate]
enabled = true
after = "10m"
[[alerts]]
kind = "slack"
url = "https://hooks.example/x"
'''), load_catalogue())
    assert cfg.targets[0].url == "mysql://monitor:s3cret@db2/app"
    assert cfg.targets[0].interval == 15
    pg001 = cfg.rules["PG001"]
    assert pg001.thresholds is not None and pg001.thresholds.warning == 60
    assert pg001.thresholds.critical == 1800   # inherited from the rule file
    assert pg001.for_seconds == 30 and cfg.terminate.after == 600


def test_all_errors_are_reported_together(tmp_path: Path) -> None:
    path = write(tmp_path, '''
colour = "blue"
[[targets]]
url = "mysql://x@h/db"
intervall = "15s"
[rules.PG999]
for = "1m"
[rules.PG002]
thresholds = { warning = "soon" }
params = { nope = 1 }
[terminate]
max_per_cycle = -1
[[alerts]]
kind = "pager"
url = "ftp://x"
secret = "${DBW_SURELY_UNSET_VAR}"
''')
    with pytest.raises(ConfigError) as exc:
        load_config(path, load_catalogue())
    text = "\n".join(exc.value.problems)
    for expected in ("colour: unknown key", "targets[0].intervall: unknown key",
                     "rules.PG999: no such rule", "rules.PG002.thresholds.warning",
                     "rules.PG002.params.nope", "terminate.max_per_cycle",
                     "alerts[0].kind", "alerts[0].url",
                     "environment variable DBW_SURELY_UNSET_VAR is not set"):
        assert expected in text, expected
    assert all(p.startswith(str(path)) for p in exc.value.problems)


def test_toml_syntax_error_names_the_file(tmp_path: Path) -> None:
    path = write(tmp_path, "[[targets]\nurl=")
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert str(path) in exc.value.problems[0]


def test_rule_params_are_checked_against_their_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, '''
[rules.QU002]
params = { retry_after = "soon" }
[rules.PG202]
params = { min_dead_ratio = "big", queue_warning = "5k" }
[rules.PG001]
params = { ignore_users = "bob" }
''')
    with pytest.raises(ConfigError) as exc:
        load_config(path, load_catalogue())
    text = "\n".join(exc.value.problems)
    assert "rules.QU002.params.retry_after: not a duration" in text
    assert "rules.PG202.params.min_dead_ratio: expected a number" in text
    assert "rules.PG001.params.ignore_users: expected a list" in text
    assert "queue_warning" not in text        # "5k" is a valid count
