"""Pure tests of queue-table recognition, failure classification and the QU001–QU004 checks
over hand-built snapshot sections (no database)."""
from __future__ import annotations

from typing import Any

import pytest

from dbwatch.catalogue import load_catalogue
from dbwatch.checks import CheckContext, load_checks
from dbwatch.queues import attempts_limit, classify_failure, job_class, payload_timeout, recognise
from dbwatch.snapshot import Snapshot

LARAVEL_JOBS = {"id": "bigint", "queue": "", "payload": "", "attempts": "tinyint(3) unsigned",
                "reserved_at": "", "available_at": "", "created_at": ""}
LARAVEL_FAILED = {"id": "", "uuid": "", "connection": "", "queue": "", "payload": "",
                  "exception": "", "failed_at": ""}


def test_recognise_by_columns_not_name() -> None:
    assert recognise(LARAVEL_JOBS, "mysql").kind == "laravel_jobs"        # type: ignore[union-attr]
    assert recognise(LARAVEL_FAILED, "postgresql").kind == "laravel_failed"  # type: ignore[union-attr]
    no_uuid = {k: v for k, v in LARAVEL_FAILED.items() if k != "uuid"}
    assert recognise(no_uuid, "mysql").kind == "laravel_failed"           # type: ignore[union-attr]
    assert recognise({"id": "", "queue": "", "payload": ""}, "mysql") is None
    que = dict.fromkeys(["id", "job_class", "error_count", "run_at", "queue", "finished_at",
                         "expired_at", "last_error_message", "args"], "")
    assert recognise(que, "postgresql").library == "que"                 # type: ignore[union-attr]
    assert recognise(que, "mysql") is None                                # Que is PostgreSQL only


@pytest.mark.parametrize("ctype,limit", [("tinyint(3) unsigned", 255), ("tinyint(4)", 127),
                                         ("smallint", 32767), ("smallint unsigned", 65535),
                                         ("integer", 2147483647), ("text", None), (None, None)])
def test_attempts_limit(ctype: str | None, limit: int | None) -> None:
    assert attempts_limit(ctype) == limit


def test_job_class_and_timeout_are_read_defensively() -> None:
    assert job_class("App\\\\Jobs\\\\SendMail") == "App\\Jobs\\SendMail"
    assert job_class("Closure (routes\\/web.php:12)") == "Closure (routes/web.php:12)"
    assert job_class("bad\\escape\\") == "bad\\escape\\"        # not valid JSON: kept as is
    assert job_class("\x00\x1b[31m") == "[31m" and job_class("") is None and job_class(None) is None
    assert payload_timeout('120,"retryUnt') == 120
    assert payload_timeout('null,"retry') is None and payload_timeout(None) is None


MAX = "Illuminate\\Queue\\MaxAttemptsExceededException: "


@pytest.mark.parametrize("head,kind,variant", [
    (MAX + "A queued job has been attempted too many times. The job may have previously timed out.",
     "max_attempts", "5.4"),
    (MAX + "A queued job has been attempted too many times or run too long. The job may have "
           "previously timed out.", "max_attempts", "5.5-10.9"),
    (MAX + "App\\Jobs\\X has been attempted too many times or run too long. The job may have "
           "previously timed out. in /app/Worker.php:750", "max_attempts", "5.5-10.9"),
    (MAX + "App\\Jobs\\X has been attempted too many times.", "max_attempts", "10.10+"),
    ("Illuminate\\Queue\\TimeoutExceededException: App\\Jobs\\X has timed out.", "timeout", ""),
    (("Illuminate\\Database\\QueryException: SQLSTATE[40001]: Serialization failure: 1213 Deadlock "
     "found when trying to get lock; try restarting transaction"), "deadlock", ""),
    ("PDOException: SQLSTATE[40P01]: Deadlock detected: 7 ERROR:  deadlock detected", "deadlock", ""),
    (("Illuminate\\Database\\QueryException: SQLSTATE[HY000]: General error: 1205 Lock wait "
     "timeout exceeded; try restarting transaction"), "lock_wait_timeout", ""),
    ("RuntimeException: boom", "other", ""),
    ("** (RuntimeError) boom", "other", ""),
    ("undefined method `foo' for nil", "other", ""),
])
def test_classify_failure(head: str, kind: str, variant: str) -> None:
    f = classify_failure(head)
    assert (f.kind, f.variant) == (kind, variant)
    if "** (" in head:
        assert f.exception == "RuntimeError"


