"""The built wheel installs in a clean venv and carries the whole rule catalogue (SPEC §2)."""
from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_wheel_installs_with_rules(tmp_path: Path) -> None:
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
                   check=True, capture_output=True, timeout=300)
    wheel = next(dist.glob("dbwatch-*.whl"))
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
                   check=True, capture_output=True, timeout=300)
    out = subprocess.run([str(env_dir / "bin" / "dbwatch"), "rules", "--format", "json"],
                         check=True, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    ids = {r["id"] for r in json.loads(out.stdout)}
    expected = {p.stem for p in (ROOT / "rules").glob("*.toml")}
    assert ids == expected and len(ids) == 21
    loc = subprocess.run([str(py), "-c", "import dbwatch.catalogue as c; print(c.rules_dir())"],
                         check=True, capture_output=True, text=True, cwd=tmp_path)
    assert str(env_dir) in loc.stdout     # rules come from the wheel, not the checkout
