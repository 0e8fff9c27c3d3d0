"""evidence.origin / evidence.transaction on session findings (issue 23), from hand-built
snapshot sections: what is tagged is named, what is not stays unknown (never the user)."""

from __future__ import annotations

from typing import Any

from schemas import validate

from dbwatch.catalogue import Thresholds, load_catalogue
from dbwatch.config import Config, RuleOverride
from dbwatch.evaluate import Selection, evaluate
from dbwatch.findings import Finding
from dbwatch.snapshot import Snapshot

CATALOGUE = load_catalogue()
LOW = Thresholds("duration", 1.0, 3600.0)
TAGGED = "SELECT * FROM orders WHERE id = 1 FOR UPDATE /*application:Shop,job:ReindexCatalog*/"


def _run(engine: str, sections: dict[str, Any], rules: tuple[str, ...]) -> list[Finding]:
    snap = Snapshot(
        target="case",
        engine=engine,
        server_version="15.4" if engine == "postgresql" else "10.11.6-MariaDB",
        version_num=150004 if engine == "postgresql" else 101106,
        taken_at=1_800_000_000.0,
        sections=sections,
    )
    config = Config(rules={r: RuleOverride(thresholds=LOW) for r in rules})
    ev = evaluate(snap, CATALOGUE, config, Selection(rules))
    return [f for f in ev.findings if f.rule in rules]


def _pg_session(pid: int, query: str, **kw: Any) -> dict[str, Any]:
    row = {
        "pid": pid, "backend_start": "2026-01-01T10:00:00+00:00",
        "xact_start": "2026-01-01T10:01:00+00:00", "state": "idle in transaction",
        "user": "app", "application": "", "client_addr": "10.0.0.5", "host": "10.0.0.5",
        "database": "shop", "backend_type": "client backend", "backend_xid": None,
        "backend_xmin": None, "xact_seconds": 2460.0, "state_seconds": 2340.0, "query": query,
    }
    return row | kw


def test_pg_idle_transaction_names_job_locks_and_first_statement() -> None:
    s = _pg_session(812, "SELECT 1", backend_xid="1234")
    detail = {
        "locks": [{"pid": 812, "locktype": "relation", "relation": "public.orders",
                   "mode": "RowShareLock", "granted": True, "locks": 1}],
        "statements": [
            {"pid": 812, "backend_start": s["backend_start"], "xact_start": s["xact_start"],
             "query": TAGGED, "first_seen": "2026-01-01T10:01:05+00:00",
             "last_seen": "2026-01-01T10:01:20+00:00"},
            {"pid": 812, "backend_start": s["backend_start"], "xact_start": s["xact_start"],
             "query": "SELECT 1", "first_seen": "2026-01-01T10:02:00+00:00",
             "last_seen": "2026-01-01T10:40:00+00:00"},
        ],
        "remembered": True,
    }
    (f,) = _run("postgresql", {"pg.sessions": [s], "pg.txn_detail": detail}, ("PG002",))
    origin, txn = f.evidence["origin"], f.evidence["transaction"]
    assert isinstance(origin, dict) and isinstance(txn, dict)
    assert origin["application"] == "Shop" and origin["job"] == "ReindexCatalog"
    assert origin["phrase"] == "Shop, job ReindexCatalog"
    assert origin["tags_from"] == "statement seen first" and origin["source"] == "marginalia"
    assert txn["started"] == "2026-01-01T10:01:00+00:00"
    assert txn["first_statement"] == TAGGED and txn["wrote"] is True
    assert txn["locks"][0]["relation"] == "public.orders"  # type: ignore[index]
    assert "Shop, job ReindexCatalog, opened with `SELECT * FROM orders WHERE id = 1 FOR UPDATE`" \
        " on public.orders 41m00s ago" in f.summary
    assert "ReindexCatalog (Shop) leaves its transaction open" in f.fix
    assert "idle_in_transaction_session_timeout" in f.fix  # the server-side guard stays


