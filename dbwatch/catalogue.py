"""The rule catalogue: rules/*.toml loaded and validated into frozen Rule objects."""

from __future__ import annotations

import string
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import field
from functools import cache
from pathlib import Path
from typing import TypeAlias

from .durations import parse_count, parse_duration
from .errors import ConfigError
from .frozen import frozen

ENGINES = ("postgresql", "mysql", "any")
CATEGORIES = ("sessions", "locks", "mvcc", "schema", "statements", "settings", "queue", "dbwatch")
UNITS = ("duration", "count", "ratio")
DOC_SECTIONS = ("what", "why", "fix", "references")
# A rule parameter: its type is its default's in the rule file (the only default there is).
Param: TypeAlias = str | int | float | bool | list[str]
_KEYS = {
    "id",
    "name",
    "engine",
    "category",
    "status",
    "check",
    "summary",
    "severity",
    "thresholds",
    "params",
    "doc",
}


@frozen
class Thresholds:
    unit: str
    warning: float | None
    critical: float | None

    def grade(self, value: float | None) -> str | None:
        """'critical', 'warning' or None for a measured value."""
        if value is None:
            return None
        if self.critical is not None and value >= self.critical:
            return "critical"
        if self.warning is not None and value >= self.warning:
            return "warning"
        return None


@frozen
class Rule:
    id: str
    name: str
    engine: str
    category: str
    status: str
    check: str
    summary: str
    severity: str
    thresholds: Thresholds | None
    params: dict[str, Param]
    doc: Mapping[str, object]  # the shipped rules': a _Doc, parsed when first read
    path: str = ""
    raw_thresholds: dict[str, object] = field(default_factory=dict)

    @property
    def planned(self) -> bool:
        return self.status == "planned"

    @property
    def fix(self) -> str:
        return str(self.doc.get("fix", "")).strip()

    @property
    def references(self) -> tuple[str, ...]:
        refs = self.doc.get("references", [])
        return tuple(str(r) for r in refs) if isinstance(refs, list) else (str(refs),)

    def applies_to(self, engine: str) -> bool:
        if self.engine == "any":
            return True
        if self.engine == "mysql":
            return engine in ("mysql", "mariadb")
        return self.engine == engine


def as_param(value: object) -> Param | None:
    """A TOML value as a rule parameter; None if it is none of the kinds a parameter has."""
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return [str(v) for v in value]
    return None


def parse_threshold(unit: str, value: object) -> float:
    if unit == "duration":
        return parse_duration(value)
    if unit == "ratio":
        return float(value) if isinstance(value, (str, int, float)) else float(str(value))
    return parse_count(value)


def build_thresholds(data: dict[str, object], where: str, problems: list[str]) -> Thresholds | None:
    if not data:
        return None
    unit = data.get("unit", "duration")
    if unit not in UNITS:
        problems.append(f"{where}.unit: must be one of {', '.join(UNITS)}, not {unit!r}")
        return None
    values: dict[str, float | None] = {}
    for level in ("warning", "critical"):
        raw = data.get(level)
        try:
            values[level] = None if raw is None else parse_threshold(unit, raw)
        except (ValueError, TypeError) as exc:
            problems.append(f"{where}.{level}: {exc}")
            values[level] = None
    for key in data:
        if key not in ("unit", "warning", "critical"):
            problems.append(f"{where}.{key}: unknown key")
    return Thresholds(unit, values["warning"], values["critical"])


def _table(value: object) -> dict[str, object]:
    """A TOML table as a str-keyed dict (anything else: empty)."""
    return {str(k): v for k, v in value.items()} if isinstance(value, dict) else {}


def _text(data: dict[str, object], key: str, default: str = "") -> str:
    value = data.get(key, default)
    return value if isinstance(value, str) else default


