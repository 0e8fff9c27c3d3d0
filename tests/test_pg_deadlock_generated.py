"""Property tests: a PostgreSQL deadlock model rendered as the server prints it (any
log_line_prefix, stderr/syslog/csvlog/jsonlog, English or German), mangled by random compositions of
what happens to log text (container and kubectl prefixes, indentation, CRLF, doubled blank lines,
Markdown quoting and fences, squeezed spaces, wrapping, redacted numbers, cuts); the parser must
recover the model, or exactly what the cut text holds. Seeds that found bugs are kept as examples."""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from deadlockgen import pg as gen
from hypothesis import example, given, settings
from hypothesis import strategies as st

from dbwatch.parsers.deadlock_model import Deadlock
from dbwatch.parsers.pg_deadlock import iter_pg_deadlocks

TRANSFORMS = ["compose", "kubectl", "spaces", "crlf", "blank", "quote", "fence", "indent",
              "onespace", "procbreak", "headless"]  # fmt: skip


def _ws(text: str | None) -> str:
    return " ".join((text or "").split())


def _nows(text: str | None) -> str:
    return re.sub(r"\s+", "", text or "")


def _expected_query(m: gen.Model, i: int) -> str | None:
    q = m.procs[i].query
    if q.startswith("<"):  # the server could not show it: no statement, never the placeholder
        return None
    return q


def check(dl: Deadlock, m: gen.Model, *, pids: bool = True, exact_ws: bool = True,
          at: bool = True, text: Callable[[str], str] = str) -> None:  # fmt: skip
    n = len(m.procs)
    assert len(dl.transactions) == n, dl
    assert dl.victim == 1 and dl.transactions[0].victim
    assert not dl.truncated, dl.unparsed
    for i, (t, p) in enumerate(zip(dl.transactions, m.procs, strict=True)):
        assert t.thread_id == (p.pid if pids else None)
        assert t.blocked_by == (i + 1) % n + 1
        want = _expected_query(m, i)
        want = text(want) if want else want
        norm = _ws if exact_ws else _nows
        assert norm(t.query) == norm(want), (t.query, want)
        if pids:
            assert t.trx_id == (str(p.xid) if m.procs[i - 1].kind == "TRANSACTION" else None)
        else:
            assert t.trx_id is None
    assert [lk.n for lk in dl.locks] == list(range(1, n + 1))
    for lk, p in zip(dl.locks, m.procs, strict=True):
        assert lk.waiting and lk.mode == p.mode
        if pids:
            assert lk.special == p.obj and lk.lock_type == p.kind
    if at:
        assert dl.at == m.at


def parse(lines: list[str]) -> list[Deadlock]:
    return list(iter_pg_deadlocks(lines))


@settings(max_examples=120, deadline=None, derandomize=False)
@given(st.integers(0, 2**32 - 1))
@example(1)  # indent + kubectl + quote: a paste indented as a whole hid every wrapper
@example(380)  # a line exactly 80 wide glued to the next `Process N:` line
@example(3772)  # doubled blank lines kept "<backend information not available>" as a query
@example(1387)  # no %p in the prefix and the ERROR line lost: the DETAIL joined a LOG line
def test_stderr_any_prefix_any_mangling(seed: int) -> None:
    r = random.Random(seed)
    m = gen.make_model(r)
    template = r.choice(gen.PREFIXES)
    lines = [ln for msg in gen.stderr(m, template) for ln in msg]
    names = r.sample(TRANSFORMS, r.randrange(0, 5))
    mangle = gen.Mangle()
    lines = mangle.run(r, lines, names)
    got = parse(lines)
    assert len(got) == 1, (template, mangle.applied, lines)
    has_ts = "%m" in template or "%t" in template
    check(got[0], m, at=has_ts)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1))
@example(0)  # syslog sends DETAIL as chunk [n-2] of the same message: it was read as text
def test_syslog_and_journald(seed: int) -> None:
    r = random.Random(seed)
    m = gen.make_model(r)
    template = r.choice(("%m [%p] ", "%q%u@%d ", ""))  # syslog carries its own time and pid
    lines = (gen.syslog if r.random() < 0.5 else gen.journald)(gen.stderr(m, template), m)
    if r.random() < 0.5:
        lines = gen.Mangle().run(r, lines, r.sample(["crlf", "quote", "blank"], 2))
    (dl,) = parse(lines)
    check(dl, m, at="%m" in template)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([23, 24, 26]))
def test_csvlog_every_version(seed: int, columns: int) -> None:
    m = gen.make_model(random.Random(seed))
    (dl,) = parse(gen.csvlog(m, columns).splitlines(keepends=True))
    check(dl, m)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_jsonlog(seed: int) -> None:
    m = gen.make_model(random.Random(seed))
    (dl,) = parse(gen.jsonlog(m).splitlines())
    check(dl, m)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1))
