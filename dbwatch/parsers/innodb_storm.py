"""A deadlock storm read at the cost of its few shapes: the log tail's scan of an error-log
buffer (errorlog.Scanner over errorlog.slim) with the same result, most reports not parsed.

Each layer falls back to the full scan of the buffer when unsure:

0. Skeletons. Most of a report's bytes are record dumps (' 0: len 8; hex ...; asc ...;;' lines),
   which errorlog.slim drops line by line. A storm's reports print the same lines in the same
   order: a learnt *skeleton* is one regular expression for a whole piece, a line at a time
   (each line a kept line, a dump line with its field number, a blank line or a record-lock
   line, run after run), matched in one pass; it gives the piece's kept lines, which are
   exactly what slim gives (every line is classified by slim's own rules, checked by the
   expression). The buffer is cut before it is slimmed (on the same lines), each piece slimmed
   alone: equal to slimming it whole when no cut line is a dropped or record-lock line, else
   the buffer is slimmed whole as before.
1. Pieces. The buffer is cut at every line holding "eadlock detected" (each report's header
   line, and any query text that says it). A piece is *clean* when a fresh Scanner fed only its
   lines opens a report at its first line, ends with no line held (soft-wrap partial, bare
   timestamp), its report complete (victim line read) and unsuspected, and gives exactly one
   deadlock, not ambiguous, whose victim was printed. The Scanner carries nothing else from one
   report to the next that changes a result (its prefix memo is a cache; the wrapper flag is
   carried here), so a run of clean pieces reads as the concatenation of their own reads. The
   first piece that is not clean is read with everything after it by the full Scanner, from the
   piece before it (whose report that piece could still taint): a spoofed report (report text in
   a query, a report cut short) is read exactly as before.
2. Shapes. A storm repeats a few reports with different numbers. A piece's shape is its text
   with every digit run of value >= 100 (trx/thread/query ids, handles, years, fractions, ids in
   statements) and every two digits after a colon (a timestamp's minutes and seconds) masked,
   their lengths, and which of them are equal. A shape seen once is parsed; seen again it is
   learnt: the piece is parsed, then two twins of it (each class of equal numbers given another
   value of the same length), and the parser's output must be the same function of the numbers
   at all three points (a masked number reaches the output only as itself: text, or an int >=
   100), else the shape is parsed every time. A report of a learnt shape is checked against it
   (its bytes where the learnt piece's numbers were, digits only, spliced into the learnt piece:
   one join and a compare; equal, its digits zeroed are the shape's key, so the last family
   read is tried before that key is computed) and built from the template with its own
   numbers. The twins' numbers never start with 0: a
   report with a leading zero in a number the deadlock reads (int("0413") is 413 where a
   template would splice "0413") is parsed; one in a number nothing reads (a timestamp's
   fraction) is still built. Numbers under 100 elsewhere (transaction numbers, counts, months,
   hours) stay in the shape: every comparison the parser makes with a masked number is
   equality, which the shape keeps; the one rule that weighs numbers (the victim by weight) is
   never templated, only printed victims are.
3. Derive: what the caller makes of each deadlock (the daemon's tail: its DeadlockRecord and
   the JSON the journal stores) is learnt from the same three points, so a storm's report is
   neither parsed nor diagnosed nor serialised. LazyDerive goes further: the object itself is
   built only when asked for, a few of its attributes (templates of their own) given at once.
"""

from __future__ import annotations

import random
import re
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields, is_dataclass
from itertools import accumulate
from operator import itemgetter
from typing import Any, Generic, Protocol, TypeVar

from dbwatch.parsers.deadlock_model import Deadlock
from dbwatch.parsers.errorlog import Scanner, slim_bytes

__all__ = ["Derive", "Deriving", "Later", "LazyDerive", "ShapeCache", "full_scan", "scan_buffer"]

# A digit run worth a value >= 100 (no matter its leading zeros), whole; or two digits after a
# colon (a timestamp's minutes and seconds: the parser checks the month, day and hour, never
# these; they reach the output only as text).
_VAR = re.compile(rb"(?<![0-9])0*[1-9][0-9]{2,}(?![0-9])|(?<=:)[0-9]{2}(?![0-9])")
_VAR_TEXT = re.compile(r"(?<![0-9])0*[1-9][0-9]{2,}(?![0-9])|(?<=:)[0-9]{2}(?![0-9])")
_CUT = b"eadlock detected"
MAX_PIECE = 256 * 1024  # a real report is a few KB once its record dumps are dropped
MAX_SHAPES = 64  # ~50 KB each (template, its three learning points): ~3 MB at most
LEARN_AFTER = 2  # a shape is learnt (3 parses) when seen this often: one-offs are just parsed

# -- layer 1: pieces read alone ------------------------------------------------------------


def _lines(data: bytes) -> list[str]:
    return data.decode("utf-8", "replace").splitlines()


def full_scan(
    lines: Sequence[str], final: bool, wrapped: bool = False
) -> tuple[list[Deadlock], bool]:
    """The tail's scan: deadlocks of the lines, and whether a report is still open at the end
    (the caller re-reads it next time)."""
    sc = Scanner()
    sc.memo.wrapped = wrapped
    out: list[Deadlock] = []
    for line in lines:
        sc.feed(line)
        if sc.out:
            out.extend(sc.flush())
    out.extend(sc.flush(quiet=True))
    if final or sc.block is None:
        out.extend(sc.close())
        return out, False
    return out, True


def _read_alone(piece: bytes, wrapped: bool) -> tuple[Deadlock, bool] | None:
    """A clean piece's deadlock and the wrapper flag after it; None if not clean."""
    lines = _lines(piece)
    if not lines:
        return None
    sc = Scanner()
    sc.memo.wrapped = wrapped
    sc.feed(lines[0])
    if sc.block is None or not sc.structured:  # opened by its header, as after another report
        return None
    out: list[Deadlock] = []
    for line in lines[1:]:
        sc.feed(line)
        if sc.out:
            out.extend(sc.flush())
    blk = sc.block
    if sc.partial is not None or sc.bare_ts is not None:
        return None
    if blk is not None and (not blk.state.done or blk.state.problems):
        return None
    out.extend(sc.flush(quiet=True))
    if len(out) != 1 or sc.block is not None or sc.pending is not None:
        return None
    dl = out[0]
    if dl.ambiguous or dl.truncated or dl.victim_source not in ("printed", "too-deep"):
        return None
    return dl, sc.memo.wrapped


