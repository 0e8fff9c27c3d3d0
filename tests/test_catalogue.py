"""The rule catalogue as data: IDs, files, checks, thresholds, params and docs are consistent."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from dbwatch.catalogue import load_catalogue, rules_dir
from dbwatch.checks import load_checks
from dbwatch.commands.rules import rules_markdown

SPEC_IDS = {"PG001", "PG002", "PG101", "PG102", "PG201", "PG202", "PG501", "MY001", "MY002",
            "MY101", "MY102", "MY201", "MY501", "QU001", "QU002", "QU003", "QU004", "QU301",
            "QU401", "QU402", "DW001", "DW002"}
ROOT = Path(__file__).resolve().parent.parent


def test_every_spec_rule_has_a_file_named_by_its_id() -> None:
    files = {p.stem for p in rules_dir().glob("*.toml")}
    assert files == SPEC_IDS
    for p in rules_dir().glob("*.toml"):
        assert tomllib.loads(p.read_text())["id"] == p.stem


def test_catalogue_loads_and_docs_are_complete() -> None:
    catalogue = load_catalogue()
    assert set(catalogue) == SPEC_IDS
    for rule in catalogue.values():
        for section in ("what", "why", "fix"):
            assert len(str(rule.doc[section]).strip()) > 40, (rule.id, section)
        assert rule.doc["references"], rule.id
        assert all(str(r).startswith("https://") for r in rule.doc["references"]), rule.id


def test_active_rules_have_a_registered_check() -> None:
    checks = load_checks()
    for rule in load_catalogue().values():
        if not rule.planned:
            assert rule.check in checks, f"{rule.id}: check {rule.check} missing"


def test_every_registered_check_is_named_by_a_rule() -> None:
    named = {rule.check for rule in load_catalogue().values()}
    assert set(load_checks()) - named == set(), "a check no rule file names: dead code"


# The queue family's modules (queue_health.py, queue_schema.py) say QU by their name already.
QUEUE_MODULES = {"queue_health", "queue_schema"}
ID_PREFIX = re.compile(r"^((?:[a-z]{2}\d{3}_)+)")


def test_a_rule_is_found_by_its_id_in_the_module_name() -> None:
    """A newcomer looking for PG201 opens checks/pg201_*.py: a module that registers a check
    is named by the IDs of the rules using it (lower case, then its topic); helper modules
    (lockgraph, pg_horizon, models, ...) carry no ID."""
    checks = load_checks()
    owners: dict[str, set[str]] = {}
    for rule in load_catalogue().values():
        if rule.planned:
            continue
        module = checks[rule.check].fn.__module__.rpartition(".")[2]
        owners.setdefault(module, set()).add(rule.id.lower())
        if module in QUEUE_MODULES:
            assert rule.id.startswith("QU"), (rule.id, module)
            continue
        assert rule.id.lower() in module.split("_"), f"{rule.id}: its check lives in {module}.py"
    for path in sorted((ROOT / "dbwatch" / "checks").glob("*.py")):
        if path.stem in QUEUE_MODULES:
            continue
        m = ID_PREFIX.match(path.stem)
        ids = set(m.group(1).rstrip("_").split("_")) if m else set()
        # the IDs in the name are exactly the rules whose checks it registers
        assert ids == owners.get(path.stem, set()), f"{path.name}: names {ids}"


def test_thresholds_parse_and_are_ordered() -> None:
    for rule in load_catalogue().values():
        t = rule.thresholds
        if t is not None and t.warning is not None and t.critical is not None:
            assert t.warning <= t.critical, rule.id


def test_params_have_defaults_of_a_plain_type() -> None:
    for rule in load_catalogue().values():
        for key, value in rule.params.items():
            assert re.fullmatch(r"[a-z_]+", key), (rule.id, key)
            assert isinstance(value, (str, int, float, bool, list)), (rule.id, key)


def test_readme_rule_list_is_in_sync_with_the_catalogue() -> None:
    readme = (ROOT / "README.md").read_text()
    table = rules_markdown(load_catalogue())
    assert table in readme, "README rule list is stale: paste `dbwatch rules --format markdown`"


def test_a_broken_rule_file_is_reported_with_its_name(tmp_path: Path) -> None:
    from dbwatch.errors import ConfigError
    (tmp_path / "PG001.toml").write_text('id = "PG009"\nengine = "oracle"\n')
    with pytest.raises(ConfigError) as exc:
        load_catalogue(tmp_path)
    text = "\n".join(exc.value.problems)
    assert "PG001.toml: id" in text and "PG001.toml: engine" in text and "doc.what" in text


def test_the_shipped_docs_read_on_first_use_are_the_whole_files() -> None:
    """load_catalogue() parses a shipped rule's [doc] when first read (startup): every rule
    then equals the one a whole parse makes (a directory given is parsed whole), and the
    text a finding prints (fix, references) is the file's."""
    from dbwatch.catalogue import _Doc

    lazy, whole = load_catalogue(), load_catalogue(rules_dir())
    assert all(isinstance(r.doc, _Doc) for r in lazy.values())
    assert not any(isinstance(r.doc, _Doc) for r in whole.values())
    for rule_id, rule in lazy.items():
        data = tomllib.loads((rules_dir() / f"{rule_id}.toml").read_text())
        assert dict(rule.doc) == data["doc"] == whole[rule_id].doc, rule_id
        assert rule == whole[rule_id] and rule.fix == whole[rule_id].fix != ""
        assert rule.references == whole[rule_id].references


