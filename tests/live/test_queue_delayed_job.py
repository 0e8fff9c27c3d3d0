"""Delayed::Job on both engines, from its published DDL (no Ruby client here): a backlog, jobs
locked past max_run_time, retried jobs and jobs failed for good are each reported exactly; a job
past the window of the oldest ids (the queries read a constant id range, as statistics or not)
is left out of the window, which says it is capped."""

from __future__ import annotations

from typing import Any

import pytest
from test_queue_live import audit, by_rule, my_db, my_run, pg_db, pg_run  # noqa: F401

DDL = ("CREATE TABLE delayed_jobs (id {pk}, priority integer NOT NULL DEFAULT 0, attempts integer"
       " NOT NULL DEFAULT 0, handler text NOT NULL, last_error text, run_at {dt}, locked_at {dt},"
       " failed_at {dt}, locked_by varchar(255), queue varchar(255), created_at {dt},"
       " updated_at {dt})")
HANDLER = "--- !ruby/object:ActiveJob::QueueAdapters::DelayedJobAdapter::JobWrapper\njob_class: ChargeCard\n"


def fill(run: Any, engine: str) -> None:
    pg = engine == "postgresql"
    pk = "bigserial PRIMARY KEY" if pg else "bigint NOT NULL AUTO_INCREMENT PRIMARY KEY"
    run(DDL.format(pk=pk, dt="timestamp" if pg else "datetime"))
    run("CREATE INDEX delayed_jobs_priority ON delayed_jobs (priority, run_at)")
    now = "(now() AT TIME ZONE 'UTC')" if pg else "UTC_TIMESTAMP()"
    ago = (lambda s: f"{now} - interval '{s} seconds'") if pg else (
        lambda s: f"{now} - INTERVAL {s} SECOND")
    seq = "generate_series(1, {n})" if pg else "seq_1_to_{n}"
    ins = ("INSERT INTO delayed_jobs (attempts, handler, last_error, run_at, locked_at, failed_at,"
           " locked_by, queue, created_at, updated_at) SELECT {a}, %s, {e}, {run}, {la}, {fa},"
           " {lb}, 'default', {run}, {run} FROM " + seq)
    run(ins.format(a=0, e="NULL", run=ago(7200), la="NULL", fa="NULL", lb="NULL", n=12), (HANDLER,))
    run(ins.format(a=0, e="NULL", run=ago(18000), la=ago(18000), fa="NULL",
                   lb="'host:w1 pid:42'", n=3), (HANDLER,))
    run(ins.format(a=2, e="'Net::ReadTimeout: timeout'", run=f"{ago(-600)}", la="NULL", fa="NULL",
                   lb="NULL", n=4), (HANDLER,))
    # a waiting job 100,000 ids on: past the window of the oldest 50,000 ids
    run("INSERT INTO delayed_jobs (id, handler, run_at, queue, created_at, updated_at) VALUES"
        f" (100000, %s, {ago(7200)}, 'default', {ago(7200)}, {ago(7200)})", (HANDLER,))
    if pg:
        run("SELECT setval('delayed_jobs_id_seq', 100000)")
    run(ins.format(a=25, e="'RuntimeError: card declined'", run=ago(1200), la="NULL",
                   fa=ago(600), lb="NULL", n=5), (HANDLER,))


@pytest.mark.parametrize("engine", ["postgresql", "mysql"])
def test_delayed_job(engine: str, my_db: tuple[str, Any], pg_db: tuple[str, Any]) -> None:  # noqa: F811
    url, conn = pg_db if engine == "postgresql" else my_db
    fill(pg_run(conn) if engine == "postgresql" else my_run(conn), engine)
    schema = "public" if engine == "postgresql" else url.rsplit("/", 1)[1]
    data = audit(url)
    assert data["targets"][0]["rules_unknown"] == {}
    rules = by_rule(data, f"{schema}.delayed_jobs")
    assert set(rules) == {"QU001", "QU002", "QU003", "QU004"}, rules
    (backlog,) = rules["QU001"]
    ev = backlog["evidence"]
    assert ev["library"] == "delayed_job"
    # the window read exactly the 19 unfinished jobs of the oldest ids; the job at id 100,000
    # is past it, so the window says it is capped (and the depth may be scaled by the table's
    # row estimate once it has one: depth_is_estimate)
    assert ev["window_rows"] == 19 and ev["window_capped"] is True
    assert ev["depth"] == 12 or ev["depth_is_estimate"] is True
    assert 7190 <= ev["age_seconds"] <= 7400
    (stuck,) = rules["QU002"]
    assert stuck["evidence"]["count"] == 3
    (rep,) = rules["QU003"]
    assert rep["evidence"]["count"] == 4
    assert rep["evidence"]["by_class"][0]["job_class"] == "ChargeCard"
    (failed,) = rules["QU004"]
    assert failed["evidence"]["count"] == 5 and failed["evidence"]["exception"] == "RuntimeError"