def _inert(head: bytes, wrapped: bool) -> bool | None:
    """Lines before the first cut: the wrapper flag after them if they leave the Scanner as a
    fresh one (nothing found, nothing open or held), else None."""
    sc = Scanner()
    sc.memo.wrapped = wrapped
    for line in _lines(head):
        sc.feed(line)
        if sc.out or sc.pending is not None or sc.block is not None:
            return None
    if sc.partial is not None or sc.bare_ts is not None:
        return None
    return sc.memo.wrapped


def _cuts(data: bytes) -> list[int]:
    """Start of every line holding the header's words."""
    out: list[int] = []
    find, rfind = data.find, data.rfind
    k = find(_CUT)
    while k >= 0:
        start = rfind(b"\n", 0, k) + 1
        out.append(start)
        nl = find(b"\n", k)
        if nl < 0:
            break
        k = find(_CUT, nl)
    return out


# -- layer 0: skeletons ----------------------------------------------------------------------

# errorlog.slim's rules, line by line: a dump line (dropped), a blank line (dropped, as every
# line here ends with a newline), a record-lock line (kept, the first of a run only), any other
# line (kept)
_DUMP_START = re.compile(rb" [0-9]{1,5}: ")
_BLANK = re.compile(rb"[ \t\r]*")
_RECORD = b"Record lock, heap no "
# the rest of a line, its newline included: `.` (no DOTALL) is any byte but a newline, which
# sre skips in a tight loop of its own (~30 % quicker over 24 KB of record dumps than the
# class `[^\n]`, which matches the same bytes)
_REST = rb".*+\n"
_KEPT_LINE = rb"(?! [0-9]{1,5}: |[ \t\r]*\n|Record lock, heap no )" + _REST
_RECORD_LINE = re.escape(_RECORD) + _REST
_BLANK_LINE = rb"[ \t\r]*+\n"
# a cut line slimmed alone as in the whole buffer: kept, and not part of a record-lock run
_CUT_LINE = re.compile(rb"(?! [0-9]{1,5}: |Record lock, heap no )")
MAX_SKELETONS = 32  # ~2-5 KB each compiled
SKELETON_TRIES = 4  # the most recently used first
SKELETONS_PER_FAMILY = 4  # learnt per family of shapes (a storm's row counts)


def _tokens(piece: bytes) -> list[tuple[str, bytes]]:
    """Each line of a piece (ending with a newline) as slim classifies it: K kept (with its
    first byte), R the first record-lock line of a run (kept), r another (dropped), D a dump
    (with its field number's text), B blank."""
    out: list[tuple[str, bytes]] = []
    run = False
    for line in piece.split(b"\n")[:-1]:
        m = _DUMP_START.match(line)
        if m is not None:
            out.append(("D", line[: m.end()]))
        elif _BLANK.fullmatch(line):
            out.append(("B", b""))
        elif line.startswith(_RECORD):
            out.append(("r" if run else "R", b""))
            run = True
        else:
            out.append(("K", line[:1]))
            run = False
    return out


def _kept_line(first: bytes) -> bytes:
    """A kept line that starts with this byte, as the learnt one did: a byte that starts no
    dump, blank or record-lock line says so alone (a short expression: quick to compile and
    to match); else the rules in full."""
    if first.isdigit():  # a year, a time: its value may change, a digit it stays
        return rb"[0-9]" + _REST
    if first and first not in b" \t\rR":
        return re.escape(first) + _REST
    return _KEPT_LINE


def _dropped(tokens: Sequence[tuple[str, bytes]]) -> bytes:
    return b"".join(re.escape(t) + _REST if c == "D" else _BLANK_LINE for c, t in tokens)


def _skeleton_source(tokens: list[tuple[str, bytes]]) -> bytes:
    """The expression: kept lines in groups (one per run of them), a run of repeated
    record-lock blocks (a dropped record-lock line, its dumps, blanks) as one repeat."""
    parts: list[bytes] = []
    open_group = False
    i = 0
    while i < len(tokens):
        c = tokens[i][0]
        if c in "KR":
            if not open_group:
                parts.append(b"(")
                open_group = True
            parts.append(_kept_line(tokens[i][1]) if c == "K" else _RECORD_LINE)
            i += 1
            continue
        if open_group:
            parts.append(b")")
            open_group = False
        if c != "r":
            parts.append(_dropped(tokens[i : i + 1]))
            i += 1
            continue
        j = i + 1
        while j < len(tokens) and tokens[j][0] in "DB":
            j += 1
        block = tokens[i:j]
        n = 1
        while tokens[i + n * len(block) : i + (n + 1) * len(block)] == block:
            n += 1
        body = _RECORD_LINE + _dropped(block[1:])
        parts.append(body if n == 1 else b"(?:%s){%d}" % (body, n))
        i += n * len(block)
    if open_group:
        parts.append(b")")
    return b"".join(parts)


class _Skeleton:
    __slots__ = ("family", "pattern")

    def __init__(self, pattern: re.Pattern[bytes], family: bytes) -> None:
        self.pattern = pattern
        self.family = family

    def slim(self, piece: bytes) -> bytes | None:
        """slim_bytes(piece) if the piece has this skeleton, else None."""
        m = self.pattern.fullmatch(piece)
        return None if m is None else b"".join(m.groups())


def _learn_skeleton(piece: bytes, slimmed: bytes, family: bytes) -> _Skeleton | None:
    tokens = _tokens(piece)
    if not tokens or tokens[0][0] != "K":
        return None
    try:
        sk = _Skeleton(re.compile(_skeleton_source(tokens)), family)
    except (re.error, OverflowError, RecursionError):
        return None
    return sk if sk.slim(piece) == slimmed else None  # always; checked, never assumed


class _Uncut(Exception):
    """A cut line slim drops or joins to a record-lock run: the buffer is slimmed whole."""


def _slim_cut(data: bytes, cache: ShapeCache) -> tuple[bytes, Iterator[bytes]] | None:
    """slim_bytes(data) cut as _cuts cuts it: the part before the first cut and each piece,
    each slimmed alone (by a learnt skeleton where one fits, which also says where the piece
    ends), one after the other as they are read (a skeleton learnt from a piece serves the
    next). None when cutting first could differ (no cut, a last line without its newline);
    the pieces raise _Uncut at a cut on a line slim drops or on a record-lock line (which slim
    could join to the run before)."""
    if not data.endswith(b"\n"):
        return None
    k = data.find(_CUT)
    if k < 0:
        return None
    start = data.rfind(b"\n", 0, k) + 1
    head = slim_bytes(data[:start]) if start else b""
    return head, _slimmed_pieces(data, start, cache)


