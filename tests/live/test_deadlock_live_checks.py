"""What `dbwatch deadlocks URL` checks on the live server (issue 22.4): printed trx ids below the
trx id counter, printed threads and open transactions against the server's own list. A real
deadlock on the local MariaDB must raise no contradiction; the same report with one transaction's
id swapped for a transaction open now in another session must.
"""
from __future__ import annotations

import pytest
from test_mariadb_deadlocks import DEADLOCK, DSN, connect, opposite_order, status_text
from test_mariadb_deadlocks import table as table  # noqa: F401  (the fixture)

from dbwatch.deadlocks.record import check_threads
from dbwatch.parsers.innodb_status import parse_status
from dbwatch.probes import run_probes
from dbwatch.snapshot.my import MY_TRX
from dbwatch.targets import open_target, spec_for

URL = f"mysql://{DSN['user']}@{DSN['host']}:{DSN['port']}/{DSN['database']}"


def live_threads():  # type: ignore[no-untyped-def]
    conn = open_target(spec_for(URL, "live-check"))
    try:
        return run_probes(conn, "live-check", ["my.trx"]).get(MY_TRX) or ()
    finally:
        conn.close()


def test_a_real_deadlock_raises_no_contradiction_and_a_swapped_id_does(table: str) -> None:  # noqa: F811
    out = opposite_order(table)
    assert DEADLOCK in (out["a"], out["b"]), out
    with connect() as c, c.cursor() as cur:
        text = status_text(cur)
    st = parse_status(text)
    dl = st.deadlock
    assert dl is not None
    if {t.thread_id for t in dl.transactions} != {out["a_thread"], out["b_thread"]}:
        pytest.skip("another session's deadlock became the server's latest meanwhile")
    assert dl.inconsistencies == ()  # trx ids below the counter
    # a session with an open transaction on the same table, seen by dbwatch's own probe
    c = connect()
    try:
        with c.cursor() as cur:
            cur.execute(f"UPDATE `{table}` SET v = v + 10 WHERE id = 2")
            cur.execute("SELECT CONNECTION_ID(), (SELECT trx_id FROM information_schema"
                        ".innodb_trx WHERE trx_mysql_thread_id = CONNECTION_ID())")
            thread, trx = cur.fetchone()
        threads = live_threads()
        assert any(t.thread_id == int(thread) and t.trx_id == str(trx) for t in threads)
        assert check_threads(dl, threads).inconsistencies == ()
        # the report as an editor (or a forger) changed it: transaction (1) printed with the
        # id of the transaction open now in another thread
        one = dl.transactions[0]
        forged = text.replace(f"TRANSACTION {one.trx_id},", f"TRANSACTION {trx},", 1)
        fdl = parse_status(forged).deadlock
        assert fdl is not None
        notes = check_threads(fdl, threads).inconsistencies
        assert any(f"trx {trx} is printed in thread {one.thread_id}" in n for n in notes), notes
        assert any(f"runs now in thread {thread}" in n for n in notes)
    finally:
        c.rollback()
        c.close()
