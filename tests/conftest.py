"""Shared fixtures: URLs of the real local servers and unique names for test objects."""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

PG_URL = os.environ.get("DBWATCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
MY_URL = os.environ.get("DBWATCH_TEST_MYSQL", "mysql://root@127.0.0.1:3306/test")
ROOT = Path(__file__).resolve().parent.parent
# The external corpus: $DBWATCH_CORPUS, else shared/corpus beside the checkout. Never a fixed
# path: in a fresh clone with nothing beside it, tests that need it skip (need_corpus).
CORPUS = Path(os.environ.get("DBWATCH_CORPUS") or ROOT.parent / "shared" / "corpus")


def need_corpus(path: Path) -> Path:
    """The corpus file, or skip the test saying why (fixtures the suite needs live in tests/)."""
    if not path.exists():
        pytest.skip(f"{path.name}: external corpus not found ({CORPUS}; set DBWATCH_CORPUS)")
    return path


@pytest.fixture
def pg_url() -> str:
    return PG_URL


@pytest.fixture
def my_url() -> str:
    return MY_URL


@pytest.fixture
def uniq() -> str:
    """A short unique suffix for tables, users and databases made by one test."""
    return uuid.uuid4().hex[:8]


@pytest.fixture
def pg_admin() -> Iterator[object]:
    import psycopg
    conn = psycopg.connect(PG_URL, autocommit=True)
    yield conn
    conn.close()


@pytest.fixture
def my_admin() -> Iterator[object]:
    import pymysql
    conn = pymysql.connect(host="127.0.0.1", port=3306, user="root", password="",
                           database="test", autocommit=True)
    yield conn
    conn.close()


@pytest.fixture(scope="session")
def state_pg_db() -> Iterator[str]:
    """One database on the local PostgreSQL for State tests (each test has its own schema)."""
    import psycopg

    db = f"dbw_state_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(PG_URL, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{db}"')
    try:
        yield f"{PG_URL.rsplit('/', 1)[0]}/{db}"
    finally:
        with psycopg.connect(PG_URL, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{db}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgresql"])
def state_at(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a State lives: a SQLite file, or a fresh schema in a PostgreSQL database.
    DBWATCH_STATE_SCHEMA picks the schema."""
    if request.param == "sqlite":
        return str(tmp_path / "s.db")
    url = request.getfixturevalue("state_pg_db")
    schema = f"s_{uuid.uuid4().hex[:8]}"
    request.getfixturevalue("monkeypatch").setenv("DBWATCH_STATE_SCHEMA", schema)
    return str(url)
