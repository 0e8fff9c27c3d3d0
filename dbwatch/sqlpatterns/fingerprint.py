"""Statement fingerprints and a cheap classifier (tokenized once per statement shape).

Untrusted text: truncated before parsing, linear-time scanners only (no backtracking
regex), token and nesting budgets; whatever is over them is counted as unparsable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from dbwatch.sqlpatterns.tokens import Token, tokenize

from ..frozen import mutable

# The text of the i-th '?' of a shape: a literal as written, or an IN list's literals.
Value = str | tuple[str, ...]
Values = tuple[Value, ...]

MAX_STATEMENT = 16 * 1024  # bytes of a statement we look at; the rest is never parsed
CACHE_SIZE = 20_000  # distinct shapes kept; cleared when full (cheap, rare)
RECENT_SIZE, RECENT_TEXT = 2048, 1024  # exact texts remembered, and the longest kept

# One pass finds every literal and placeholder, so that the i-th '?' of a shape is the
# i-th value: strings first (a digit or '?' inside a string is not a literal of its own).
# Speed matters (every examined statement goes through here): a look-ahead on the first
# character skips most positions at once, and possessive loops never backtrack in a string.
_NUM = r"(?<![\w$.])[-+]?(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(?![\w$])"
_PH = r"\?|\$\d+|%s"
_LIT = {
    # The same language as the PostgreSQL form's look-ahead guard, but written to start
    # with one character class (and dispatch on it by look-behinds), which lets the regex
    # engine skip to candidate positions instead of trying every one.
    "mysql": re.compile(
        r"""[-+'"\d?$%](?:(?<=')(?:[^'\\]++|\\.?|'')*+(?:'|\Z)|(?<=")(?:[^"\\]++|\\.?|"")*+"""
        '(?:"|\\Z)'
        r"""|(?<=[-+])(?<![\w$.].)(?:0x[0-9a-fA-F]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(?![\w$])"""
        r"""|(?<=\d)(?<![\w$.]\d)(?:(?<=0)x[0-9a-fA-F]+|\d*(?:\.\d*)?(?:[eE][-+]?\d+)?)(?![\w$])"""
        r"""|(?<=\?)|(?<=\$)\d+|(?<=%)s)""",
        re.DOTALL,
    ),
    "postgresql": re.compile(
        r"""(?=['\d?$%+eE-])(?:(?<![\w$])[eE]'(?:[^'\\]++|\\.?|'')*+(?:'|\Z)"""
        r"""|'(?:[^']++|'')*+(?:'|\Z)|\$\$.*?(?:\$\$|\Z)|""" + _NUM + "|" + _PH + ")",
        re.DOTALL,
    ),
}
_COMMENTS = {
    # Strings are matched (and kept) so a '--' inside a literal is not taken for a comment.
    "mysql": re.compile(
        r"""('(?:[^'\\]++|\\.?|'')*+(?:'|\Z)|"(?:[^"\\]++|\\.?|"")*+(?:"|\Z))"""
        r"""|/\*.*?(?:\*/|\Z)|(?:--\s|#)[^\n]*""",
        re.DOTALL,
    ),
    "postgresql": re.compile(
        r"""([eE]?'(?:[^']++|'')*+(?:'|\Z))|/\*.*?(?:\*/|\Z)|--[^\n]*""", re.DOTALL
    ),
}
# The same scan as a split: [text, literal, text, literal, …, text].
_LIT_SPLIT = {d: re.compile("(" + p.pattern + ")", p.flags) for d, p in _LIT.items()}
_IN_LIST = re.compile(r"\(\s*\?(?:\s*,\s*\?)+\s*\)")
_AUTOCOMMIT = re.compile(
    r"\s*set\s+(?:session\s+|local\s+|@@session\.|@@local\.|@@)?autocommit\s*(?:=|to)\s*'?(\w+)",
    re.IGNORECASE,
)
_SECOND_WORD = re.compile(r"\s*[A-Za-z_]+\s+([A-Za-z_]+)")

_WORD_KIND = {
    "select": "select",
    "with": "select",
    "delete": "delete",
    "update": "update",
    "insert": "insert",
    "replace": "insert",
    "begin": "begin",
    "start": "begin",
    "commit": "commit",
    "end": "commit",
    "rollback": "rollback",
    "abort": "rollback",
    "savepoint": "savepoint",
    "release": "savepoint",
    "set": "set",
    "create": "ddl",
    "alter": "ddl",
    "drop": "ddl",
    "truncate": "ddl",
    "rename": "ddl",
    "lock": "lock",
    "unlock": "lock",
    "prepare": "prepare",
    "xa": "other",
}

