"""Another client busy beside a test that reads the shared MariaDB's general log, as on any real
server: the log then holds lines no application of ours wrote, and the readers must keep every
one of ours exact around them."""
from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

# Not UTF-8: a query sent in latin1 is logged as its raw bytes. CI once failed on a 0x80 byte
# another test's session had left in the log, read beside a test's own lines.
RAW = b"select 'dbwatch neighbour \x80\xff\xe9'"


@contextlib.contextmanager
def busy_neighbour() -> Iterator[list[int]]:
    """PyMySQL's select_db and ping (logged as `Init DB` and `Ping`: a two-word command once read
    as a continuation glued itself onto Laravel's DELETE and hid one fetch-before-delete: CI
    counted 29 of 30) and a query whose text is not UTF-8. Yields the count of rounds sent."""
    import pymysql

    stop, sent = threading.Event(), [0]
    conn: Any = pymysql.connect(host="127.0.0.1", user="root", password="", charset="latin1",
                                autocommit=True)

    def churn() -> None:
        while not stop.is_set():
            conn.select_db("information_schema" if sent[0] % 2 else "mysql")
            conn.ping(reconnect=False)
            conn.query(RAW)
            sent[0] += 1
            time.sleep(0.0005)

    t = threading.Thread(target=churn, daemon=True)
    t.start()
    try:
        yield sent
    finally:
        stop.set()
        t.join(5)
        conn.close()


def neighbour_was_logged(raw: bytes) -> bool:
    """The neighbour's lines are in the log: its Init DB and its non-UTF-8 query."""
    return b" Init DB\t" in raw and b"neighbour \x80\xff\xe9" in raw