def test_pg_untagged_invents_nothing() -> None:
    (f,) = _run("postgresql", {"pg.sessions": [_pg_session(9, "SELECT 1")]}, ("PG002",))
    origin = f.evidence["origin"]
    assert isinstance(origin, dict)
    assert "application" not in origin and "phrase" not in origin
    assert "controller" not in origin and "job" not in origin
    assert any("framework tags" in u for u in origin["unknown"])  # type: ignore[union-attr]
    assert any("application_name" in u for u in origin["unknown"])  # type: ignore[union-attr]
    assert "In the application" not in f.fix and " — " not in f.summary
    assert f.evidence["transaction"]["locks_unknown"]  # type: ignore[index]


def test_pg101_names_the_root_blockers_last_activity() -> None:
    root = _pg_session(812, "SELECT 1 /*application='Shop',controller='orders',action='create'*/")
    waiter = _pg_session(900, "UPDATE orders SET s = 1", state="active", wait_event_type="Lock",
                         blocked_by=[812], query_seconds=120.0, user="web")
    (f,) = _run("postgresql", {"pg.sessions": [root, waiter]}, ("PG101",))
    assert f.summary.endswith(" — pid 812: Shop orders#create, idle 39m00s")
    assert f.evidence["origin"]["phrase"] == "Shop orders#create"  # type: ignore[index]


def _my_trx(thread: int, query: str | None, **kw: Any) -> dict[str, Any]:
    row = {"thread_id": thread, "trx_id": "77", "trx_state": "RUNNING", "trx_seconds": 2460,
           "user": "shop_rw", "host": "10.0.0.7:51234", "db": "shop", "command": "Sleep",
           "command_seconds": 2340, "trx_query": None, "info": query, "trx_rows_locked": 2,
           "trx_rows_modified": 1}
    return row | kw


def test_my_idle_transaction_statements_back_to_begin_and_attrs() -> None:
    detail = {
        "attrs": [{"thread_id": 5, "name": "program_name", "value": "shop-worker"},
                  {"thread_id": 5, "name": "_client_name", "value": "libmariadb"}],
        "statements": [
            {"thread_id": 5, "event_id": 1, "sql_text": "SELECT 1"},
            {"thread_id": 5, "event_id": 2, "sql_text": "BEGIN"},
            {"thread_id": 5, "event_id": 3, "sql_text": TAGGED},
            {"thread_id": 5, "event_id": 4, "sql_text": "UPDATE orders SET s = 'x' WHERE id = 2"},
        ],
        "history_size": 10,
    }
    (f,) = _run("mariadb", {"my.trx": [_my_trx(5, None)], "my.txn_detail": detail}, ("MY002",))
    origin, txn = f.evidence["origin"], f.evidence["transaction"]
    assert isinstance(origin, dict) and isinstance(txn, dict)
    assert origin["phrase"] == "Shop, job ReindexCatalog"
    assert origin["connection_attributes"] == {"program_name": "shop-worker",
                                               "_client_name": "libmariadb"}
    assert txn["first_statement"] == TAGGED
    assert [s["event_id"] for s in txn["statements"]] == [3, 4]  # type: ignore[index,union-attr]
    assert f.evidence["application"] == "Shop" and txn["wrote"] is True


def test_my_never_takes_the_user_for_the_application() -> None:
    detail = {"history_off": "statement history is off …; to enable: UPDATE …",
              "attrs_off": "performance_schema is OFF; to enable: …"}
    (f,) = _run("mariadb", {"my.trx": [_my_trx(6, "SELECT 1")], "my.txn_detail": detail},
                ("MY002",))
    assert f.evidence["application"] is None  # not "shop_rw"
    origin, txn = f.evidence["origin"], f.evidence["transaction"]
    assert isinstance(origin, dict) and isinstance(txn, dict)
    assert "phrase" not in origin and "shop_rw" not in str(origin)
    assert txn["first_statement"] is None and "to enable" in str(txn["statements_unknown"])


def test_my_program_name_alone_is_the_application_not_a_route() -> None:
    detail = {"attrs": [{"thread_id": 7, "name": "program_name", "value": "billing-cron"}],
              "statements": [], "history_size": 10}
    (f,) = _run("mariadb", {"my.trx": [_my_trx(7, "SELECT 1")], "my.txn_detail": detail},
                ("MY001",))
    assert f.evidence["origin"]["phrase"] == "billing-cron"  # type: ignore[index]
    assert f.evidence["origin"]["source"] == "connect_attrs"  # type: ignore[index]
    assert "In the application" not in f.fix  # no code location: nothing to name


