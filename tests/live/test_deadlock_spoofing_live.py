"""Fake deadlock sections injected through real query texts on a throwaway MariaDB: neither
the status text nor the error log may yield the attacker's victim (issue 18.4)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

pymysql = pytest.importorskip("pymysql")
sys.path.insert(0, str(Path(__file__).parent))
import mariadb_instance  # noqa: E402

from dbwatch.parsers.errorlog import iter_deadlocks  # noqa: E402
from dbwatch.parsers.innodb_status import parse_status  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not mariadb_instance.available(), reason="no mariadbd here")

FAKE_TAIL = (
    "\n*** WAITING FOR THIS LOCK TO BE GRANTED:\n"
    "RECORD LOCKS space id 1 page no 3 n bits 72 index PRIMARY of table `evil`.`t` "
    "trx id 1 lock_mode X locks rec but not gap waiting\n"
    "*** (2) TRANSACTION:\n"
    "TRANSACTION 999, ACTIVE 5 sec starting index read\n"
    "MariaDB thread id 666, OS thread handle 1, query id 1 evilhost 6.6.6.6 mallory updating\n"
    "update evil set x = 1\n"
    "*** WE ROLL BACK TRANSACTION (2)\n"
)
FAKE_REPORT = (
    "\n2026-11-22  2:01:37 666 [Note] InnoDB: Transactions deadlock detected, dumping "
    "detailed information.\n2026-11-22  2:01:37 666 [Note] InnoDB: \n*** (1) TRANSACTION:\n"
    "TRANSACTION 998, ACTIVE 5 sec starting index read\n"
    "MariaDB thread id 665, OS thread handle 1, query id 1 h 6.6.6.6 alice updating\n"
    "select 1" + FAKE_TAIL
)


def deadlock_with(db: Any, fake: str) -> None:
    a, b = db.connect(autocommit=False), db.connect(autocommit=False)
    try:
        a.cursor().execute("UPDATE t SET v = v + 1 WHERE id = 1")
        b.cursor().execute("UPDATE t SET v = v + 1 WHERE id = 2")
        errs: list[BaseException] = []

        def second() -> None:
            try:
                a.cursor().execute(f"UPDATE t SET v = v + 1 /* {fake} */ WHERE id = 2")
            except pymysql.err.OperationalError as exc:
                errs.append(exc)

        th = threading.Thread(target=second)
        th.start()
        time.sleep(0.3)
        try:
            b.cursor().execute(f"UPDATE t SET v = v + 1 /* {fake} */ WHERE id = 1")
        except pymysql.err.OperationalError as exc:
            errs.append(exc)
        th.join(10)
        assert errs, "no deadlock"
    finally:
        a.rollback()
        b.rollback()
        a.close()
        b.close()


def no_forged_victim(dls: list[Any]) -> None:
    assert dls
    for dl in dls:
        victim = dl.trx(dl.victim) if dl.victim is not None else None
        assert victim is None or victim.user not in ("mallory", "alice"), dl
        assert victim is None or victim.thread_id not in (665, 666)
        forged = any(t.user in ("mallory", "alice") for t in dl.transactions)
        assert not forged or (dl.ambiguous and dl.victim is None)
        assert dl.ambiguous  # the real report carries the injected lines too


@pytest.mark.parametrize("fake", [FAKE_TAIL, FAKE_REPORT], ids=["fake-tail", "fake-report"])
def test_injected_sections(fake: str) -> None:
    with mariadb_instance.MariaDbInstance.create(["--innodb-print-all-deadlocks=ON"]) as db:
        db.query("CREATE TABLE t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB")
        db.query("INSERT INTO t VALUES (1, 0), (2, 0)")
        deadlock_with(db, fake)
        status = str(db.query("SHOW ENGINE INNODB STATUS")[0][2])
        dl = parse_status(status).deadlock
        assert dl is not None
        no_forged_victim([dl])
        time.sleep(0.3)
        log = db.base / "error.log"
        dls = list(iter_deadlocks(log.read_text(errors="replace").splitlines()))
        no_forged_victim(dls)
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        r = subprocess.run([sys.executable, "-m", "dbwatch", "deadlocks", "--log", str(log),
                            "--format", "json"], capture_output=True, text=True, env=env,
                           timeout=60)
        out = json.loads(r.stdout)["deadlocks"]
        assert out and all(d["ambiguous"] and d["victim"] is None for d in out)
        assert all(d["diagnosis"]["pattern"] == "ambiguous" for d in out)
