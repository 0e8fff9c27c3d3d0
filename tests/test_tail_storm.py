"""The log tail's storm path (parsers/innodb_storm) gives what the full scan gives: on every
fixture, on storms of generated reports whose numbers change (lengths, equalities, small
numbers), through every log container and what text suffers on its way, in small reads, and
with a spoofed report (report text inside a query) in the middle of a storm."""

from __future__ import annotations

import io
import json
import random
import re
from pathlib import Path

import test_deadlock_spoofing as spoofing
from deadlockgen import innodb as gen
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_innodb_deadlock_generated import models

from dbwatch.daemon.journal import _as_json
from dbwatch.deadlocks import live, tailer
from dbwatch.parsers import innodb_storm
from dbwatch.parsers.deadlock_model import Deadlock
from dbwatch.parsers.errorlog import slim, slim_bytes
from dbwatch.parsers.innodb_storm import (
    Derive,
    LazyDerive,
    ShapeCache,
    _types,
    full_scan,
    scan_buffer,
)

FIXTURES = Path(__file__).parent / "fixtures"


def same(data: bytes, cache: ShapeCache | None = None) -> list[Deadlock]:
    """The storm path equals the full scan on data (whole lines), final or not; and so do the
    records the log tail makes of them (the record, its key order and types, the stored JSON)."""
    cache = cache if cache is not None else ShapeCache()
    got: list[Deadlock] = []
    for final in (False, True):
        want = full_scan(slim(data), final)
        fast = scan_buffer(data, final, cache)
        assert fast == want
        got = list(fast[0])
        derived = Derive(live._logged)
        assert scan_buffer(data, final, cache, derived) == ([], want[1])
        expect = [live._logged(dl) for dl in want[0]]
        assert derived.out == expect
        assert [json.dumps(r.to_json()) for r, _ in derived.out] == [
            json.dumps(r.to_json()) for r, _ in expect
        ]  # key order too
        assert [_types(r) for r, _ in derived.out] == [_types(r) for r, _ in expect]
        # the tail's lazy records: the same records when built, the same values at once
        lazy = LazyDerive(live._logged, live._ATTRS)
        assert scan_buffer(data, final, cache, lazy) == ([], want[1])
        values = [tuple(a(r) for a in live._ATTRS) for r, _ in expect]
        assert [later.values for later, _ in lazy.out] == values
        assert [_types(v) for v in values] == [_types(later.values) for later, _ in lazy.out]
        assert [(later.get(), text) for later, text in lazy.out] == expect
        assert [_types(later.get()) for later, _ in lazy.out] == [_types(r) for r, _ in expect]
    return got


def _vary(text: str, rng: random.Random, keep_len: float = 0.9, wild: bool = True) -> str:
    """Every number of 3+ digits given another value (mostly of the same length); sometimes two
    of them made equal; sometimes a small number changed."""
    seen: dict[str, str] = {}

    def num(m: re.Match[str]) -> str:
        old = m.group()
        if old in seen:
            return seen[old]
        n = len(old) if rng.random() < keep_len else max(1, len(old) + rng.choice((-1, 1)))
        new = str(rng.randint(1, 9)) + "".join(str(rng.randint(0, 9)) for _ in range(n - 1))
        if wild and seen and rng.random() < 0.03:
            new = rng.choice(list(seen.values()))  # two numbers equal that were not
        seen[old] = new
        return new

    out = re.sub(r"(?<!\d)\d{3,}(?!\d)", num, text)
    if wild and rng.random() < 0.1:
        out = re.sub(r"(?<!\d)\d(?!\d)", lambda m: str(rng.randint(0, 9)), out, count=3)
    return out


def storm(report: str, n: int, rng: random.Random) -> bytes:
    return "".join(_vary(report, rng) for _ in range(n)).encode()


def test_every_fixture_whole_and_stormed() -> None:
    rng = random.Random(7)
    files = [p for p in sorted(FIXTURES.rglob("*")) if p.is_file()]
    assert len(files) > 40
    learnt = 0
    for p in files:
        data = p.read_bytes()
        data = data[: data.rfind(b"\n") + 1]
        cache = ShapeCache()
        same(data, cache)
        same(data + data + data, cache)  # the same text again: its shapes, learnt
        if b"WE ROLL BACK" in data and len(data) < 200_000:
            same(storm(data.decode("utf-8", "replace"), 6, rng), cache)
        learnt += sum(len(v) for v in cache.learnt.values())
    assert learnt > 20  # the fast path was taken, not only its fallbacks


