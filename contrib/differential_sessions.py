"""Live differential of the session walk (issue 25.1, 25.7): the same `audit` and `terminate`
(dry run) command lines on a base revision and on this tree, over sessions this script holds
open on the local servers, compared with durations, ages and timings masked.

PostgreSQL: a writer idle in transaction, a session blocked behind it, a REPEATABLE READ
reader (PG001, PG002, PG101, PG201; terminate --older-than/--idle-in-transaction/--blocking/
--holding-xmin). MariaDB/MySQL: a writer idle in transaction and a thread waiting for its lock
(MY001, MY002, MY101; terminate). Each run creates its own database on both servers and drops
it. dbwatch's own connection (a new pid each run) and other engineers' threads are left out.
Each command runs base, tree, base, tree; it differs when no base run matches a tree run.

Usage: python contrib/differential_sessions.py [REV]   (REV: default main)
"""

from __future__ import annotations

import contextlib
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import psycopg
import pymysql

HERE = Path(__file__).resolve().parent.parent
RULES = ("PG001", "PG002", "MY001", "MY002", "PG101", "MY101", "PG201")
MASKS = [
    (
        re.compile(r'"([a-z_]*(seconds|_age|_at|seen)[a-z_]*|elapsed[a-z_]*)": [^,}\]\n]+'),
        r'"\1": X',
    ),
    (re.compile(r"\b(\d+(\.\d+)?\s?(ms|min|sec|[smhd]))+\b"), "D"),  # 5s, 1m09s, 2 min
    (re.compile(r"\b\d+(\.\d+)? ?(seconds?|XIDs?)\b"), "N"),
    (re.compile(r"(_xids|_age)'=[0-9.]+"), r"\1'=N"),  # XID ages move with the cluster's writes
]


def norm(text: str) -> str:
    for rx, rep in MASKS:
        text = rx.sub(rep, text)
    return text


def quietly(fn: Any) -> None:
    """Run fn; the blocked statements fail when their session is closed at the end."""
    with contextlib.suppress(OSError, psycopg.Error, pymysql.Error):
        fn()


def hold(uniq: str) -> tuple[list[Any], str, str, set[int]]:
    """The sessions; returns them, the two URLs and the MySQL thread ids to keep."""
    pg_url = f"postgresql://postgres@127.0.0.1:5432/{uniq}"
    my_url = f"mysql://root@127.0.0.1:3306/{uniq}"

    def pg(app: str) -> psycopg.Connection[Any]:
        return psycopg.connect(pg_url, autocommit=True, application_name=app)

    def my() -> pymysql.Connection[Any]:
        return pymysql.connect(host="127.0.0.1", user="root", database=uniq, autocommit=True)

    s = pg("setup")
    s.execute("CREATE TABLE jobs (id int PRIMARY KEY, v int)")
    s.execute("INSERT INTO jobs SELECT g, 0 FROM generate_series(1, 50) g")
    s.close()
    a, b, c = pg("worker-a"), pg("worker-b"), pg("report-c")
    a.execute("BEGIN")
    a.execute("UPDATE jobs SET v = 1 WHERE id = 1")
    c.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
    c.execute("SELECT count(*) FROM jobs")
    threading.Thread(
        target=quietly, args=(lambda: b.execute("UPDATE jobs SET v = 2 WHERE id = 1"),), daemon=True
    ).start()
    m, ma, mb = my(), my(), my()
    m.cursor().execute("CREATE TABLE jobs (id int PRIMARY KEY, v int) ENGINE=InnoDB")
    m.cursor().execute("INSERT INTO jobs VALUES " + ",".join(f"({i},0)" for i in range(1, 51)))
    ma.cursor().execute("BEGIN")
    ma.cursor().execute("UPDATE jobs SET v = 1 WHERE id = 1")
    mb.cursor().execute("SET SESSION innodb_lock_wait_timeout = 600")
    threading.Thread(
        target=quietly,
        args=(lambda: mb.cursor().execute("UPDATE jobs SET v = 2 WHERE id = 1"),),
        daemon=True,
    ).start()
    return [a, b, c, m, ma, mb], pg_url, my_url, {ma.thread_id(), mb.thread_id()}


