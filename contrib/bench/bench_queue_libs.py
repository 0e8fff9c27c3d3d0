"""Benchmark: server time of every queue query per library at 1,000,000 rows, cold (right
after the bulk load with autovacuum off and no ANALYZE, each query's FIRST run) and after
ANALYZE (median of --repeat), on PostgreSQL / MariaDB. Each library's schema is created by the
library's own tool where it is installed (tests/.queue-libs: pg-boss, graphile-worker,
procrastinate, pgqueuer; Symfony Messenger's auto_setup through php), else from its published
DDL with its own indexes (Que, GoodJob, Oban, River, Delayed::Job, Solid Queue, Laravel). Rows
are a realistic mix, loaded in id order as a queue writes them: --rows old finished rows (or,
where a library deletes finished jobs, the rows it keeps: failures, a backlog), then --pending
waiting, --running claimed and --failed failed ones (the newest ids).
Prints JSON and a Markdown table: per library, query, the server milliseconds (EXPLAIN ANALYZE
/ ANALYZE FORMAT=JSON) and the whole `dbwatch audit --select QU` wall time.

    python contrib/bench/bench_queue_libs.py --throwaway        # every library available
    python contrib/bench/bench_queue_libs.py --libs pg-boss12 --rows 200000
    python contrib/bench/bench_queue_libs.py --smoke    # CI: every library, 2,000 rows
    python contrib/bench/bench_queue_libs.py --throwaway --backlog  # 1 M waiting, 1 k finished

--throwaway runs PostgreSQL in a cluster of its own (contrib/bench/pgcluster.py, autovacuum
off); MariaDB databases are created on the shared server under unique names and dropped.
DBWATCH_BENCH_ROOT=/work/main measures another tree's queries (its dbwatch package).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psycopg
import pymysql

sys.path.insert(0, os.environ.get("DBWATCH_BENCH_ROOT") or str(Path(__file__).resolve().parents[2]))
sys.path.insert(1, str(Path(__file__).resolve().parent))

from dbwatch.probes import sql  # noqa: E402
from dbwatch.probes.queue import (  # noqa: E402
    ASPECTS,
    FAILED_WINDOW,
    GROUPS,
    HORIZON,
    ID_RANGE_KINDS,
    WINDOW,
    _bounds,
    _has_sql,
    _render,
    discover,
)
from dbwatch.probes import queue as _queue  # noqa: E402
from dbwatch.targets import open_target, spec_for  # noqa: E402

# PostgreSQL kinds read by constant id ranges (none before this change: DBWATCH_BENCH_ROOT)
PG_ID_RANGE_KINDS = getattr(_queue, "PG_ID_RANGE_KINDS", set())
# PostgreSQL kinds read as the newest window by key: a walk down the key finds the window's key
# range first (absent in older trees)
PG_NEWEST_KINDS = getattr(_queue, "PG_NEWEST_KINDS", set())
try:  # pg-boss 10/11's one pass over active and failed jobs (absent in older trees)
    from dbwatch.probes import queue_pg_boss as _sweep  # noqa: E402
except ImportError:
    _sweep = None  # type: ignore[assignment]

ROOT = Path(__file__).resolve().parents[2]
APPS = ROOT / "tests" / "live" / "queue_apps"
LIBS = Path(os.environ.get("DBWATCH_QUEUE_LIBS", ROOT / "tests" / ".queue-libs"))
NODE = LIBS / "node" / "node_modules"
PG_PORT = [5432]  # the throwaway cluster's port replaces it
KEEP = False  # --keep: leave the databases for EXPLAIN (diagnosis); drop them by hand


def _pg(db: str) -> str:
    return f"host=127.0.0.1 port={PG_PORT[0]} user=postgres dbname={db}"


def _pg_url(db: str) -> str:
    return f"postgresql://postgres@127.0.0.1:{PG_PORT[0]}/{db}"


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(LIBS / "py"), os.environ.get("DBWATCH_BENCH_ROOT")
                                         or str(ROOT)])
    env["NODE_PATH"] = str(NODE)
    env.update(extra)
    return env


def _run(args: list[str], **env: str) -> None:
    subprocess.run(args, cwd=APPS, env=_env(**env), check=True, timeout=600, capture_output=True)


# Per library: how its schema is made (by its own tool, else its published DDL with its own
# indexes) and how the rows are put in, oldest ids first as a queue writes them. Placeholders:
# {n} the bulk (finished rows, or the rows a deleting library keeps), {p} waiting, {r} claimed /
# running, {f} failed. PostgreSQL: generate_series; MariaDB: the sequence engine (seq_1_to_N).
def _pgboss(major: str, db: str) -> list[str]:
    package, entry = {"12": ("pg-boss12", "dist/index.js"), "11": ("pg-boss11", "src/index.js"),
                      "10": ("pg-boss", "src/index.js")}[major]
    _run(["node", "pgboss.mjs", "setup"], PGBOSS_ENTRY=str(NODE / package / entry),
         PG_URL=_pg_url(db))
    ins = ("INSERT INTO pgboss.job (name, state, retry_count, start_after, started_on, completed_on,"
           " output) SELECT '{q}', '{s}', {rc}, {sa}, {so}, {co}, {out} FROM generate_series(1, {{{k}}})")
    return [
        ins.format(q="ok", s="completed", rc=0, sa="now() - interval '2 hours'",
                   so="now() - interval '2 hours'", co="now() - interval '1 hour'", out="NULL", k="n"),
        ins.format(q="later", s="created", rc=0, sa="now() - interval '5 minutes'", so="NULL",
                   co="NULL", out="NULL", k="p"),
        ins.format(q="ok", s="active", rc=0, sa="now() - interval '3 minutes'",
                   so="now() - interval '2 minutes'", co="NULL", out="NULL", k="r"),
        ins.format(q="boom", s="failed", rc=1, sa="now() - interval '30 minutes'",
                   so="now() - interval '20 minutes'", co="now() - interval '10 minutes'",
                   out="'{{\"message\": \"boom\", \"stack\": \"Error: boom\"}}'", k="f"),
    ]


def _graphile(db: str) -> list[str]:
    _run(["node", "graphile.js", "setup"], PG_URL=_pg_url(db))
    ins = ("INSERT INTO graphile_worker._private_jobs (task_id, payload, attempts, max_attempts,"
           " last_error, run_at, locked_at, locked_by, job_queue_id) SELECT {t}, '{{{{}}}}', {a},"
           " {m}, {e}, {run}, {la}, {lb}, {q} FROM generate_series(1, {{{k}}})")
    return [
        "INSERT INTO graphile_worker._private_tasks (identifier) VALUES ('boom'), ('ok')",
        # a named queue locked by worker-1 (its running jobs are in it), and a free one
        "INSERT INTO graphile_worker._private_job_queues (queue_name, locked_at, locked_by)"
        " VALUES ('serial', now() - interval '1 minute', 'worker-1'), ('other', NULL, NULL)",
        # graphile deletes finished jobs: the rows it keeps are the ones failed for good
        ins.format(t=1, a=2, m=2, e="'Error: boom'", run="now() + interval '1 day'", la="NULL",
                   lb="NULL", q="NULL", k="n"),
        ins.format(t=2, a=0, m=25, e="NULL", run="now() - interval '1 minute'", la="NULL",
                   lb="NULL", q=1, k="p"),
        ins.format(t=2, a=1, m=25, e="NULL", run="now() - interval '2 minutes'",
                   la="now() - interval '1 minute'", lb="'worker-1'", q=1, k="r"),
        ins.format(t=1, a=2, m=2, e="'Error: boom'", run="now() + interval '1 hour'", la="NULL",
                   lb="NULL", q=2, k="f"),
    ]


def _procrastinate(db: str) -> list[str]:
    _run([sys.executable, "-m", "procrastinate", "--app=procrastinate_app.app", "schema",
          "--apply"], DSN=_pg(db))
    ins = ("INSERT INTO procrastinate_jobs (queue_name, task_name, status, attempts) SELECT"
           " 'default', 'ok', '{s}', {a} FROM generate_series(1, {{{k}}})")
    return [
        ins.format(s="succeeded", a=0, k="n"),
        ins.format(s="todo", a=0, k="p"),
        ins.format(s="doing", a=0, k="r"),
        ins.format(s="failed", a=1, k="f"),
        "INSERT INTO procrastinate_events (job_id, type, at) SELECT id, 'deferred', now()"
        " FROM procrastinate_jobs WHERE status = 'todo'",
        "INSERT INTO procrastinate_events (job_id, type, at) SELECT id, 'failed', now()"
        " FROM procrastinate_jobs WHERE status = 'failed'",
    ]


def _pgqueuer(db: str) -> list[str]:
    _run([sys.executable, "-m", "pgqueuer", "install"], PGHOST="127.0.0.1", PGUSER="postgres",
         PGPORT=str(PG_PORT[0]), PGDATABASE=db)
    return [
        "INSERT INTO pgqueuer_log (job_id, status, priority, entrypoint) SELECT s, 'successful',"
        " 0, 'ok' FROM generate_series(1, {n}) s",
        "INSERT INTO pgqueuer_log (job_id, status, priority, entrypoint) SELECT s, 'exception',"
        " 0, 'boom' FROM generate_series(1, {f}) s",
        # pgqueuer deletes a job when it is done: the queue holds what waits and what runs
        "INSERT INTO pgqueuer (priority, status, entrypoint) SELECT 0, 'queued', 'ok'"
        " FROM generate_series(1, {p})",
        "INSERT INTO pgqueuer (priority, status, entrypoint, heartbeat) SELECT 0, 'picked', 'ok',"
        " now() - interval '10 seconds' FROM generate_series(1, {r})",
    ]


def _symfony(engine: str, db: str) -> list[str]:
    params = ({"driver": "pdo_pgsql", "host": "127.0.0.1", "port": PG_PORT[0], "user": "postgres",
               "dbname": db}
              if engine == "postgresql" else
              {"driver": "pdo_mysql", "host": "127.0.0.1", "user": "root", "dbname": db})
    _run(["php", "messenger.php", json.dumps(params), "send", "Hello", "1"])
    seq = "generate_series(1, {{{k}}})" if engine == "postgresql" else "seq_1_to_{{{k}}}"
    body = "'O:36:\"Symfony\\\\Component\\\\Messenger\\\\Envelope\":2:{{{{}}}}'"
    now = "localtimestamp" if engine == "postgresql" else "NOW()"
    ins = (f"INSERT INTO messenger_messages (body, headers, queue_name, created_at, available_at,"
           f" delivered_at) SELECT {body}, '[]', '{{q}}', {now}, {now}, {{d}} FROM {seq}")
    # the newest failures as PhpSerializer stores them (addslashes(serialize($envelope))): the
    # ErrorDetailsStamp first, with the FlattenException's trace, the message last (~10 kB)
    pg = engine == "postgresql"
    stamp = ('O:36:\\"Symfony\\\\Component\\\\Messenger\\\\Envelope\\":2:{{s:44:'
             '\\"stamps\\";a:1:{{s:55:\\"ErrorDetailsStamp\\";a:1:{{i:0;O:55:'
             '\\"ErrorDetailsStamp\\":3:{{s:69:\\"exceptionClass\\";s:16:'
             '\\"RuntimeException\\";s:71:\\"exceptionMessage\\";s:4:\\"boom\\";'
             's:16:\\"flattenException\\";O:57:\\"Symfony\\\\Component\\\\ErrorHandler'
             '\\\\Exception\\\\FlattenException\\":12:{{s:10:\\"message\\";s:4:\\"boom'
             '\\";s:7:\\"code\\";i:0;s:11:\\"previous\\";N;s:8:\\"headers\\";a:0:{{}}'
             's:13:\\"statusCode\\";i:500;s:8:\\"class\\";s:16:\\"RuntimeException\\";'
             's:4:\\"file\\";s:37:\\"/app/src/MessageHandler/SendMail.php\\";s:4:\\"line'
             '\\";i:42;s:10:\\"statusText\\";s:21:\\"Internal Server Error\\";'
             's:5:\\"trace\\";')
    if not pg:
        stamp = stamp.replace("\\", "\\\\")  # MariaDB string literals unescape backslashes
    tail = ('}}}}}}s:46:\\"message\\";O:20:\\"App\\\\Message\\\\SendMail\\":0:{{}}}}')
    if not pg:
        tail = tail.replace("\\", "\\\\")
    trace = _trace(pg, "/app/vendor/symfony/messenger/Worker.php(119): Symfony\\Component"
                   "\\Messenger\\Worker->handleMessage()")
    parts = [f"'{stamp}'", trace, f"'{tail}'"]
    failed = ("INSERT INTO messenger_messages (body, headers, queue_name, created_at,"
              " available_at, delivered_at) SELECT "
              + _concat(pg, parts)
              + f", '[]', 'failed', {now}, {now}, NULL FROM "
              + ("generate_series(1, {f})" if pg else "seq_1_to_{f}"))
    # acknowledged messages are deleted: the table keeps the failure transport's messages
    return [
        ins.format(q="failed", d="NULL", k="n"),
        ins.format(q="default", d="NULL", k="p"),
        ins.format(q="default", d=now, k="r"),
        failed,
    ]


def _trace(pg: bool, frame: str, row: str | None = None, json_items: bool = False) -> str:
    """SQL for a 60-frame stack trace built by the server (~12 kB), each frame ending in an md5
    of the row (`row`, an outer column) or of random(), so a trace does not compress to nothing;
    newline-separated, or JSON strings joined by commas. No braces: safe for str.format."""
    frame = frame.replace("'", "''")  # Ruby frames end in `method'
    seed = (f"(({row}) * k)::text" if row else "random()::text") if pg else \
        (f"({row}) * k.seq" if row else "RAND()")
    if pg:
        item = f"'#' || k || ' {frame} ' || md5({seed})"
        item, sep = (f"'\"' || {item} || '\"'", "','") if json_items else (item, "chr(10)")
        return f"(SELECT string_agg({item}, {sep}) FROM generate_series(1, 60) k)"
    item = f"CONCAT('#', k.seq, ' {frame} ', MD5({seed}))"
    item, sep = (f"CONCAT('\"', {item}, '\"')", "','") if json_items else (item, "'\\n'")
    return f"(SELECT GROUP_CONCAT({item} SEPARATOR {sep}) FROM seq_1_to_60 k)"


def _concat(pg: bool, parts: list[str]) -> str:
    """SQL expressions joined into one string, in the engine's own way."""
    return " || ".join(parts) if pg else "CONCAT(" + ", ".join(parts) + ")"