def _ctx(rule_id: str, section: dict[str, Any], engine: str = "mariadb",
         params: dict[str, Any] | None = None) -> CheckContext:
    rule = load_catalogue()[rule_id]
    name = "pg.queues" if engine == "postgresql" else "my.queues"
    snap = Snapshot(target="t", engine=engine, server_version="x", version_num=101100,
                    taken_at=0.0, sections={name: section})
    return CheckContext(rule=rule, snapshot=snap, thresholds=rule.thresholds,
                        params=dict(rule.params) | (params or {}))


def _run(rule_id: str, section: dict[str, Any], **kw: Any) -> list[Any]:
    ctx = _ctx(rule_id, section, **kw)
    return list(load_checks()[ctx.rule.check].fn(ctx))


def _table(**aspects: Any) -> dict[str, Any]:
    return {"schema": "app", "table": "jobs", "kind": "laravel_jobs", "library": "laravel",
            "rows_estimate": 100, "attempts_limit": 255, "window": 100_000, "groups": 500,
            **aspects}


def test_backlog_grades_age_and_depth_and_estimates_when_capped() -> None:
    summary = [{"queue": "default", "total": 60, "available": 50, "oldest_available_seconds": 400,
                "reserved": 0}, {"queue": "fresh", "total": 3, "available": 3,
                                 "oldest_available_seconds": 2, "reserved": 0}]
    (f,) = _run("QU001", {"tables": [_table(summary=summary)]})
    assert f.severity == "warning" and f.evidence["depth"] == 50 and f.evidence["age"] == "6m40s"
    assert f.identity == ["app", "jobs", "default"]
    big = _table(summary=[{"queue": "q", "total": 100_000, "available": 100_000,
                           "oldest_available_seconds": 10, "reserved": 0}],
                 rows_estimate=1_000_000)
    (f,) = _run("QU001", {"tables": [big]})
    assert f.severity == "critical" and f.evidence["depth"] == 1_000_000
    assert f.evidence["depth_is_estimate"] and "~1000000" in f.summary
    assert not f.evidence["depth_is_lower_bound"]


def test_a_full_window_not_scaled_is_a_lower_bound() -> None:
    """Symfony keeps its failed messages in the table, so its row estimate is not the queue
    (scale_depth false): a full window's count is said as a lower bound, never as the depth."""
    sym = _table(kind="symfony_messenger", library="symfony_messenger", scale_depth=False,
                 rows_estimate=1_000_000, window=10_000,
                 summary=[{"queue": "default", "total": 10_000, "available": 10_000,
                           "oldest_available_seconds": 10, "reserved": 0}])
    (f,) = _run("QU001", {"tables": [sym]})
    assert f.severity == "warning" and f.evidence["depth"] == 10_000
    assert f.evidence["depth_is_lower_bound"] and not f.evidence["depth_is_estimate"]
    assert "at least 10000 jobs available" in f.summary and f.evidence["window_capped"]
    part = dict(sym, summary=[{"queue": "default", "total": 9_000, "available": 9_000,
                               "oldest_available_seconds": 400, "reserved": 0}])
    (f,) = _run("QU001", {"tables": [part]})  # the window not full: the count is the depth
    assert not f.evidence["depth_is_lower_bound"] and "queue default: 9000 jobs" in f.summary


def test_expired_uses_target_retry_after_then_rule_param() -> None:
    reserved = [{"queue": "a", "reserved_seconds": 3600, "n": 5, "expires_after": None},
                {"queue": "b", "reserved_seconds": 100, "n": 2, "expires_after": None},
                {"queue": "a", "reserved_seconds": 30, "n": 9, "expires_after": None}]
    (f,) = _run("QU002", {"tables": [_table(reserved=reserved)], "retry_after": None})
    assert f.evidence["count"] == 7 and f.evidence["queues"] == {"a": 5, "b": 2}
    assert f.evidence["oldest_seconds"] == 3600 and "retry_after (1m30s)" in f.summary
    (f,) = _run("QU002", {"tables": [_table(reserved=reserved)], "retry_after": 600.0})
    assert f.evidence["count"] == 5 and f.evidence["retry_after_source"] == "target retry_after"
    assert _run("QU002", {"tables": [_table(reserved=reserved)], "retry_after": 7200.0}) == []