def test_a_doc_that_is_not_the_last_table_is_parsed_whole() -> None:
    from dbwatch.catalogue import _Doc, _split_doc

    text = 'id = "X"\n\n[doc]\nwhat = """\n[not a table: inside a string]\n"""\n'
    assert _split_doc(text) is None  # a line opening with [ after [doc]: no split
    head, doc = _split_doc('id = "X"\n[doc]\nwhat = "w"\n') or ("", "")
    assert tomllib.loads(head) == {"id": "X"} and dict(_Doc(doc, "X.toml")) == {"what": "w"}
    with pytest.raises(Exception, match="X.toml: doc"):
        dict(_Doc('[doc]\nwhat = "unterminated\n', "X.toml"))


def test_the_precomputed_rule_heads_are_current_and_equal_tomllibs_parse() -> None:
    """dbwatch/rule_heads.py (startup: no TOML parse of the shipped heads) holds what
    tomllib makes of each shipped file's head, for its text as it is now; regenerate with
    `python -c 'import dbwatch.catalogue as c; c.write_heads()'`."""
    import zlib

    from dbwatch.catalogue import _split_doc, heads_source
    from dbwatch.rule_heads import heads

    assert (ROOT / "dbwatch" / "rule_heads.py").read_text() == heads_source()
    got = heads()
    for path in sorted(rules_dir().glob("*.toml")):
        parts = _split_doc(path.read_text())
        assert parts is not None, path.name
        crc, data = got.pop(path.name)
        assert crc == zlib.crc32(parts[0].encode()) and data == tomllib.loads(parts[0]), path.name
    assert got == {}  # no entry for a file that is gone
    assert heads() is not heads() and heads()["PG001.toml"][1]["params"] is not (
        heads()["PG001.toml"][1]["params"]
    )  # fresh objects at every call: a caller's change never reaches the next load


def test_a_changed_rule_file_is_parsed_not_served_from_the_precomputed_heads() -> None:
    """A precomputed head is used only for the exact text it was computed from."""
    from dbwatch.catalogue import _head, _split_doc
    from dbwatch.rule_heads import heads

    cached = heads()
    head = (_split_doc((rules_dir() / "PG001.toml").read_text()) or ("", ""))[0]
    assert _head(cached, "PG001.toml", head) == tomllib.loads(head)
    changed = head.replace('warning = "5m"', 'warning = "7m"')
    assert changed != head
    assert _head(cached, "PG001.toml", changed)["thresholds"]["warning"] == "7m"  # type: ignore[index]
    assert _head({}, "PG001.toml", changed) == tomllib.loads(changed)


def test_loading_the_shipped_catalogue_imports_no_toml_parser() -> None:
    """Startup: the shipped rules load from the precomputed heads; tomllib is imported only
    when a rule's doc is read (a finding's fix) or a config file is given."""
    import os
    import subprocess
    import sys

    code = (
        "import sys\nfrom dbwatch.commands.common import load_all\n"
        "cat, cfg = load_all(None)\nassert len(cat) > 20\n"
        "print('tomllib' in sys.modules)\ncat['PG001'].fix\nprint('tomllib' in sys.modules)"
    )
    env = {k: v for k, v in os.environ.items() if k != "DBWATCH_CONFIG"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True"]
