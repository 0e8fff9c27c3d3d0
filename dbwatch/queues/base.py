"""What a queue library is to dbwatch: its table shapes, states, "stuck", failures and fixes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import field

from ..frozen import frozen
from ..registry import Registry


@frozen
class Shape:
    """One table of a library, recognised by the columns it always has (lower-case names)."""

    kind: str  # selects the probe's SQL files: queue_<kind>_<aspect>.sql
    library: str  # the library's name as findings carry it (SPEC §6: laravel, pg-boss, ...)
    columns: frozenset[str]
    engines: tuple[str, ...] = ("postgresql", "mysql")
    name_suffix: str = ""  # also recognised by name (Solid Queue, graphile-worker)
    # Sibling tables read with this one, named by replacing name_suffix (solid_queue_jobs ->
    # solid_queue_ready_executions; graphile _private_jobs -> _private_tasks).
    siblings: tuple[str, ...] = ()
    excludes: frozenset[str] = frozenset()  # a column that makes it another table (an archive)
    scale_depth: bool = True  # the table's row estimate is the queue (finished rows leave it)
    typed: tuple[str, ...] = ()  # columns whose SQL type the probe reads (expiry variants)
    # column -> the kind of SQL type it must have (roles.type_kind), where another layout with
    # the same names exists: Laravel's times are integers, an app's `jobs` with datetimes is not
    # Laravel's and is read by the queue model instead
    kinds: tuple[tuple[str, str], ...] = ()


@frozen
class Variant:
    """A client or version of a library read from the table's own columns (Oban's `errors`
    type): its name, the SQL fragments its queries need and its own words (fixes keyed
    backlog / expired / attempts / failure, and expiry_source)."""

    name: str
    fragments: dict[str, str]
    words: dict[str, str]


@frozen
class Library:
    """A queue library: how dbwatch reads it and the words its users know."""

    name: str  # SPEC §6 name, carried as evidence.library
    title: str  # as its users write it
    versions: str  # the schema versions recognised
    shapes: tuple[Shape, ...]
    table_names: frozenset[str]  # its default table names (is_queue_table by name)
    states: dict[str, str]  # available/claimed/retrying/failed/done -> how the table says so
    stuck: str  # what "stuck" means for it
    backlog_fix: str  # QU001 in its own words
    expired_fix: str  # QU002
    expired_note: tuple[str, str] | None = None  # QU002 summary: "<n> <what> <limit>"; "<then>"
    attempts_fix: str = ""  # QU003
    failure_fix: dict[str, str] = field(default_factory=dict)  # QU004 by failure kind
    failure_meaning: dict[str, str] = field(default_factory=dict)
    # its own failure texts: (substring of the message, kind)
    failure_texts: tuple[tuple[str, str], ...] = ()
    expiry_source: str = "library default"  # QU002 evidence when no per-job expiry is read
    # QU001 naming the lagging queue (None: backlog_fix as is); given the queue's name, or
    # None when the row is not a queue (a batch name)
    backlog_text: Callable[[str | None], str] | None = None
    # The library on the one queue model: role -> its column (docs/queues.md; roles.ROLES)
    roles: dict[str, str] = field(default_factory=dict)
    # A client/version told from the table's column types (columns -> Variant); None: one
    variant: Callable[[dict[str, str]], Variant] | None = None
    # SQL fragments told from the table's columns where a version's indexes need another
    # query shape (pg-boss 12's job_i14); unlike a variant, nothing a finding carries
    fragments: Callable[[dict[str, str]], dict[str, str]] | None = None
    variant_words: dict[str, dict[str, str]] = field(default_factory=dict)
    # QU002: claimed rows whose worker row is gone (its probe's expiry 0: stuck at once), in
    # the library's words; None: the library has no such rows
    gone_note: str | None = None


# The library modules, each declaring its LIBRARY with `queue_library(...)`. Order matters: it
# is the recognition order (the first shape a table satisfies wins, more specific shapes
# first; queues.SHAPES orders the shapes) and the order a table name's library is looked up in.
LIBRARIES: Registry[Library] = Registry(
    "queue library",
    tuple(
        f"dbwatch.queues.{m}"
        for m in (
            "laravel",
            "que",
            "good_job",
            "delayed_job",
            "oban",
            "river",
            "solid_queue",
            "graphile_worker",
            "pg_boss",
            "procrastinate",
            "pgqueuer",
            "symfony_messenger",
        )
    ),
)


def queue_library(lib: Library) -> Library:
    """Register a library under its SPEC name: `queue_library(LIBRARY)` in its module."""
    return LIBRARIES.add(lib.name, lib)
