"""Target URLs and secrets (issue 12.5, 18.7): ports, passwords with any character, scrubbing."""
from __future__ import annotations

import logging

import pytest

from dbwatch.config import parse_config
from dbwatch.errors import ConfigError, TargetError
from dbwatch.targets import TargetSpec, password_of, redact_url, spec_for, spec_from_config
from dbwatch.targets.secrets import ScrubFilter, register_secret, scrub, scrub_tree
from dbwatch.targets.urls import parse_url

RESERVED = "/#?@:[]%&=+ ;'\"\\$!*,"
PASSWORD = "Xq7" + RESERVED + "Zp9"


def fragments(secret: str, size: int = 4) -> list[str]:
    return [secret[i:i + size] for i in range(len(secret) - size + 1)]


@pytest.mark.parametrize("port", ["99999", "0", "65536", "abc", "", "-1", "3306x", "٣٣٠٦"])
def test_bad_port_is_an_error_never_a_default(port: str) -> None:
    with pytest.raises(TargetError) as err:
        spec_for(f"mysql://root@127.0.0.1:{port}/x")
    assert "from 1 to 65535" in str(err.value)


def test_good_ports_and_hosts() -> None:
    assert parse_url("mysql://root@127.0.0.1:3306/x").port == 3306
    assert parse_url("postgresql://[::1]:5433/db").host == "::1"
    assert parse_url("postgresql://h1:5432,h2:5433/db").host == "h1:5432,h2:5433"
    assert parse_url("postgresql:///db?host=/tmp").database == "db"
    with pytest.raises(TargetError):
        parse_url("postgresql://h1:5432,h2:99999/db")
    with pytest.raises(TargetError):
        parse_url("postgresql://h/db?port=70000")


@pytest.mark.parametrize("ch", list(RESERVED))
def test_every_reserved_character_in_a_password_parses(ch: str) -> None:
    pw = f"ab{ch}cd{ch}{ch}ef"
    p = parse_url(f"mysql://monitor:{pw}@db2:3307/app?unix_socket=/s")
    if "%" in pw:
        assert p.password is not None and "%" in p.password
    else:
        assert p.password == pw
    assert (p.user, p.host, p.port, p.database) == ("monitor", "db2", 3307, "app")
    assert pw not in redact_url(f"mysql://monitor:{pw}@db2:3307/app")


def test_percent_encoded_password_decodes_and_last_at_splits() -> None:
    assert parse_url("mysql://u:p%40ss%2Fw@h/db").password == "p@ss/w"
    assert parse_url("mysql://u:50%off@h/db").password == "50%off"   # not an escape: kept
    assert parse_url("mysql://u:a@b@c@h/db").password == "a@b@c"
    assert parse_url("mysql://u:a:b@h/db").password == "a:b"


def test_query_password_is_masked_and_registered() -> None:
    spec = spec_for("postgresql://u@h/db?sslmode=require&password=Qu3ryPw")
    assert "Qu3ry" not in spec.name and "password=***" in spec.name
    assert "Qu3ry" not in scrub("libpq said Qu3ryPw")


def test_unparseable_url_never_shows_the_password() -> None:
    url = "postgresql://u:Secr3tPass@[127.0.0.1/db"
    with pytest.raises(TargetError) as err:
        spec_for(url)
    assert "Secr3tPass" not in str(err.value) and "u:***@" in str(err.value)
    assert "Secr3t" not in redact_url("garbage u:Secr3tPass@host")


def test_scrub_removes_the_password_and_every_fragment_case_insensitively() -> None:
    register_secret(PASSWORD)
    text = "driver said: " + " | ".join(fragments(PASSWORD)) + " " + PASSWORD.upper()
    out = scrub(text)
    for frag in fragments(PASSWORD):
        assert frag.lower() not in out.lower(), frag
    assert out.startswith("driver said: ")
    tree = scrub_tree({"a": [PASSWORD[2:9]], PASSWORD[5:12]: 1, "n": 3})
    assert PASSWORD[2:9] not in str(tree) and tree["n"] == 3


def test_scrub_extra_and_spec() -> None:
    out = scrub("token hunter2x in text", extra=["hunter2x"])
    assert "hunter" not in out and "nter2x" not in out


def test_log_filter_scrubs_messages_and_tracebacks(caplog: pytest.LogCaptureFixture) -> None:
    register_secret("Zz9LogSecret")
    rec = logging.LogRecord("dbwatch.x", logging.ERROR, __file__, 1, "bad %s", ("Zz9LogSecret",),
                            None)
    try:
        raise RuntimeError("boom LogSecret")
    except RuntimeError:
        import sys
        rec.exc_info = sys.exc_info()
    ScrubFilter().filter(rec)
    assert "LogSecret" not in rec.getMessage() and "LogSecret" not in (rec.exc_text or "")


def test_spec_repr_and_name_hide_the_password() -> None:
    spec = spec_for("mysql://mon:Hid3Me!x@h:3306/app")
    assert "Hid3Me" not in repr(spec) and "Hid3Me" not in spec.name
    assert spec.name == "mysql://mon@h:3306/app"