def _slimmed_pieces(data: bytes, start: int, cache: ShapeCache) -> Iterator[bytes]:
    end = len(data)
    while start < end:
        if _CUT_LINE.match(data, start) is None:
            raise _Uncut
        got = cache.skim(data, start)
        if got is not None:
            slimmed, stop = got
            # the piece is the skeleton's: no other line it keeps holds the header's words,
            # and the line after it does (or the buffer ends)
            if slimmed.find(_CUT, slimmed.find(b"\n")) >= 0 or (
                stop < end and data.find(_CUT, stop, data.find(b"\n", stop)) < 0
            ):
                got = None
        if got is None:
            k = data.find(_CUT, data.find(b"\n", start))
            stop = end if k < 0 else data.rfind(b"\n", 0, k) + 1
            slimmed = cache.slim_piece(data[start:stop])
        yield slimmed
        start = stop


# -- layer 2: shapes -------------------------------------------------------------------------

Build = Callable[[Sequence[str]], object]
# the builder, the classes it reads, and whether what it builds holds a mutable container (a
# dict or list: then built afresh every time, never remembered or shared)
Compiled = tuple[Build, frozenset[int], bool]
_DIGITS = bytes.maketrans(b"123456789", b"000000000")


def _tuple_getter(items: Sequence[Any]) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
    """itemgetter that always gives a tuple (of one item too)."""
    if len(items) == 1:
        only = items[0]
        return lambda t: (t[only],)
    return itemgetter(*items)


def _const(v: object) -> Build:
    return lambda t: v


def _memo(build: Build, deps: frozenset[int]) -> Build:
    """build, remembering its last result: a storm changes a few numbers (trx, thread, query
    ids), the rest (names, pages, years) are the same report after report. Only for immutable
    results, which are then shared."""
    pick = _picker(sorted(deps))
    last: list[tuple[tuple[str, ...], object]] = [((), None)]

    def memo(t: Sequence[str]) -> object:
        key = pick(t)
        was, value = last[0]  # one read of one cell: threads see a pair they stored
        if key == was:
            return value
        value = build(t)
        last[0] = (key, value)
        return value

    return memo


def _compile(v: object, cls: dict[str, int]) -> Compiled | None:
    """How to build v from the classes' numbers; None: v is the same immutable value for every
    report (shared)."""
    if isinstance(v, str):
        return _compile_str(v, cls)
    if isinstance(v, int) and not isinstance(v, bool):
        c = cls.get(str(v)) if v >= 100 else None  # a clock's two digits reach text only
        if c is None:
            return None
        return (lambda t: int(t[c])), frozenset((c,)), False
    if v is None or isinstance(v, (bool, float)):
        return None
    if isinstance(v, (tuple, list)):
        return _compile_seq(v, cls)
    if isinstance(v, dict):
        return _compile_dict(v, cls)
    if isinstance(v, frozenset):
        if any(_compile(x, cls) is not None for x in v):
            raise _Opaque("a number inside a set")
        return None
    if is_dataclass(v) and not isinstance(v, type) and hasattr(v, "__dict__"):
        return _compile_obj(v, cls)
    raise _Opaque(type(v).__name__)  # unknown: never shared, never templated


class _Opaque(Exception):
    """A value the templates cannot build: the shape is parsed every time."""


def _parts(
    values: Sequence[object], cls: dict[str, int]
) -> tuple[list[Build], frozenset[int], bool] | None:
    """Builders of each value (constants as they are), the classes read, any mutable; None if
    all are shared constants."""
    subs = [_compile(x, cls) for x in values]
    if all(s is None for s in subs):
        return None
    parts = [s[0] if s is not None else _const(x) for s, x in zip(subs, values, strict=True)]
    deps = frozenset().union(*(s[1] for s in subs if s is not None))
    return parts, deps, any(s[2] for s in subs if s is not None)


def _compile_seq(v: tuple[object, ...] | list[object], cls: dict[str, int]) -> Compiled | None:
    got = _parts(v, cls)
    if isinstance(v, list):
        parts = got[0] if got is not None else [_const(x) for x in v]
        deps = got[1] if got is not None else frozenset()
        return (lambda t: [p(t) for p in parts]), deps, True
    if got is None:
        return None
    parts, deps, mutable = got
    build: Build = lambda t: tuple([p(t) for p in parts])
    return (build if mutable else _memo(build, deps)), deps, mutable


def _compile_dict(v: dict[object, object], cls: dict[str, int]) -> Compiled:
    if any(_compile(k, cls) is not None for k in v):
        raise _Opaque("a number in a key")
    keys = list(v)
    got = _parts([v[k] for k in keys], cls)
    parts = got[0] if got is not None else [_const(v[k]) for k in keys]
    deps = got[1] if got is not None else frozenset()
    pairs = list(zip(keys, parts, strict=True))
    return (lambda t: {k: p(t) for k, p in pairs}), deps, True


def _compile_str(v: str, cls: dict[str, int]) -> Compiled | None:
    segments: list[str] = []  # the text between the numbers
    idx: list[int] = []
    last = 0
    for m in _VAR_TEXT.finditer(v):
        c = cls.get(m.group())
        if c is None:
            continue
        segments.append(v[last : m.start()])
        idx.append(c)
        last = m.end()
    if not idx:
        return None
    deps = frozenset(idx)
    if len(idx) == 1 and segments[0] == "" and last == len(v):
        only = idx[0]
        return (lambda t: t[only]), deps, False
    segments.append(v[last:])
    return _splice(segments, _picker(idx)), deps, False


def _splice(segments: list[str], pick: Callable[[Sequence[str]], tuple[str, ...]]) -> Build:
    """segments[0] + pick(t)[0] + segments[1] + ... + segments[-1], as a join of a list with
    the numbers spliced in: C copies, where a format (%) scans every character of its text
    (the journal's stored JSON, ~3 KB with ~20 numbers: ~1 µs instead of ~5)."""
    template: list[str] = [""] * (2 * len(segments) - 1)
    template[0::2] = segments

    def build(t: Sequence[str]) -> str:
        buf = template[:]
        buf[1::2] = pick(t)
        return "".join(buf)

    return build


def _picker(idx: list[int]) -> Callable[[Sequence[str]], tuple[str, ...]]:
    """itemgetter that always gives a tuple."""
    if len(idx) == 1:
        only = idx[0]
        return lambda t: (t[only],)
    return itemgetter(*idx)


