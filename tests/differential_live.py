"""Recorded live audits for the golden outputs (issue 25.7): scenario databases made here.

Each scenario creates its own PostgreSQL database or MariaDB schema (a unique name), puts in it
what dbwatch is for (a session idle in transaction holding a write, a Laravel jobs table with the
legacy index and a backlog, a generic queue with a backlog), runs `dbwatch audit URL --config CFG
--format json` in-process, and drops everything. Volatile values (pids, thread ids, times,
durations, versions, ports, the database name) become placeholders, so the golden file holds
only what the code decided: which rules fired, their severity, subject kind, texts and fixes.
"""

from __future__ import annotations

import contextlib
import json
import re
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from differential import record, run_inprocess

PG_HOST = "postgresql://postgres@127.0.0.1:5432"
MY_HOST = "mysql://root@127.0.0.1:3306"
# low thresholds: the scenario's few seconds of age are enough to fire
CONFIG = """
[[targets]]
name = "{name}"
url = "{url}"
[rules.PG001]
thresholds = {{ warning = "1s", critical = "1h" }}
[rules.PG002]
thresholds = {{ warning = "1s", critical = "1h" }}
[rules.PG101]
thresholds = {{ warning = "1s", critical = "1h" }}
[rules.MY101]
thresholds = {{ warning = "1s", critical = "1h" }}
[rules.MY001]
thresholds = {{ warning = "1s", critical = "1h" }}
[rules.MY002]
thresholds = {{ warning = "1s", critical = "1h" }}
"""
# Server-wide settings (PG501/MY501) are the whole server's, which other people change, and so
# are the horizon's holders beyond our database (a replication slot or a prepared transaction
# pins every database: PG201/PG202); on MariaDB a schema URL does not scope sessions and
# transactions (MY0/MY1 see every schema's): the MariaDB scenario audits its queue rules only.
IGNORED = ("--ignore", "PG2,PG5,MY5")
ONLY_QUEUES = ("--select", "QU")
SETTLE = 2.5  # seconds: past the 1 s thresholds, and statistics flushed


