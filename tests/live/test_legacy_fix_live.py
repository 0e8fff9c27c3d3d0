"""The deadlock diagnosis's legacy-index fix pasted into MariaDB as a DBA would (issue 25.4): the
one ALTER replaces the index; where the new index's name is taken it fails whole, dropping
nothing, as its text says."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pymysql
import pytest

from dbwatch.deadlocks.diagnosis import diagnose
from dbwatch.parsers.innodb_status import parse_status

CAPTURE = Path(__file__).parent.parent / "fixtures" / "innodb" / "mariadb-laravel-legacy-index.txt"
CAPTURED = "dbw_dl_b34f23d2_jobs"
TABLE = (
    "CREATE TABLE `{t}` (`id` bigint unsigned AUTO_INCREMENT PRIMARY KEY, `queue` varchar(255) "
    "NOT NULL, `payload` longtext NOT NULL, `attempts` tinyint unsigned NOT NULL, `reserved_at` "
    "int unsigned NULL, `available_at` int unsigned NOT NULL, `created_at` int unsigned NOT NULL, "
    "KEY `{t}_queue_reserved_at_index` (`queue`, `reserved_at`)) ENGINE=InnoDB"
)


@pytest.fixture
def conn(own_my_url: str) -> Iterator[pymysql.connections.Connection]:  # type: ignore[type-arg]
    db = own_my_url.rsplit("/", 1)[1]
    c = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="", database=db,
                        autocommit=True)
    yield c
    c.close()


def pasted_sql(db: str, table: str) -> str:
    """The statement the diagnosis prints for the captured deadlock moved to `db`.`table`."""
    text = CAPTURE.read_text().replace(f"`test`.`{CAPTURED}`", f"`{db}`.`{table}`")
    dl = parse_status(text.replace(CAPTURED, table)).deadlock
    assert dl is not None
    diag = diagnose(dl)
    assert diag.pattern == "queue-legacy-index"
    found = re.match(r"(ALTER TABLE .*?, ALGORITHM=INPLACE, LOCK=NONE;) ", diag.fix)
    assert found, diag.fix
    return found.group(1)


def indexes(cur: pymysql.cursors.Cursor, table: str) -> dict[str, list[str]]:
    cur.execute(
        "SELECT index_name, column_name FROM information_schema.statistics WHERE "
        "table_schema = DATABASE() AND table_name = %s ORDER BY index_name, seq_in_index",
        (table,),
    )
    out: dict[str, list[str]] = {}
    for name, col in cur.fetchall():
        out.setdefault(name, []).append(col)
    return out


def test_the_printed_alter_replaces_the_index(conn: pymysql.connections.Connection) -> None:  # type: ignore[type-arg]
    db = conn.db.decode() if isinstance(conn.db, bytes) else str(conn.db)
    cur = conn.cursor()
    cur.execute(TABLE.format(t="jobs"))
    cur.execute("INSERT INTO jobs (queue, payload, attempts, available_at, created_at) "
                "VALUES ('default', '{}', 0, 1, 1), ('mail', '{}', 0, 1, 1)")
    sql = pasted_sql(db, "jobs")
    assert sql.startswith(f"ALTER TABLE `{db}`.`jobs` ")
    cur.execute(sql)
    assert indexes(cur, "jobs") == {"PRIMARY": ["id"], "jobs_queue_index": ["queue"]}
    cur.execute("SELECT COUNT(*) FROM jobs")
    assert cur.fetchone() == (2,)


def test_a_taken_name_fails_whole(conn: pymysql.connections.Connection) -> None:  # type: ignore[type-arg]
    db = conn.db.decode() if isinstance(conn.db, bytes) else str(conn.db)
    cur = conn.cursor()
    cur.execute(TABLE.format(t="jobs"))
    cur.execute("ALTER TABLE jobs ADD INDEX jobs_queue_index (queue)")
    before = indexes(cur, "jobs")
    with pytest.raises(pymysql.err.OperationalError) as err:
        cur.execute(pasted_sql(db, "jobs"))
    assert err.value.args[0] == 1061  # duplicate key name
    assert indexes(cur, "jobs") == before  # the legacy index is still there
    assert "jobs_queue_reserved_at_index" in before