# The newest failures as Laravel writes them: the payload (~1.2 kB of JSON, displayName second)
# and `(string) $e`, the message and a 60-frame stack trace (~11 kB, off-page on both engines);
# the bulk's short texts would leave the cost of reading real ones unmeasured.
REAL_FAILURES = 30_000


def _laravel_real_failures(pg: bool) -> str:
    """One INSERT of up to REAL_FAILURES rows (n in smoke runs); the text is built by the server
    (md5 makes each row differ, so the trace does not compress to nothing). Braces doubled for
    str.format."""
    bs = "\\" if pg else "\\\\"  # one stored backslash in a string literal of this engine
    ns = bs                          # PHP namespace separator as stored
    js = bs * 2                      # JSON-escaped backslash: two stored characters
    uuid, pad = ("gen_random_uuid()::text", "repeat(md5(g::text), 30)") if pg else \
        ("UUID()", "REPEAT(MD5(g.seq), 30)")
    row = "g" if pg else "g.seq"
    payload = [
        '{{"uuid":"', uuid,
        (f'","displayName":"App{js}Jobs{js}SendInvoice","job":"Illuminate{js}Queue{js}'
         f'CallQueuedHandler@call","maxTries":3,"timeout":120,"data":{{{{"commandName":"App{js}'
         f'Jobs{js}SendInvoice","command":"'), pad, '"}}}}',
    ]
    head = (f"Illuminate{ns}Database{ns}QueryException: SQLSTATE[40001]: Serialization failure:"
            " 1213 Deadlock found when trying to get lock; try restarting transaction"
            " (Connection: mysql, SQL: delete from `jobs` where `id` = ")
    frame = (f"/var/www/vendor/laravel/framework/src/Illuminate/Pipeline/Pipeline.php(170):"
             f" Illuminate{ns}Pipeline{ns}Pipeline->Illuminate{ns}Pipeline{ns}{{{{closure}}}}"
             f"(Object(App{ns}Jobs{ns}SendInvoice))")

    nl = "chr(10)" if pg else "CHAR(10)"
    pay = _concat(pg, [x if x in (uuid, pad) else f"'{x}'" for x in payload])
    exc = _concat(pg, [f"'{head}'", row, "')'", nl, "'Stack trace:'", nl, _trace(pg, frame, row)])
    rows = (f"generate_series(1, least({{n}}, {REAL_FAILURES})) g" if pg
            else f"seq_1_to_{{n}} g WHERE g.seq <= {REAL_FAILURES}")
    return ("INSERT INTO failed_jobs (uuid, connection, queue, payload, exception) SELECT"
            f" {uuid}, 'database', 'default', {pay}, {exc} FROM {rows}")


