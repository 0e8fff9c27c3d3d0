"""Server versions by flavour (issue 13 point 5): MariaDB 10.x is not MySQL 10.x, and probe SQL
is chosen by flavour and version. MySQL 8 paths are checked against the file selection only
(no MySQL 8 server here: untested live)."""

from __future__ import annotations

import pytest

from dbwatch.probes import sql
from dbwatch.targets.version import FlavourMismatch, ServerVersion


@pytest.mark.parametrize(
    "text, flavour, parts, num",
    [
        ("8.0.36", "mysql", (8, 0, 36), 80036),
        ("8.4.3-commercial", "mysql", (8, 4, 3), 80403),
        ("5.7.44-log", "mysql", (5, 7, 44), 50744),
        ("10.11.6-MariaDB-0+deb12u1", "mariadb", (10, 11, 6), 101106),
        ("5.5.5-10.6.16-MariaDB", "mariadb", (10, 6, 16), 100616),
        ("11.4.2-MariaDB", "mariadb", (11, 4, 2), 110402),
    ],
)
def test_mysql_family_versions(text: str, flavour: str, parts: tuple[int, ...], num: int) -> None:
    v = ServerVersion.from_mysql_text(text)
    assert (v.flavour, (v.major, v.minor, v.patch), v.num) == (flavour, parts, num)


def test_postgresql_versions() -> None:
    assert str(ServerVersion.from_pg_num(150004)) == "15.4"
    assert ServerVersion.from_pg_num(90624) == ServerVersion("postgresql", 9, 6, 24)
    assert ServerVersion.from_pg_num(150004).num == 150004
    assert ServerVersion.from_pg_num(90624).num == 90624


def test_no_comparison_across_flavours() -> None:
    maria = ServerVersion.from_mysql_text("10.11.6-MariaDB")
    mysql = ServerVersion.from_mysql_text("8.0.36")
    assert not maria.at_least("mysql", 8)  # 10.11 > 8.0 numerically, but not MySQL
    assert maria.at_least("mariadb", 10, 6) and not maria.at_least("mariadb", 11)
    assert mysql.at_least("mysql", 8, 0, 1) and not mysql.at_least("mariadb", 5)
    with pytest.raises(FlavourMismatch):
        _ = maria > mysql
    assert ServerVersion("mysql", 8, 0, 36) > ServerVersion("mysql", 5, 7, 44)


@pytest.mark.parametrize("name", ["settings", "innodb_counters"])
def test_mysql8_sql_never_reaches_mariadb(name: str) -> None:
    maria = sql("mysql", name, ServerVersion.from_mysql_text("10.11.6-MariaDB"))
    mysql8 = sql("mysql", name, ServerVersion.from_mysql_text("8.0.36"))
    mysql57 = sql("mysql", name, ServerVersion.from_mysql_text("5.7.44"))
    assert maria == mysql57 != mysql8


def test_settings_sql_by_flavour_reads_the_right_table() -> None:
    mysql8 = sql("mysql", "settings", ServerVersion("mysql", 8, 0, 36)).lower()
    maria = sql("mysql", "settings", ServerVersion("mariadb", 10, 11, 6)).lower()
    assert "performance_schema.global_variables" in mysql8  # MySQL 8 moved them (untested live)
    assert "information_schema.global_variables" in maria


def test_postgresql_sql_by_version() -> None:
    old = sql("postgresql", "horizon_slots", ServerVersion.from_pg_num(120010))
    new = sql("postgresql", "horizon_slots", ServerVersion.from_pg_num(170002))
    assert old != new


def test_skip_locked_is_one_fact_per_flavour() -> None:
    assert ServerVersion.from_mysql_text("10.6.0-MariaDB").supports_skip_locked()
    assert not ServerVersion.from_mysql_text("10.5.13-MariaDB").supports_skip_locked()
    assert ServerVersion.from_mysql_text("8.0.1").supports_skip_locked()
    assert not ServerVersion.from_mysql_text("8.0.0").supports_skip_locked()
    assert not ServerVersion.from_mysql_text("5.7.44").supports_skip_locked()
    assert ServerVersion.from_pg_num(90500).supports_skip_locked()
    assert not ServerVersion.from_pg_num(90400).supports_skip_locked()
