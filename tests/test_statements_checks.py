"""QU401/QU402 checks over hand-built snapshots: statement history grouped into transactions,
digests as the weaker signal, sources switched off (a note, not a failure)."""
from __future__ import annotations

from typing import Any

from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config, RuleOverride
from dbwatch.evaluate import Selection, evaluate
from dbwatch.findings import Finding
from dbwatch.snapshot import ProbeFailure, Snapshot

CATALOGUE = load_catalogue()
HIST = "performance_schema.events_statements_history_long"
DIG = "performance_schema.events_statements_summary_by_digest"
CLAIM = ("select * from `jobs` where `queue` = 'default' and ((`reserved_at` is null and "
         "`available_at` <= 1700000000) or (`reserved_at` <= 1699999910)) order by `id` asc "
         "limit 1 for update")


def history(*threads: list[str]) -> dict[str, Any]:
    rows = [[100 + n, i + 1, text] for n, stmts in enumerate(threads)
            for i, text in enumerate(stmts)]
    return {"available": True, "source": HIST, "limit": 10000, "statements": rows}


def laravel(job: int, skip: str = "", fetch: bool = True, begin: bool = True) -> list[str]:
    start = ["start transaction"] if begin else []
    reserve = f"update `jobs` set `reserved_at` = 1, `attempts` = 1 where `id` = {job}"
    out = [*start, CLAIM + skip, reserve, "commit", *start]
    if fetch:
        out.append(f"select * from `jobs` where `id` = {job} limit 1 for update")
    return [*out, f"delete from `jobs` where `id` = {job}", "commit"]


def digests(*rows: tuple[str, int], idle: int | None = 5, key: str = "schema",
            source: str = DIG) -> dict[str, Any]:
    return {"available": True, "source": source, "limit": 500,
            "digests": [{key: "app", "text": t, "calls": c, "idle_seconds": idle}
                        for t, c in rows]}


OFF = {"available": False, "reason": "performance_schema is OFF: no statement history or "
       "digests for QU401/QU402", "fix": "under [mysqld] in my.cnf set `performance_schema = ON`"}


def snap(sections: dict[str, Any], engine: str = "mariadb", skip_locked: bool = True,
         failures: tuple[ProbeFailure, ...] = ()) -> Snapshot:
    version = {"mariadb": "10.11.6-MariaDB", "mysql": "8.0.36", "postgresql": "15.4"}[engine]
    return Snapshot(target="t", engine=engine, server_version=version, version_num=0,
                    taken_at=0.0, sections=sections, failures=failures,
                    features=frozenset({"skip_locked"} if skip_locked else ()))


def run(s: Snapshot, **params: Any) -> tuple[list[Finding], Any]:
    rules = {r: RuleOverride(params=params) for r in ("QU401", "QU402")} if params else {}
    ev = evaluate(s, CATALOGUE, Config(rules=rules), Selection(select=("QU4", "DW")))
    return ev.findings, ev


def by_rule(found: list[Finding], rule: str) -> list[Finding]:
    return [f for f in found if f.rule == rule]


def my(hist: Any, dig: Any = None, **kw: Any) -> Snapshot:
    return snap({"my.statement_history": hist,
                 "my.statement_digests": dig if dig is not None else digests()}, **kw)


def test_history_explicit_transactions_fetch_before_delete_and_plain_claim() -> None:
    found, ev = run(my(history(laravel(1) + laravel(2), laravel(3))))
    assert sorted(r for r in ev.ran if r.startswith("QU")) == ["QU401", "QU402"] and ev.unknown == {}
    (qu401,) = by_rule(found, "QU401")
    assert qu401.confidence == "high" and qu401.severity == "warning"
    assert qu401.subject == "table jobs" and qu401.evidence["key_columns"] == ["id"]
    assert qu401.evidence["count"] == 3 and qu401.evidence["transactions"] == 3
    assert qu401.evidence["source"] == HIST and qu401.evidence["threads"] == 2
    assert qu401.evidence["example"]["delete"] == "delete from `jobs` where `id` = 1"
    assert qu401.summary.endswith("(statement history)") and "DELETE FROM jobs" in qu401.fix
    (qu402,) = by_rule(found, "QU402")
    assert qu402.confidence == "high" and qu402.evidence["count"] == 3
    assert qu402.evidence["server_version"] == "10.11.6-MariaDB"
    assert "mariadb 10.11.6-MariaDB supports SKIP LOCKED" in qu402.summary


def test_history_autocommit_off_is_grouped_by_commits() -> None:
    found, _ = run(my(history(laravel(1, begin=False) + laravel(2, begin=False))))
    (qu401,) = by_rule(found, "QU401")
    assert qu401.evidence["count"] == 2 and qu401.evidence["transactions"] == 2


def test_a_thread_boundary_is_a_transaction_boundary() -> None:
    """The window of thread 100 ends with the locking read; thread 101 starts with a delete."""
    tail = ["start transaction", "select * from `jobs` where `id` = 7 for update"]
    head = ["delete from `jobs` where `id` = 7", "commit"]
    found, _ = run(my(history(tail, head)))
    assert by_rule(found, "QU401") == []