def test_password_file(tmp_path: object) -> None:
    from pathlib import Path
    f = Path(str(tmp_path)) / "pw"
    f.write_text("fr0m-the-file\nsecond line ignored\n")
    spec = TargetSpec("t", "mysql://mon:urlpw@h/app", "mysql", password_file=str(f))
    assert password_of(spec) == "fr0m-the-file"
    assert "fr0m" not in scrub("error fr0m-the-file")
    missing = TargetSpec("t", "mysql://mon@h/app", "mysql", password_file=str(f) + ".none")
    with pytest.raises(TargetError) as err:
        password_of(missing)
    assert "password file" in str(err.value) and ".none" in str(err.value)


def test_one_spec_builder_carries_every_target_setting(tmp_path: object) -> None:
    cfg = parse_config({"targets": [{"name": "q", "url": "mysql://u@h/app", "retry_after": "45s",
                                     "all_databases": True, "password_file": "/p"}]}, "f.toml")
    spec = spec_from_config(cfg.targets[0])
    assert (spec.name, spec.retry_after, spec.all_databases, spec.password_file) == (
        "q", 45.0, True, "/p")


def test_config_url_errors_name_file_and_key_without_password() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config({"targets": [{"url": "mysql://u:Sekr1tX@h:abc/x"}]}, "f.toml")
    assert "f.toml: targets[0].url: port 'abc'" in str(err.value)
    assert "Sekr1t" not in str(err.value)


WRONG = ["5m", 5, 1.5, True, [1], ["a"], {"a": 1}, [], -1]
KEYS = {
    "targets": ["name", "url", "interval", "databases", "all_databases", "retry_after",
                "primary", "password_file"],
    "rules": ["thresholds", "for", "params", "ignore", "enabled"],
    "terminate": ["enabled", "dry_run", "rules", "after", "protect_users", "protect_apps",
                  "max_per_cycle", "include_superusers"],
    "alerts": ["kind", "url", "secret", "min_severity", "repeat_interval", "send_resolved",
               "timeout", "name"],
    "daemon": ["state", "metrics_address", "log_format", "retention"],
}


def _doc(section: str, key: str, value: object) -> dict[str, object]:
    if section == "targets":
        return {"targets": [{"name": "a", "url": "postgresql://h/db", key: value}]}
    if section == "alerts":
        return {"alerts": [{"url": "http://x", key: value}]}
    if section == "rules":
        return {"rules": {"PG001": {key: value}}}
    return {section: {key: value}}


def test_every_key_with_a_wrong_type_is_a_config_error_never_a_crash() -> None:
    from dbwatch.catalogue import load_catalogue
    cat = load_catalogue()
    for section, keys in KEYS.items():
        for key in keys:
            for value in WRONG:
                try:
                    parse_config(_doc(section, key, value), "f.toml", cat)
                except ConfigError as exc:
                    assert all(p.startswith("f.toml: ") for p in exc.problems), exc.problems
    for value in WRONG + ["5m"]:
        if isinstance(value, dict):
            continue
        with pytest.raises(ConfigError) as err:
            parse_config({"rules": {"PG001": {"thresholds": value}}}, "f.toml", cat)
        assert "rules.PG001.thresholds" in str(err.value)
        if value != []:
            with pytest.raises(ConfigError) as err:
                parse_config({"rules": {"PG001": {"params": value}}}, "f.toml", cat)
            assert "rules.PG001.params" in str(err.value)


def _cli(*args: str) -> "subprocess.CompletedProcess[str]":
    import subprocess
    import sys
    return subprocess.run([sys.executable, "-m", "dbwatch", *args], capture_output=True,
                          text=True, timeout=60)


def test_cli_bad_ports_and_unparseable_urls_one_line_exit_3() -> None:
    for url, needle in (("mysql://root@127.0.0.1:99999/x", "port '99999'"),
                        ("mysql://root@127.0.0.1:abc/x", "port 'abc'"),
                        ("postgresql://u:Secr3tPass@[127.0.0.1/db", "unbalanced '['")):
        proc = _cli("audit", url)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode == 3 and len(lines) == 1 and needle in lines[0], proc.stderr
        assert "Secr3t" not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


def test_cli_config_check_wrong_type_names_file_and_key(tmp_path: object) -> None:
    from pathlib import Path
    cfg = Path(str(tmp_path)) / "c.toml"
    cfg.write_text('[rules.PG001]\nthresholds = "5m"\n[[targets]]\nurl = "mysql://r@h:0/x"\n')
    proc = _cli("config", "check", "--config", str(cfg))
    assert proc.returncode == 3 and "internal error" not in proc.stderr
    assert f"{cfg}: rules.PG001.thresholds: expected a table" in proc.stderr
    assert f"{cfg}: targets[0].url: port '0'" in proc.stderr


def test_fragments_shared_with_the_targets_own_names_are_not_masked() -> None:
    spec = spec_for("mysql://dbws_5e1f9a27:pw-5e1f9a27@127.0.0.1:3306/app_5e1f9a27")
    out = scrub(f"Access denied for user 'dbws_5e1f9a27' to database app_5e1f9a27 "
                f"(pw-5e1f9a27 / PW-5E1F)")
    assert "'dbws_5e1f9a27'" in out and "app_5e1f9a27" in out
    assert "pw-5e1f9a27" not in out.lower() and "pw-5e1f" not in out.lower()