def _compile_obj(v: object, cls: dict[str, int]) -> Compiled | None:
    subs: list[tuple[str, Build]] = []
    deps: frozenset[int] = frozenset()
    mutable = False
    for f in fields(v):  # type: ignore[arg-type]
        s = _compile(getattr(v, f.name), cls)
        if s is not None:
            subs.append((f.name, s[0]))
            deps |= s[1]
            mutable = mutable or s[2]
    if not subs:
        return None
    kind = type(v)
    base = dict(vars(v))

    def build(t: Sequence[str]) -> object:
        new = object.__new__(kind)  # a frozen dataclass, filled as its __init__ would
        d = new.__dict__
        d.update(base)
        for name, s in subs:
            d[name] = s(t)
        return new

    return (build if mutable else _memo(build, deps)), deps, mutable


class _Shape:
    """A learnt shape: the piece as a format of its numbers (one per class of equal runs), and
    how to build its deadlock from them."""

    __slots__ = (
        "big", "build", "deps", "derived", "dl", "firsts", "heads", "nclasses", "parent",
        "pick", "piece", "points", "read_heads", "size", "spans", "spliced", "split",
        "wrapped_in", "wrapped_out",
    )  # fmt: skip

    def __init__(
        self, piece: bytes, spans: list[tuple[int, int]], firsts: tuple[int, ...],
        build: Build | None, dl: Deadlock, out: bool, deps: frozenset[int],
    ) -> None:  # fmt: skip
        reps = _class_reps(firsts)

        # A piece of this shape is the learnt piece with each masked run (a digit run) given
        # its class's number, of the same length: the learnt piece's bytes between the runs
        # (segments), the classes' numbers read where the learnt piece has its classes' first
        # runs, spliced back in at every run and the result compared with the piece (C copies
        # and one compare). Equal, the piece's digits zeroed equal the learnt piece's
        # (ShapeCache's key): no translate needed to find or check it.
        segments: list[bytes] = []
        last = 0
        for a, b in spans:
            segments.append(piece[last:a])
            last = b
        segments.append(piece[last:])
        self.piece = piece
        self.size = len(piece)
        self.nclasses = len(reps)
        self.big = [k for k, i in enumerate(reps) if spans[i][1] - spans[i][0] > 2]
        self.pick = _tuple_getter([slice(*spans[i]) for i in reps])
        # the classes' numbers as one text (ASCII digits), then each class's
        ends = list(accumulate(spans[i][1] - spans[i][0] for i in reps))
        self.split = _tuple_getter([slice(e - (spans[i][1] - spans[i][0]), e)
                                    for e, i in zip(ends, reps, strict=True)])  # fmt: skip
        # the first digit of each class of 3+ digits (a clock's two digits are never one: the
        # other classes are a timestamp's minutes and seconds, two digits each), as a byte
        self.heads = _heads([spans[reps[k]][0] for k in self.big])
        # ... and of those the deadlock reads (build's classes): a template splices a
        # number's text where the parser may have read its value (a thread id: int("0413")
        # prints 413 in the record and the stored JSON); learnt from numbers without leading
        # zeros (the twins' first digit is never 0), it is not used for one with
        self.read_heads = _heads([spans[reps[k]][0] for k in self.big if k in deps])
        cls = {f: k for k, f in enumerate(reps)}
        expand = _tuple_getter([cls[f] for f in firsts])  # every run: its class's number
        # the learnt piece with every run given its class's number
        self.spliced: Callable[[Sequence[bytes]], bytes] = (
            _splice_bytes(segments, expand) if spans else (lambda t: piece)
        )
        self.build = build
        self.dl = dl  # the deadlock when no number reaches it (build is None)
        self.wrapped_out = out
        self.wrapped_in = False  # the wrapper flag it was learnt under
        # the learning points (class numbers, deadlock): the piece and its twins
        self.points: tuple[tuple[list[str], Deadlock], ...] = ()
        self.derived: dict[object, Any] = {}  # Derive's key -> its templates (None: none)
        self.spans = spans
        self.firsts = firsts
        self.deps = deps
        # a shape learnt from another of its family (_merged): that shape and how its classes'
        # numbers are this one's (its templates are the parent's, composed)
        self.parent: tuple[_Shape, Callable[[Sequence[str]], tuple[str, ...]]] | None = None

    def read(self, piece: bytes) -> _Got | None:
        """What a piece of this shape reads as, its deadlock not built yet (None); None if it
        is not this shape (other small numbers, or numbers equal where the learnt ones were
        not). Read, its digits zeroed equal the learnt piece's (ShapeCache.read's key)."""
        if not self.nclasses:
            if piece != self.piece:
                return None
            return None, self.wrapped_out, self, []
        if len(piece) != self.size:
            return None
        numbers: tuple[bytes, ...] = self.pick(piece)
        joined = b"".join(numbers)
        if not joined.isdigit() or self.spliced(numbers) != piece:
            return None
        reps: tuple[str, ...] = self.split(joined.decode("ascii"))
        if _ZERO not in self.heads(piece):
            # No number of 3+ digits has a leading zero: each is >= 100 (masked as learnt) and
            # equal to another only as the same text; a clock's two digits are < 100 and two
            # clocks' are equal only as the same text: the texts unequal say the numbers are.
            if len(set(reps)) != self.nclasses:  # numbers unequal
                return None
            return None, self.wrapped_out, self, list(reps)
        if _ZERO in self.read_heads(piece):  # a leading zero the deadlock reads: parsed
            return None
        ints = list(map(int, reps))
        if len(set(ints)) != self.nclasses:  # numbers unequal (so their texts too)
            return None
        if self.big and min([ints[k] for k in self.big]) < 100:
            return None  # not a number the shape masks: another shape
        return None, self.wrapped_out, self, list(reps)

    def deadlock(self, texts: Sequence[str]) -> Deadlock:
        """The deadlock of a piece of this shape with these numbers."""
        if self.build is None:
            return self.dl
        dl = self.build(texts)
        assert isinstance(dl, Deadlock)
        return dl


_ZERO = ord("0")


def _heads(offsets: list[int]) -> Callable[[bytes], tuple[int, ...]]:
    """The bytes at these offsets of a piece (a tuple; () for none)."""
    return _tuple_getter(offsets) if offsets else lambda d: ()


def _splice_bytes(
    segments: list[bytes], pick: Callable[[Sequence[bytes]], tuple[bytes, ...]]
) -> Callable[[Sequence[bytes]], bytes]:
    """_splice's bytes: segments[0] + pick(t)[0] + segments[1] + ... + segments[-1]."""
    template: list[bytes] = [b""] * (2 * len(segments) - 1)
    template[0::2] = segments

    def build(t: Sequence[bytes]) -> bytes:
        buf = template[:]
        buf[1::2] = pick(t)
        return b"".join(buf)

    return build