def test_single_delete_and_skip_locked_are_clean() -> None:
    found, ev = run(my(history(laravel(1, skip=" skip locked", fetch=False))))
    assert found == [] and sorted(r for r in ev.ran if r.startswith("QU")) == ["QU401", "QU402"]


def test_no_qu402_on_a_server_without_skip_locked() -> None:
    found, _ = run(my(history(laravel(1)), skip_locked=False))
    assert by_rule(found, "QU402") == [] and len(by_rule(found, "QU401")) == 1


def test_digests_alone_are_a_probable_qu401_and_a_qu402() -> None:
    dig = digests(("SELECT * FROM `jobs` WHERE `id` = ? LIMIT ? FOR UPDATE ", 120),
                  ("DELETE FROM `jobs` WHERE `id` = ? ", 118),
                  (("SELECT * FROM `jobs` WHERE `queue` = ? AND ( ( `reserved_at` IS NULL AND "
                    "`available_at` <= ? ) OR ( `reserved_at` <= ? ) ) ORDER BY `id` ASC "
                    "LIMIT ? FOR UPDATE "), 130))
    found, _ = run(my(OFF, dig))
    (qu401,) = by_rule(found, "QU401")
    assert qu401.confidence == "probable"
    assert qu401.evidence["select_calls"] == 120 and qu401.evidence["delete_calls"] == 118
    assert qu401.summary.startswith("probable redundant fetch-before-delete on jobs: "
                                    "`SELECT … WHERE id = ? FOR UPDATE` and `DELETE … WHERE "
                                    "id = ?` on `jobs` are called about equally often")
    assert qu401.evidence["scope"] == "app" and qu401.evidence["source"] == DIG
    (qu402,) = by_rule(found, "QU402")
    assert qu402.evidence["calls"] == 130 and "130 calls (statement digests)" in qu402.summary


def test_digests_called_unequally_or_stale_are_not_paired() -> None:
    sel, dele = "SELECT * FROM `jobs` WHERE `id` = ? FOR UPDATE ", "DELETE FROM `jobs` WHERE `id` = ? "
    found, _ = run(my(OFF, digests((sel, 100), (dele, 40))))
    assert by_rule(found, "QU401") == []
    stale = digests((sel, 100), (dele, 100), idle=3 * 86400)
    assert by_rule(run(my(OFF, stale))[0], "QU401") == []
    assert len(by_rule(run(my(OFF, stale), digest_max_idle="7d")[0], "QU401")) == 1


def test_history_and_digests_of_one_table_make_one_finding() -> None:
    dig = digests(("SELECT * FROM `jobs` WHERE `id` = ? LIMIT ? FOR UPDATE ", 50),
                  ("DELETE FROM `jobs` WHERE `id` = ? ", 50))
    found, _ = run(my(history(laravel(1)), dig))
    (qu401,) = by_rule(found, "QU401")
    assert qu401.confidence == "high"
    assert qu401.evidence["digests"] == [{"select_calls": 50, "delete_calls": 50, "scope": "app",
                                          "source": DIG}]


def test_sources_switched_off_are_a_note_not_a_failure() -> None:
    s = my(OFF, OFF)
    found, ev = run(s)
    assert found == [] and sorted(r for r in ev.ran if r.startswith("QU")) == ["QU401", "QU402"] and ev.unknown == {}
    (note,) = s.unavailable()         # the same reason twice is said once
    assert note.startswith("performance_schema is OFF") and "to enable: under [mysqld]" in note


def test_a_refused_probe_is_unknown_and_dw001() -> None:
    failure = ProbeFailure("my.statement_history", "(1142) SELECT command denied",
                           "GRANT SELECT ON performance_schema.* TO '<monitor>'@'%';", True)
    s = snap({"my.statement_history": None, "my.statement_digests": digests()},
             failures=(failure,))
    found, ev = run(s)
    assert set(ev.unknown) == {"QU401", "QU402"}
    (dw,) = by_rule(found, "DW001")
    assert "performance_schema" in dw.fix and dw.evidence["rules_unknown"] == ["QU401", "QU402"]


def test_postgresql_pg_stat_statements() -> None:
    dig = digests(("select * from jobs where id = $1 limit $2 for update", 40),
                  ("delete from jobs where id = $1", 40),
                  (("select * from jobs where queue = $1 and ((reserved_at is null and "
                    "available_at <= $2) or (reserved_at <= $3)) order by id asc limit $4 "
                    "for update skip locked"), 41),
                  key="database", source="public.pg_stat_statements", idle=None)
    found, _ = run(snap({"pg.statement_digests": dig}, engine="postgresql"))
    (qu401,) = by_rule(found, "QU401")
    assert qu401.confidence == "probable" and qu401.evidence["scope"] == "app"
    assert by_rule(found, "QU402") == []      # this claim skips locked rows


def test_both_checks_share_one_analysis_of_a_section() -> None:
    from dbwatch.checks.qu401_qu402_statements import analyse_history
    sec = history(laravel(1))
    first = analyse_history(sec)
    assert first is not None and analyse_history(sec) is first
    assert analyse_history(history(laravel(1))) is not first
    assert analyse_history(OFF) is None