def test_repeated_attempts_by_class_share_limit_and_timeout() -> None:
    summary = [{"queue": "q", "total": 10}]
    repeated = [{"queue": "q", "attempts": 3, "job_class": "App\\\\Jobs\\\\A",
                 "timeout_head": '120,"retry', "n": 4},
                {"queue": "q", "attempts": 250, "job_class": "App\\\\Jobs\\\\B",
                 "timeout_head": None, "n": 1}]
    (f,) = _run("QU003", {"tables": [_table(summary=summary, repeated=repeated)]})
    assert f.severity == "critical"           # B is near the tinyint limit
    assert f.evidence["count"] == 5 and f.evidence["near_limit"] == ["App\\Jobs\\B"]
    a = f.evidence["by_class"][0]
    assert (a["job_class"], a["count"], a["share"]) == ("App\\Jobs\\A", 4, 0.4)
    assert f.evidence["timeout_not_below_retry_after"][0]["timeout"] == 120
    assert "not below retry_after" in f.summary
    only3 = _run("QU003", {"tables": [_table(summary=summary, repeated=repeated)]},
                 params={"min_attempts": 4})
    assert only3[0].evidence["count"] == 1


def test_failed_jobs_grouped_by_exception_and_class_in_window() -> None:
    def row(head: str, cls: str, n24: int, n7d: int) -> dict[str, Any]:
        return {"queue": "q", "head": head, "job_class": cls, "n": n7d, "n_1h": 0, "n_6h": 0,
                "n_24h": n24, "n_3d": n24, "n_7d": n7d, "latest": "2024-01-01 00:00:00",
                "latest_seconds_ago": 60}
    failed = [row(MAX + "App\\Jobs\\A has been attempted too many times.", "App\\\\Jobs\\\\A", 30, 31),
              row(MAX + "App\\Jobs\\A has been attempted too many times or run too long.",
                  "App\\\\Jobs\\\\A", 10, 10),
              row("PDOException: SQLSTATE[40001]: 1213 Deadlock found", "App\\\\Jobs\\\\B", 0, 3)]
    t = _table(failed=failed, kind="laravel_failed", table="failed_jobs")
    (f,) = _run("QU004", {"tables": [t]})
    assert f.evidence["count"] == 40 and f.evidence["job_class"] == "App\\Jobs\\A"
    assert f.evidence["variants"] == ["10.10+", "5.5-10.9"] and f.evidence["window"] == "1d00h"
    assert "MaxAttemptsExceededException" in f.summary and "retry_after" in f.fix
    week = _run("QU004", {"tables": [t]}, params={"window": "7d"})
    assert [(x.evidence["kind"], x.evidence["count"]) for x in week] == [("max_attempts", 41),
                                                                          ("deadlock", 3)]
    assert "SKIP LOCKED" in week[1].fix


def test_empty_section_gives_no_findings() -> None:
    empty = {"tables": [_table(summary=[], reserved=[], repeated=[])], "retry_after": None}
    for rule in ("QU001", "QU002", "QU003", "QU004"):
        assert _run(rule, empty) == []


SOLID = dict.fromkeys(["id", "queue_name", "class_name", "arguments", "priority", "active_job_id",
                       "scheduled_at", "finished_at", "concurrency_key", "created_at",
                       "updated_at"], "")
PGBOSS = dict.fromkeys(["id", "name", "priority", "data", "state", "retry_limit", "retry_count",
                        "start_after", "started_on", "expire_in", "created_on", "completed_on",
                        "keep_until", "output"], "")
GRAPHILE = dict.fromkeys(["id", "job_queue_id", "task_id", "payload", "priority", "run_at",
                          "attempts", "max_attempts", "last_error", "created_at", "updated_at",
                          "key", "locked_at", "locked_by", "revision", "flags"], "")
BATCHES = dict.fromkeys(["id", "name", "total_jobs", "pending_jobs", "failed_jobs",
                         "failed_job_ids", "options", "cancelled_at", "created_at",
                         "finished_at"], "")