# what a piece reads as: its deadlock, the wrapper flag after it, the learnt shape it was
# built from (if any) and that shape's numbers in this piece
# (the deadlock is None when the shape has it built on demand: _Shape.deadlock)
_Got = tuple[Deadlock | None, bool, "_Shape | None", list[str]]


def _class_reps(firsts: tuple[int, ...]) -> list[int]:
    return [i for i, f in enumerate(firsts) if f == i]


def _classes(runs: list[bytes]) -> tuple[int, ...] | None:
    """The first index equal to each run; None when two unequal runs are the same number."""
    first: dict[bytes, int] = {}
    out = tuple(first.setdefault(r, i) for i, r in enumerate(runs))
    if len(set(map(int, first))) != len(first):
        return None
    return out


def _twin(
    piece: bytes, runs: list[bytes], firsts: tuple[int, ...], rng: random.Random
) -> tuple[bytes, list[str]] | None:
    """The piece with each class of equal runs given another number of the same length."""
    used = set(runs)
    value: dict[int, bytes] = {}
    for i in _class_reps(firsts):
        r = runs[i]
        for _ in range(200):
            if len(r) == 2:  # a clock's: a minute or second
                v = b"%d" % rng.randint(10, 59)
            else:  # a number of the same length, its first digit not 0
                v = b"%d" % rng.randrange(10 ** (len(r) - 1), 10 ** len(r))
            if v not in used:
                break
        else:
            return None  # too many clock classes to give each another value
        used.add(v)
        value[i] = v
    it = iter(range(len(runs)))
    twin = _VAR.sub(lambda m: value[firsts[next(it)]], piece)
    return twin, [value[i].decode() for i in _class_reps(firsts)]


def _learn(piece: bytes, wrapped: bool) -> _Shape | None:
    """Parse the piece and two twins; a shape if the output is the same function of the
    numbers in all three."""
    read = _read_alone(piece, wrapped)
    if read is None:
        return None
    dl, out = read
    found = list(_VAR.finditer(piece))
    runs = [m.group() for m in found]
    spans = [m.span() for m in found]
    firsts = _classes(runs)
    if firsts is None:
        return None
    if not runs:
        shape = _Shape(piece, spans, firsts, None, dl, out, frozenset())
        shape.points = (([], dl),)
        return shape
    texts = [runs[i].decode("ascii") for i in _class_reps(firsts)]
    rng = random.Random(len(piece) * 7919 + len(runs))
    one, two = _twin(piece, runs, firsts, rng), _twin(piece, runs, firsts, rng)
    if one is None or two is None:
        return None
    (twin1, u1), (twin2, u2) = one, two
    r1, r2 = _read_alone(twin1, wrapped), _read_alone(twin2, wrapped)
    if r1 is None or r2 is None or r1[1] != out or r2[1] != out:
        return None
    try:
        compiled = _compile(r1[0], {u: c for c, u in enumerate(u1)})
    except _Opaque:
        return None
    if compiled is not None and compiled[2]:
        return None  # the parser's model holds no dict or list: something else changed
    build = compiled[0] if compiled is not None else None
    if build is None:
        if not dl == r1[0] == r2[0]:
            return None
    elif build(texts) != dl or build(u2) != r2[0] or build(u1) != r1[0] or build(texts) != dl:
        return None
    deps = compiled[1] if compiled is not None else frozenset()
    shape = _Shape(piece, spans, firsts, build, dl, out, deps)
    shape.points = ((texts, dl), (u1, r1[0]), (u2, r2[0]))
    return shape


def _merged(family: Sequence[_Shape], piece: bytes, wrapped: bool) -> _Shape | None:
    """A piece of a learnt family whose numbers are equal where a shape of it has them
    unequal (a storm's minute equal to its second, two ids equal): that shape's template with
    the merged classes given one number, kept if the piece and a twin of it parse as the
    template builds them. Learning it from scratch would parse three points and compile the
    templates again; this parses two and composes: the same two independent checks of a fixed
    template (a fresh one is compiled from one twin and checked at the piece and the other)."""
    for parent in family:
        if parent.wrapped_in != wrapped or parent.size != len(piece) or not parent.spans:
            continue
        found = list(_VAR.finditer(piece))
        spans = [m.span() for m in found]
        if spans != parent.spans:
            continue  # masked elsewhere (a leading zero, a value under 100)
        runs = [m.group() for m in found]
        firsts = _classes(runs)
        if firsts is None or firsts == parent.firsts:
            continue
        if any(firsts[parent.firsts[j]] != firsts[j] for j in range(len(runs))):
            continue  # not only merged: a class of the parent split
        reps = _class_reps(firsts)
        index = {r: c for c, r in enumerate(reps)}
        # the parent's class k is this piece's class which[k]
        which = [index[firsts[r]] for r in _class_reps(parent.firsts)]
        remap = _tuple_getter(which)
        read = _read_alone(piece, wrapped)
        if read is None:
            return None
        dl, out = read
        texts = [runs[i].decode("ascii") for i in reps]
        twin = _twin(piece, runs, firsts, random.Random(len(piece) * 7919 + len(runs)))
        if twin is None:
            return None
        twin_piece, numbers = twin
        got = _read_alone(twin_piece, wrapped)
        if got is None or got[1] != out:
            return None
        parent_build = parent.build
        build: Build | None = None
        if parent_build is None:
            if not dl == got[0] == parent.dl:
                return None
        else:
            build = _composed(parent_build, remap)
            if build(texts) != dl or build(numbers) != got[0]:
                return None
        deps = frozenset(which[k] for k in parent.deps)
        shape = _Shape(piece, spans, firsts, build, dl, out, deps)
        shape.points = ((texts, dl), (numbers, got[0]))
        shape.parent = (parent, remap)
        return shape
    return None


def _composed(build: Build, remap: Callable[[Sequence[str]], tuple[str, ...]]) -> Build:
    """build of the parent's numbers, given a merged shape's (_merged)."""
    return lambda t: build(remap(t))


def _alone(piece: bytes, wrapped: bool) -> _Got | None:
    read = _read_alone(piece, wrapped)
    return None if read is None else (read[0], read[1], None, [])


_NOT_CLEAN = "not clean"  # a shape whose piece was not clean: read by the full scan
_PARSE = "parse"  # clean, but its numbers reach the output otherwise: each piece parsed
SHAPES_PER_KEY = 8  # shapes with digits in the same places (a storm's seconds, counts)