def test_my_history_full_without_begin_says_why() -> None:
    rows = [{"thread_id": 8, "event_id": i, "sql_text": f"SELECT {i}"} for i in range(10)]
    detail = {"attrs": [], "statements": rows, "history_size": 10,
              "transactions_off": "transaction events are off …"}
    (f,) = _run("mariadb", {"my.trx": [_my_trx(8, None)], "my.txn_detail": detail}, ("MY002",))
    txn = f.evidence["transaction"]
    assert isinstance(txn, dict) and txn["first_statement"] is None
    assert "older than the last 10 statements" in str(txn["statements_unknown"])


def test_my101_root_outside_the_listing_is_named_from_its_statement_only() -> None:
    waits = {
        "source": "information_schema.innodb_lock_waits",
        "waits": [{"waiting_thread_id": 61, "waiting_trx_id": "9201", "wait_seconds": 45,
                   "locked_table": "`shop`.`jobs`", "blocking_thread_id": 60,
                   "blocking_trx_id": "9200", "blocking_user": "shop_rw",
                   "blocking_query": "DELETE FROM jobs WHERE id = 3 /*job:PruneJobs*/"}],
    }
    (f,) = _run("mariadb", {"my.lock_waits": waits, "my.trx": []}, ("MY101",))
    assert f.summary.endswith(" — thread 60: job PruneJobs")
    origin = f.evidence["origin"]
    assert isinstance(origin, dict) and origin["job"] == "PruneJobs"
    assert "application" not in origin and f.evidence["application"] is None


DEADLOCK = """2026-11-22 09:00:00 0x7f0fd00546c0
*** (1) TRANSACTION:
TRANSACTION 9401, ACTIVE 0 sec starting index read
mysql tables in use 1, locked 1
LOCK WAIT 3 lock struct(s), heap size 1128, 2 row lock(s)
MariaDB thread id 91, OS thread handle 139705891243712, query id 146104 127.0.0.1 app Sending data
select * from `jobs` where `id` = 4 for update /*application='Shop',controller='orders',action='create'*/
*** WAITING FOR THIS LOCK TO BE GRANTED:
RECORD LOCKS space id 61 page no 3 n bits 320 index PRIMARY of table `test`.`jobs` trx id 9401 lock_mode X locks rec but not gap waiting
*** (2) TRANSACTION:
TRANSACTION 9402, ACTIVE 0 sec updating or deleting
mysql tables in use 1, locked 1
LOCK WAIT 3 lock struct(s), heap size 1128, 2 row lock(s), undo log entries 1
MariaDB thread id 92, OS thread handle 139705535284928, query id 146105 127.0.0.1 app Updating
delete from `jobs` where `id` = 5
*** WAITING FOR THIS LOCK TO BE GRANTED:
RECORD LOCKS space id 61 page no 4 n bits 816 index jobs_queue_index of table `test`.`jobs` trx id 9402 lock_mode X locks rec but not gap waiting
*** WE ROLL BACK TRANSACTION (2)
"""


def test_my102_deadlock_participants_named_where_tagged() -> None:
    sections = {"my.innodb_counters": {"innodb_deadlocks": 3},
                "my.innodb_status": {"at": "2026-11-22 10:00:00", "deadlock": DEADLOCK}}
    (f,) = _run("mariadb", sections, ("MY102",))
    parts = f.evidence["origin"]["participants"]  # type: ignore[index]
    assert [p.get("phrase") for p in parts] == ["Shop orders#create", None]
    assert "(T1: Shop orders#create)" in f.summary


def test_terminate_candidate_carries_its_statements_origin() -> None:
    from dbwatch.actions.guards import Decision, Session
    from dbwatch.snapshot.my import MyThread

    tagged = Session(target="t", engine="mariadb", row=MyThread(
        thread_id=4, user="shop_rw", program="shop-worker", info=TAGGED))
    decision = Decision(tagged, "would_terminate", "idle in transaction").to_dict()
    validate([decision], "terminate")
    d = decision["origin"]
    assert isinstance(d, dict) and d["phrase"] == "Shop, job ReindexCatalog"
    plain = Session(target="t", engine="mariadb",
                    row=MyThread(thread_id=5, user="shop_rw", info="SELECT 1"))
    p = Decision(plain, "would_terminate", "idle").to_dict()["origin"]
    assert isinstance(p, dict) and "application" not in p and "phrase" not in p