def _laravel(engine: str, db: str) -> list[str]:
    pg = engine == "postgresql"
    seq = "generate_series(1, {k})" if pg else "seq_1_to_{k}"
    now = "extract(epoch FROM now())::int" if pg else "UNIX_TIMESTAMP()"
    uuid = "gen_random_uuid()::text" if pg else "UUID()"
    exc = ("'Illuminate\\Queue\\MaxAttemptsExceededException: App\\Jobs\\A has been attempted too"
           " many times.'" if pg else "'Illuminate\\\\Queue\\\\MaxAttemptsExceededException: x'")
    ddl = ([
        "CREATE TABLE jobs (id bigserial PRIMARY KEY, queue varchar(255) NOT NULL, payload"
        " text NOT NULL, attempts smallint NOT NULL, reserved_at integer, available_at"
        " integer NOT NULL, created_at integer NOT NULL)",
        "CREATE INDEX jobs_queue_index ON jobs (queue)",
        "CREATE TABLE failed_jobs (id bigserial PRIMARY KEY, uuid varchar(255) NOT NULL"
        " UNIQUE, connection text NOT NULL, queue text NOT NULL, payload text NOT NULL,"
        " exception text NOT NULL, failed_at timestamp(0) NOT NULL DEFAULT CURRENT_TIMESTAMP)",
        'CREATE TABLE "job_batches" ("id" varchar(255) NOT NULL PRIMARY KEY, "name" varchar(255)'
        ' NOT NULL, "total_jobs" integer NOT NULL, "pending_jobs" integer NOT NULL, "failed_jobs"'
        ' integer NOT NULL, "failed_job_ids" text NOT NULL, "options" text NULL, "cancelled_at"'
        ' integer NULL, "created_at" integer NOT NULL, "finished_at" integer NULL)',
    ] if pg else [
        "CREATE TABLE jobs (id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, queue"
        " varchar(255) NOT NULL, payload longtext NOT NULL, attempts tinyint unsigned NOT NULL,"
        " reserved_at int unsigned NULL, available_at int unsigned NOT NULL, created_at int"
        " unsigned NOT NULL, KEY jobs_queue_index (queue))",
        "CREATE TABLE failed_jobs (id bigint unsigned NOT NULL AUTO_INCREMENT PRIMARY KEY, uuid"
        " varchar(255) NOT NULL, connection text NOT NULL, queue text NOT NULL, payload longtext"
        " NOT NULL, exception longtext NOT NULL, failed_at timestamp NOT NULL DEFAULT"
        " CURRENT_TIMESTAMP, UNIQUE KEY failed_jobs_uuid_unique (uuid))",
        "CREATE TABLE job_batches (id varchar(255) NOT NULL PRIMARY KEY, name varchar(255) NOT"
        " NULL, total_jobs int NOT NULL, pending_jobs int NOT NULL, failed_jobs int NOT NULL,"
        " failed_job_ids longtext NOT NULL, options mediumtext NULL, cancelled_at int NULL,"
        " created_at int NOT NULL, finished_at int NULL) DEFAULT CHARACTER SET utf8mb4 COLLATE"
        " utf8mb4_unicode_ci",
    ])
    jobs = ("INSERT INTO jobs (queue, payload, attempts, reserved_at, available_at, created_at)"
            f" SELECT 'default', '{{{{{{{{\"displayName\":\"App\\\\\\\\Jobs\\\\\\\\A\"}}}}}}}}', {{a}},"
            f" {{r}},"
            f" {now} - 60, {now} - 60 FROM {seq}")
    # Laravel's batch ids are ordered UUIDs (Str::orderedUuid: a time prefix), so key order is
    # creation order; {o} shifts the prefix so the unfinished batches come after the finished
    batch_id = ("lpad(to_hex({o} + generate_series), 12, '0') || substr(gen_random_uuid()::text, 13)"
                if pg else "CONCAT(LPAD(HEX({o} + seq), 12, '0'), SUBSTR(UUID(), 13))")
    return ddl + [
        # finished jobs are deleted: failed_jobs holds the bulk, jobs a backlog
        "INSERT INTO failed_jobs (uuid, connection, queue, payload, exception) SELECT"
        f" {uuid}, 'database', 'default', '{{{{}}}}', {exc} FROM {seq.format(k='{n}')}",
        _laravel_real_failures(pg),
        jobs.format(a=0, r="NULL", k="{p}"),
        jobs.format(a=1, r=f"{now} - 30", k="{r}"),
        "INSERT INTO job_batches (id, name, total_jobs, pending_jobs, failed_jobs, failed_job_ids,"
        f" created_at, finished_at) SELECT {batch_id.format(o=0)}, 'Import', 10, 0, 0, '[]',"
        f" {now} - 3600,"
        f" {now} - 3000 FROM {seq.format(k='{n}')}",
        "INSERT INTO job_batches (id, name, total_jobs, pending_jobs, failed_jobs, failed_job_ids,"
        f" created_at) SELECT {batch_id.format(o='{n}')}, 'Import', 10, 5, 1, '[]', {now} - 60"
        f" FROM {seq.format(k='{f}')}",
    ]


