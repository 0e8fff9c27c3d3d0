"""Helpers for the tests that drive real queue libraries with their own code.

The libraries live in a tests-local directory (tests/.queue-libs, or $DBWATCH_QUEUE_LIBS):
`py/` (pip --target: procrastinate, pgqueuer) and `node/node_modules` (pg-boss, graphile-worker).
.ci/run installs them; a test whose library is absent skips and says so.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

ROOT = Path(__file__).resolve().parents[2]
LIBS = Path(os.environ.get("DBWATCH_QUEUE_LIBS", ROOT / "tests" / ".queue-libs"))
PY_LIBS = LIBS / "py"
NODE_MODULES = LIBS / "node" / "node_modules"
PG_ADMIN = "host=127.0.0.1 port=5432 user=postgres dbname=test"


def need_py(module: str) -> None:
    if not (PY_LIBS / module).is_dir():
        pytest.skip(f"{module} not installed in {PY_LIBS} (.ci/run installs it)")


def need_node(package: str) -> None:
    if shutil.which("node") is None:
        pytest.skip("node is not installed")
    if not (NODE_MODULES / package / "package.json").is_file():
        pytest.skip(f"npm package {package} not installed in {NODE_MODULES} (.ci/run installs it)")


def py_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PY_LIBS), str(ROOT)])
    env.update(extra)
    return env


def node_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["NODE_PATH"] = str(NODE_MODULES)
    env.update(extra)
    return env


@contextmanager
def pg_database(name: str) -> Iterator[str]:
    """A throwaway PostgreSQL database; yields its conninfo."""
    with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield f"host=127.0.0.1 port=5432 user=postgres dbname={name}"
    finally:
        with psycopg.connect(PG_ADMIN, autocommit=True) as admin:
            admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))


def audit(url: str, *args: str) -> dict[str, Any]:
    """`dbwatch audit URL --format json` as a user runs it (this tree first on PYTHONPATH)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run(
        [sys.executable, "-m", "dbwatch", "audit", url, "--format", "json", *args],
        capture_output=True, text=True, timeout=120, env=env,
    )
    assert out.stdout.strip(), out.stderr
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def queue_findings(data: dict[str, Any], table: str | None = None) -> list[dict[str, Any]]:
    return [f for f in data["findings"] if f["rule"].startswith("QU")
            and (table is None or f["evidence"].get("table") == table)]


def by_rule(data: dict[str, Any], rule: str) -> list[dict[str, Any]]:
    return [f for f in data["findings"] if f["rule"] == rule]