class _Doc(Mapping[str, object]):
    """A shipped rule's [doc] table, parsed from its TOML text when first read: the prose is
    most of a rule file (48 of 68 KB), and an audit reads only the fix of the rules it reports
    (startup: the catalogue's parse 8-10 -> 2 ms). tests/test_catalogue.py checks every
    shipped doc; a directory given to load_catalogue is parsed and checked whole."""

    __slots__ = ("_data", "_text", "_where")

    def __init__(self, text: str, where: str) -> None:
        self._text, self._where = text, where
        self._data: dict[str, object] | None = None

    def _table(self) -> dict[str, object]:
        if self._data is None:
            import tomllib

            try:
                self._data = _table(tomllib.loads(self._text).get("doc"))
            except tomllib.TOMLDecodeError as exc:
                raise ConfigError([f"{self._where}: doc: {exc}"]) from exc
        return self._data

    def __getitem__(self, key: str) -> object:
        return self._table()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())

    def __repr__(self) -> str:
        return repr(self._table())


def _split_doc(text: str) -> tuple[str, str] | None:
    """A rule file whose last table is [doc]: its head (before) and its doc (from the header
    on); None (parsed whole) when [doc] is not found once or any line after it opens a table."""
    at = text.find("\n[doc]\n")
    if at < 0 or text.find("\n[doc]\n", at + 1) >= 0:
        return None
    doc = text[at + 1 :]
    if any(ln.lstrip().startswith("[") for ln in doc.splitlines()[1:]):
        return None
    return text[: at + 1], doc


def _rule_from(data: dict[str, object], path: Path, problems: list[str]) -> Rule | None:
    where = path.name
    before = len(problems)
    for key in data:
        if key not in _KEYS:
            problems.append(f"{where}: {key}: unknown key")
    for key in ("id", "name", "engine", "category", "status", "check", "summary", "doc"):
        if key not in data:
            problems.append(f"{where}: {key}: missing")
    rule_id = _text(data, "id")
    if rule_id and rule_id != path.stem:
        problems.append(f"{where}: id: {rule_id!r} does not match the file name")
    if data.get("engine") not in ENGINES:
        problems.append(f"{where}: engine: must be one of {', '.join(ENGINES)}")
    if data.get("category") not in CATEGORIES:
        problems.append(f"{where}: category: must be one of {', '.join(CATEGORIES)}")
    if data.get("status") not in ("active", "planned"):
        problems.append(f"{where}: status: must be active or planned")
    doc: Mapping[str, object] = _table(data.get("doc"))
    if isinstance(data.get("doc"), _Doc):
        doc = data["doc"]  # type: ignore[assignment]  # checked by tests/test_catalogue.py
    for sec in DOC_SECTIONS if not isinstance(doc, _Doc) else ():
        if not doc.get(sec):
            problems.append(f"{where}: doc.{sec}: missing or empty")
    raw_thresholds = _table(data.get("thresholds"))
    thr = build_thresholds(dict(raw_thresholds), f"{where}: thresholds", problems)
    severity = _text(data, "severity", "warning")
    if thr is None and severity not in ("warning", "critical"):
        problems.append(f"{where}: severity: must be warning or critical")
    params: dict[str, Param] = {}
    for key, value in _table(data.get("params")).items():
        param = as_param(value)
        if param is None:
            problems.append(f"{where}: params.{key}: a string, number, boolean or string list")
        else:
            params[key] = param
    if len(problems) != before:
        return None
    return Rule(
        id=rule_id,
        name=_text(data, "name"),
        engine=_text(data, "engine"),
        category=_text(data, "category"),
        status=_text(data, "status"),
        check=_text(data, "check"),
        summary=_text(data, "summary"),
        severity=severity,
        thresholds=thr,
        params=params,
        doc=doc,
        path=str(path),
        raw_thresholds=raw_thresholds,
    )