class ShapeCache:
    """Learnt shapes, bounded (`size` shapes, 4 × `size` keys seen; oldest first out); shared
    by every log tailed in the process.
    `learnt`: by the piece with all its digits zeroed (cheap), the shapes tried in turn;
    `seen`: by the exact shape (numbers >= 100 masked), how often a shape not learnt yet was
    seen, or that it cannot be learnt."""

    def __init__(self, size: int = MAX_SHAPES) -> None:
        self.size = size
        self.learnt: dict[bytes, list[_Shape]] = {}
        self.seen: dict[tuple[bytes, tuple[int, ...], bool], str | int] = {}
        self.lock = threading.Lock()
        self.built = 0  # deadlocks built from a learnt shape (a figure for tests and benches)
        self.count = 0  # learnt shapes in all
        # the family of the last piece read and its key (a storm's next piece: no hash);
        # forgotten whenever a family changes
        self.last: tuple[bytes, Sequence[_Shape]] = (b"", ())
        self.skeletons: list[_Skeleton] = []  # most recently used first
        self.skeleton_counts: dict[bytes, int] = {}  # learnt per family
        self.skimmed = 0  # pieces slimmed by a skeleton (a figure for tests and benches)

    def skim(self, data: bytes, start: int) -> tuple[bytes, int] | None:
        """The kept lines of the piece at data[start:] by a learnt skeleton (what slim_bytes
        gives of them) and where the skeleton ends; None if none fits."""
        for i, sk in enumerate(self.skeletons[:SKELETON_TRIES]):
            m = sk.pattern.match(data, start)
            if m is not None:
                self.skimmed += 1
                if i:
                    with self.lock:
                        if sk in self.skeletons:
                            self.skeletons.remove(sk)
                            self.skeletons.insert(0, sk)
                return b"".join(m.groups()), m.end()
        return None

    def slim_piece(self, piece: bytes) -> bytes:
        """slim_bytes(piece) of a piece that starts at a cut line and ends with a newline;
        its skeleton learnt when its shape's family was (a storm)."""
        slimmed = slim_bytes(piece)
        # learnt for a storm only: a piece whose shape's family was learnt (seen at least
        # twice), a few per family
        family = slimmed.translate(_DIGITS)
        if family in self.learnt and self.skeleton_counts.get(family, 0) < SKELETONS_PER_FAMILY:
            learnt = _learn_skeleton(piece, slimmed, family)
            with self.lock:
                n = self.skeleton_counts.pop(family, 0) + 1
                while len(self.skeleton_counts) >= 4 * self.size:
                    self.skeleton_counts.pop(next(iter(self.skeleton_counts)), None)
                self.skeleton_counts[family] = n
                if learnt is not None:
                    self.skeletons = [learnt, *self.skeletons][:MAX_SKELETONS]
        return slimmed

    def read(self, piece: bytes, wrapped: bool) -> _Got | None:
        """What a piece reads as; None if it is not clean."""
        if len(piece) > MAX_PIECE:
            return _alone(piece, wrapped)
        last_key, last_family = self.last  # a storm: the family of the piece before
        # tried first as it is: a shape reads only a piece whose digits zeroed are its key, so
        # its shapes read a piece (in their order) exactly when they would after the translate
        for i, shape in enumerate(last_family):
            if shape.wrapped_in == wrapped:
                got = shape.read(piece)
                if got is not None:
                    self.built += 1
                    if i:
                        self._first(last_key, last_family, i)
                    return got
        zeroed = piece.translate(_DIGITS)
        family = last_family if zeroed == last_key else self.learnt.get(zeroed, ())
        for i, shape in enumerate(() if family is last_family else family):  # read above
            if shape.wrapped_in == wrapped:
                got = shape.read(piece)
                if got is not None:
                    self.built += 1
                    self.last = (zeroed, family)
                    if i:
                        self._first(zeroed, family, i)
                    return got
        runs = _VAR.findall(piece)
        key = (_VAR.sub(b"\0", piece), tuple(map(len, runs)), wrapped)
        got_seen = self.seen.get(key) if b"\0" not in piece else _PARSE
        if got_seen == _NOT_CLEAN:
            return None
        if got_seen == _PARSE:
            return _alone(piece, wrapped)
        seen = (got_seen if isinstance(got_seen, int) else 0) + 1
        if seen < LEARN_AFTER and not family:  # a known family (other small numbers): learnt now
            read = _alone(piece, wrapped)
            self._see(key, seen if read is not None else _NOT_CLEAN)
            return read
        learnt = _merged(family, piece, wrapped) if family else None
        if learnt is None:
            learnt = _learn(piece, wrapped)
        if learnt is not None:
            learnt.wrapped_in = wrapped
            got = learnt.read(piece)
            if got is not None:  # its own piece: always
                self._keep(zeroed, learnt)
                with self.lock:
                    self.seen.pop(key, None)
                return got
        read = _alone(piece, wrapped)
        self._see(key, _PARSE if read is not None else _NOT_CLEAN)
        return read

    def _first(self, key: bytes, family: Sequence[_Shape], i: int) -> None:
        """The last shape found is tried first (a family's shapes, by use)."""
        with self.lock:
            if self.learnt.get(key) is family:
                self.learnt[key] = [family[i], *family[:i], *family[i + 1 :]]
            self.last = (b"", ())

    def _see(self, key: tuple[bytes, tuple[int, ...], bool], value: str | int) -> None:
        with self.lock:
            self.seen.pop(key, None)
            while len(self.seen) >= 4 * self.size:
                self.seen.pop(next(iter(self.seen)), None)
            self.seen[key] = value

    def _keep(self, zeroed: bytes, shape: _Shape) -> None:
        """Learnt shapes are bounded in all (`size`), the oldest key's first out."""
        with self.lock:
            self.last = (b"", ())
            old = self.learnt.pop(zeroed, [])
            shapes = [shape, *old][:SHAPES_PER_KEY]
            self.count += len(shapes) - len(old)
            while self.learnt and self.count + 1 > self.size:
                self.count -= len(self.learnt.pop(next(iter(self.learnt))))
            self.learnt[zeroed] = shapes


SHAPES = ShapeCache()


R = TypeVar("R")