def _log(m: gen.Model, container: str) -> str:
    return "\n".join(gen.render_in(m, container)) + "\n"


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    models(),
    st.sampled_from(gen.LOGS[1:]),
    st.sampled_from([None, gen.COMPOSE, gen.SYSLOG, gen.CRI]),
    st.booleans(),  # CRLF
    st.integers(0, 2**32),
)
def test_generated_storms(
    m: gen.Model, container: str, decor: str | None, crlf: bool, seed: int
) -> None:
    rng = random.Random(seed)
    lines = gen.render_in(m, container)
    if decor:
        lines = gen.prefix_lines(lines, decor)
    if crlf:
        lines = gen.crlf(lines)
    report = "\n".join(lines) + "\n"
    data = storm(report, 12, rng)
    cache = ShapeCache()
    assert same(data, cache)  # (varied numbers may merge two reports: the full scan says)
    same(storm(report, 12, rng), cache)  # read with what the first storm taught


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    models(),
    st.sampled_from(gen.LOGS[1:]),
    st.sampled_from([None, gen.COMPOSE, gen.CRI]),
    st.integers(0, 2**32),
)
def test_every_printer_and_container_is_learnt(
    m: gen.Model, container: str, decor: str | None, seed: int
) -> None:
    """A storm of one generated report whose ids change: all but the first few reports are
    built from the learnt shape, and equal the full scan."""
    rng = random.Random(seed)
    lines = gen.render_in(m, container)
    report = "\n".join(gen.prefix_lines(lines, decor) if decor else lines) + "\n"
    cache = ShapeCache()
    same("".join(_vary(report, rng, 1.0, wild=False) for _ in range(20)).encode(), cache)
    assert cache.built >= 2 * 15  # read twice (final and not), 20 reports, a few learnt


def test_a_spoofed_report_inside_a_storm_is_still_caught() -> None:
    log, query, fake = spoofing.LOG, spoofing.QUERY, spoofing.FAKE_TAIL
    rng = random.Random(3)
    clean = [_vary(log, rng, 1.0, wild=False) for _ in range(20)]
    spoofed = log.replace(query, query + fake)
    cache = ShapeCache()
    same("".join(clean).encode(), cache)  # shapes learnt
    for at in (0, 1, 10, 19, 20):
        data = "".join(clean[:at] + [spoofed] + clean[at:]).encode()
        dls = same(data, cache)
        assert len(dls) == 21
        assert dls[at].ambiguous and dls[at].victim is None  # type: ignore[attr-defined]
        # the reports before the one before it read as clean (the full scan marks the one just
        # before it, and those after it, suspect too)
        assert not any(d.ambiguous for d in dls[: max(at - 1, 0)])  # type: ignore[attr-defined]
        spoofing.no_fabricated_victim(dls)
    # report text inside a query that starts a report: the one before is tainted too
    fake_start = "2019-06-12T08:15:42.318300Z 2245 [Note] InnoDB: Transactions deadlock detected, "
    inside = log.replace(query, query + fake_start + "dumping detailed information.\n")
    same("".join(clean[:5] + [inside] + clean[5:]).encode(), cache)


def test_small_reads_through_the_tailer() -> None:
    """tailer._scan in 4 KB reads, a report cut anywhere: fast and full agree."""
    rng = random.Random(11)
    variants = sorted((FIXTURES / "innodb" / "variants").glob("*.log"))
    data = b"".join(storm(p.read_text(), 4, rng) for p in variants[:12])
    for step in (4096, 1500):
        res = []
        for fast in (True, False):
            found, off, end = [], 0, 0
            while end < len(data):
                end += step
                more, off = tailer._scan(io.BytesIO(data[:end]), off, "mysql", False, fast)
                found += more
            found += tailer._scan(io.BytesIO(data), off, "mysql", True, fast)[0]
            res.append(found)
        assert res[0] == res[1]
        assert len(res[0]) >= 30