def rules_dir() -> Path:
    """Installed wheel: dbwatch/rules; source checkout / editable install: ../rules."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "rules", here.parent / "rules"):
        if candidate.is_dir() and any(candidate.glob("*.toml")):
            return candidate
    raise ConfigError([f"rule catalogue not found (looked in {here / 'rules'})"])


def load_catalogue(directory: Path | None = None) -> dict[str, Rule]:
    """Every rule by ID; all problems collected and raised together."""
    shipped = directory is None
    directory = directory or rules_dir()
    heads = _parsed_heads() if shipped else {}
    problems: list[str] = []
    rules: dict[str, Rule] = {}
    for path in sorted(directory.glob("*.toml")):
        try:
            text = path.read_bytes().decode()  # as tomllib.load reads a file
            parts = _split_doc(text) if shipped else None
            if parts is None:
                import tomllib

                data = tomllib.loads(text)
            else:
                data = _head(heads, path.name, parts[0])
                data["doc"] = _Doc(parts[1], path.name)
        except (OSError, ValueError) as exc:  # ValueError: UnicodeDecodeError, TOMLDecodeError
            problems.append(f"{path.name}: {exc}")
            continue
        rule = _rule_from(data, path, problems)
        if rule is not None:
            rules[rule.id] = rule
    if problems:
        raise ConfigError(problems)
    return rules


def _parsed_heads() -> dict[str, tuple[int, dict[str, object]]]:
    """The shipped rule files' heads as tomllib parsed them (dbwatch/rule_heads.py), fresh
    objects at every call; empty when that module is missing."""
    try:
        from .rule_heads import heads
    except ImportError:
        return {}
    return heads()


def _head(
    heads: dict[str, tuple[int, dict[str, object]]], name: str, head: str
) -> dict[str, object]:
    """A rule file's head (the TOML before [doc]): tomllib's parse, precomputed in
    rule_heads.py for the shipped files (~20 M instructions of every command that loads the
    catalogue, and importing tomllib, ~15 M, when no rule's doc is read). Used only when the
    text is the one it was computed from (its CRC-32: a file changed since is parsed again)."""
    hit = heads.get(name)
    if hit is not None and hit[0] == zlib.crc32(head.encode()):
        return hit[1]
    import tomllib

    return tomllib.loads(head)


def heads_source(directory: Path | None = None) -> str:
    """The text of dbwatch/rule_heads.py for the rule files in `directory` (the shipped ones):
    `python -c 'import dbwatch.catalogue as c; c.write_heads()'` after editing a rule file
    (tests/test_catalogue.py checks it is current; a stale entry is only never used)."""
    import tomllib

    directory = directory or rules_dir()
    entries: list[str] = []
    for path in sorted(directory.glob("*.toml")):
        parts = _split_doc(path.read_bytes().decode())
        if parts is None:
            continue
        data = tomllib.loads(parts[0])
        _literal(data, path.name)
        entries.append(f"        {path.name!r}: ({zlib.crc32(parts[0].encode())}, {data!r}),")
    return (
        '"""The shipped rule files\' heads (the TOML before [doc]) as tomllib parses them, with\n'
        "the CRC-32 of the text each was parsed from: generated by dbwatch.catalogue.heads_source\n"
        "(`python -c 'import dbwatch.catalogue as c; c.write_heads()'`), read by\n"
        'catalogue.load_catalogue for a file whose text is unchanged."""\n\n'
        "# fmt: off\n\n\n"
        "def heads() -> dict[str, tuple[int, dict[str, object]]]:\n"
        "    return {\n" + "\n".join(entries) + "\n    }\n"
    )


def write_heads() -> None:
    (Path(__file__).resolve().parent / "rule_heads.py").write_text(heads_source())


def _literal(value: object, where: str) -> None:
    """Only what a Python literal rebuilds as tomllib gave it (no dates, no non-finite floats)."""
    if isinstance(value, dict):
        for k, v in value.items():
            _literal(k, where)
            _literal(v, where)
    elif isinstance(value, list):
        for v in value:
            _literal(v, where)
    elif isinstance(value, float):
        import math

        if not math.isfinite(value):
            raise ValueError(f"{where}: a float with no literal: {value!r}")
    elif not isinstance(value, (str, int, bool)):
        raise TypeError(f"{where}: not a literal: {value!r}")


class _Blank(dict[str, object]):
    def __missing__(self, key: str) -> str:
        return "?"


def render(template: str, fields: dict[str, object]) -> str:
    """A rule's summary template filled in: str.format_map that never raises on a missing or
    malformed field."""
    try:
        return string.Formatter().vformat(template, (), _Blank(fields))
    except (ValueError, IndexError, AttributeError, KeyError):
        return template


@cache
def _shipped() -> dict[str, Rule]:
    return load_catalogue()


def rule_summary(rule_id: str, **fields: object) -> str:
    """The headline of a finding made outside a check (query-log patterns), from the rule's
    TOML summary like every other finding's."""
    return render(_shipped()[rule_id].summary, fields)