def _que(db: str) -> list[str]:
    ins = ("INSERT INTO que_jobs (job_class, run_at, error_count, last_error_message, finished_at,"
           " expired_at) SELECT 'SendMail', {run}, {e}, {msg}, {fin}, {exp}"
           " FROM generate_series(1, {{{k}}})")
    return [
        "CREATE TABLE que_jobs (priority smallint DEFAULT 100 NOT NULL, run_at timestamptz"
        " DEFAULT now() NOT NULL, id bigserial PRIMARY KEY, job_class text NOT NULL, error_count"
        " integer DEFAULT 0 NOT NULL, last_error_message text, queue text DEFAULT 'default' NOT"
        " NULL, last_error_backtrace text, finished_at timestamptz, expired_at timestamptz, args"
        " jsonb DEFAULT '[]' NOT NULL, data jsonb DEFAULT '{{}}' NOT NULL, job_schema_version"
        " integer NOT NULL DEFAULT 1)",
        "CREATE INDEX que_poll_idx ON que_jobs (queue, priority, run_at, id) WHERE finished_at IS"
        " NULL AND expired_at IS NULL",
        "CREATE INDEX que_jobs_args_gin_idx ON que_jobs USING gin (args jsonb_path_ops)",
        "CREATE INDEX que_jobs_data_gin_idx ON que_jobs USING gin (data jsonb_path_ops)",
        ins.format(run="now() - interval '2 hours'", e=0, msg="NULL",
                   fin="now() - interval '1 hour'", exp="NULL", k="n"),
        ins.format(run="now() - interval '1 minute'", e=0, msg="NULL", fin="NULL", exp="NULL",
                   k="p"),
        ins.format(run="now() + interval '5 minutes'", e=2, msg="'RuntimeError: boom'",
                   fin="NULL", exp="NULL", k="r"),
        ins.format(run="now() - interval '1 hour'", e=16, msg="'Net::ReadTimeout: x'",
                   fin="NULL", exp="now() - interval '10 minutes'", k="f"),
    ]


def _good_job(db: str) -> list[str]:
    utc = "(now() AT TIME ZONE 'UTC')"
    ins = ("INSERT INTO good_jobs (queue_name, serialized_params, job_class, scheduled_at,"
           " created_at, updated_at, performed_at, finished_at, executions_count, error,"
           " locked_by_id, locked_at) SELECT 'default', '{{{{\"job_class\": \"SyncJob\"}}}}',"
           " 'SyncJob', {sch}, {sch}, {sch}, {perf}, {fin}, {ex}, {err}, {lb}, {perf}"
           " FROM generate_series(1, {{{k}}})")
    return [
        "CREATE TABLE good_jobs (id uuid PRIMARY KEY DEFAULT gen_random_uuid(), queue_name text,"
        " priority integer, serialized_params jsonb, scheduled_at timestamp, performed_at"
        " timestamp, finished_at timestamp, error text, created_at timestamp NOT NULL, updated_at"
        " timestamp NOT NULL, active_job_id uuid, concurrency_key text, cron_key text,"
        " retried_good_job_id uuid, cron_at timestamp, executions_count integer, job_class text,"
        " error_event smallint, labels text[], locked_by_id uuid, locked_at timestamp)",
        # GoodJob 4's own indexes (its install generator's migration, the discarded-jobs ones
        # included)
        "CREATE INDEX index_good_jobs_on_queue_name_and_scheduled_at ON good_jobs (queue_name,"
        " scheduled_at) WHERE finished_at IS NULL",
        "CREATE INDEX index_good_jobs_on_scheduled_at ON good_jobs (scheduled_at) WHERE"
        " finished_at IS NULL",
        "CREATE INDEX index_good_jobs_jobs_on_finished_at ON good_jobs (finished_at) WHERE"
        " retried_good_job_id IS NULL AND finished_at IS NOT NULL",
        "CREATE INDEX index_good_jobs_on_active_job_id_and_created_at ON good_jobs"
        " (active_job_id, created_at)",
        "CREATE INDEX index_good_jobs_on_concurrency_key_when_unfinished ON good_jobs"
        " (concurrency_key) WHERE finished_at IS NULL",
        "CREATE INDEX index_good_jobs_jobs_on_priority_created_at_when_unfinished ON good_jobs"
        " (priority DESC NULLS LAST, created_at) WHERE finished_at IS NULL",
        "CREATE INDEX index_good_jobs_on_locked_by_id ON good_jobs (locked_by_id) WHERE"
        " locked_by_id IS NOT NULL",
        "CREATE INDEX index_good_job_jobs_for_candidate_lookups ON good_jobs (priority ASC NULLS"
        " LAST, created_at ASC) WHERE finished_at IS NULL",
        "CREATE INDEX index_good_jobs_jobs_on_finished_at_only ON good_jobs (finished_at) WHERE"
        " finished_at IS NOT NULL",
        "CREATE INDEX index_good_jobs_on_discarded ON good_jobs (finished_at DESC) WHERE"
        " finished_at IS NOT NULL AND error IS NOT NULL",
        "CREATE INDEX index_good_jobs_on_unfinished_or_errored ON good_jobs (id) WHERE"
        " finished_at IS NULL OR error IS NOT NULL",
        ins.format(sch=f"{utc} - interval '2 hours'", perf=f"{utc} - interval '2 hours'",
                   fin=f"{utc} - interval '1 hour'", ex=1, err="NULL", lb="NULL", k="n"),
        ins.format(sch=f"{utc} - interval '1 minute'", perf="NULL", fin="NULL", ex=0, err="NULL",
                   lb="NULL", k="p"),
        ins.format(sch=f"{utc} - interval '3 minutes'", perf=f"{utc} - interval '2 minutes'",
                   fin="NULL", ex=1, err="NULL", lb="gen_random_uuid()", k="r"),
        ins.format(sch=f"{utc} - interval '30 minutes'", perf=f"{utc} - interval '20 minutes'",
                   fin=f"{utc} - interval '10 minutes'", ex=5,
                   err="'Faraday::TimeoutError: timeout'", lb="NULL", k="f"),
    ]


