"""Startup cost of one-shot commands (cron, Nagios): `dbwatch --version`, `--help` and an audit
of one empty PostgreSQL database (and of one empty MariaDB schema), each run `--runs` times as
a fresh process; the median wall time and the children's CPU (resource.RUSAGE_CHILDREN, median
and min: the min is the least disturbed by other load), beside a bare `python -c pass` (the
interpreter's own start on this machine), what `-X importtime` sums for each and how many
modules each imports (a count: robust to load).

Bytecode is written to a cache of the bench's own (PYTHONPYCACHEPREFIX) and warmed by one run
first, as an installed package has its .pyc: with PYTHONDONTWRITEBYTECODE set, every run would
compile dbwatch from source and measure the compiler.

Two interpreters (`--site`): this machine's as it is (`as_is`: its site-packages' .pth files
run at every start — here an editable install's import finder and a CA hook importing
certifi, ~14 ms that a regular install does not have), and a clean one (`clean_site`): a
fresh venv whose site runs no .pth of this machine, the drivers found through a plain path
entry to the same site-packages and dbwatch from the checkout (the cwd, first on the path as
`python -m` puts it) — what `pip install dbwatch` into a venv imports. The results of the
first keep their old keys; the second's are under "clean_site".

    python contrib/bench/bench_startup.py            # 10 runs each, both interpreters
    python contrib/bench/bench_startup.py --smoke    # CI: 2 runs each
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

# DBWATCH_BENCH_ROOT: another checkout to measure (the "before" of a change)
ROOT = Path(os.environ.get("DBWATCH_BENCH_ROOT") or Path(__file__).resolve().parents[2])
DB = f"dbw_startup_{os.getpid()}"
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
ENV["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="dbw-startup-pyc-")
TEMP = [Path(ENV["PYTHONPYCACHEPREFIX"])]  # removed at the end


def clean_python() -> str:
    """A venv's interpreter (no pip, no .pth of this machine's site-packages) that imports the
    drivers from that site-packages through a plain path entry (a .pth line that is a
    directory is appended to sys.path; the .pth files inside it are not run)."""
    import venv

    import psycopg

    d = Path(tempfile.mkdtemp(prefix="dbw-startup-venv-"))
    TEMP.append(d)
    venv.create(d, with_pip=False)
    site_dir = next(d.glob("lib/python*/site-packages"))
    deps = {str(Path(psycopg.__file__).resolve().parents[1])}
    try:
        import pymysql

        deps.add(str(Path(pymysql.__file__).resolve().parents[1]))
    except ImportError:
        pass
    (site_dir / "dbw_bench_deps.pth").write_text("\n".join(sorted(deps)) + "\n")
    return str(d / "bin" / "python")


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(argv: list[str], runs: int) -> dict[str, float]:
    subprocess.run(argv, cwd=ROOT, env=ENV, capture_output=True, timeout=120, check=False)  # bytecode
    walls, cpus = [], []
    for _ in range(runs):
        c0, w0 = children_cpu(), time.perf_counter()
        subprocess.run(argv, cwd=ROOT, env=ENV, capture_output=True, timeout=120, check=False)
        walls.append(time.perf_counter() - w0)
        cpus.append(children_cpu() - c0)
    return {
        "wall_s": round(statistics.median(walls), 3),
        "cpu_s": round(statistics.median(cpus), 3),
        "cpu_min_s": round(min(cpus), 3),
    }


def import_ms(args: list[str], python: str = sys.executable) -> float:
    """Sum of the top-level imports' cumulative times (-X importtime), in ms (modules imported
    through importlib.import_module — the checks and probes — are not shown by it)."""
    out = subprocess.run([python, "-X", "importtime", "-m", "dbwatch", *args], cwd=ROOT,
                         env=ENV, capture_output=True, text=True, timeout=120, check=False)
    total = 0
    for line in out.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].startswith(" ") and not parts[2].startswith("  "):
            try:
                total += int(parts[1])
            except ValueError:
                continue
    return round(total / 1000, 1)


def modules(args: list[str], python: str = sys.executable) -> int:
    """How many modules the command imports (every line of -X importtime is one; the same
    blind spot as import_ms)."""
    out = subprocess.run([python, "-X", "importtime", "-m", "dbwatch", *args], cwd=ROOT,
                         env=ENV, capture_output=True, text=True, timeout=120, check=False)
    return sum(1 for ln in out.stderr.splitlines() if ln.startswith("import time:")
               and "cumulative" not in ln)


def my_schema(url: str, create: bool) -> bool:
    """Create (or drop) the empty MariaDB schema; False when there is no server to use."""
    try:
        import pymysql

        u = urlsplit(url)
        with pymysql.connect(host=u.hostname, port=u.port or 3306, user=u.username or "root",
                             password=u.password or "", connect_timeout=3) as c:
            c.cursor().execute(f"CREATE DATABASE `{DB}`" if create  # our own name
                               else f"DROP DATABASE IF EXISTS `{DB}`")
        return True
    except Exception as exc:  # noqa: BLE001 - a bench without MariaDB still measures PG
        print(f"no MariaDB audit: {exc}", file=sys.stderr)
        return False


def measure(python: str, audit: list[str], my_audit: list[str] | None,
            runs: int) -> dict[str, object]:
    py = [python, "-m", "dbwatch"]
    res: dict[str, object] = {
        "python_bare": timed([python, "-c", "pass"], runs),
        "version": timed([*py, "--version"], runs),
        "help": timed([*py, "--help"], runs),
        "audit_empty_pg": timed([*py, *audit], runs),
        "import_ms": {"version": import_ms(["--version"], python),
                      "audit_empty_pg": import_ms(audit, python)},
        "modules": {"version": modules(["--version"], python),
                    "audit_empty_pg": modules(audit, python)},
    }
    if my_audit:
        res["audit_empty_mysql"] = timed([*py, *my_audit], runs)
        res["modules"]["audit_empty_mysql"] = modules(my_audit, python)  # type: ignore[index]
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432")
    ap.add_argument("--mysql", default="mysql://root@127.0.0.1:3306", help="'' to leave out")
    ap.add_argument("--smoke", action="store_true", help="2 runs each (CI)")
    ap.add_argument("--site", choices=("both", "as-is", "clean"), default="both",
                    help="this machine's interpreter as it is, a clean venv's, or both")
    ap.add_argument("--json", help="write the result here too")
    args = ap.parse_args()
    runs = 2 if args.smoke else args.runs
    import psycopg

    with psycopg.connect(args.pg + "/postgres", autocommit=True) as c:
        c.execute(f'CREATE DATABASE "{DB}"')  # our own name
    mysql = bool(args.mysql) and my_schema(args.mysql, create=True)
    try:
        audit = ["audit", f"{args.pg}/{DB}"]
        my_audit = ["audit", f"{args.mysql}/{DB}"]
        load0 = os.getloadavg()[0]
        res: dict[str, object] = {"runs": runs, "root": str(ROOT)}
        if args.site != "clean":
            res.update(measure(sys.executable, audit, my_audit if mysql else None, runs))
        if args.site != "as-is":
            res["clean_site"] = measure(clean_python(), audit, my_audit if mysql else None, runs)
        res["loadavg_1m"] = [round(load0, 2), round(os.getloadavg()[0], 2)]  # before, after
    finally:
        if mysql:
            my_schema(args.mysql, create=False)
        with psycopg.connect(args.pg + "/postgres", autocommit=True) as c:
            c.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        for d in TEMP:
            shutil.rmtree(d, ignore_errors=True)
    print(json.dumps(res, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