class Derive(Generic[R]):
    """What the caller makes of each deadlock the scan returns, in order (`out`): `fn(dl)` gives
    an object (the log tail: the deadlock's record) and a text (its stored JSON). For a
    deadlock built from a learnt shape both are built from templates — the object's
    dataclasses, tuples, text and numbers; its dicts and lists afresh — when, at the shape's
    three learning points, that gives exactly what fn gives."""

    def __init__(self, fn: Callable[[Deadlock], tuple[R, str]]) -> None:
        self.fn = fn
        self.out: list[tuple[R, str]] = []
        self.built = 0

    def has(self, shape: _Shape) -> bool:
        """Whether what fn makes of this shape's deadlocks is built from templates."""
        if self.fn not in shape.derived:
            shape.derived[self.fn] = _learn_derived(shape, self.fn)
        return shape.derived[self.fn] is not None

    def add(self, dl: Deadlock, shape: _Shape | None = None, texts: Sequence[str] = ()) -> None:
        if shape is not None and self.has(shape):
            self.add_built(shape, texts)
        else:
            self.out.append(self.fn(dl))

    def add_built(self, shape: _Shape, texts: Sequence[str]) -> None:
        tpl = shape.derived[self.fn]
        assert tpl is not None
        obj, stored = tpl[0](texts), tpl[1](texts)
        assert isinstance(stored, str)
        self.out.append((obj, stored))  # built as fn's R, checked at the learning points
        self.built += 1


class Deriving(Protocol):
    """What the scan hands each deadlock to (Derive, LazyDerive)."""

    out: list[Any]

    def has(self, shape: _Shape) -> bool: ...

    def add(self, dl: Deadlock, shape: _Shape | None = None, texts: Sequence[str] = ()) -> None: ...

    def add_built(self, shape: _Shape, texts: Sequence[str]) -> None: ...


_UNSEEN = object()  # no templates tried yet (None: tried, none)


class Later(Generic[R]):
    """fn's object of one deadlock, built when first asked for (`get`), and the values of the
    LazyDerive's attrs on it (`values`), known at once."""

    __slots__ = ("_build", "_obj", "_texts", "values")

    def __init__(
        self, obj: R | None, build: Build | None, texts: Sequence[str], values: tuple[object, ...]
    ) -> None:
        self._obj = obj
        self._build = build
        self._texts = texts
        self.values = values

    def get(self) -> R:
        if self._obj is None:
            assert self._build is not None
            self._obj = self._build(self._texts)  # type: ignore[assignment]  # fn's R, checked
        assert self._obj is not None
        return self._obj


class LazyDerive(Generic[R]):
    """Derive, its objects built only when asked for: `out` holds (Later, text); a few
    attributes of each object (`attrs`, functions of it: the log tail's key, time, schemas,
    pattern) are given at once, from templates of their own for a learnt shape's deadlocks,
    learnt from the same three points and checked like the object's. `attrs` is a key of the
    shapes' templates: pass the same tuple every time."""

    def __init__(
        self,
        fn: Callable[[Deadlock], tuple[R, str]],
        attrs: tuple[Callable[[R], object], ...],
        once: Callable[[Deadlock], tuple[R, str]] | None = None,
    ) -> None:
        self.fn = fn
        self.attrs = attrs
        # what a deadlock built the full way (no template: a one-off, the first of a shape)
        # is given: fn's object with a text that may differ from fn's where fn's costs more
        # than it saves once (the log tail: the journal's full row, not its checked compact one)
        self.once = fn if once is None else once
        # the shapes' key for these templates: one object per (fn, attrs), hashed at once
        self.key = _LAZY_KEYS.setdefault((fn, attrs), object())
        self.out: list[tuple[Later[R], str]] = []
        self.built = 0

    def has(self, shape: _Shape) -> bool:
        got = shape.derived.get(self.key, _UNSEEN)
        if got is _UNSEEN:
            got = shape.derived[self.key] = _learn_lazy(shape, self.fn, self.attrs)
        return got is not None

    def add(self, dl: Deadlock, shape: _Shape | None = None, texts: Sequence[str] = ()) -> None:
        if shape is not None and self.has(shape):
            self.add_built(shape, texts)
            return
        obj, text = self.once(dl)
        self.out.append((Later(obj, None, (), tuple([a(obj) for a in self.attrs])), text))

    def add_built(self, shape: _Shape, texts: Sequence[str]) -> None:
        obj, text, attrs = shape.derived[self.key]
        stored = text(texts)
        assert isinstance(stored, str)
        self.out.append((Later(None, obj, texts, tuple([a(texts) for a in attrs])), stored))
        self.built += 1


_LAZY_KEYS: dict[tuple[object, tuple[object, ...]], object] = {}


def _learn_lazy(
    shape: _Shape, fn: Callable[[Deadlock], tuple[R, str]], attrs: tuple[Callable[[R], object], ...]
) -> tuple[Build, Build, tuple[Build, ...]] | None:
    if shape.parent is not None:  # the parent's templates, composed, checked at this shape's points
        parent, remap = shape.parent
        key = _LAZY_KEYS[(fn, attrs)]
        got = parent.derived.get(key, _UNSEEN)
        if got is _UNSEEN:
            got = parent.derived[key] = _learn_lazy(parent, fn, attrs)
        if got is None:
            return None
        obj, text, parts = got
        composed = (
            _composed(obj, remap),
            _composed(text, remap),
            tuple(_composed(b, remap) for b in parts),
        )
        return composed if _fits(shape, fn, composed[0], composed[1], attrs, composed[2]) else None
    made = _made(shape, fn)
    if made is None:
        return None
    both = _templates(made)
    if both is None:
        return None
    objs = [(numbers, obj) for numbers, (obj, _) in made]
    builds: list[Build] = []
    for attr in attrs:
        try:
            values: list[tuple[list[str], object]] = [(n, attr(o)) for n, o in objs]
        except Exception:  # noqa: BLE001 - an attribute a point does not have: no template
            return None
        build = _obj_template(values)
        if build is None:
            return None
        builds.append(build)
    return both[0], both[1], tuple(builds)


def _text_template(points: list[tuple[list[str], str]]) -> Build | None:
    """A template of a text that is a function of the numbers, checked at every point."""
    first_numbers, first = points[0] if len(points) == 1 else points[1]
    compiled = _compile_str(first, {u: c for c, u in enumerate(first_numbers)})
    build: Build = compiled[0] if compiled is not None else _const(first)
    if all(build(numbers) == text for numbers, text in points):
        return build
    return None


def _obj_template(points: list[tuple[list[str], object]]) -> Build | None:
    """A template of an object that is a function of the numbers, checked at every point
    (equal, and of the same type all the way down: a tuple is not a list)."""
    first_numbers, first = points[0] if len(points) == 1 else points[1]
    try:
        compiled = _compile(first, {u: c for c, u in enumerate(first_numbers)})
    except _Opaque:
        return None
    if compiled is None:
        build: Build = _const(first)
    else:
        build = compiled[0]
    for numbers, want in points:
        got = build(numbers)
        if got != want or _types(got) != _types(want):
            return None
    return build