KINDS = frozenset(_WORD_KIND.values()) | {"autocommit_on", "autocommit_off", "empty", "other"}

# The statements of queue traffic, recognised from six characters without a regex.
_FAST_KIND = {w: _WORD_KIND[w] for w in ("select", "delete", "update", "insert", "commit")}
_FAST_KIND.update({w.upper(): k for w, k in _FAST_KIND.items()})


FIRST_WORD_WINDOW = 512  # characters of leading comments and space looked through


def first_word(text: str, limit: int = FIRST_WORD_WINDOW) -> str | None:
    """The first word after leading whitespace and comments (a scanner: linear, no regex).

    A regex for "comments, then a word" backtracked exponentially on `/**/` repeated
    (issue 18): each comment could also be read as part of a longer one."""
    end = min(len(text), limit)
    i = 0
    while i < end:
        c = text[i]
        if c.isspace():
            i += 1
        elif text.startswith("/*", i):
            close = text.find("*/", i + 2, end)
            if close < 0:
                return None
            i = close + 2
        elif c == "#" or text.startswith("--", i):
            nl = text.find("\n", i, end)
            if nl < 0:
                return None
            i = nl + 1
        else:
            break
    j = i
    while j < end and (text[j] == "_" or ("a" <= text[j].lower() <= "z")):
        j += 1
    return text[i:j] if j > i else None


def quick_kind(text: str) -> str:
    """Statement kind from its first words only: enough to group transactions, no parsing."""
    kind = _FAST_KIND.get(text[:6])
    if kind is not None and not text[6:7].isalnum() and text[6:7] != "_":
        return kind
    word = first_word(text)
    if word is None:
        return "empty" if not text.strip() else "other"
    kind = _WORD_KIND.get(word.lower(), "other")
    if kind == "set":
        a = _AUTOCOMMIT.match(text, 0, 256)
        if a is not None:
            return (
                "autocommit_off" if a.group(1).lower() in ("0", "off", "false") else "autocommit_on"
            )
    elif kind == "rollback":
        second = _SECOND_WORD.match(text, 0, 256)
        if second is not None and second.group(1).lower() == "to":
            return "savepoint"
    elif kind == "prepare":
        second = _SECOND_WORD.match(text, 0, 256)
        if second is not None and second.group(1).lower() == "transaction":
            return "commit"  # PREPARE TRANSACTION ends the session's transaction
        return "other"
    return kind


# Whole statements that frameworks send verbatim, their kind worked out once.
EXACT_KIND = {
    t: quick_kind(t)
    for w in (
        "START TRANSACTION",
        "BEGIN",
        "COMMIT",
        "ROLLBACK",
        "SET autocommit=0",
        "SET autocommit=1",
        "set autocommit=0",
        "set autocommit=1",
        "SET AUTOCOMMIT = 0",
        "SET AUTOCOMMIT = 1",
        "SELECT 1",
    )
    for t in {w, w.lower(), w.upper()}
}


def prenormalise(text: str, dialect: str = "mysql") -> tuple[str, Values]:
    """(shape, values): literals and placeholders become '?', comments and case go.

    The shape is the cache key for the classification; values[i] is the text of
    the i-th '?' (a literal as written, or '?'/'$1' for a placeholder; an IN list is a tuple).
    """
    t, shape, flat = _shape(text, dialect)
    return shape, _values(t, shape, flat, dialect)


def _shape(text: str, dialect: str) -> tuple[str, str, str]:
    """(bounded text without comments, shape, shape before IN-list collapsing)."""
    t = text[:MAX_STATEMENT]
    if "/*" in t or "--" in t or (dialect == "mysql" and "#" in t):
        t = _COMMENTS[dialect].sub(lambda m: m.group(1) or " ", t)
    flat = " ".join(_LIT[dialect].sub("?", t).split()).lower()
    if "?," in flat or "?, " in flat:
        return t, _IN_LIST.sub("(?)", flat), flat
    return t, flat, flat


def _values(t: str, shape: str, flat: str, dialect: str) -> Values:
    values = tuple(_LIT[dialect].findall(t))
    return values if shape is flat else _collapse_in_lists(flat, values)


