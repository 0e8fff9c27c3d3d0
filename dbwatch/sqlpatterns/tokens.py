"""Linear-time tokenizer for normalised statement shapes (literals already '?', lower case).

Replaces sqlparse's lexer on untrusted text: that lexer costs 10-20 µs per token, so one
hostile 16 KiB statement took a second. Here one regex whose alternatives are single
character classes (no nested or overlapping quantifiers) finds every token, bounded by a
token and a nesting budget. sqlparse's keyword table is used as data: a word is a keyword
where sqlparse would call it one, so fingerprints read the same.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from sqlparse import keywords as _kw
from sqlparse import tokens as _T

MAX_TOKENS = 1024  # tokens of one shape; past this the shape is unparsable (counted)
MAX_DEPTH = 200  # parenthesis nesting; the same


class ShapeTooComplex(ValueError):
    """The shape is over the token or nesting budget: counted as unparsable."""


@dataclass(frozen=True, slots=True)
class Token:
    word: str  # lower case; a quoted name without its quotes
    name: bool = False  # an identifier (table, column, function)
    placeholder: bool = False  # '?', '%s', '$1', ':name'


# Every alternative is a run of one character class or a fixed string; the body of a quoted
# name excludes its own delimiter, so an unclosed one fails once, never at each position.
_TOKEN = re.compile(
    r"(?P<ws>\s+)"
    r"|(?P<bq>`[^`]*`)"
    r'|(?P<dq>"[^"]*")'
    r"|(?P<br>\[[^\[\]]+\])"
    r"|(?P<ph>\?|%s|(?<!\w)[$:]\w+)"
    r"|(?P<num>\d+(?:\.\d+)?(?![\w$#]))"
    r"|(?P<word>\w[$#\w]*)"
    r"|(?P<op>::|:=|[<>=~!]+|[+/@#%^&|-]+)"
    r"|(?P<any>.)",
    re.DOTALL,
)
# Multi-word keywords the shape builder compares as one word (sqlparse lexes them so).
_PAIRS = {("order", "by"): "order by", ("group", "by"): "group by"}
# Words sqlparse never takes for a function name even when '(' follows.
_NOT_FUNCTIONS = frozenset({"case", "in", "values", "using", "from", "as"})


@cache
def _keywords() -> frozenset[str]:
    """Lower-cased words sqlparse's default lexer classes as keywords (first table wins)."""
    tables = (
        _kw.KEYWORDS_COMMON,
        _kw.KEYWORDS_ORACLE,
        _kw.KEYWORDS_MYSQL,
        _kw.KEYWORDS_PLPGSQL,
        _kw.KEYWORDS_HQL,
        _kw.KEYWORDS_MSACCESS,
        _kw.KEYWORDS_SNOWFLAKE,
        _kw.KEYWORDS_BIGQUERY,
        _kw.KEYWORDS,
    )
    seen: dict[str, bool] = {}
    for table in tables:
        for word, ttype in table.items():
            seen.setdefault(word.lower(), ttype not in _T.Name)
    return frozenset(w for w, is_kw in seen.items() if is_kw)


def tokenize(shape: str) -> list[Token]:
    """Tokens of a shape without whitespace; raises ShapeTooComplex past the budgets."""
    raw: list[tuple[str, str, bool]] = []  # (kind, text, '(' follows at once)
    depth = 0
    for m in _TOKEN.finditer(shape):
        kind = m.lastgroup or "any"
        if kind == "ws":
            continue
        text = m.group()
        start, end = m.span()
        if kind == "br" and start > 0 and (shape[start - 1] in ")]_" or shape[start - 1].isalnum()):
            kind, text = "any", "["  # `a[1]` is an index, not a quoted name
            end = start + 1
        if text == "(":
            depth += 1
            if depth > MAX_DEPTH:
                raise ShapeTooComplex("nesting too deep")
        elif text == ")":
            depth -= 1
        raw.append((kind, text, shape.startswith("(", end)))
        if len(raw) > MAX_TOKENS:
            raise ShapeTooComplex("too many tokens")
    return _classify(raw)


def _classify(raw: list[tuple[str, str, bool]]) -> list[Token]:
    keywords = _keywords()
    out: list[Token] = []
    i = 0
    n = len(raw)
    while i < n:
        kind, text, call = raw[i]
        if kind in ("bq", "dq", "br"):
            out.append(Token(text[1:-1].lower(), name=True))
        elif kind == "ph":
            out.append(Token(text.lower(), placeholder=True))
        elif kind == "word":
            word = text.lower()
            if i + 1 < n and raw[i + 1][0] == "word":
                pair = _PAIRS.get((word, raw[i + 1][1].lower()))
                if pair is not None:
                    out.append(Token(pair))
                    i += 2
                    continue
            prev = raw[i - 1][1] if i > 0 else ""
            nxt = raw[i + 1][1] if i + 1 < n else ""
            out.append(Token(word, name=_is_name(word, prev, nxt, call, keywords)))
        else:
            out.append(Token(text.lower()))
        i += 1
    return out


def _is_name(word: str, prev: str, nxt: str, call: bool, keywords: frozenset[str]) -> bool:
    if word[0].isdigit():
        return False
    if nxt == "." or prev == ".":
        return True  # schema.table, table.column
    if call and word not in _NOT_FUNCTIONS:
        return True  # a function call: `count(`
    return word not in keywords