def _types(v: object) -> object:
    """The shape of a value with the type of every part (== says 1 == True, (1,) != [1])."""
    t = type(v)
    if t in _LEAVES:
        return t
    if isinstance(v, dict):
        return (dict, [(k, _types(x)) for k, x in v.items()])
    if isinstance(v, (list, tuple)):
        return (t, [_types(x) for x in v])
    names = _FIELDS.get(t)
    if names is None:
        if not (is_dataclass(v) and not isinstance(v, type)):
            return t
        names = _FIELDS[t] = tuple(f.name for f in fields(v))
    return (t, [_types(getattr(v, name)) for name in names])


_LEAVES = frozenset((str, int, float, bool, type(None), bytes))
_FIELDS: dict[type, tuple[str, ...]] = {}  # a dataclass's fields (dataclasses.fields is slow)


def _made(
    shape: _Shape, fn: Callable[[Deadlock], tuple[R, str]]
) -> list[tuple[list[str], tuple[R, str]]] | None:
    """`fn` of each learnt point of the shape, with its numbers; None when one does not take."""
    made: list[tuple[list[str], tuple[R, str]]] = []
    for numbers, dl in shape.points:
        try:
            made.append((numbers, fn(dl)))
        except Exception:  # noqa: BLE001 - a twin's numbers fn does not take: no template
            return None
    return made


def _learn_derived(
    shape: _Shape, fn: Callable[[Deadlock], tuple[R, str]]
) -> tuple[Build, Build] | None:
    if shape.parent is not None:  # the parent's templates, composed, checked at this shape's points
        parent, remap = shape.parent
        if fn not in parent.derived:
            parent.derived[fn] = _learn_derived(parent, fn)
        got = parent.derived[fn]
        if got is None:
            return None
        obj, text = _composed(got[0], remap), _composed(got[1], remap)
        return (obj, text) if _fits(shape, fn, obj, text, (), ()) else None
    made = _made(shape, fn)
    return None if made is None else _templates(made)


def _fits(
    shape: _Shape,
    fn: Callable[[Deadlock], tuple[R, str]],
    obj: Build,
    text: Build,
    attrs: tuple[Callable[[R], object], ...],
    builds: tuple[Build, ...],
) -> bool:
    """Whether these templates give what fn gives at every learnt point of the shape: the
    object (equal, and of the same types all the way down), the text, each attribute."""
    made = _made(shape, fn)
    if made is None:
        return False
    for numbers, (want, want_text) in made:
        got = obj(numbers)
        if got != want or _types(got) != _types(want) or text(numbers) != want_text:
            return False
        for attr, build in zip(attrs, builds, strict=True):
            try:
                expect = attr(want)
            except Exception:  # noqa: BLE001 - an attribute a point does not have: no template
                return False
            value = build(numbers)
            if value != expect or _types(value) != _types(expect):
                return False
    return True


def _templates(made: list[tuple[list[str], tuple[R, str]]]) -> tuple[Build, Build] | None:
    """Templates of fn's object and text from its results at the learning points."""
    if not made:
        return None
    objs: list[tuple[list[str], object]] = [(numbers, obj) for numbers, (obj, _) in made]
    texts = [(numbers, text) for numbers, (_, text) in made]
    a, b = _obj_template(objs), _text_template(texts)
    return (a, b) if a is not None and b is not None else None


def scan_buffer(
    data: bytes,
    final: bool,
    shapes: ShapeCache | None = None,
    derive: Deriving | None = None,
) -> tuple[list[Deadlock], bool]:
    """errorlog's scan of a buffer of whole lines (the tailer's read): its deadlocks and whether
    a report is still open at its end; equal to full_scan(slim(data), final). `derive`: what
    the caller makes of each deadlock is added to derive.out, in order, and the deadlocks are
    not returned (those of a learnt shape are then not even built)."""
    cache = SHAPES if shapes is None else shapes
    got, still_open = _scan_pieces(data, final, cache)
    out: list[Deadlock] = []
    for dl, shape, texts in got:
        if derive is not None and dl is None and shape is not None and derive.has(shape):
            derive.add_built(shape, texts)  # no Deadlock needed: its record from the shape's
            continue
        if dl is None:
            assert shape is not None
            dl = shape.deadlock(texts)
        out.append(dl)
        if derive is not None:
            derive.add(dl, shape, texts)
    return ([] if derive is not None else out), still_open


def _scan_pieces(
    data: bytes, final: bool, cache: ShapeCache
) -> tuple[list[tuple[Deadlock | None, _Shape | None, list[str]]], bool]:
    """scan_buffer's deadlocks, each with the shape it was built from and its numbers."""
    parts = _slim_cut(data, cache)
    if parts is not None:
        try:
            return _read_pieces(parts[0], parts[1], final, cache)
        except _Uncut:
            pass  # nothing kept but what the cache learnt: read from the whole slimmed buffer
    data = slim_bytes(data)
    if data and not data.endswith(b"\n"):
        return _full(_lines(data), final)
    cuts = _cuts(data)
    if not cuts:
        return _full(_lines(data), final)
    bounds = [*cuts, len(data)]
    pieces = (data[bounds[i] : bounds[i + 1]] for i in range(len(cuts)))
    return _read_pieces(data[: cuts[0]], pieces, final, cache)


def _read_pieces(
    head: bytes, pieces: Iterator[bytes], final: bool, cache: ShapeCache
) -> tuple[list[tuple[Deadlock | None, _Shape | None, list[str]]], bool]:
    wrapped = False
    if head:
        state = _inert(head, wrapped)
        if state is None:
            return _full(_lines(head + b"".join(pieces)), final)
        wrapped = state
    out: list[tuple[Deadlock | None, _Shape | None, list[str]]] = []
    wrapped_in = [wrapped]  # the wrapper flag at each piece's start
    before = b""
    for i, piece in enumerate(pieces):
        got = cache.read(piece, wrapped)
        if got is None:
            if i == 0:
                return _full(_lines(head + piece + b"".join(pieces)), final)
            # from the piece before, whose report this one may taint: a clean piece's header
            # leaves a fresh Scanner as the one that read everything before it
            rest, still_open = _full(
                _lines(before + piece + b"".join(pieces)), final, wrapped_in[i - 1]
            )
            return out[:-1] + rest, still_open
        out.append((got[0], got[2], got[3]))
        wrapped = got[1]
        wrapped_in.append(wrapped)
        before = piece
    return out, False


def _full(
    lines: Sequence[str], final: bool, wrapped: bool = False
) -> tuple[list[tuple[Deadlock | None, _Shape | None, list[str]]], bool]:
    dls, still_open = full_scan(lines, final, wrapped)
    return [(dl, None, []) for dl in dls], still_open