def _oban(db: str) -> list[str]:
    utc = "timezone('UTC', now())"
    ins = ("INSERT INTO oban_jobs (state, queue, worker, attempt, max_attempts, scheduled_at,"
           " attempted_at, completed_at, discarded_at, errors) SELECT '{s}', 'default', 'App.W',"
           " {a}, {m}, {sch}, {att}, {comp}, {disc}, {err} FROM generate_series(1, {{{k}}})")
    none = "ARRAY[]::jsonb[]"
    return [
        "CREATE TYPE oban_job_state AS ENUM ('available', 'scheduled', 'executing', 'retryable',"
        " 'completed', 'discarded', 'cancelled')",
        "CREATE TABLE oban_jobs (id bigserial PRIMARY KEY, state oban_job_state NOT NULL DEFAULT"
        " 'available', queue text NOT NULL DEFAULT 'default', worker text NOT NULL, args jsonb"
        " NOT NULL DEFAULT '{{}}', errors jsonb[] NOT NULL DEFAULT ARRAY[]::jsonb[], attempt"
        " integer NOT NULL DEFAULT 0, max_attempts integer NOT NULL DEFAULT 20, inserted_at"
        " timestamp without time zone NOT NULL DEFAULT timezone('UTC', now()), scheduled_at"
        " timestamp without time zone NOT NULL DEFAULT timezone('UTC', now()), attempted_at"
        " timestamp without time zone, completed_at timestamp without time zone, attempted_by"
        " text[], discarded_at timestamp without time zone, priority integer NOT NULL DEFAULT 0,"
        " tags varchar(255)[] DEFAULT ARRAY[]::varchar[], meta jsonb DEFAULT '{{}}',"
        " cancelled_at timestamp without time zone)",
        # Oban's migrations V1-V12 indexes
        "CREATE INDEX oban_jobs_state_queue_priority_scheduled_at_id_index ON oban_jobs (state,"
        " queue, priority, scheduled_at, id)",
        "CREATE INDEX oban_jobs_args_index ON oban_jobs USING gin (args)",
        "CREATE INDEX oban_jobs_meta_index ON oban_jobs USING gin (meta)",
        ins.format(s="completed", a=1, m=20, sch=f"{utc} - interval '2 hours'",
                   att=f"{utc} - interval '2 hours'", comp=f"{utc} - interval '1 hour'",
                   disc="NULL", err=none, k="n"),
        ins.format(s="available", a=0, m=20, sch=f"{utc} - interval '1 minute'", att="NULL",
                   comp="NULL", disc="NULL", err=none, k="p"),
        ins.format(s="executing", a=1, m=20, sch=f"{utc} - interval '3 minutes'",
                   att=f"{utc} - interval '2 minutes'", comp="NULL", disc="NULL", err=none, k="r"),
        ins.format(s="discarded", a=3, m=3, sch=f"{utc} - interval '30 minutes'",
                   att=f"{utc} - interval '20 minutes'", comp="NULL",
                   disc=f"{utc} - interval '10 minutes'",
                   err="ARRAY['{{\"attempt\": 3, \"error\": \"** (RuntimeError) down\"}}'::jsonb]",
                   k="f"),
    ]


def _river(db: str) -> list[str]:
    ins = ("INSERT INTO river_job (state, queue, kind, attempt, max_attempts, scheduled_at,"
           " attempted_at, finalized_at, errors, args) SELECT '{s}', 'default', 'sync', {a}, {m},"
           " {sch}, {att}, {fin}, {err}, '{{{{}}}}' FROM generate_series(1, {{{k}}})")
    return [
        "CREATE TYPE river_job_state AS ENUM ('available', 'cancelled', 'completed', 'discarded',"
        " 'pending', 'retryable', 'running', 'scheduled')",
        "CREATE TABLE river_job (id bigserial PRIMARY KEY, args jsonb NOT NULL DEFAULT '{{}}',"
        " attempt smallint NOT NULL DEFAULT 0, attempted_at timestamptz, attempted_by text[],"
        " created_at timestamptz NOT NULL DEFAULT now(), errors jsonb[], finalized_at timestamptz,"
        " kind text NOT NULL, max_attempts smallint NOT NULL, metadata jsonb NOT NULL DEFAULT"
        " '{{}}', priority smallint NOT NULL DEFAULT 1, queue text NOT NULL DEFAULT 'default',"
        " state river_job_state NOT NULL DEFAULT 'available', scheduled_at timestamptz NOT NULL"
        " DEFAULT now(), tags varchar(255)[] NOT NULL DEFAULT '{{}}', unique_key bytea,"
        " unique_states bit(8))",
        # River's migrations 001-006 indexes
        "CREATE INDEX river_job_kind ON river_job (kind)",
        "CREATE INDEX river_job_state_and_finalized_at_index ON river_job (state, finalized_at)"
        " WHERE finalized_at IS NOT NULL",
        "CREATE INDEX river_job_prioritized_fetching_index ON river_job (state, queue, priority,"
        " scheduled_at, id)",
        "CREATE INDEX river_job_args_index ON river_job USING gin (args)",
        "CREATE INDEX river_job_metadata_index ON river_job USING gin (metadata)",
        ins.format(s="completed", a=1, m=25, sch="now() - interval '2 hours'",
                   att="now() - interval '2 hours'", fin="now() - interval '1 hour'",
                   err="NULL", k="n"),
        ins.format(s="available", a=0, m=25, sch="now() - interval '1 minute'", att="NULL",
                   fin="NULL", err="NULL", k="p"),
        ins.format(s="running", a=1, m=25, sch="now() - interval '3 minutes'",
                   att="now() - interval '2 minutes'", fin="NULL", err="NULL", k="r"),
        ins.format(s="discarded", a=25, m=25, sch="now() - interval '30 minutes'",
                   att="now() - interval '20 minutes'", fin="now() - interval '10 minutes'",
                   err="ARRAY['{{\"attempt\": 25, \"error\": \"boom\"}}'::jsonb]", k="f"),
    ]


def _delayed_job(engine: str, db: str) -> list[str]:
    pg = engine == "postgresql"
    seq = "generate_series(1, {{{k}}})" if pg else "seq_1_to_{{{k}}}"
    now = "now()" if pg else "NOW()"
    ago = (lambda s: f"now() - interval '{s} seconds'") if pg else (
        lambda s: f"NOW() - INTERVAL {s} SECOND")
    dt = "timestamp" if pg else "datetime"
    pk = "bigserial PRIMARY KEY" if pg else "bigint NOT NULL AUTO_INCREMENT PRIMARY KEY"
    ins = ("INSERT INTO delayed_jobs (priority, attempts, handler, last_error, run_at, locked_at,"
           " failed_at, locked_by, queue, created_at, updated_at) SELECT 0, {a}, {h}, {e}, {run},"
           " {la}, {fa}, {lb}, 'default', {run}, {run}"
           f" FROM {seq}")
    plain = "'--- !ruby/object:Delayed::PerformableMethod'"
    # ActiveJob's wrapper as Delayed::Job stores it (~1.3 kB of YAML, job_class near the top)
    nl = "chr(10)" if pg else "CHAR(10)"
    parts = ["'--- !ruby/object:ActiveJob::QueueAdapters::DelayedJobAdapter::JobWrapper'", nl,
             "'job_data:'", nl, "'  job_class: SendInvoiceJob'", nl, "'  job_id: '",
             "md5(random()::text)" if pg else "MD5(RAND())", nl, "'  queue_name: default'", nl,
             "'  arguments:'", nl,
             "repeat('  - _aj_globalid: gid://app/Invoice/' || md5(random()::text) || chr(10), 30)"
             if pg else
             "REPEAT(CONCAT('  - _aj_globalid: gid://app/Invoice/', MD5(RAND()), CHAR(10)), 30)"]
    wrapped = _concat(pg, parts)
    return [
        f"CREATE TABLE delayed_jobs (id {pk}, priority integer NOT NULL DEFAULT 0, attempts integer"
        f" NOT NULL DEFAULT 0, handler text NOT NULL, last_error text, run_at {dt}, locked_at {dt},"
        f" failed_at {dt}, locked_by varchar(255), queue varchar(255), created_at {dt}, updated_at"
        f" {dt})",
        "CREATE INDEX delayed_jobs_priority ON delayed_jobs (priority, run_at)",
        # Delayed::Job deletes a finished job: the table holds a backlog and kept failures
        ins.format(h=plain, a=0, e="NULL", run=ago(60), la="NULL", fa="NULL", lb="NULL", k="n"),
        ins.format(h=plain, a=0, e="NULL", run=now, la="NULL", fa="NULL", lb="NULL", k="p"),
        ins.format(h=plain, a=0, e="NULL", run=ago(120), la=ago(60), fa="NULL", lb="'host:w1 pid:1'",
                   k="r"),
        # as Delayed::Job writes it: "#{message}\n#{backtrace.join("\n")}" (~12 kB)
        ins.format(h=wrapped, a=25, e=_concat(pg, [
            "'RuntimeError: boom'", nl,
            _trace(pg, "/app/vendor/bundle/ruby/3.3.0/gems/delayed_job-4.1.13/lib/delayed/"
                   "backend/base.rb:81:in `invoke_job'")]),
                   run=ago(600), la="NULL", fa=ago(300), lb="NULL", k="f"),
    ]


