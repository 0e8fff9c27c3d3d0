"""The built wheel installs in a clean venv and carries the whole rule catalogue (SPEC §2)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

from schemas import load_json

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_installs_with_rules(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    wheel = next(dist.glob("dbwatch-*.whl"))
    env_dir = tmp_path / "venv"
    # the venv sees only itself: with PYTHONPATH pointing at the checkout (running the suite
    # from a worktree), pip found the checkout's dbwatch.egg-info, skipped the wheel as
    # "already satisfied" and installed no `dbwatch` script
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
                   check=True, capture_output=True, env=clean, timeout=300)
    out = subprocess.run([str(env_dir / "bin" / "dbwatch"), "rules", "--format", "json"],
                         check=True, capture_output=True, env=clean, text=True, timeout=60,
                         cwd=tmp_path)
    ids = {r["id"] for r in json.loads(out.stdout)}
    expected = {p.stem for p in (ROOT / "rules").glob("*.toml")}
    assert ids == expected and len(ids) == 22   # 21 + DW002
    for url in ("postgresql://postgres@127.0.0.1:5432/test", "mysql://root@127.0.0.1:3306/test"):
        audit = subprocess.run([str(env_dir / "bin" / "dbwatch"), "audit", url, "--format", "json"],
                               capture_output=True, env=clean, text=True, timeout=120, cwd=tmp_path)
        [target] = load_json(audit.stdout, "audit")["targets"]
        # the .sql files travel in the wheel: every rule ran, none is unknown for lack of SQL
        assert target["status"] == "ok" and len(target["rules_run"]) >= 9, audit.stderr
        assert not [r for r, why in target["rules_unknown"].items() if "no SQL" in why]
    loc = subprocess.run([str(py), "-c", "import dbwatch.catalogue as c; print(c.rules_dir())"],
                         check=True, capture_output=True, env=clean, text=True, cwd=tmp_path)
    assert str(env_dir) in loc.stdout     # rules come from the wheel, not the checkout
    # the JSON Schemas of the outputs travel in the wheel too, as package data of dbwatch.schema
    shipped = subprocess.run(
        [str(py), "-c", "import importlib.resources as r; "
         "print('\\n'.join(sorted(p.name for p in r.files('dbwatch.schema').iterdir())))"],
        check=True, capture_output=True, env=clean, text=True, cwd=tmp_path)
    expected_schemas = sorted(p.name for p in (ROOT / "docs" / "schema").glob("*.schema.json"))
    assert shipped.stdout.split() == expected_schemas and len(expected_schemas) >= 7
