"""Query-log analysis: detect the format, stream statements into the transaction grouper,
run the QU401/QU402 detectors. Entry point: analyse_logs(paths)."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import field
from pathlib import Path
from typing import Any

from dbwatch.errors import UsageError
from dbwatch.findings import Finding
from dbwatch.parsers.pglog import SEVERITIES
from dbwatch.sqlpatterns.detect import (
    RELEVANT_KINDS,
    PatternDetector,
    ServerVersion,
    parse_server_version,
)
from dbwatch.sqlpatterns.fingerprint import Classifier
from dbwatch.sqlpatterns.logs.lines import (
    LineStats,
    iter_lines,
    open_log,
    quote_depth,
    unquoted,
)
from dbwatch.sqlpatterns.logs.mysql import GENERAL_ENTRY, SPACED_ENTRY, read_general, read_slow
from dbwatch.sqlpatterns.logs.mysql_table import looks_like_table, read_general_table
from dbwatch.sqlpatterns.logs.postgres import read_csvlog, read_jsonlog, read_stderr
from dbwatch.sqlpatterns.logs.transcript import Split, has_several, read_transcript
from dbwatch.sqlpatterns.transactions import TransactionGrouper

from ...frozen import mutable

__all__ = ["FORMATS", "LogAnalysis", "LogStats", "analyse_logs", "detect_format"]

SNIFF_LINES = 200
READERS: dict[str, Callable[[Iterable[str], Any], None]] = {
    "mysql-general": read_general,
    "mysql-general-table": read_general_table,
    "mysql-slow": read_slow,
    "postgresql-stderr": read_stderr,
    "postgresql-csvlog": read_csvlog,
    "postgresql-jsonlog": read_jsonlog,
    "sql": read_transcript,
}
FORMATS = tuple(READERS)
_CSV_START = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? [A-Za-z0-9+:-]+,")
_SLOW_MARKERS = ("# Time:", "# User@Host:", "# Query_time:", "# Thread_id:")


def detect_format(head: Sequence[str]) -> str:
    """The log format, from its first lines."""
    if any(line.startswith(_SLOW_MARKERS) for line in head):
        return "mysql-slow"
    if looks_like_table(head):
        return "mysql-general-table"
    if (
        any(
            GENERAL_ENTRY.match(line) or re.match(r"Time\s+Id\s+Command\s+Argument", line)
            for line in head
        )
        or sum(1 for line in head if SPACED_ENTRY.match(line)) >= 2
    ):  # its tabs made spaces
        return "mysql-general"
    for line in head:
        if line.startswith("{"):
            try:
                rec = json.loads(line)
            except ValueError:
                break
            if isinstance(rec, dict) and "error_severity" in rec:
                return "postgresql-jsonlog"
            break
    if any(_CSV_START.match(line) for line in head):
        return "postgresql-csvlog"
    for line in head:
        i = line.find(":  ")
        if i > 0 and line[line.rfind(" ", 0, i) + 1 : i] in SEVERITIES:
            return "postgresql-stderr"
    return "sql"


@mutable
class LogStats:
    lines: int = 0
    statements: int = 0
    unparsable: int = 0  # statements examined by a detector that sqlparse refused
    unreadable_lines: int = 0  # lines no reader could interpret (skipped)
    overlong_lines: int = 0
    transactions: int = 0
    bytes: int = 0
    format: str = ""
    server_version: str | None = None
    sqlparse_runs: int = 0  # distinct statement shapes parsed (cache misses)
    errors: list[str] = field(default_factory=list)  # files cut short (truncated gzip, I/O)

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "errors": list(self.errors)}


@mutable
class LogAnalysis:
    findings: list[Finding]
    stats: LogStats = field(default_factory=LogStats)


class _Analysis:
    """The Sink the readers report to: splits, groups and detects as statements arrive."""

    def __init__(self, detector: PatternDetector, dialect: str, lstats: LineStats) -> None:
        self.grouper = TransactionGrouper(detector.feed, dialect)
        self.grouper.relevant = RELEVANT_KINDS
        self.lstats = lstats
        self.server_version: str | None = None
        self._feed = self.grouper.feed
        self.single_statement = self.grouper.feed  # for readers that checked for ';' already
        self.connect = self.grouper.connect
        self.disconnect = self.grouper.disconnect

    def statement(
        self, conn: Hashable, ts: str | None, text: str, params: dict[str, str] | None = None
    ) -> None:
        if ";" in text and has_several(text):  # multi-statement string: each on its own
            split = Split(text)
            for piece in split.pieces:
                self._feed(conn, ts, piece, params)
            if split.capped:  # the rest of a hostile string: counted, not examined
                self.lstats.unreadable += 1
            return
        self._feed(conn, ts, text, params)

    def version(self, text: str) -> None:
        self.server_version = text  # the last header wins: the server may have been upgraded

    def unreadable(self, n: int = 1) -> None:
        self.lstats.unreadable += n


def _dialect(fmt: str, override: ServerVersion | None) -> str:
    if fmt.startswith("postgresql"):
        return "postgresql"
    if fmt == "sql" and override is not None and override.engine == "postgresql":
        return "postgresql"
    return "mysql"


def analyse_logs(
    paths: Sequence[str | Path],
    server_version_override: str | None = None,
    target: str | None = None,
    fmt: str | None = None,
) -> LogAnalysis:
    """Analyse query logs (streamed, gzip accepted) and return QU401/QU402 findings + stats.

    The server version comes from `server_version_override`, else from the log's own
    header (MySQL/MariaDB `Version:`, PostgreSQL `starting PostgreSQL …`)."""
    if not paths:
        raise UsageError("no log file given")
    override = None
    if server_version_override:
        # A bare number ('8.0.36', '15') takes its engine from the log format, known later.
        override = parse_server_version(server_version_override, "unknown")
        if parse_server_version(server_version_override, "mysql") is None:
            raise UsageError(
                f"--server-version {server_version_override!r}: expected e.g. "
                "'10.11.6-MariaDB', 'mysql 8.0.36' or 'postgresql 15'"
            )
    if fmt is not None and fmt not in READERS:
        raise UsageError(f"unknown log format {fmt!r}; one of {', '.join(FORMATS)}")
    detector = PatternDetector()
    stats = LogStats()
    formats: list[str] = []
    seen_version: ServerVersion | None = None
    for path in paths:
        file_fmt, version, dialect = _analyse_one(Path(path), detector, stats, override, fmt)
        formats.append(file_fmt)
        if server_version_override and override is None:
            override = parse_server_version(server_version_override, dialect)
        if version is not None and seen_version is None:
            seen_version = parse_server_version(
                version, "postgresql" if dialect == "postgresql" else "mysql"
            )
    server = override or seen_version
    stats.format = ",".join(dict.fromkeys(formats))
    stats.server_version = server.text if server else None
    name = target or "log:" + ",".join(Path(p).name for p in paths)
    return LogAnalysis(detector.findings(server, name), stats)


def _analyse_one(
    path: Path,
    detector: PatternDetector,
    stats: LogStats,
    override: ServerVersion | None,
    fmt: str | None,
) -> tuple[str, str | None, str]:
    lstats = LineStats()
    try:
        stream = open_log(path)
    except OSError as exc:
        raise UsageError(f"{path}: cannot read log ({exc.strerror or exc})") from exc
    with stream:
        lines = iter_lines(stream, lstats)
        head: list[str] = []
        try:
            head = list(itertools.islice(lines, SNIFF_LINES))
        except (OSError, EOFError) as exc:  # not gzip after all, or cut in its first MiB
            stats.errors.append(f"{path}: log unreadable after {lstats.bytes} bytes ({exc})")
        depth = quote_depth(head)
        if depth:  # a paste quoted with `>`: read the text inside the marks
            head, lines = list(unquoted(head, depth)), unquoted(lines, depth)
        file_fmt = fmt or detect_format(head)
        dialect = _dialect(file_fmt, override)
        detector.classifier = Classifier(dialect)
        sink = _Analysis(detector, dialect, lstats)
        try:
            READERS[file_fmt](itertools.chain(head, lines), sink)
        except (OSError, EOFError) as exc:  # truncated gzip, I/O error: keep what was read
            stats.errors.append(f"{path}: log unreadable after {lstats.bytes} bytes ({exc})")
        sink.grouper.flush()
    if sink.grouper.stats.statements == 0 and lstats.lines:
        stats.errors.append(_nothing_read(path, file_fmt, lstats))
    detector.transactions += sink.grouper.stats.dropped
    cstats = detector.classifier.stats
    stats.lines += lstats.lines
    stats.bytes += lstats.bytes
    stats.unreadable_lines += lstats.unreadable
    stats.overlong_lines += lstats.overlong
    stats.statements += sink.grouper.stats.statements
    stats.transactions += sink.grouper.stats.transactions
    stats.unparsable += cstats.unparsable
    stats.sqlparse_runs += cstats.parsed
    return file_fmt, sink.server_version, dialect


_NO_STATEMENT_HINT = {  # by the format's start
    "mysql-slow": " (long_query_time = 0 puts every statement in a slow log)",
    "postgresql": " (log_statement = 'all' puts every statement in the log)",
}


def _nothing_read(path: Path, fmt: str, lstats: LineStats) -> str:
    """A log of which not one statement was read: said, so that no finding is not 'OK'."""
    lines = f"{lstats.lines:,} line{'s' if lstats.lines != 1 else ''}"
    why = f", {lstats.unreadable:,} of them not understood" if lstats.unreadable else ""
    hint = next((h for kind, h in _NO_STATEMENT_HINT.items() if fmt.startswith(kind)), "")
    return (
        f"{path}: not one statement read from its {lines} as a {fmt} log{why}: nothing in it "
        f"was checked{hint}"
    )