SQ_DDL = {  # Solid Queue 1.x db/queue_schema.rb, the tables dbwatch reads, with their indexes
    "jobs": "queue_name s!, class_name s!, arguments t, priority i!, active_job_id s,"
            " scheduled_at d, finished_at d, concurrency_key s, created_at d!, updated_at d!",
    "ready_executions": "job_id b!, queue_name s!, priority i!, created_at d!",
    "scheduled_executions": "job_id b!, queue_name s!, priority i!, scheduled_at d!, created_at d!",
    "claimed_executions": "job_id b!, process_id b, created_at d!",
    "failed_executions": "job_id b!, error t, created_at d!",
    "processes": "kind s!, last_heartbeat_at d!, supervisor_id b, pid i!, hostname s, metadata t,"
                 " created_at d!, name s!",
}
SQ_INDEXES = [
    ("jobs", "active_job_id"), ("jobs", "class_name"), ("jobs", "finished_at"),
    ("jobs", "queue_name, finished_at"), ("jobs", "scheduled_at, finished_at"),
    ("ready_executions", "job_id"), ("ready_executions", "priority, job_id"),
    ("ready_executions", "queue_name, priority, job_id"),
    ("scheduled_executions", "job_id"), ("scheduled_executions", "scheduled_at, priority, job_id"),
    ("claimed_executions", "job_id"), ("claimed_executions", "process_id, job_id"),
    ("failed_executions", "job_id"), ("processes", "last_heartbeat_at"),
]


def _solid_queue(engine: str, db: str) -> list[str]:
    pg = engine == "postgresql"
    types = {"s": "varchar(255)", "t": "text", "i": "integer", "b": "bigint",
             "d": "timestamp(6)" if pg else "datetime(6)"}
    pk = "bigserial PRIMARY KEY" if pg else "bigint NOT NULL AUTO_INCREMENT PRIMARY KEY"
    out = []
    for name, spec in SQ_DDL.items():
        cols = [f"id {pk}"] + [f"{c.split()[0]} {types[c.split()[1][0]]}"
                               + (" NOT NULL" if "!" in c else "") for c in spec.split(",")]
        out.append(f"CREATE TABLE solid_queue_{name} ({', '.join(cols)})")
    out += [f"CREATE INDEX sq_{i} ON solid_queue_{t} ({c})" for i, (t, c) in enumerate(SQ_INDEXES)]
    now = "(now() AT TIME ZONE 'UTC')" if pg else "UTC_TIMESTAMP(6)"
    ago = ((lambda s: f"{now} - interval '{s} seconds'") if pg
           else (lambda s: f"{now} - INTERVAL {s} SECOND"))
    seq = "generate_series(1, {{{k}}})" if pg else "seq_1_to_{{{k}}}"
    args = "'{{{{\"job_class\":\"SyncJob\",\"executions\":0}}}}'"
    jobs = ("INSERT INTO solid_queue_jobs (queue_name, class_name, arguments, priority,"
            f" finished_at, created_at, updated_at) SELECT '{{q}}', 'SyncJob', {args}, 0, {{fin}},"
            f" {{at}}, {{at}} FROM {seq}")
    return out + [
        "INSERT INTO solid_queue_processes (kind, last_heartbeat_at, pid, created_at, name) VALUES"
        f" ('Worker', {now}, 101, {now}, 'worker-live')",
        jobs.format(q="done", fin=ago(3600), at=ago(7200), k="n"),
        jobs.format(q="default", fin="NULL", at=ago(60), k="p"),
        "INSERT INTO solid_queue_ready_executions (job_id, queue_name, priority, created_at)"
        " SELECT id, queue_name, 0, created_at FROM solid_queue_jobs WHERE queue_name = 'default'",
        jobs.format(q="running", fin="NULL", at=ago(120), k="r"),
        "INSERT INTO solid_queue_claimed_executions (job_id, process_id, created_at) SELECT id, 1,"
        " created_at FROM solid_queue_jobs WHERE queue_name = 'running'",
        jobs.format(q="failing", fin="NULL", at=ago(900), k="f"),
        # as Solid Queue writes it: the class, the message and the whole backtrace (~12 kB)
        "INSERT INTO solid_queue_failed_executions (job_id, error, created_at) SELECT id, "
        + _concat(pg, [
            "'{{\"exception_class\":\"RuntimeError\",\"message\":\"boom\",\"backtrace\":['",
            _trace(pg, "/app/vendor/bundle/ruby/3.3.0/gems/activejob-8.0.1/lib/active_job/"
                   "execution.rb:53:in `block in perform_now'", "solid_queue_jobs.id", True),
            "']}}'"])
        + ", created_at FROM solid_queue_jobs WHERE queue_name = 'failing'",
    ]


LIBRARIES: dict[str, tuple[str, Any]] = {
    "laravel-pg": ("postgresql", lambda db: _laravel("postgresql", db)),
    "laravel-mariadb": ("mysql", lambda db: _laravel("mysql", db)),
    "pg-boss12": ("postgresql", lambda db: _pgboss("12", db)),
    "pg-boss11": ("postgresql", lambda db: _pgboss("11", db)),
    "pg-boss10": ("postgresql", lambda db: _pgboss("10", db)),
    "graphile-worker": ("postgresql", _graphile),
    "procrastinate": ("postgresql", _procrastinate),
    "pgqueuer": ("postgresql", _pgqueuer),
    "symfony-pg": ("postgresql", lambda db: _symfony("postgresql", db)),
    "symfony-mariadb": ("mysql", lambda db: _symfony("mysql", db)),
    "que": ("postgresql", _que),
    "good_job": ("postgresql", _good_job),
    "oban": ("postgresql", _oban),
    "river": ("postgresql", _river),
    "delayed_job-pg": ("postgresql", lambda db: _delayed_job("postgresql", db)),
    "delayed_job-mariadb": ("mysql", lambda db: _delayed_job("mysql", db)),
    "solid_queue-pg": ("postgresql", lambda db: _solid_queue("postgresql", db)),
    "solid_queue-mariadb": ("mysql", lambda db: _solid_queue("mysql", db)),
}