def test_recognise_new_libraries_and_their_siblings() -> None:
    from dbwatch.queues import SHAPES, sibling_names
    solid = recognise(SOLID, "mysql", "solid_queue_jobs")
    assert solid is not None and solid.kind == "solid_queue"
    assert sibling_names(solid, "app_solid_queue_jobs")["ready_executions"] == \
        "app_solid_queue_ready_executions"
    assert recognise(SOLID, "mysql", "solid_queue_recurring_tasks") is None   # name decides too
    gw = recognise(GRAPHILE, "postgresql", "_private_jobs")
    assert gw is not None and sibling_names(gw, "_private_jobs") == {
        "tasks": "_private_tasks", "job_queues": "_private_job_queues"}
    assert recognise(GRAPHILE, "mysql", "_private_jobs") is None
    assert recognise(PGBOSS, "postgresql", "job").kind == "pg_boss"        # type: ignore[union-attr]
    assert recognise(PGBOSS | {"archived_on": ""}, "postgresql", "archive") is None
    assert recognise(BATCHES, "mysql", "app_job_batches").kind == "laravel_batches"  # type: ignore[union-attr]
    for shape in SHAPES:       # discovery's HAVING count(*) >= 6 must let every shape through
        assert len(shape.columns) >= 6


def test_classify_worker_lost_and_batches() -> None:
    f = classify_failure("SolidQueue::Processes::ProcessPrunedError: Process was found dead and "
                         "pruned (last heartbeat at: 2025-01-01 00:00:00 UTC)")
    assert (f.exception, f.kind) == ("SolidQueue::Processes::ProcessPrunedError", "worker_lost")
    assert classify_failure("Illuminate\\Bus\\Batch: 2 batches with failed jobs").kind == "batch"
    assert classify_failure("RuntimeError: sync failed").kind == "other"


def test_expired_uses_each_jobs_own_expiry() -> None:
    reserved = [{"queue": "pdf", "reserved_seconds": 600, "n": 1, "expires_after": 3600},
                {"queue": "pdf", "reserved_seconds": 600, "n": 2, "expires_after": 60}]
    t = _table(reserved=reserved, kind="pg_boss", table="job", library="pg-boss")
    (f,) = _run("QU002", {"tables": [t], "retry_after": None}, engine="postgresql")
    assert f.evidence["count"] == 2 and f.evidence["retry_after_seconds"] == 60
    assert "pg-boss will fail them as timed out" in f.summary and "expireInSeconds" in f.fix


def test_expired_procrastinate_pruned_and_aged_are_said_apart() -> None:
    """A pruned worker's jobs (the probe's expiry 0: stalled since the row went) have no age
    to show: never "over 0s (oldest 0s)"; beside heartbeat-aged ones, each is counted."""
    pruned = {"queue": "slow", "reserved_seconds": 0, "n": 3, "expires_after": 0}
    aged = {"queue": "slow", "reserved_seconds": 300, "n": 2, "expires_after": 30}
    fresh = {"queue": "slow", "reserved_seconds": 5, "n": 9, "expires_after": 30}
    t = _table(kind="procrastinate", table="procrastinate_jobs", library="procrastinate")
    (f,) = _run("QU002", {"tables": [dict(t, reserved=[pruned, fresh])]}, engine="postgresql")
    assert f.evidence["count"] == 3 and f.evidence["worker_gone"] == 3
    assert "3 'doing' jobs whose worker row was pruned" in f.summary and " 0s" not in f.summary
    (f,) = _run("QU002", {"tables": [dict(t, reserved=[pruned, aged, fresh])]},
                engine="postgresql")
    assert f.evidence["count"] == 5 and f.evidence["retry_after_seconds"] == 30
    assert f.summary.startswith("app.procrastinate_jobs: 2 'doing' jobs whose worker has sent "
                                "no heartbeat for over 30s (oldest 5m00s) and 3 'doing' jobs "
                                "whose worker row was pruned"), f.summary


def test_batch_backlog_has_its_own_thresholds() -> None:
    def section(age: int) -> dict[str, Any]:
        row = {"queue": "ImportUsers", "total": 1, "available": 40,
               "oldest_available_seconds": age, "reserved": 0}
        return {"tables": [_table(summary=[row], kind="laravel_batches", table="job_batches",
                                  scale_depth=False)]}
    assert _run("QU001", section(1800)) == []                 # 30 min: a batch may run that long
    (f,) = _run("QU001", section(7200))
    assert f.severity == "warning" and "batches named ImportUsers" in f.summary
    assert _run("QU001", section(7 * 3600))[0].severity == "critical"