def test_a_shape_is_not_reused_where_its_numbers_differ() -> None:
    """Equal numbers that become unequal (and the reverse), a number that drops under 100, a
    length that changes: each is another shape, read exactly."""
    log = (FIXTURES / "innodb" / "variants" / "mysql57-laravel-jobs-cut-delete.log").read_text()
    cache = ShapeCache()
    same((log * 3).encode(), cache)
    assert cache.learnt
    a, b = "41722335", "41722336"
    for text in (
        log.replace(b, a),  # the two trx ids equal: one transaction's locks under the other
        log.replace(a, "41722336 ").replace("41722336 ,", "41722336,"),
        log.replace("2240", "0099"),
        log.replace("2240", "22400"),
        log.replace("9113354", "9113356"),
    ):
        same((log + text + log).encode(), cache)


def test_learning_is_bounded() -> None:
    cache = ShapeCache(size=4)
    rng = random.Random(5)
    log = (FIXTURES / "innodb" / "variants" / "mysql57-laravel-jobs-cut-delete.log").read_text()
    for _ in range(12):
        same(storm(log.replace("delete from", f"delete /* {rng.random()} */ from"), 4, rng), cache)
    assert sum(map(len, cache.learnt.values())) <= 4 and len(cache.seen) <= 16
    assert cache.count == sum(map(len, cache.learnt.values()))


def test_the_module_cache_is_the_tailers() -> None:
    assert isinstance(innodb_storm.SHAPES, ShapeCache)


def test_the_stored_json_is_the_journals() -> None:
    """live._logged's text is what the journal stores of the record: its compact form
    (deadlocks.stored), which reads back as what JournalStore.record_deadlock stores of it."""
    from dbwatch.deadlocks.stored import expand

    data = (FIXTURES / "innodb" / "mariadb-error-log-excerpt.log").read_bytes()
    dls = full_scan(slim(data), True)[0]
    assert dls
    for dl in dls:
        rec, text = live._logged(dl)
        assert len(text) < len(_as_json(rec.to_json()))
        assert _as_json(expand(json.loads(text))) == _as_json(rec.to_json())


def test_records_built_from_shapes() -> None:
    """In a storm the records come from the learnt shape's templates (no Deadlock, no
    diagnosis built), and equal the full path's."""
    log = (FIXTURES / "innodb" / "variants" / "mysql57-laravel-jobs-cut-delete.log").read_text()
    rng = random.Random(2)
    data = "".join(_vary(log, rng, 1.0, wild=False) for _ in range(30)).encode()
    cache = ShapeCache()
    derived = Derive(live._logged)
    scan_buffer(data, False, cache, derived)
    assert derived.built >= 25
    assert derived.out == [live._logged(dl) for dl in full_scan(slim(data), False)[0]]
    lazy = LazyDerive(live._logged, live._ATTRS)
    scan_buffer(data, False, cache, lazy)
    assert lazy.built >= 25