def _collapse_in_lists(flat: str, values: Values) -> Values:
    """Values to go with `IN (?, ?, ?)` → `IN (?)`: each list becomes one tuple."""
    out: list[Value] = []
    pos = 0
    i = 0
    for m in _IN_LIST.finditer(flat):
        before = flat[pos : m.start()].count("?")
        out.extend(values[i : i + before])
        i += before
        n = m.group(0).count("?")
        out.append(tuple(v for v in values[i : i + n] if isinstance(v, str)))
        i += n
        pos = m.end()
    out.extend(values[i:])
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Shape:
    """What the detectors need to know about one statement shape."""

    fingerprint: str
    kind: str  # select | delete | update | insert | … (quick_kind)
    table: str | None = None  # main table, unquoted and lower-cased
    key_eq: tuple[tuple[str, int], ...] | None = (
        None  # WHERE is only `col = ?` ANDs: (col, value index)
    )
    where_cols: frozenset[str] = frozenset()
    columns: frozenset[str] = frozenset()  # every identifier named in the statement
    lock: str | None = None  # update | share
    skip_locked: bool = False
    nowait: bool = False
    order_by: bool = False
    limit: bool = False


@dataclass(slots=True)
class ClassifierStats:
    classified: int = 0
    parsed: int = 0  # shapes tokenized (cache misses)
    unparsable: int = 0
    truncated: int = 0
    cache_clears: int = 0


@mutable
class Classifier:
    """Classifies statements; each distinct shape is tokenized once (bounded cache)."""

    dialect: str = "mysql"
    stats: ClassifierStats = field(default_factory=ClassifierStats)
    _cache: dict[str, Shape | None] = field(default_factory=dict)
    _recent: dict[str, tuple[Shape, Values]] = field(default_factory=dict)
    _templates: dict[str, tuple[str, str]] = field(default_factory=dict)

    def classify(self, text: str) -> tuple[Shape, Values] | None:
        """(shape, values), or None when the statement cannot be parsed (counted)."""
        self.stats.classified += 1
        # Busy workers repeat the exact same text (a claim's `available_at <= now` changes
        # once a second): remember recent short texts whole.
        hit = self._recent.get(text)
        if hit is not None:
            return hit
        result = self._classify(text)
        if result is not None and len(text) <= RECENT_TEXT:
            if len(self._recent) >= RECENT_SIZE:
                self._recent.clear()
            self._recent[text] = result
        return result

    def _classify(self, text: str) -> tuple[Shape, Values] | None:
        if len(text) > MAX_STATEMENT:
            self.stats.truncated += 1
        try:
            # One scan splits literals from the rest; the template (literals as '?') then
            # finds its shape key in a cache: rows differing only by their ids share it.
            t = text[:MAX_STATEMENT]
            if "/*" in t or "--" in t or (self.dialect == "mysql" and "#" in t):
                t = _COMMENTS[self.dialect].sub(lambda m: m.group(1) or " ", t)
            pieces = _LIT_SPLIT[self.dialect].split(t)
            template = "?".join(pieces[0::2])
            norm = self._templates.get(template)
            if norm is None:
                norm = self._normalise(template)
        except Exception:  # noqa: BLE001 - hostile text: count it, never crash the analysis
            self.stats.unparsable += 1
            return None
        key, flat = norm
        shape = self._cache[key] if key in self._cache else self._parse(key)
        if shape is None:
            self.stats.unparsable += 1
            return None
        # Values matter only for key lookups (QU401 compares them): skip them otherwise.
        if not shape.key_eq:
            return shape, ()
        values = tuple(pieces[1::2])
        return shape, (values if key is flat else _collapse_in_lists(flat, values))

    def _normalise(self, template: str) -> tuple[str, str]:
        """(shape key, shape before IN-list collapsing) of a template, as _shape makes them."""
        flat = " ".join(template.split()).lower()
        key = _IN_LIST.sub("(?)", flat) if "?," in flat or "?, " in flat else flat
        if len(self._templates) >= CACHE_SIZE:
            self._templates.clear()
        self._templates[template] = (key, flat)
        return key, flat

    def _parse(self, key: str) -> Shape | None:
        if len(self._cache) >= CACHE_SIZE:
            self._cache.clear()
            self.stats.cache_clears += 1
        self.stats.parsed += 1
        try:
            shape: Shape | None = parse_shape(key)
        except Exception:  # noqa: BLE001 - over the token/depth budget, surprises
            shape = None
        self._cache[key] = shape
        return shape


