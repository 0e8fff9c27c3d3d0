"""Two trees' one-shot start-up, alternating (the machine's drift falls on both alike).

    python contrib/bench/ab_startup.py BASE_TREE NEW_TREE RUNS -- audit postgresql://…/db

Each tree gets a clean venv (no .pth of this machine's site-packages: a plain path entry to the
drivers' site-packages and the tree) and its own bytecode prefix, warmed by one run; then RUNS
rounds of `python -m dbwatch ARGS`, base then new. Prints the wall and CPU (children's rusage)
median and min of each. A benchmark, not a test: nothing asserts a timing."""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path


def clean_python(tree: str, root: Path) -> str:
    import psycopg

    d = root / Path(tree).name
    venv.create(d, with_pip=False)
    site = next(d.glob("lib/python*/site-packages"))
    deps = [str(Path(psycopg.__file__).resolve().parents[1]), str(Path(tree).resolve())]
    (site / "dbw_ab_deps.pth").write_text("\n".join(deps) + "\n")
    return str(d / "bin" / "python")


def main() -> int:
    if len(sys.argv) < 5 or "--" not in sys.argv:
        print(__doc__.split("\n\n")[1].strip(), file=sys.stderr)
        return 2
    cut = sys.argv.index("--")
    base, new, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
    args = sys.argv[cut + 1 :]
    root = Path(tempfile.mkdtemp(prefix="dbw-ab-"))
    pys = {"base": clean_python(base, root / "b"), "new": clean_python(new, root / "n")}
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTHONPATH")}

    def once(tree: str) -> tuple[float, float]:
        env["PYTHONPYCACHEPREFIX"] = str(root / f"pyc-{tree}")
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        w0 = time.perf_counter()
        subprocess.run(
            [pys[tree], "-m", "dbwatch", *args], env=env, capture_output=True, cwd=root, check=False
        )
        wall = time.perf_counter() - w0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime

    for tree in pys:
        once(tree)  # bytecode
    got: dict[str, list[tuple[float, float]]] = {t: [] for t in pys}
    for _ in range(runs):
        for tree in pys:
            got[tree].append(once(tree))
    for tree, rows in got.items():
        w = [r[0] * 1000 for r in rows]
        c = [r[1] * 1000 for r in rows]
        print(
            f"{tree}: wall median {statistics.median(w):.1f} min {min(w):.1f} ms, "
            f"CPU median {statistics.median(c):.1f} min {min(c):.1f} ms (n={runs})"
        )
    print(f"load {os.getloadavg()[0]:.2f}")
    shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
