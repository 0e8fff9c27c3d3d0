"""Which rules' findings name a culprit and what extra sections that reads: kept apart from
`culprit` (its session and SQL-tag machinery) so an audit without such a finding never
imports it."""

from __future__ import annotations

from collections.abc import Iterable

SESSION_RULES = frozenset({"PG001", "PG002", "PG101", "PG201", "MY001", "MY002", "MY101", "MY201"})
CHAIN_RULES = frozenset({"PG101", "MY101"})  # the session named is the root blocker
DEADLOCK_RULES = frozenset({"MY102"})
# my.trx: MY101 names its root blocker's transaction from it (MY001/MY002 read it anyway)
SECTIONS = {"postgresql": ("pg.txn_detail",), "mysql": ("my.txn_detail", "my.trx")}


def sections_for(engine: str, rule_ids: Iterable[str]) -> set[str]:
    """The extra reads when a session rule runs (optional: their failure is DW001/DW002 and
    the origin says what is unknown, the rules still run)."""
    key = "mysql" if engine in ("mysql", "mariadb") else engine
    return set(SECTIONS.get(key, ())) if SESSION_RULES & set(rule_ids) else set()


def enriched(rule_id: str) -> bool:
    """Does `culprit.enrich` change a finding of this rule?"""
    return rule_id in SESSION_RULES or rule_id in DEADLOCK_RULES