def keep(rows: object, tids: set[int], mysql: bool) -> object:
    """Decisions of this script's sessions only (dbwatch's own has a new pid each run)."""
    if isinstance(rows, dict):
        return {k: keep(v, tids, mysql) for k, v in rows.items()}
    if isinstance(rows, list):
        return [
            r
            for r in rows
            if not isinstance(r, dict)
            or "action" not in r
            or (r.get("thread_id") in tids if mysql else r.get("application") != "dbwatch")
        ]
    return rows


def output(root: str, cmd: list[str], cfg: str, tids: set[int], mysql: bool) -> str:
    env = dict(os.environ, PYTHONPATH=root, COLUMNS="160", NO_COLOR="1")
    r = subprocess.run(
        [sys.executable, "-m", "dbwatch", cmd[0], "-c", cfg, *cmd[1:]],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    out = r.stdout
    if cmd[0] == "terminate" and "json" in cmd:
        out = json.dumps(keep(json.loads(out), tids, mysql), indent=1, sort_keys=True)
    elif cmd[0] == "terminate":  # the table: this script's sessions' blocks only
        blocks = re.split(r"\n(?=\S)", out)
        ids = [str(t) for t in tids] if mysql else []
        out = "\n".join(
            b
            for b in blocks
            if (" dbwatch " not in b.split("\n")[0])
            and (not mysql or any(f" {i} " in b.split("\n")[0] for i in ids))
        )
    return f"{norm(out)}\nrc={r.returncode}\nstderr: {norm(r.stderr)}"


def main() -> int:
    rev = sys.argv[1] if len(sys.argv) > 1 else "main"
    uniq = f"dbw_sd_{uuid.uuid4().hex[:8]}"
    work = Path(tempfile.mkdtemp(prefix="dbw_sd_"))
    base = work / "base"
    base.mkdir()
    tar = subprocess.run(["git", "-C", str(HERE), "archive", rev], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(base)], input=tar.stdout, check=True)
    cfg = work / "dbwatch.toml"
    cfg.write_text(
        "".join(f'[rules.{r}]\nthresholds = {{ warning = "1s", critical = "1h" }}\n' for r in RULES)
    )
    pg_admin = psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres", autocommit=True)
    my_admin = pymysql.connect(host="127.0.0.1", user="root", autocommit=True)
    pg_admin.execute(f"CREATE DATABASE {uniq}")
    my_admin.cursor().execute(f"CREATE DATABASE {uniq}")
    held: list[Any] = []
    try:
        held, pg_url, my_url, tids = hold(uniq)
        time.sleep(4)  # past the 1 s thresholds, and PG101/MY101's wait
        cmds = [
            ["audit", pg_url, "--format", "json"],
            ["audit", pg_url],
            ["audit", pg_url, "--format", "nagios"],
            ["audit", my_url, "--format", "json"],
            ["audit", my_url],
            ["terminate", pg_url, "--older-than", "0s", "--format", "json"],
            ["terminate", pg_url, "--older-than", "0s"],
            ["terminate", pg_url, "--idle-in-transaction", "--format", "json"],
            ["terminate", pg_url, "--blocking", "--format", "json"],
            ["terminate", pg_url, "--holding-xmin", "--format", "json"],
            ["terminate", my_url, "--older-than", "0s", "--format", "json"],
            ["terminate", my_url, "--blocking", "--format", "json"],
            ["terminate", my_url, "--idle-in-transaction"],
        ]
        bad = 0
        for cmd in cmds:
            mysql = cmd[1] == my_url
            outs = [
                output(str(root), cmd, str(cfg), tids, mysql) for root in (base, HERE, base, HERE)
            ]
            same = {outs[0], outs[2]} & {outs[1], outs[3]}
            shown = " ".join([cmd[0], "mysql" if mysql else "postgresql", *cmd[2:]])
            print(f"{'same' if same else 'DIFF'} {shown} ({len(outs[1])} chars)")
            if not same:
                bad += 1
                diff = difflib.unified_diff(outs[0].splitlines(True), outs[1].splitlines(True))
                sys.stdout.write("".join(list(diff)[:40]))
        print(f"commands={len(cmds)} differing={bad}")
        return 1 if bad else 0
    finally:
        for h in held:
            quietly(h.close)
        pg_admin.execute(f"DROP DATABASE IF EXISTS {uniq} WITH (FORCE)")
        my_admin.cursor().execute(f"DROP DATABASE IF EXISTS {uniq}")
        subprocess.run(["rm", "-rf", str(work)], check=False)


if __name__ == "__main__":
    sys.exit(main())