@example(1954)  # a query naming ShareLock and ending in a number was read as a wait
def test_german_server_by_sqlstate(seed: int) -> None:
    """lc_messages = 'de_DE': nothing English is left but the lock modes; %e in the prefix
    prints 40P01 on every line of the message."""
    r = random.Random(seed)
    m = gen.make_model(r)
    words = dict(gen.GERMAN)
    msgs = gen.stderr(m, "%m [%p] %e ", words)
    de = gen.german_detail(m).split("\n")
    msg = [ln for ln in msgs[1] if not ln.startswith("\t")]
    out = []
    for ln in msg:
        out.append(ln)
        if " DETAIL:  " in ln:
            out[-1] = ln.split("DETAIL:  ")[0] + "DETAIL:  " + de[0]
            out.extend("\t" + d for d in de[1:])
    (dl,) = parse(msgs[0] + out + msgs[2])
    n = len(m.procs)
    assert [t.thread_id for t in dl.transactions] == [p.pid for p in m.procs]
    assert [t.blocked_by for t in dl.transactions] == [(i + 1) % n + 1 for i in range(n)]
    assert dl.victim == 1 and [lk.mode for lk in dl.locks] == [p.mode for p in m.procs]
    for t, i in zip(dl.transactions, range(n), strict=True):
        assert _ws(t.query) == _ws(_expected_query(m, i))


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([80, 120]))
def test_wrapped_at_a_terminal_width(seed: int, width: int) -> None:
    """Hard-wrapped (fold -w): every wait and process recovered; statements up to whitespace."""
    r = random.Random(seed)
    m = gen.make_model(r)
    lines = [ln for msg in gen.stderr(m, "%m [%p] ") for ln in msg]
    lines = [ln.replace("\t", "    ") for ln in lines]  # a terminal shows the tab as spaces
    wrapped = [c for ln in lines for c in
               ([ln[i : i + width] for i in range(0, len(ln), width)] or [""])]  # fmt: skip
    (dl,) = parse(wrapped)
    check(dl, m, exact_ws=False)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["XXXX", "<pid>", "NNN", "***"]))
@example(286, "XXXX")  # (the test's own redaction reaches into the query text too)
def test_redacted_numbers(seed: int, mask: str) -> None:
    """pids and xids replaced by a mask: the grammar's order still names who blocks whom."""
    r = random.Random(seed)
    m = gen.make_model(r)
    lines = [ln for msg in gen.stderr(m, "%m [%p] ") for ln in msg]
    def redact(ln: str) -> str:
        return re.sub(r"(?<=process )\d+|(?<=Process )\d+|(?<=transaction )\d+", mask, ln)

    (dl,) = parse([redact(ln) for ln in lines])
    check(dl, m, pids=False, text=redact)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40))
@example(0, 4)  # cut after the waits: no query lines and no HINT is a cut, not a client copy
@example(20, 4)
def test_cut_short_reports_what_the_cut_text_holds(seed: int, keep: int) -> None:
    r = random.Random(seed)
    m = gen.make_model(r)
    msg = gen.stderr(m, "%m [%p] ")[1]
    keep = min(keep, len(msg))
    text = msg[:keep]
    got = parse(text)
    assert len(got) == 1
    dl = got[0]
    n = len(m.procs)
    waits = sum(1 for ln in text if re.search(r"Process \d+ waits for ", ln))
    assert len(dl.locks) == waits
    # every process named is a real one, in the model's order, with its real lock
    want_pids = [p.pid for p in m.procs][: min(n, waits + 1)] if waits else [m.procs[0].pid]
    assert [t.thread_id for t in dl.transactions] == want_pids
    for lk, p in zip(dl.locks, m.procs, strict=False):
        assert lk.mode == p.mode and lk.special == p.obj
    complete = waits == n and sum(1 for ln in text if re.match(r"\tProcess \d+: ", ln)) == n
    if not complete:
        assert dl.truncated and dl.unparsed
    for t in dl.transactions:  # a statement shown is the model's (or the start of it)
        if t.query:
            q = m.procs[[p.pid for p in m.procs].index(t.thread_id)].query
            assert q.startswith(t.query) or q.replace("\n", " ").startswith(t.query)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1))
@example(2)  # a log's first line cut before its severity: the piece starts the log
@example(7)  # headers cut inside a long prefix (pgbadger's): the piece went to a query
@example(73)  # `ERROR:` ends the cut line, `  deadlock detected` starts the next
def test_wrapped_after_wrappers(seed: int) -> None:
    """Container/kubectl/quote/CRLF/space-indent first, then a terminal's width: long prefixes
    are cut before the severity; the header is put back together."""
    r = random.Random(seed)
    m = gen.make_model(r)
    lines = [ln for msg in gen.stderr(m, r.choice(gen.PREFIXES)) for ln in msg]
    names = r.sample(["compose", "kubectl", "quote", "crlf", "spaces"], r.randrange(1, 3))
    lines = gen.Mangle().run(r, lines, names)
    lines = [ln.replace("\t", "    ") for ln in lines]
    w = r.choice([80, 120])
    wrapped = [c for ln in lines for c in ([ln[i : i + w] for i in range(0, len(ln), w)] or [""])]
    (dl,) = parse(wrapped)
    check(dl, m, exact_ws=False, at=False)