def fingerprint(text: str, dialect: str = "mysql") -> str:
    """The canonical fingerprint of one statement ('' when it cannot be parsed)."""
    try:
        return parse_shape(prenormalise(text, dialect)[0]).fingerprint
    except Exception:  # noqa: BLE001 - untrusted text: no fingerprint rather than a crash
        return ""


def parse_shape(shape: str) -> Shape:
    """Classify one pre-normalised statement (linear tokenizer, token and depth budgets)."""
    toks = tokenize(shape)
    if ";" in shape:
        cut = next((i for i, t in enumerate(toks) if t.word == ";"), len(toks))
        toks = toks[:cut] if cut else toks[1:]
    if not toks:
        raise ValueError("empty statement")
    return _ShapeBuilder(toks, [t.word for t in toks], quick_kind(shape)).build()


_WHERE_END = frozenset(
    {
        "order by",
        "group by",
        "having",
        "limit",
        "for",
        "lock",
        "returning",
        "union",
        "offset",
        "window",
        "fetch",
    }
)


class _ShapeBuilder:
    """Walks the flat token list once; keeps only what the detectors ask for."""

    def __init__(self, toks: list[Token], words: list[str], kind: str) -> None:
        self.toks, self.words, self.kind = toks, words, kind

    def build(self) -> Shape:
        words = self.words
        joined = " ".join(words)
        key_eq, where_cols = self._where()
        return Shape(
            fingerprint=joined.replace(" . ", "."),
            kind=self.kind,
            table=self._table(),
            key_eq=key_eq,
            where_cols=frozenset(where_cols),
            columns=frozenset(w for t, w in zip(self.toks, words) if t.name),
            lock=self._lock(joined),
            skip_locked="skip locked" in joined,
            nowait=" nowait" in joined,
            order_by="order by" in words,
            limit="limit" in words or "fetch" in words,
        )

    def _lock(self, joined: str) -> str | None:
        if self.kind != "select":
            return None
        if " for update" in joined or " for no key update" in joined:
            return "update"
        if " for share" in joined or " lock in share mode" in joined or " for key share" in joined:
            return "share"
        return None

    def _name_at(self, i: int) -> tuple[str | None, int]:
        """A possibly dotted name starting at token i: (name, next index)."""
        toks, words = self.toks, self.words
        if i >= len(toks) or not toks[i].name:
            return None, i
        parts = [words[i]]
        i += 1
        while i + 1 < len(toks) and words[i] == "." and toks[i + 1].name:
            parts.append(words[i + 1])
            i += 2
        return ".".join(parts), i

    def _table(self) -> str | None:
        anchor = {"select": "from", "delete": "from", "insert": "into", "update": None}
        if self.kind not in anchor:
            return None
        want = anchor[self.kind]
        start = 1
        if want is not None:
            try:
                start = self.words.index(want) + 1
            except ValueError:
                return None
        if (
            self.kind == "update"
            and start < len(self.words)
            and self.words[start] in ("low_priority", "ignore", "only")
        ):
            start += 1
        return self._name_at(start)[0]

    def _where(self) -> tuple[tuple[tuple[str, int], ...] | None, set[str]]:
        """Equality keys when WHERE is a plain AND of `col = ?`, and all WHERE columns."""
        words, toks = self.words, self.toks
        try:
            i = words.index("where") + 1
        except ValueError:
            return None, set()
        ph_index = sum(1 for t in toks[:i] if t.placeholder)
        eqs: list[tuple[str, int]] = []
        cols: set[str] = set()
        pure = True
        while i < len(toks) and words[i] not in _WHERE_END:
            name, j = self._name_at(i)
            if name is not None:
                col = name.rsplit(".", 1)[-1]
                cols.add(col)
                if j + 1 < len(toks) and words[j] == "=" and toks[j + 1].placeholder:
                    eqs.append((col, ph_index))
                    ph_index += 1
                    i = j + 2
                    continue
                pure = False
                i = j
                continue
            if toks[i].placeholder:
                ph_index += 1
                pure = False
            elif words[i] != "and":
                pure = False
            i += 1
        return (tuple(eqs) if pure and eqs else None), cols
