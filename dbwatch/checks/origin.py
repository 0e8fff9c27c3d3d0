"""Who opened a transaction: the framework tags of its statements (application, controller,
route, action, job, framework, other tags), what the client says it is (application_name,
connection attributes), where it connects from — as found, never guessed from a user name.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import field

from ..frozen import frozen
from ..sqlpatterns.tags import Tags, clean, join_phrase, parse_tags, without_comments

STATEMENT_SHOWN = 72  # characters of a statement quoted in a phrase


@frozen
class Origin:
    """What is known of where a session's transaction comes from, and what is not (why)."""

    tags: Tags = field(default_factory=Tags)
    tags_from: str | None = None  # which statement carried them
    application_name: str | None = None  # PostgreSQL: what the client set
    attrs: tuple[tuple[str, str], ...] = ()  # MySQL/MariaDB connection attributes
    client_addr: str | None = None
    host: str | None = None
    unknown: tuple[str, ...] = field(default_factory=tuple)

    def attr(self, name: str) -> str | None:
        for k, v in self.attrs:
            if k == name and v:
                return v
        return None

    @property
    def application(self) -> str | None:
        """The tagged application, else what the client calls itself (application_name,
        program_name): a name the client chose, never the database user's."""
        return (
            self.tags.named("application")
            or _own_name(self.application_name)
            or _own_name(self.attr("program_name") or self.attr("application_name"))
        )

    def where(self) -> str | None:
        return self.tags.where()

    def phrase(self) -> str | None:
        """One short phrase: 'Shop orders#create', 'Shop, job SendInvoiceJob'."""
        return join_phrase(self.application, self.where())

    def culprit(self) -> str | None:
        """The name a fix addresses: the job, the controller action, else the application."""
        where = self.where()
        if where and where.startswith("job "):
            return where[4:]
        return where or self.application

    def source(self) -> str | None:
        """What named it (SPEC §6): the tags' format, else application_name / connect_attrs."""
        if self.tags.named("application") or self.tags.where():
            return self.tags.format
        if _own_name(self.application_name):
            return "application_name"
        if self.application:
            return "connect_attrs"
        return None

    def to_json(self) -> dict[str, object]:
        """SPEC §6 evidence.origin: only the keys found; `unknown` says what was not and why."""
        t = self.tags
        found: dict[str, object] = {
            "application": self.application,
            "controller": t.named("controller"),
            "action": t.named("action"),
            "route": t.named("route"),
            "job": t.named("job"),
            "framework": t.named("framework"),
            "tags": t.others(),
            "source": self.source(),
            "tags_from": self.tags_from,
            "application_name": self.application_name,
            "connection_attributes": dict(self.attrs),
            "client_addr": self.client_addr,
            "host": self.host,
            "phrase": self.phrase(),
        }
        out = {k: v for k, v in found.items() if v}
        out["unknown"] = list(self.unknown)
        return out


# names a driver or tool gives itself: they say what connects, not which application
_DRIVER_NAMES = frozenset({"", "dbwatch"})


def _own_name(name: str | None) -> str | None:
    if name is None:
        return None
    shown = clean(name, 64)
    return None if shown.lower() in _DRIVER_NAMES else shown


def tags_of(statements: Iterable[tuple[str, str | None]]) -> tuple[Tags, str | None]:
    """The first statement (in the order given: the opener first) that carries tags."""
    for label, text in statements:
        tags = parse_tags(text)
        if tags:
            return tags, label
    return Tags(), None


def short(statement: str | None, width: int = STATEMENT_SHOWN) -> str | None:
    """A statement quoted in a phrase: tags and whitespace runs gone, cut in the middle so
    both its verb and its locking clause stay (`SELECT … FOR UPDATE`)."""
    if not statement:
        return None
    text = clean(without_comments(statement, 4096), 4096)
    if not text:
        return None
    if len(text) <= width:
        return text
    head = width * 2 // 3
    return text[:head].rstrip() + " … " + text[-(width - head - 3) :].lstrip()


def pg_unknown(application_name: str | None, host: str | None, addr: str | None) -> list[str]:
    out = []
    if not _own_name(application_name):
        out.append("application_name: not set by the client")
    if addr is None:
        out.append("client address: a Unix-socket connection has none")
    elif host == addr:
        out.append("client host name: PostgreSQL resolves it only with log_hostname = on")
    return out


PDO_DEALLOCATE = (
    "framework tags: the last statement PostgreSQL shows is PHP PDO's `DEALLOCATE pdo_stmt_…` "
    "(server-side prepares), not the statement and its comment: set "
    "PDO::ATTR_EMULATE_PREPARES = true in the connection's options (Laravel: 'options' => "
    "[PDO::ATTR_EMULATE_PREPARES => true]) so the statement text stays visible"
)


CUT_COMMENT = (
    "framework tags: a statement ends inside a comment — cut short by the server "
    "(PostgreSQL: track_activity_query_size, 1 kB by default; raise it, e.g. 4096, restart) "
    "or by dbwatch's 2 kB read: tags at the end of a long statement are lost; frameworks that "
    "put them first (knex) are not affected"
)


def tag_unknown(tags: Tags, statements: Sequence[object]) -> list[str]:
    if tags:
        return []
    if not statements:
        return ["framework tags: no statement text could be read"]
    if any(isinstance(s, str) and s[:19].upper() == "DEALLOCATE PDO_STMT" for s in statements):
        return [PDO_DEALLOCATE]
    if any(isinstance(s, str) and s.rfind("/*") > s.rfind("*/") for s in statements):
        return [CUT_COMMENT]
    why = (
        "framework tags: none of its statements carries a sqlcommenter or query-log-tags "
        "comment (enable the framework's SQL comments to name the route or job)"
    )
    return [why]


def statement_origin(
    query: str | None, application: str | None, host: str | None
) -> dict[str, object]:
    """A terminate candidate's origin: the tags of its statement now and what its client
    calls itself (application_name / program_name) — nothing from the user name."""
    tags, label = tags_of([("current statement", query)])
    unknown = tag_unknown(tags, [query] if query else [])
    return Origin(
        tags=tags, tags_from=label, application_name=application, host=host, unknown=tuple(unknown)
    ).to_json()