def test_a_fault_of_the_storm_path_falls_back_to_the_full_scan(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A bug in the shortcut never stops the tail: the buffer is read the full way, and what
    the shortcut had already added is dropped (each deadlock once)."""
    log = (FIXTURES / "innodb" / "variants" / "mysql57-laravel-jobs-cut-delete.log").read_bytes()
    data = log * 5
    want = tailer._scan(io.BytesIO(data), 0, "mysql", False, fast=False, derive=None)
    real = tailer.scan_buffer

    def broken(buf: bytes, final: bool, shapes: object = None, derive: object = None) -> object:
        real(buf, final, derive=derive)  # type: ignore[arg-type]  # adds to derive.out, then fails
        raise RuntimeError("bug")

    monkeypatch.setattr(tailer, "scan_buffer", broken)
    assert tailer._scan(io.BytesIO(data), 0, "mysql", False) == want
    derived = Derive(live._logged)
    assert tailer._scan(io.BytesIO(data), 0, "mysql", False, derive=derived) == ([], want[1])
    assert derived.out == [live._logged(dl) for dl in want[0]]


def _mariadb_report() -> str:
    lines = (FIXTURES / "innodb" / "mariadb-error-log-excerpt.log").read_text().splitlines(True)
    start = next(i for i, ln in enumerate(lines) if "deadlock detected" in ln)
    end = next(i for i, ln in enumerate(lines) if "WE ROLL BACK" in ln) + 1
    return "".join(lines[start:end])


def test_skeletons_slim_a_storm_exactly() -> None:
    """A storm's pieces are slimmed by their learnt skeleton (one expression a piece); a piece
    that differs from it anywhere slim looks (a line more or less, a dump line that is not
    one, a record-lock run changed, the header's words in a dropped or kept line, lines
    between reports) reads exactly as the full scan reads it."""
    report = _mariadb_report()
    rng = random.Random(17)
    clean = [_vary(report, rng, 1.0, wild=False) for _ in range(12)]
    cache = ShapeCache()
    same("".join(clean).encode(), cache)
    assert cache.skeletons
    before = cache.skimmed
    same("".join(clean).encode(), cache)
    assert cache.skimmed - before >= 4 * 11  # 4 scans of 12 pieces, the first maybe not
    dump = " 2: len 8; hex 0000000000000021; asc        !;;\n"
    assert dump in report
    record = "Record lock, heap no 3 PHYSICAL RECORD"
    assert record in report
    odd = [
        report.replace(dump, dump + dump.replace(" 2:", " 3:"), 1),  # a dump line more
        report.replace(dump, "", 1),  # one fewer
        report.replace(dump, dump + "2026-11-22  2:01:37 0 [Note] Something else\n", 1),
        report.replace(dump, " 0x: not a dump\n", 1),
        report.replace(dump, " 123456: too many digits\n", 1),
        report.replace(dump, dump + "  \t\n", 1),  # blank (dropped)
        report.replace(dump, dump + "  x\n", 1),  # not blank
        report.replace(record, "XRecord lock, heap no 3 PHYSICAL RECORD", 1),
        report.replace("Record lock, heap no 2 PHYSICAL", "Record lock,  heap no 2 PHYSICAL", 1),
        report.replace(dump, dump.replace("asc ", "asc deadlock detected, dumping "), 1),
        report.replace(dump, " 2: asc Transactions deadlock detected, dumping detailed\n", 1),
        report.replace(record, "Record lock, heap no 3 deadlock detected", 1),
        report.replace("mysql tables in use", "deadlock detected\nmysql tables in use", 1),
        report.replace("WHERE `id` = 33", "WHERE `id` = 33 /* deadlock detected */", 1),
        report.replace(
            "*** CONFLICTING WITH:\n", "*** CONFLICTING WITH:\n" + record + "\n", 1
        ),  # a record-lock line where a kept line was
        report + "2026-11-22  2:01:38 0 [Note] after the report\n",
        report + "\n\n",
        report.replace("\n", "\r\n"),
    ]
    for i, text in enumerate(odd):
        assert text != report, i
        for at in (0, 5, 12):
            data = "".join(clean[:at] + [_vary(text, rng, 1.0, wild=False)] + clean[at:])
            same(data.encode(), cache)
    # a storm of each odd report: learnt too, still exact
    for text in odd:
        same("".join(_vary(text, rng, 1.0, wild=False) for _ in range(4)).encode(), cache)
    assert len(cache.skeletons) <= innodb_storm.MAX_SKELETONS


def test_skeletons_are_bounded() -> None:
    report = _mariadb_report()
    rng = random.Random(23)
    cache = ShapeCache(size=8)
    for k in range(40):  # another row count each time: another family, another skeleton
        text = report.replace("34 row lock(s)", f"{k} row lock(s)")
        same("".join(_vary(text, rng, 1.0, wild=False) for _ in range(3)).encode(), cache)
    assert len(cache.skeletons) <= innodb_storm.MAX_SKELETONS
    assert len(cache.skeleton_counts) <= 4 * cache.size


def _mysql57() -> str:
    return (FIXTURES / "innodb" / "variants" / "mysql57-laravel-jobs-cut-delete.log").read_text()


def test_leading_zeros_and_clocks_against_a_learnt_shape() -> None:
    """A shape compares its numbers as text when none of 3+ digits has a leading zero (a
    clock's two digits do not count). A leading zero in a number the deadlock reads (a thread
    id: the record holds int("0413") = 413, the learnt templates splice text) is parsed, not
    built; in one it does not read (a timestamp's fraction) it is built; a number equal by
    value to another class's (0412 and 412) and a clock's minute equal to its second are other
    equalities, other shapes. Every piece reads exactly as the full path reads it."""
    log = _mysql57()
    assert "space id 412 " in log and "thread id 2240," in log and ".318101Z" in log
    for text, built in (
        (log.replace("thread id 2240,", "thread id 0413,"), 0),  # the deadlock reads it
        (log.replace("thread id 2240,", "thread id 0412,"), 0),  # and equal to 412
        (log.replace(".318", ".018"), 1),  # a fraction's leading zero, read by nothing
        (log.replace("08:15:42", "08:15:15"), 1),  # minute = second: another shape, learnt
        (log.replace("08:15:42", "08:42:42"), 1),
    ):
        cache = ShapeCache()
        same((log * 3).encode(), cache)
        data = (log + text + log).encode()
        got = same(data, cache)
        assert len(got) == 3
        before = cache.built
        assert scan_buffer(data, True, cache)[0] == got
        assert cache.built - before == 2 + built, text  # the pieces around it: built
    threads = [t.thread_id for t in got[1].transactions]
    assert threads == [2240, 2245]
    zero = (log + log.replace("thread id 2240,", "thread id 0413,")).encode()
    lazy = LazyDerive(live._logged, live._ATTRS)
    scan_buffer(zero, True, cache, lazy)
    record, stored = lazy.out[-1]
    assert [t.thread_id for t in record.get().transactions] == [413, 2245]
    assert [t["thread_id"] for t in json.loads(stored)["transactions"]] == [413, 2245]


def test_templates_with_percent_signs_and_many_numbers() -> None:
    """The templates splice numbers into text that holds '%' (a LIKE pattern): the stored
    JSON and the records equal the full path's through a storm of varied numbers."""
    log = _mysql57().replace(
        "delete from laravel.jobs",
        "delete from laravel.jobs where payload like '%1234%s%%' and id in (5678, 91011) "
        "and note = '10%'",
    )
    rng = random.Random(31)
    cache = ShapeCache()
    data = "".join(_vary(log, rng, 1.0, wild=False) for _ in range(12)).encode()
    same(data, cache)
    lazy = LazyDerive(live._logged, live._ATTRS)
    scan_buffer(data, False, cache, lazy)
    assert lazy.built >= 10
    queries = [json.loads(text)["transactions"][0]["query"] for _, text in lazy.out]
    assert all("like '%" in q and "%s%%'" in q and "'10%'" in q for q in queries)
    assert len(set(queries)) == len(queries)  # their numbers spliced in, each its own


def test_splice_is_the_format() -> None:
    from dbwatch.parsers.innodb_storm import _picker, _splice

    rng = random.Random(3)
    for n in (1, 2, 5, 40):
        segments = ["".join(rng.choice("ab%s{}\n\"\\") for _ in range(rng.randint(0, 9)))
                    for _ in range(n + 1)]  # fmt: skip
        numbers = [str(rng.randint(100, 10**9)) for _ in range(n)]
        order = [rng.randrange(n) for _ in range(n)]
        build = _splice(segments, _picker(order))
        fmt = "%s".join(s.replace("%", "%%") for s in segments)
        assert build(numbers) == fmt % tuple(numbers[i] for i in order)


def test_a_shape_reads_only_digits_where_its_numbers_were() -> None:
    """A learnt shape reads a piece by splicing the piece's bytes where its numbers were into
    the learnt piece and comparing: a piece with other bytes there (letters, a sign, a
    number one digit shorter and a letter more), of the same length, is no piece of that
    shape (no learnt shape reads it) and reads as the full scan reads it, in the middle of a
    learnt storm."""
    report = _mariadb_report()
    rng = random.Random(31)
    clean = [_vary(report, rng, 1.0, wild=False) for _ in range(8)]
    cache = ShapeCache()
    same("".join(clean).encode(), cache)  # learnt
    shapes = [sh for family in cache.learnt.values() for sh in family]
    assert shapes
    assert any(sh.read(slim_bytes(clean[3].encode())) is not None for sh in shapes)
    trx = re.search(r"TRANSACTION (\d+)", clean[0])
    thread = re.search(r"thread id (\d+)", clean[0])
    assert trx is not None and thread is not None
    t, h = trx.group(1), thread.group(1)
    for old, new in (  # every run of a number's class, or one of them
        (t, "x" * len(t)),
        (t, "-" + t[1:]),
        (t, "a" + t[1:]),
        (h, h[:-1] + "q"),
        (f"thread id {h}", f"thread id {h[:-1]}q"),
        (trx.group(), "TRANSACTION " + "x" * len(t)),
    ):
        odd = clean[0].replace(old, new)
        assert len(odd) == len(clean[0]) and odd != clean[0]
        assert all(sh.read(slim_bytes(odd.encode())) is None for sh in shapes), new
        for at in (0, 3, 8):
            got = same("".join(clean[:at] + [odd] + clean[at:]).encode(), cache)
            assert len(got) >= len(clean)  # the clean ones; the odd one as the parser reads it
    # a non-ASCII digit (U+0663) where an ASCII one was: never read as a number
    trx1 = re.search(r"TRANSACTION (\d+)", clean[1])
    assert trx1 is not None
    odd = clean[1].replace(trx1.group(1), trx1.group(1)[:-1] + "\u0663", 1)
    assert odd != clean[1]
    assert all(sh.read(slim_bytes(odd.encode())) is None for sh in shapes)
    same("".join([clean[0], odd, clean[2]]).encode(), cache)


def test_a_merged_shape_is_learnt_from_its_parent(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A learnt shape's piece with two of its numbers equal (a storm's minute equal to its
    second; here both thread ids) is another shape: learnt from the first one's templates,
    composed and checked at the piece and one twin (two parses, not three), and read as the
    full scan reads it. An equality the parser does read (both trx ids one: the transactions'
    locks are told apart by them) fails that check: learnt from scratch, still the full
    scan's."""
    parses = [0]
    alone = innodb_storm._read_alone

    def counting(piece: bytes, wrapped: bool) -> object:
        parses[0] += 1
        return alone(piece, wrapped)

    monkeypatch.setattr(innodb_storm, "_read_alone", counting)
    log = (FIXTURES / "innodb" / "variants" / "mysql57-laravel-jobs-cut-delete.log").read_text()
    lines = log.splitlines(keepends=True)  # the report alone: one piece, one shape
    start = next(i for i, line in enumerate(lines) if "deadlock detected" in line)
    end = next(i for i, line in enumerate(lines) if "WE ROLL BACK" in line) + 1
    report = "".join(lines[start:end])

    def storm_of(first: int, threads: tuple[int, int] | None, one_trx: bool = False) -> bytes:
        out = []
        for i in range(first, first + 6):
            a, b = threads if threads is not None else (3000 + i, 4000 + i)
            text = report.replace("41722335", f"5{i:07d}")
            text = text.replace("41722336", f"{5 if one_trx else 6}{i:07d}")
            text = text.replace("thread id 2240,", f"thread id {a},")
            out.append(text.replace("thread id 2245,", f"thread id {b},"))
        return "".join(out).encode()

    cache = ShapeCache()
    same(storm_of(0, None), cache)
    assert cache.count == 1
    (first,) = [s for family in cache.learnt.values() for s in family]
    parses[0] = 0
    merged = storm_of(10, (7000, 7000))
    got = scan_buffer(merged, True, cache)
    assert got == full_scan(slim(merged), True)
    assert parses[0] == 2  # the piece and one twin
    shapes = [s for family in cache.learnt.values() for s in family]
    assert len(shapes) == 2 and shapes[0].parent is not None and shapes[0].parent[0] is first
    same(merged + storm_of(20, (7100, 7100)), cache)  # records, stored JSON, lazy: the same
    assert cache.count == 2
    parses[0] = 0
    same(storm_of(30, None, one_trx=True), cache)
    assert cache.count == 3 and parses[0] > 2
    assert [s.parent is None for family in cache.learnt.values() for s in family].count(True) == 2