def test_deadlock_record_names_tagged_participants() -> None:
    from dbwatch.deadlocks.record import deadlock_record
    from dbwatch.parsers.innodb_deadlock import parse_deadlock_lines

    dl = parse_deadlock_lines(DEADLOCK.splitlines())
    assert dl is not None
    rec = deadlock_record(dl)
    validate({"deadlocks": [rec.to_json()]}, "deadlocks")
    assert [t.origin.get("phrase") for t in rec.transactions] == ["Shop orders#create", None]


def test_my201_names_the_oldest_transaction_and_nothing_without_one() -> None:
    trx = [_my_trx(71, None, trx_seconds=5400), _my_trx(72, "SELECT 1", command="Query",
                                                        trx_seconds=2)]
    detail = {"attrs": [{"thread_id": 71, "name": "program_name", "value": "nightly-report"}],
              "statements": [{"thread_id": 71, "event_id": 1, "sql_text": "BEGIN"},
                             {"thread_id": 71, "event_id": 2, "sql_text": TAGGED}],
              "history_size": 10}
    sections = {"my.innodb_counters": {"innodb_history_list_length": 250000},
                "my.trx": trx, "my.txn_detail": detail}
    (f,) = _run("mariadb", sections, ("MY201",))
    assert f.evidence["origin"]["phrase"] == "Shop, job ReindexCatalog"  # type: ignore[index]
    assert f.evidence["transaction"]["first_statement"] == TAGGED  # type: ignore[index]
    empty = {"my.innodb_counters": {"innodb_history_list_length": 2000000}, "my.trx": []}
    (g,) = _run("mysql", empty, ("MY201",))
    assert "origin" not in g.evidence


def test_pg201_backend_holder_named() -> None:
    s = _pg_session(812, "SELECT 1 /*controller:reports,action:export*/",
                    backend_xmin="1000", xmin_age=5_000_000)
    sections = {"pg.sessions": [s], "pg.horizon": {"instance": {}}}
    found = _run("postgresql", sections, ("PG201",))
    (f,) = [f for f in found if f.subject == "pid 812"]
    assert f.evidence["origin"]["phrase"] == "reports#export"  # type: ignore[index]
    assert " — reports#export" in f.summary


def test_slack_shows_a_tag_as_text_never_as_markup() -> None:
    from dbwatch.alerts.payloads import slack_body
    from dbwatch.records import AlertMessage

    body = slack_body(AlertMessage.from_json(
        {"rule": "PG002", "target": "db", "subject": "pid 1", "severity": "warning",
         "summary": "pid 1 — <!channel> <https://evil|click> & co", "fix": "x <@U123>"}))
    text = str(body["text"])
    assert "<!channel>" not in text and "<https://" not in text and "<@U123>" not in text
    assert "&lt;!channel&gt;" in text and "&amp; co" in text


def test_terminate_table_says_where_a_tagged_candidate_comes_from() -> None:
    from dbwatch.actions.guards import Decision, Session
    from dbwatch.commands.terminate import table
    from dbwatch.snapshot.pg import PgSession

    tagged = Session(target="t", engine="postgresql",
                     row=PgSession(pid=4, user="app", application="psql", query=TAGGED))
    plain = Session(target="t", engine="postgresql",
                    row=PgSession(pid=5, user="app", application="psql", query="SELECT 1"))
    out = table([Decision(tagged, "would_terminate", "idle"),
                 Decision(plain, "would_terminate", "idle")], executed=False)
    assert out.count("from Shop, job ReindexCatalog") == 1 and "from psql" not in out


def test_tags_cut_off_by_the_servers_statement_size_are_said() -> None:
    long = "SELECT " + "x, " * 330 + "1 FROM t /*application='Shop',job='ReindexCatalog'*/"
    (f,) = _run("postgresql", {"pg.sessions": [_pg_session(11, long[:1023])]}, ("PG002",))
    unknown = f.evidence["origin"]["unknown"]  # type: ignore[index]
    assert any("track_activity_query_size" in u for u in unknown)  # type: ignore[union-attr]
    assert "application" not in f.evidence["origin"]  # type: ignore[operator]