HANDLERS = {  # each handler shape Delayed::Job stores, and the class the failure is counted under
    "--- !ruby/object:ActiveJob::QueueAdapters::DelayedJobAdapter::JobWrapper\njob_data:\n"
    "  job_class: SendInvoiceJob\n  job_id: 5e1c\n  arguments:\n" + "  - x\n" * 300: "SendInvoiceJob",
    "--- !ruby/object:Delayed::PerformableMethod\nobject: !ruby/object:User\n  id: 1\n"
    "method_name: :deliver\n": "Delayed::PerformableMethod",
    "--- !ruby/object:NewsletterJob\ntext: hi\n": "NewsletterJob",
}


@pytest.mark.parametrize("engine", ["postgresql", "mysql"])
def test_delayed_job_failed_class_by_handler_shape(
    engine: str, my_db: tuple[str, Any], pg_db: tuple[str, Any]  # noqa: F811
) -> None:
    """The job class of a failure is read from the handler by byte search, then one short line:
    ActiveJob's wrapper (`job_class:`, nested, in a long handler), a PerformableMethod and a
    plain object (their `!ruby/object:` tag)."""
    from test_queue_live import table_of

    url, conn = pg_db if engine == "postgresql" else my_db
    run = pg_run(conn) if engine == "postgresql" else my_run(conn)
    pg = engine == "postgresql"
    pk = "bigserial PRIMARY KEY" if pg else "bigint NOT NULL AUTO_INCREMENT PRIMARY KEY"
    run(DDL.format(pk=pk, dt="timestamp" if pg else "datetime"))
    now = "(now() AT TIME ZONE 'UTC')" if pg else "UTC_TIMESTAMP()"
    trace = "RuntimeError: boom\n" + "\n".join(f"/app/x.rb:{i}:in `run'" for i in range(300))
    for handler in HANDLERS:
        run("INSERT INTO delayed_jobs (attempts, handler, last_error, run_at, failed_at, queue,"
            f" created_at, updated_at) VALUES (25, %s, %s, {now}, {now}, 'default', {now}, {now})",
            (handler, trace))
    t = table_of(url, "delayed_job")
    got = {(r["job_class"] or ""): (r["head"], r["n"]) for r in t["failed"]}
    assert got == {cls: ("RuntimeError: boom", 1) for cls in HANDLERS.values()}, got


@pytest.mark.parametrize("engine", ["postgresql", "mysql"])
def test_delayed_job_failure_texts_are_capped(
    engine: str, my_db: tuple[str, Any], pg_db: tuple[str, Any],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The failures whose last_error and handler are read are capped, the newest first
    (KIND_FAILED_TEXT_ROWS), inside the id window: the table's failed_window is the cap, so a
    full cap is said as `at least N`; the id window itself stays FAILED_WINDOW."""
    import dbwatch.probes.queue as queue_probe
    from test_queue_live import table_of

    pg = engine == "postgresql"
    url, conn = pg_db if pg else my_db
    run = pg_run(conn) if pg else my_run(conn)
    pk = "bigserial PRIMARY KEY" if pg else "bigint NOT NULL AUTO_INCREMENT PRIMARY KEY"
    run(DDL.format(pk=pk, dt="timestamp" if pg else "datetime"))
    now = "(now() AT TIME ZONE 'UTC')" if pg else "UTC_TIMESTAMP()"
    family = "postgresql" if pg else "mysql"
    for i, handler in enumerate(HANDLERS):
        run("INSERT INTO delayed_jobs (attempts, handler, last_error, run_at, failed_at, queue,"
            f" created_at, updated_at) VALUES (25, %s, %s, {now}, {now}, 'default', {now}, {now})",
            (handler, f"RuntimeError: boom {i}"))
    monkeypatch.setitem(queue_probe.KIND_FAILED_TEXT_ROWS, (family, "delayed_job"), 2)
    t = table_of(url, "delayed_job")
    assert t["failed_window"] == 2
    assert sorted(r["head"] for r in t["failed"]) == ["RuntimeError: boom 1", "RuntimeError: boom 2"]
    # QU004's "window full" (queue_health: the failures read reach failed_window): at least 2
    assert sum(r["n"] for r in t["failed"]) >= t["failed_window"] > 0
    monkeypatch.setitem(queue_probe.KIND_FAILED_TEXT_ROWS, (family, "delayed_job"), 5)
    t = table_of(url, "delayed_job")
    assert t["failed_window"] == 5 and sum(r["n"] for r in t["failed"]) == 3  # all, not full