@contextlib.contextmanager
def _pg_db(name: str) -> Iterator[str]:
    import psycopg

    with psycopg.connect(f"{PG_HOST}/postgres", autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield f"{PG_HOST}/{name}"
    finally:
        with psycopg.connect(f"{PG_HOST}/postgres", autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _my(db: str | None = None) -> Any:
    import pymysql

    return pymysql.connect(
        host="127.0.0.1", port=3306, user="root", password="", database=db, autocommit=True
    )


@contextlib.contextmanager
def _my_db(name: str) -> Iterator[str]:
    with _my() as c:
        c.cursor().execute(f"CREATE DATABASE `{name}`")
    try:
        yield f"{MY_HOST}/{name}"
    finally:
        with _my() as c:
            c.cursor().execute(f"DROP DATABASE IF EXISTS `{name}`")


@contextlib.contextmanager
def pg_idle_in_transaction(name: str) -> Iterator[str]:
    """A session that wrote a row and stays idle in transaction (it holds an xid and locks)."""
    import psycopg

    with _pg_db(name) as url:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute("CREATE TABLE accounts (id int PRIMARY KEY, balance int NOT NULL)")
            c.execute("INSERT INTO accounts SELECT g, 0 FROM generate_series(1, 10) g")
        idle = psycopg.connect(url, application_name="billing-app")
        try:
            idle.execute("UPDATE accounts SET balance = balance + 1 WHERE id = 1")
            time.sleep(SETTLE)
            yield url
        finally:
            idle.close()


LARAVEL_JOBS = (
    "CREATE TABLE jobs (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, queue VARCHAR(255) NOT "
    "NULL, payload LONGTEXT NOT NULL, attempts TINYINT UNSIGNED NOT NULL, reserved_at INT "
    "UNSIGNED NULL, available_at INT UNSIGNED NOT NULL, created_at INT UNSIGNED NOT NULL, "
    "KEY jobs_queue_reserved_at_index (queue, reserved_at)) ENGINE=InnoDB"
)
LARAVEL_FAILED = (
    "CREATE TABLE failed_jobs (id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY, uuid VARCHAR(255) "
    "NOT NULL UNIQUE, connection TEXT NOT NULL, queue TEXT NOT NULL, payload LONGTEXT NOT NULL, "
    "exception LONGTEXT NOT NULL, failed_at TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP)"
)


@contextlib.contextmanager
def my_laravel_legacy_index(name: str) -> Iterator[str]:
    """Laravel 5.3's jobs table (the (queue, reserved_at) index) with a two-hour backlog."""
    with _my_db(name) as url, _my(name) as c:
        cur = c.cursor()
        cur.execute(LARAVEL_JOBS)
        cur.execute(LARAVEL_FAILED)
        payload = json.dumps({"displayName": "App\\Jobs\\SendInvoice", "job": "x", "data": {}})
        cur.execute(
            "INSERT INTO jobs (queue, payload, attempts, available_at, created_at) SELECT "
            "'default', %s, 0, UNIX_TIMESTAMP() - 7200, UNIX_TIMESTAMP() - 7200 FROM seq_1_to_500",
            (payload,),
        )
        yield url


@contextlib.contextmanager
def pg_generic_backlog(name: str) -> Iterator[str]:
    """An application's own work table (no library dbwatch knows) with an hour of backlog."""
    import psycopg

    with _pg_db(name) as url:
        with psycopg.connect(url, autocommit=True) as c:
            c.execute(
                "CREATE TABLE work_items (id bigserial PRIMARY KEY, kind text NOT NULL, "
                "args jsonb NOT NULL DEFAULT '{}', state text NOT NULL DEFAULT 'queued', "
                "run_after timestamptz NOT NULL DEFAULT now(), locked_at timestamptz, "
                "worker_id text, attempts smallint DEFAULT 0, max_attempts smallint DEFAULT 5, "
                "last_error text, finished_at timestamptz, "
                "created_at timestamptz NOT NULL DEFAULT now())"
            )
            c.execute("CREATE INDEX ON work_items (state, run_after)")
            c.execute(
                "INSERT INTO work_items (kind, state, run_after, created_at) SELECT 'sync', "
                "'queued', now() - interval '1 hour', now() - interval '1 hour' "
                "FROM generate_series(1, 400)"
            )
            c.execute(
                "INSERT INTO work_items (kind, state, finished_at) SELECT 'sync', 'done', now() "
                "FROM generate_series(1, 50)"
            )
            c.execute(
                "INSERT INTO work_items (kind, state, attempts, last_error) SELECT 'sync', "
                "'failed', 5, 'timeout' FROM generate_series(1, 5)"
            )
        yield url


@contextlib.contextmanager
def pg_lock_wait(name: str) -> Iterator[str]:
    """An idle-in-transaction writer and a session waiting behind it for the same row."""
    import psycopg

    with pg_idle_in_transaction(name) as url:
        waiter = psycopg.connect(url, autocommit=True, application_name="worker")
        pid = waiter.info.backend_pid

        def wait() -> None:
            with contextlib.suppress(psycopg.Error):  # cancelled at teardown
                waiter.execute("UPDATE accounts SET balance = 0 WHERE id = 1")

        thread = threading.Thread(target=wait, daemon=True)
        thread.start()
        try:
            time.sleep(SETTLE)
            yield url
        finally:
            with psycopg.connect(url, autocommit=True) as c:
                c.execute("SELECT pg_cancel_backend(%s)", (pid,))
            thread.join(10)
            waiter.close()


Scenario = Callable[[str], contextlib.AbstractContextManager[str]]
SCENARIOS: dict[str, Scenario] = {
    "pg-idle-in-transaction": pg_idle_in_transaction,
    "mariadb-laravel-legacy-index": my_laravel_legacy_index,
    "pg-generic-queue-backlog": pg_generic_backlog,
    "pg-lock-wait": pg_lock_wait,
}


# -- normalising ---------------------------------------------------------------------------
# integers that name a session or a transaction of this run: replaced wherever they appear
IDENTIFIER_KEYS = {
    "pid",
    "pids",
    "root_pid",
    "blocked_by",
    "blocking",
    "chain",
    "thread",
    "thread_id",
    "trx_id",
    "backend_xid",
    "backend_xmin",
    "xid",
}
VERSION_KEYS = {"version", "server_version"}
# hashes over this run's names and ids; InnoDB's sampled row estimate
MASKED_KEYS = {"fingerprint", "rows_estimate"}
_DURATION = re.compile(r"\b\d+(\.\d+)?\s?(ms|s|min|m|h|d|seconds?|minutes?|hours?|days?)\b")
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d(:?\d\d)?|Z)?")


def _volatile_key(key: str) -> bool:
    """Keys whose numbers are measured this run (ages, times, durations, ports)."""
    return (
        key in ("port", "generated_at", "seconds")
        or key.endswith(("_seconds", "_age", "_ago", "_ms", "_start", "_at"))
        or key in ("age", "transaction_age", "xact_start", "query_start", "state_change")
    )


def _collect(value: Any, names: dict[str, str], key: str = "") -> None:
    """The run's session ids and server versions, to be replaced wherever they appear."""
    if isinstance(value, dict):
        for k, v in value.items():
            _collect(v, names, k)
    elif isinstance(value, list):
        for v in value:
            _collect(v, names, key)
    elif (
        (key in IDENTIFIER_KEYS or key.endswith(("_pid", "_pids", "_thread")))
        and isinstance(value, int | str)
        and str(value).isdigit()
    ):
        names[str(value)] = "<ID>"
    elif key in VERSION_KEYS and isinstance(value, str) and value:
        names[value] = "<VERSION>"


def _text(value: str, names: dict[str, str]) -> str:
    for real in sorted(names, key=len, reverse=True):
        value = re.sub(rf"(?<![\w.]){re.escape(real)}(?![\w])", names[real], value)
    value = _TIMESTAMP.sub("<TIME>", value)
    return _DURATION.sub("<DURATION>", value)


def _walk(value: Any, names: dict[str, str], key: str = "") -> Any:
    if isinstance(value, dict):
        return {k: _walk(v, names, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, names, key) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if key in MASKED_KEYS:
        return "<MASKED>"
    if isinstance(value, int | float) and (_volatile_key(key) or isinstance(value, float)):
        return "<NUMBER>"
    if isinstance(value, str):
        return _text(value, names)
    if isinstance(value, int):  # an id of this run wherever it stands (a blocker list)
        return names.get(str(value), value)
    return value


def normalise_audit(stdout: str, names: dict[str, str]) -> str:
    """The audit's JSON with volatile values as placeholders; findings in a stable order."""
    raw = json.loads(stdout)
    _collect(raw, names)
    doc = _walk(raw, names)
    if isinstance(doc, dict) and isinstance(doc.get("findings"), list):
        doc["findings"].sort(key=lambda f: (f.get("rule"), json.dumps(f, sort_keys=True)))
    return json.dumps(doc, indent=2, sort_keys=True) + "\n"


def run_scenario(key: str) -> str:
    """Build the scenario, audit it, tear it down: the golden text."""
    tag = uuid.uuid4().hex[:8]
    name = f"dbw_diff_{tag}"
    with SCENARIOS[key](name) as url, tempfile.TemporaryDirectory() as tmp:
        cfg = Path(tmp) / "dbwatch.toml"
        cfg.write_text(CONFIG.format(name=key, url=url))
        rules = ONLY_QUEUES if key.startswith("mariadb") else IGNORED
        argv = ["audit", "--config", str(cfg), "--format", "json", *rules]
        rc, out, err = run_inprocess(argv)
    names = {name: "<DB>", tag: "<TAG>", str(cfg): "<CONFIG>"}
    names.update({"127.0.0.1:5432": "<HOST:PORT>", "127.0.0.1:3306": "<HOST:PORT>"})
    body = normalise_audit(out, names) if out.strip() else out
    shown = ("audit", "--config", "<CONFIG>", "--format", "json", *rules)
    return record(shown, rc, body, _text(err, names))


def live_name(key: str) -> str:
    return f"live_{key}"


def run_scenarios() -> dict[str, str]:
    return {live_name(k): run_scenario(k) for k in SCENARIOS}
