"""Terminal output: width from COLUMNS / the terminal, word wrapping that never breaks an
identifier mid-name, severity colour only on a TTY without NO_COLOR, and a plain table."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Sequence
from typing import TextIO

MIN_WIDTH = 60
_COLOURS = {"critical": "1;31", "warning": "33", "unknown": "35", "ok": "32", "stale": "1;35"}
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
# other sessions' query text may carry terminal escapes: never let them reach the terminal
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_PARTS = re.compile(r"[^.,/]+[.,/]?|[.,/]")  # a dotted name's parts, each with its separator
_DASHED = re.compile(r"[^-]+-?|-")


def term_width(stream: TextIO | None = None) -> int:
    """COLUMNS if set, else the terminal's width, else 100; never narrower than 60."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return max(int(env), MIN_WIDTH)
    try:  # shutil.get_terminal_size((100, 24)) without importing shutil (--version: startup)
        columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        columns = 0
    return max(columns if columns > 0 else 100, MIN_WIDTH)


def use_colour(stream: TextIO | None = None) -> bool:
    """https://no-color.org: NO_COLOR (any non-empty value) wins; else only on a TTY."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("TERM") == "dumb":
        return False
    s = stream or sys.stdout
    try:
        return bool(s.isatty())
    except (AttributeError, ValueError):
        return False


def paint(text: str, severity: str, colour: bool) -> str:
    code = _COLOURS.get(severity.lower())
    return f"\x1b[{code}m{text}\x1b[0m" if colour and code else text


def visible_len(text: str) -> int:
    return len(_ANSI.sub("", text))


def _pieces(word: str, width: int) -> list[str]:
    """A word longer than the width, split only after '.', ',' or '/' (between names); a
    part still longer (a long option such as `performance-schema-consumer-…`) also after
    '-'."""
    if len(word) <= width:
        return [word]
    parts = [
        q for p in _PARTS.findall(word) for q in (_DASHED.findall(p) if len(p) > width else [p])
    ]
    out, cur = [], ""
    for p in parts:
        if cur and len(cur) + len(p) > width:
            out.append(cur)
            cur = ""
        cur += p
    if cur:
        out.append(cur)
    return out  # a single name longer than the width stays whole and overflows


def wrap(text: str, width: int) -> list[str]:
    """Words to lines of at most `width`; own line breaks kept; names never cut mid-name."""
    width = max(width, 8)
    text = _CONTROL.sub("\ufffd", str(text))
    lines: list[str] = []
    for para in str(text).splitlines() or [""]:
        cur = ""
        for word in para.split():
            for piece in _pieces(word, width):
                if not cur:
                    cur = piece
                elif len(cur) + 1 + len(piece) <= width:
                    cur += " " + piece
                else:
                    lines.append(cur)
                    cur = piece
        lines.append(cur)
    return lines


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[list[str]]],
    widths: Sequence[int],
    after: Sequence[list[str]] | None = None,
) -> str:
    """Cells are pre-wrapped line lists; `after[i]` lines are printed under row i, full width."""
    gap = "  "

    def line(cells: Sequence[str]) -> str:
        out = ""
        for i, (cell, w) in enumerate(zip(cells, widths, strict=False)):
            pad = "" if i == len(cells) - 1 else " " * max(0, w - visible_len(cell))
            out += cell + pad + (gap if i < len(cells) - 1 else "")
        return out.rstrip()

    out = [line(list(headers)), line(["-" * w for w in widths])]
    for i, row in enumerate(rows):
        height = max(len(c) for c in row)
        for k in range(height):
            out.append(line([c[k] if k < len(c) else "" for c in row]))
        if after and after[i]:
            out.extend(after[i])
    return "\n".join(out)


def column_width(texts: Sequence[str], low: int, high: int, limit: int) -> int:
    """Fit the longest word within [low, high]; widen up to `limit` for one long name part."""
    words = [w for t in texts for w in str(t).split()]
    longest = max((len(w) for w in words), default=low)
    name = max((len(p) for w in words for p in re.split(r"(?<=[.,/])", w)), default=low)
    width = min(max(longest, low), high)
    return min(name, limit) if name > width else width


def hanging(text: str, width: int, first: str = "", rest: str = "  ") -> list[str]:
    """One paragraph wrapped to `width` (names never cut): the first line after `first`,
    the others after `rest` — a labelled block such as `fix: …` or a list item."""
    room = max(width - max(len(first), len(rest)), 8)
    lines = wrap(text, room)
    return [(first if i == 0 else rest) + ln for i, ln in enumerate(lines)]


_ITEM = re.compile(r"\s|[-*•] |\d+[.)] ")


def fill(text: str, width: int) -> list[str]:
    """Prose refilled to `width`: paragraphs are separated by blank lines; inside one, an
    indented line or a list item (`- `, `* `, `1. `) starts its own block with a hanging
    indent, any other line continues the block before it. Names are never cut (wrap)."""
    out: list[str] = []
    for para in re.split(r"\n[ \t]*\n", str(text).strip("\n")):
        blocks: list[tuple[str, str, list[str]]] = []  # first-line indent, hanging indent, text
        for line in para.splitlines():
            if blocks and not _ITEM.match(line):
                blocks[-1][2].append(line.strip())
                continue
            lead = line[: len(line) - len(line.lstrip())]
            marker = _ITEM.match(line.lstrip())
            cont = lead + " " * marker.end() if marker else lead + ("    " if lead else "")
            blocks.append((lead, cont, [line.strip()]))
        if out:
            out.append("")
        for first, cont, words in blocks:
            out += hanging(" ".join(words), width, first, cont)
    return out


def _usage_tokens(flat: str) -> list[str]:
    """A usage line split at spaces outside [ ] and ( ): an option group stays whole."""
    tokens, cur, depth = [], "", 0
    for ch in flat:
        depth += (ch in "[(") - (ch in "])")
        if ch == " " and depth == 0:
            if cur:
                tokens.append(cur)
            cur = ""
        else:
            cur += ch
    return [*tokens, cur] if cur else tokens


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """--help within COLUMNS: a description or epilog is refilled per paragraph (blank-line
    separated; an indented line, e.g. a command to copy, keeps its own line and wraps with a
    hanging indent), and a usage line argparse cannot fit (it never breaks an option group)
    is re-flowed at option boundaries under a short indent."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        # argparse's own 2-column margin on the width every other command uses (COLUMNS)
        width = width or term_width() - 2
        super().__init__(prog, indent_increment, max_help_position, width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(indent + ln if ln else "" for ln in fill(text, width))

    def _format_action_invocation(self, action: argparse.Action) -> str:
        """`--format, -f {a,b,c}` (the value once) when `--format {a,b,c}, -f {a,b,c}` is
        wider than the line."""
        text = super()._format_action_invocation(action)
        if self._current_indent + len(text) <= self._width or not action.option_strings:
            return text
        if action.nargs == 0:
            return text
        value = self._format_args(action, self._get_default_metavar_for_optional(action))
        return ", ".join(action.option_strings) + " " + value

    def _format_usage(self, *args: object, **kwargs: object) -> str:
        text: str = super()._format_usage(*args, **kwargs)  # type: ignore[arg-type]
        body = text.rstrip("\n")
        if all(len(ln) <= self._width for ln in body.splitlines()):
            return text
        lines: list[str] = []
        cur = ""
        for tok in _usage_tokens(" ".join(body.split())):
            if cur and len(cur) + 1 + len(tok) > self._width:
                lines.append(cur)
                cur = "    " + tok
            else:
                cur = f"{cur} {tok}" if cur else tok
        return "\n".join([*lines, cur]) + "\n\n"


def fit_table(
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    width: int,
    after: Sequence[list[str]] | None = None,
) -> str:
    """A plain table within `width`: every column as wide as its longest value, then the
    widest ones narrowed (their cells wrap at words or name parts, never cut) until the row
    fits. When even that cannot fit (long unbreakable names), each row becomes a block of
    `header: value` lines instead — wider than `width` only for a single longer word."""
    cells = [[str(c) if c is not None else "" for c in row] for row in rows]
    n = len(headers)
    natural = [max([len(headers[i]), *(visible_len(r[i]) for r in cells)]) for i in range(n)]
    floor = [
        max([len(headers[i]), *(len(p) for r in cells for p in _unbreakable(r[i]))])
        for i in range(n)
    ]
    widths = list(natural)
    budget = width - 2 * (n - 1)
    while sum(widths) > budget:
        i = max(range(n), key=lambda k: widths[k] - floor[k])
        if widths[i] <= floor[i]:
            return _records(headers, cells, width, after)
        widths[i] -= 1
    wrapped = [[wrap(c, widths[i]) for i, c in enumerate(r)] for r in cells]
    return table(list(headers), wrapped, widths, after)


def _records(
    headers: Sequence[str],
    cells: list[list[str]],
    width: int,
    after: Sequence[list[str]] | None,
) -> str:
    out: list[str] = []
    for k, row in enumerate(cells):
        fields = [f"{h}: {c}" for h, c in zip(headers, row, strict=False) if c]
        out += hanging(", ".join(fields), width, "", "    ")
        out += list(after[k]) if after else []
    return "\n".join(out)


def chop(text: str, width: int) -> str:
    """Free text (another session's query) whose single words may exceed `width`: those are
    broken into `width`-long pieces, so wrap() can keep every line within the width."""
    width = max(width, 8)
    return " ".join(
        " ".join(w[i : i + width] for i in range(0, len(w), width)) for w in str(text).split()
    )


def _unbreakable(text: str) -> list[str]:
    """The pieces wrap() will not split further: words, and long words' name parts."""
    return [
        q
        for w in _ANSI.sub("", text).split()
        for p in _PARTS.findall(w)
        for q in _DASHED.findall(p)
    ]


def fit_lines(text: str, width: int) -> str:
    """Preformatted lines within `width`: a longer one wraps at words (names never cut),
    continuing under its own indent plus four."""
    out: list[str] = []
    for line in text.splitlines():
        if visible_len(line) <= width:
            out.append(line)
            continue
        lead = line[: len(line) - len(line.lstrip())]
        out += hanging(line.strip(), width, lead, lead + "    ")
    return "\n".join(out)