def test_pgboss10_claimed_jobs_come_from_the_reserved_rows() -> None:
    """pg-boss 10/11's summary does not read active jobs (reserved NULL: only a scan finds
    them, and the reserved query makes it): QU001's reserved, the window's rows and QU003's
    share count them from the reserved rows, a lower bound said when those stopped at groups."""
    summary = [{"queue": "mail", "total": 40, "available": 40, "oldest_available_seconds": 900,
                "reserved": None, "repeated": 4},
               {"queue": "pdf", "total": 10, "available": 10, "oldest_available_seconds": 900,
                "reserved": None}]
    reserved = [{"queue": "mail", "reserved_seconds": 30, "n": 7, "expires_after": 900},
                {"queue": "mail", "reserved_seconds": 20, "n": 3, "expires_after": 900},
                {"queue": "only_active", "reserved_seconds": 5, "n": 50, "expires_after": 900}]
    t = _table(summary=summary, reserved=reserved, kind="pg_boss", table="job",
               library="pg-boss", window=100)
    found = {f.evidence["queue"]: f.evidence for f in _run("QU001", {"tables": [t]},
                                                         engine="postgresql")}
    assert found["mail"]["reserved"] == 10 and found["pdf"]["reserved"] == 0
    # 40 + 10 waiting, 10 + 50 active: past the window of 100, as when the summary read them
    assert found["mail"]["window_rows"] == 110 and found["mail"]["window_capped"] is True
    assert "reserved_is_lower_bound" not in found["mail"]
    capped = dict(t, groups=3)
    (f, _) = sorted(_run("QU001", {"tables": [capped]}, engine="postgresql"),
                    key=lambda f: f.evidence["queue"])
    assert f.evidence["reserved"] == 10 and f.evidence["reserved_is_lower_bound"] is True
    # a summary that reads them itself (0 is a count there, not "not read"): unchanged
    own = dict(t, summary=[dict(summary[0], reserved=0)])
    (f,) = _run("QU001", {"tables": [own]}, engine="postgresql")
    assert f.evidence["reserved"] == 0 and f.evidence["window_rows"] == 40
    # the reserved query failed (the table's error says so): not read, so not zero either
    (f, _) = sorted(_run("QU001", {"tables": [dict(t, reserved=None)]}, engine="postgresql"),
                    key=lambda f: f.evidence["queue"])
    assert f.evidence["reserved"] is None and f.evidence["window_rows"] == 50
    # no waiting job at all (an empty summary): the claimed ones still fill the window
    stuck = [{"queue": "mail", "reserved_seconds": 3600, "n": 100, "expires_after": 900}]
    (f,) = _run("QU002", {"tables": [dict(t, summary=[], reserved=stuck)], "retry_after": None},
                engine="postgresql")
    assert f.evidence["count"] == 100 and f.evidence["count_is_lower_bound"] is True
    assert ": at least 100 " in f.summary  # said as a lower bound, not as the count
    tried = [{"queue": "mail", "job_class": "mail", "attempts": 2, "n": 5}]
    (f,) = _run("QU003", {"tables": [dict(t, repeated=tried)]}, engine="postgresql")
    assert f.evidence["by_class"][0]["share"] == 0.1  # 5 of the 40 waiting + 10 active


def test_a_full_failures_window_is_said_as_a_lower_bound() -> None:
    """QU004 over the newest-failures window: when every row of the window is a failure in the
    horizon there may be more, and the summary says "at least" (count_is_lower_bound)."""
    failed = [{"queue": "q", "head": "RuntimeException: boom", "job_class": "App\\\\Jobs\\\\A",
               "n": 100, "n_1h": 0, "n_6h": 0, "n_24h": 100, "n_3d": 100, "n_7d": 100,
               "latest": "2026-11-27 05:00:00", "latest_seconds_ago": 60}]
    t = _table(failed=failed, kind="laravel_failed", table="failed_jobs")
    (f,) = _run("QU004", {"tables": [dict(t, failed_window=100)]})
    assert f.evidence["count_is_lower_bound"] is True
    assert ": at least 100 App\\Jobs\\A jobs failed" in f.summary, f.summary
    (f,) = _run("QU004", {"tables": [dict(t, failed_window=1000)]})
    assert f.evidence["count_is_lower_bound"] is False
    assert ": 100 App\\Jobs\\A jobs failed" in f.summary, f.summary