CPU: dict[str, list[float]] = {}  # query -> the backend's CPU ms of each run (PostgreSQL)


def _backend_cpu_ns(pid: int) -> int | None:
    """Time the backend process spent on a CPU (/proc/<pid>/schedstat, nanoseconds): robust
    to the machine's load, unlike wall time. None where /proc is not readable."""
    try:
        return int(Path(f"/proc/{pid}/schedstat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


MY_TID: dict[int, str | None] = {}  # connection -> /proc path of its server thread


def _thread_cpu(path: str | None) -> int | None:
    try:
        return int(Path(path).read_text().split()[0]) if path else None
    except (OSError, ValueError, IndexError):
        return None


def _my_thread(conn: Any) -> str | None:
    """The MariaDB server thread of this connection (one thread per connection): the one that
    gains the most CPU while the connection computes (performance_schema being off here)."""
    if id(conn) in MY_TID:
        return MY_TID[id(conn)]
    found = None
    pids = subprocess.run(["pgrep", "-x", "mariadbd"], capture_output=True, text=True).stdout.split()
    if pids:  # every MariaDB server of the machine: the busy thread is ours
        tasks = [t for pid in pids for t in Path(f"/proc/{pid}/task").glob("*/schedstat")]
        before = {t: _thread_cpu(str(t)) or 0 for t in tasks}
        with conn.cursor() as cur:
            cur.execute("SELECT BENCHMARK(3000000, MD5('dbwatch'))")
            cur.fetchall()
        gain = {t: (_thread_cpu(str(t)) or 0) - v for t, v in before.items()}
        best = max(gain, key=lambda t: gain[t], default=None)
        found = str(best) if best is not None and gain[best] > 50e6 else None
    MY_TID[id(conn)] = found
    return found


def _server_ms(engine: str, conn: Any, text: str, params: dict[str, Any], key: str) -> float:
    with conn.cursor() as cur:
        if engine == "mysql":
            # the statement's wall time as the client sees it (rows fetched): ANALYZE
            # FORMAT=JSON's r_total_time_ms leaves out the temporary tables and sorts
            thread = _my_thread(conn)
            before = _thread_cpu(thread)
            t0 = time.perf_counter()
            cur.execute(text, params)
            cur.fetchall()
            wall = (time.perf_counter() - t0) * 1000
            after = _thread_cpu(thread)
            if before is not None and after is not None:
                CPU.setdefault(key, []).append((after - before) / 1e6)
            return wall
        pid = conn.info.backend_pid
        before = _backend_cpu_ns(pid)
        # TIMING OFF: per-node clock reads would inflate the scans being measured
        cur.execute("EXPLAIN (ANALYZE, TIMING OFF, FORMAT JSON) " + text, params)
        row = cur.fetchone()
        after = _backend_cpu_ns(pid)
        if before is not None and after is not None:
            CPU.setdefault(key, []).append((after - before) / 1e6)
        plan = row[0] if isinstance(row, tuple) else next(iter(row.values()))
        plan = plan if isinstance(plan, list) else json.loads(plan)
        return float(plan[0]["Execution Time"])


def _timed(engine: str, conn: Any, text: str, params: dict[str, Any], repeat: int,
           key: str) -> float:
    try:
        runs = [_server_ms(engine, conn, text, params, key) for _ in range(repeat)]
    except (pymysql.MySQLError, psycopg.Error) as exc:
        print(f"{text[:80]}: {exc}", file=sys.stderr)
        return float("nan")
    return round(statistics.median(runs), 1)


def _queries(engine: str, target: Any, repeat: int) -> dict[str, float]:
    """Server ms of every queue query of every discovered table (a Discovered, by attribute),
    the id-window bounds query included. PostgreSQL runs them serially (no parallel workers:
    two cores shared by everything) so the backend's CPU time is the query's."""
    out: dict[str, float] = {}
    CPU.clear()
    if engine == "postgresql":
        target.conn.execute("SET max_parallel_workers_per_gather = 0")
    for t in discover(target, engine):
        # the probe's window for this engine and kind (a smaller one for some: KIND_WINDOW)
        window = _queue.window_for(engine, t.kind)
        failed_window = _queue.failed_window_for(engine, t.kind)
        params: dict[str, Any] = {"window": window, "groups": GROUPS, "horizon": HORIZON,
                                  "lookups": getattr(_queue, "LOOKUPS", WINDOW),
                                  "poll_bytes": getattr(_queue, "POLL_BYTES", 0),
                                  "text_rows": (_queue.failed_text_rows_for(engine, t.kind)
                                                if hasattr(_queue, "failed_text_rows_for")
                                                else failed_window)}
        ranged = PG_ID_RANGE_KINDS if engine == "postgresql" else ID_RANGE_KINDS
        if t.kind in ranged:
            bounds = _render(sql(engine, "queue_bounds", target.version), engine, t)
            key = f"{t.table}.bounds"
            out[key] = _timed(engine, target.conn, bounds, {"window": window}, repeat, key)
            params |= _bounds(target, t, window, failed_window)
            params.pop("beyond_window")
        if engine == "postgresql" and t.kind in PG_NEWEST_KINDS:
            walk = _render(sql(engine, "queue_newest_keys", target.version), engine, t)
            step = min(_queue.NEWEST_STEP, math.gcd(WINDOW, FAILED_WINDOW))
            args = {"window": WINDOW, "failed_window": FAILED_WINDOW, "step": step,
                    "last": max(WINDOW, FAILED_WINDOW) + 1}
            key = f"{t.table}.keys"
            out[key] = _timed(engine, target.conn, walk, args, repeat, key)
            params |= _queue._pg_newest_keys(target, t)
            params.pop("beyond_window")
        swept = _sweep is not None and engine == "postgresql" and _sweep.applies(t)
        for aspect in ASPECTS:
            name = f"queue_{t.kind}_{aspect}"
            if not _has_sql(engine, name) or (swept and aspect in _sweep.SWEPT):
                continue
            text = _render(sql(engine, name, target.version), engine, t)
            params["window"] = failed_window if aspect == "failed" else window
            key = f"{t.table}.{aspect}"
            out[key] = _timed(engine, target.conn, text, params, repeat, key)
        if swept:
            out |= _sweep_slices(target, t, params, repeat)
    return out


def _sweep_slices(target: Any, t: Any, params: dict[str, Any], repeat: int) -> dict[str, float]:
    """pg-boss 10/11: each page slice of the sweep (reserved + failed + repeated's active share
    in one pass) timed as its own statement, and their sum (`sweep, all N statements`): what
    one look costs — N queries of its own, each under the issue's per-query bound, not one."""
    text = sql("postgresql", "queue_pg_boss_sweep", target.version)
    args = params | {"window": WINDOW, "failed_window": FAILED_WINDOW}
    out: dict[str, float] = {}
    if target.version_num < _sweep.TID_RANGE:
        key = f"{t.table}.sweep"
        one = _render(text, "postgresql", _sweep._with(t, "slice", "true"))
        out[key] = _timed("postgresql", target.conn, one, args, repeat, key)
        return out
    ranged = _render(text, "postgresql", _sweep._with(t, "slice", _sweep.SLICE))
    sizes = target.rows(_sweep.SIZES, {"table": _sweep.pg_ident_text(t.schema, t.table)})
    cuts = _sweep.boundaries([int(r["pages"]) for r in sizes], _sweep.SLICE_PAGES)
    for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
        hi = _sweep.LAST_PAGE if i == len(cuts) - 2 else b
        key = f"{t.table}.sweep[{i}]"
        out[key] = _timed("postgresql", target.conn, ranged,
                          args | {"lo": f"({a},0)", "hi": f"({hi},0)"}, repeat, key)
    out[f"{t.table}.sweep, all {len(out)} statements"] = round(sum(out.values()), 1)
    return out


def _cpu() -> dict[str, float]:
    return {k: round(statistics.median(v), 1) for k, v in CPU.items()}


def _audit_seconds(url: str) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "dbwatch", "audit", url, "--select", "QU",
                    "--format", "json"], env=_env(), capture_output=True, timeout=120)
    return round(time.perf_counter() - t0, 2)


