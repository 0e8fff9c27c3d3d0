"""A fix's GRANT with the placeholder account replaced by the one dbwatch is connected as, from
the privilege sections (my.privileges, pg.privileges) of the same snapshot."""

from __future__ import annotations

from collections.abc import Mapping

from ..snapshot.settings import MY_PRIVILEGES, PG_PRIVILEGES
from ..targets.quoting import pg_ident_text

GRANT_PLACEHOLDERS = ("<monitor_user>", "'<monitor>'@'%'")
# what a PostgreSQL role needs to see every session, lock and horizon holder
MONITOR_GRANT = "GRANT pg_monitor TO <monitor_user>;"


def exact_grant(grant: str | None, sections: Mapping[str, object]) -> str | None:
    """A fix's placeholder account replaced by the account dbwatch is connected as."""
    if not grant:
        return grant
    my, pg = sections.get(MY_PRIVILEGES.name), sections.get(PG_PRIVILEGES.name)
    if my is not None and (account := MY_PRIVILEGES.build(my).account):
        grant = grant.replace("'<monitor>'@'%'", account)
    if pg is not None and (user := PG_PRIVILEGES.build(pg).user):
        grant = grant.replace("<monitor_user>", pg_ident_text(user))
    return grant
