"""`audit --format nagios` and `watch --once --format nagios` (issue 26.1), parsed by a strict
implementation of the monitoring-plugins guidelines' grammar (sections "Plugin Output" and
"Performance data", with the threshold "range format"), on real audits of our own databases."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from dbwatch.nagios import Perf
from oncall_scene import scene

ROOT = Path(__file__).resolve().parents[2]
STATUSES = {"OK": 0, "WARNING": 1, "CRITICAL": 2, "UNKNOWN": 3}
# "UOM (unit of measurement) is one of: no unit … s - seconds (also us, ms) … % … B - bytes
# (also KB, MB, TB) … c - a continous counter"
UOMS = {"", "s", "ms", "us", "%", "B", "KB", "MB", "TB", "c"}
NUMBER = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)")  # "value, min and max in class [-0-9.]"


class GrammarError(ValueError):
    pass


@dataclass(frozen=True)
class Item:
    label: str
    value: float
    uom: str
    warn: str
    crit: str
    min: str
    max: str


def _number(text: str, what: str) -> float:
    if not NUMBER.fullmatch(text):
        raise GrammarError(f"{what} {text!r} is not in class [-0-9.]")
    return float(text)


def _range(text: str, what: str) -> None:
    """The range format: [@][start:]end; start '~' is -inf; end empty (after ':') is +inf;
    start <= end."""
    body = text[1:] if text.startswith("@") else text
    if ":" in body:
        start, end = body.split(":", 1)
        lo = float("-inf") if start == "~" else (_number(start, what) if start else 0.0)
        hi = _number(end, what) if end else float("inf")
    else:
        lo, hi = 0.0, _number(body, what)
    if lo > hi:
        raise GrammarError(f"{what} range {text!r}: start above end")


def _label(text: str, pos: int) -> tuple[str, int]:
    """A label: single-quoted ('' is a quote) or bare (then no space, = or ')."""
    if text[pos] == "'":
        out, i = [], pos + 1
        while True:
            j = text.find("'", i)
            if j < 0:
                raise GrammarError(f"unterminated label at {pos}")
            out.append(text[i:j])
            if text.startswith("''", j):
                out.append("'")
                i = j + 2
                continue
            if j == pos + 1:
                raise GrammarError("empty label")
            return "".join(out), j + 1
    m = re.compile(r"[^'= ]+").match(text, pos)
    if not m:
        raise GrammarError(f"no label at {pos}: {text[pos:pos + 20]!r}")
    return m.group(0), m.end()


def parse_perfdata(text: str) -> list[Item]:
    """A space-separated list of 'label'=value[UOM];[warn];[crit];[min];[max]."""
    items: list[Item] = []
    pos = 0
    text = text.strip(" ")
    while pos < len(text):
        label, pos = _label(text, pos)
        if not text.startswith("=", pos):
            raise GrammarError(f"{label!r}: '=' expected")
        end = text.find(" ", pos + 1)
        end = len(text) if end < 0 else end
        fields = text[pos + 1 : end].split(";")
        if len(fields) > 5:
            raise GrammarError(f"{label!r}: more than five fields")
        fields += [""] * (5 - len(fields))
        m = re.fullmatch(r"([-0-9.]+)(.*)", fields[0])
        if not m:
            raise GrammarError(f"{label!r}: value {fields[0]!r}")
        value = _number(m.group(1), f"{label!r} value")
        if m.group(2) not in UOMS:
            raise GrammarError(f"{label!r}: UOM {m.group(2)!r} is not one of the guidelines'")
        for name, f in zip(("warn", "crit"), fields[1:3], strict=True):
            if f:
                _range(f, f"{label!r} {name}")
        for name, f in zip(("min", "max"), fields[3:5], strict=True):
            if f:
                _number(f, f"{label!r} {name}")
        items.append(Item(label, value, m.group(2), *fields[1:5]))
        pos = end
        while pos < len(text) and text[pos] == " ":
            pos += 1
    return items


@dataclass(frozen=True)
class PluginOutput:
    status: str
    summary: str
    long_text: list[str]
    perf: list[Item]


def parse_output(out: str) -> PluginOutput:
    """TEXT OUTPUT | PERFDATA, LONG TEXT lines, the last one `… | PERFDATA LINE 2`, then one
    perfdata line each: the guidelines' multi-line layout."""
    lines = out.rstrip("\n").split("\n")
    head, bar, perf = lines[0].partition("|")
    m = re.fullmatch(r"DBWATCH (OK|WARNING|CRITICAL|UNKNOWN) - (.+) ", head)
    if not m:
        raise GrammarError(f"status line {lines[0]!r}")
    perf_text = [perf] if bar else []
    long_text: list[str] = []
    in_perf = False
    for line in lines[1:]:
        if in_perf:
            if "|" in line:
                raise GrammarError(f"a second '|' in the perfdata: {line!r}")
            perf_text.append(line)
            continue
        text, bar, rest = line.partition("|")
        long_text.append(text.rstrip(" "))
        if bar:
            in_perf = True
            perf_text.append(rest)
    items = [i for chunk in perf_text for i in parse_perfdata(chunk)]
    labels = [i.label for i in items]
    if len(labels) != len(set(labels)):
        raise GrammarError("a label appears twice")
    return PluginOutput(m.group(1), m.group(2), [t for t in long_text if t], items)


# -- the grammar itself must refuse what the guidelines do not allow --------------------------


@pytest.mark.parametrize(
    "bad",
    [
        "'a'=1e5",  # exponent: not in [-0-9.]
        "'a'=1GB",  # not a guideline UOM
        "'a'=1;5;3;x",  # min not a number
        "'a'=1;10:5",  # range start above end
        "a b=1",  # a bare label with a space
        "'a'=1;;;;;",  # six fields
        "'a'=",  # no value
        "'a'=inf",
        "'a=1",  # unterminated quote
    ],
)
def test_grammar_refuses(bad: str) -> None:
    with pytest.raises(GrammarError):
        parse_perfdata(bad)


def test_grammar_accepts_the_guidelines_examples() -> None:
    items = parse_perfdata("'rta'=12.445000ms;100;500;0 'pl'=0% /=2643MB;5948;5958;0;5968 'a''b c'=3c;@1:2;~:4")
    assert [(i.label, i.uom) for i in items] == [("rta", "ms"), ("pl", "%"), ("/", "MB"), ("a'b c", "c")]


def test_perf_render_quotes_and_numbers() -> None:
    p = Perf("it's a=b", 1e20, "s", 0.5, 2.0)
    text = p.render()
    assert text == "'it''s a=b'=100000000000000000000s;0.5;2;0"
    assert parse_perfdata(text)[0].label == "it's a=b"
    assert Perf("x", 3, min=None).render() == "'x'=3"  # trailing empty fields dropped


# -- real audits -----------------------------------------------------------------------------

CONFIG = """
[[targets]]
name = "pg"
url = "{pg}"
[[targets]]
name = "maria"
url = "{my}"
[rules.PG001]
thresholds = {{ warning = "7m", critical = "45m" }}
[rules.PG002]
thresholds = {{ warning = "1s", critical = "1h" }}
[rules.QU001.params]
depth_warning = "20"
depth_critical = "5000"
"""


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "dbwatch", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )


def _documented_labels() -> set[str]:
    doc = (ROOT / "docs" / "nagios.md").read_text()
    return set(re.findall(r"^\| `(?:<target>/)?([a-z_]+)", doc, re.M))


def _check(out: PluginOutput, code: int, scene_name: str, idle_pid: int) -> None:
    assert STATUSES[out.status] == code
    by = {i.label: i for i in out.perf}
    # the first line: totals
    assert {"critical", "warning", "unreadable", "targets"} <= set(by)
    assert by["targets"].value == 2
    # per target, with the rules' thresholds as configured
    xact = by["pg/oldest_xact"]
    assert xact.uom == "s" and xact.value >= 1 and (xact.warn, xact.crit) == ("420", "2700")
    assert by["pg/horizon_age"].uom == "s" and by["pg/horizon_age"].value >= 1
    assert (by["pg/horizon_age"].warn, by["pg/horizon_age"].crit) == ("600", "3600")
    assert by["pg/horizon_xids"].value >= 1 and by["pg/horizon_xids"].uom == ""
    assert by["pg/horizon_xids"].warn == "1000000"
    assert by["pg/queue_depth:public.jobs"].value == 25
    assert (by["pg/queue_depth:public.jobs"].warn, by["pg/queue_depth:public.jobs"].crit) == (
        "20",
        "5000",
    )
    assert by["pg/queue_oldest:public.jobs"].uom == "s"
    assert by["pg/queue_oldest:public.jobs"].value >= 100
    assert by[f"maria/queue_depth:{scene_name}.jobs"].value == 25
    assert "pg/dead_tuples_max" in by
    assert by["maria/history_list_length"].warn == "100000"
    assert by["pg/deadlocks"].uom == "c" and by["maria/deadlocks"].uom == "c"
    assert by["pg/findings_warning"].value >= 1  # PG002
    # long text: one line per finding, the idle session's among them
    assert any(ln.startswith("WARNING PG002 pg:") and str(idle_pid) in ln for ln in out.long_text)
    # every label is documented
    documented = _documented_labels()
    for label in by:
        name = label.split("/", 1)[-1].split(":", 1)[0]
        assert name in documented, f"{label} not in docs/nagios.md"


def test_audit_nagios_output_parses_and_measures(tmp_path: Path) -> None:
    with scene() as s:
        cfg = tmp_path / "dbwatch.toml"
        cfg.write_text(CONFIG.format(pg=s.pg_url, my=s.my_url))
        time.sleep(1.2)  # the idle session passes PG002's 1 s
        res = _run("audit", "--config", str(cfg), "--format", "nagios")
        assert res.returncode in STATUSES.values(), res.stderr
        out = parse_output(res.stdout)
        _check(out, res.returncode, s.name, s.idle_pid)
        as_json = _run("audit", "--config", str(cfg), "--format", "json")
        assert as_json.returncode == res.returncode  # the exit code is the audit's
        assert json.loads(as_json.stdout)["status"] == out.status.lower()
        once = _run(
            "watch", "--once", "--config", str(cfg), "--state", str(tmp_path / "s.db"),
            "--format", "nagios",
        )
        assert once.returncode in STATUSES.values(), once.stderr
        _check(parse_output(once.stdout), once.returncode, s.name, s.idle_pid)


def test_unreachable_target_is_unknown_and_has_no_figures(tmp_path: Path) -> None:
    cfg = tmp_path / "dbwatch.toml"
    cfg.write_text('[[targets]]\nname = "gone"\nurl = "postgresql://nobody@127.0.0.1:1/x"\n')
    res = _run("audit", "--config", str(cfg), "--format", "nagios")
    out = parse_output(res.stdout)
    assert res.returncode == 3 and out.status == "UNKNOWN"
    assert any(ln.startswith("UNKNOWN gone: unreachable") for ln in out.long_text)
    labels = {i.label for i in out.perf}
    assert "gone/oldest_xact" not in labels  # not read: never printed as 0
    assert {"gone/findings_critical", "unreadable"} <= labels