def _audit_findings(url: str) -> list[tuple[str, str, str]]:
    """(rule, table, summary) of the QU findings: the same before and after a query change."""
    out = subprocess.run([sys.executable, "-m", "dbwatch", "audit", url, "--select", "QU",
                          "--format", "json"], env=_env(), capture_output=True, timeout=120,
                         text=True)
    try:
        doc = json.loads(out.stdout)
    except ValueError:
        return [("error", "", out.stderr[-300:])]
    return sorted((f["rule"], str(f.get("evidence", {}).get("table")), f["summary"])
                  for f in doc.get("findings", []))


def bench(lib: str, counts: dict[str, int], repeat: int) -> dict[str, Any]:
    engine, setup = LIBRARIES[lib]
    db = f"dbwq_bench_{lib.replace('-', '_')}_{os.getpid()}"
    if engine == "mysql":
        admin: Any = pymysql.connect(host="127.0.0.1", user="root", password="", autocommit=True)
        admin.cursor().execute(f"CREATE DATABASE {db}")
        admin.select_db(db)
        url = f"mysql://root@127.0.0.1:3306/{db}"
        run = admin.cursor().execute
    else:
        admin = psycopg.connect(_pg("postgres"), autocommit=True)
        admin.execute(f"CREATE DATABASE {db}")
        conn = psycopg.connect(_pg(db), autocommit=True)
        url = _pg_url(db)
        run = conn.execute
    try:
        t0 = time.perf_counter()
        for stmt in setup(db):
            run(stmt.format(**counts))
        built = round(time.perf_counter() - t0, 1)
        target = open_target(spec_for(url))
        try:
            cold = _queries(engine, target, 1)  # first run of each query, no statistics
            cold_cpu = _cpu()
            cold_audit = _audit_seconds(url)
            run("ANALYZE TABLE " + ", ".join(f"`{t.table}`" for t in discover(target, engine))
                if engine == "mysql" else "ANALYZE")
            warm = _queries(engine, target, repeat)
            warm_cpu = _cpu()
            warm_audit = _audit_seconds(url)
            findings = _audit_findings(url)
        finally:
            target.close()
        return {"library": lib, "engine": engine, "rows": counts, "build_seconds": built,
                "cold_ms": cold, "analyzed_ms": warm, "cold_cpu_ms": cold_cpu,
                "analyzed_cpu_ms": warm_cpu, "audit_seconds_cold": cold_audit,
                "audit_seconds": warm_audit, "findings": findings,
                "finished_rows": counts["n"]}
    finally:
        if KEEP:
            print(f"kept {url}", file=sys.stderr)
        elif engine == "mysql":
            admin.cursor().execute(f"DROP DATABASE {db}")
        else:
            conn.close()
            if not KEEP:
                admin.execute(f"DROP DATABASE {db} WITH (FORCE)")
        admin.close()


def markdown(results: list[dict[str, Any]]) -> str:
    lines = ["| library | engine | query | cold ms | cold CPU ms | analyzed ms | analyzed CPU ms |",
             "|---|---|---|---:|---:|---:|---:|"]
    for r in results:
        cc, wc = r.get("cold_cpu_ms", {}), r.get("analyzed_cpu_ms", {})
        for q in r["cold_ms"]:
            lines.append(f"| {r['library']} | {r['engine']} | {q} | {r['cold_ms'][q]} | "
                         f"{cc.get(q, '')} | {r['analyzed_ms'].get(q)} | {wc.get(q, '')} |")
        lines.append(f"| {r['library']} | {r['engine']} | **audit --select QU (s)** | "
                     f"{r['audit_seconds_cold']} | | {r['audit_seconds']} | |")
    return "\n".join(lines)


SMOKE_LIBS = ("laravel-pg,laravel-mariadb,que,good_job,oban,river,delayed_job-pg,"
              "delayed_job-mariadb,solid_queue-pg,solid_queue-mariadb")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000,
                    help="the bulk: finished rows, or the rows a deleting library keeps")
    ap.add_argument("--pending", type=int, default=20_000)
    ap.add_argument("--running", type=int, default=1_000)
    ap.add_argument("--failed", type=int, default=5_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--libs", default=",".join(LIBRARIES))
    ap.add_argument("--throwaway", action="store_true",
                    help="PostgreSQL in a cluster of its own (autovacuum off), not :5432")
    ap.add_argument("--smoke", action="store_true",
                    help="CI: the libraries without an external tool, 2,000 rows, one run each")
    ap.add_argument("--pg-port", type=int, help="PostgreSQL on this local port (trust auth)")
    ap.add_argument("--keep", action="store_true", help="leave the databases (diagnosis)")
    ap.add_argument("--json", help="write the results here too")
    ap.add_argument("--backlog", action="store_true",
                    help="a 1,000,000-job backlog instead: 1,000 finished rows, 1,000,000 waiting")
    args = ap.parse_args()
    global KEEP
    KEEP = args.keep
    if args.pg_port:
        PG_PORT[0] = args.pg_port
    if args.backlog:
        args.rows, args.pending = 1_000, 1_000_000
    if args.smoke:
        args.rows, args.pending, args.running, args.failed, args.repeat = 2_000, 100, 10, 20, 1
        args.libs = SMOKE_LIBS
    counts = {"n": args.rows, "p": args.pending, "r": args.running, "f": args.failed}
    libs = [x.strip() for x in args.libs.split(",") if x.strip()]
    if args.throwaway:
        from pgcluster import PgCluster

        settings = {"autovacuum": "off", "fsync": "off", "synchronous_commit": "off",
                    "full_page_writes": "off", "shared_buffers": "256MB", "jit": "off"}
        with PgCluster(settings) as cluster:
            PG_PORT[0] = cluster.port
            results = _all(libs, counts, args.repeat)
    else:
        results = _all(libs, counts, args.repeat)
    doc = {"load_average": os.getloadavg(), "results": results}
    print(json.dumps(doc, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(doc, indent=2))
    print(markdown(results))
    return 0


def _all(libs: list[str], counts: dict[str, int], repeat: int) -> list[dict[str, Any]]:
    results = []
    for lib in libs:
        try:
            results.append(bench(lib, counts, repeat))
            print(json.dumps(results[-1]), file=sys.stderr, flush=True)  # survives a later crash
        except (subprocess.CalledProcessError, FileNotFoundError) as exc:
            print(f"{lib}: skipped ({exc})", file=sys.stderr)
    return results


if __name__ == "__main__":
    sys.exit(main())
