"""Run every benchmark in contrib/bench/ (each a script printing JSON), collect the figures into
contrib/bench/results.json with the machine and server versions, and write RESULTS.md, the
table the README's Performance section shows. A missing or failing benchmark is listed as such.

    python contrib/bench/run_all.py                 # everything, default sizes
    python contrib/bench/run_all.py --quick         # smaller sizes where a bench supports it
    python contrib/bench/run_all.py --only daemon   # one (repeatable); merged into results.json
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent / "scenarios"))
from _common import machine_info

PG_URL = os.environ.get("DBWATCH_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
MY = {"host": "127.0.0.1", "port": 3306, "user": "root", "password": ""}
Rows = list[tuple[str, str]]        # (what, figure) lines for RESULTS.md


@dataclass(frozen=True)
class Bench:
    name: str
    script: str
    what: str                                    # the ask, for the table
    quick: tuple[str, ...] = ()                  # smaller sizes for --quick
    timeout: float = 900.0
    headline: Callable[[Any], Rows] = field(default=lambda doc: [])


def _audit(doc: Any) -> Rows:
    out = []
    for eng in ("postgresql", "mariadb"):
        r = doc.get(eng)
        if r:
            server = (f", server {r['server_exec_ms_per_audit']} ms"
                      if "server_exec_ms_per_audit" in r else "")
            out.append(((f"audit, {eng} {r.get('server_version', '')}, {r['tables']:,} tables / "
                        f"{r['sessions']} sessions"),
                        (f"{r['wall_s_median']} s per audit (median of {doc.get('runs', '?')}), "
                        f"{r['probe_queries']} queries, {r['rows_fetched']} rows{server}")))
    return out


def _parsers(doc: Any) -> Rows:
    s, e = doc["status_parse"], doc["error_log_parse"]
    return [(f"InnoDB status parse, {s['bytes'] / 1e6:.1f} MB",
             f"{s['median_ms']} ms median ({s['mb_per_s']} MB/s)"),
            (f"error-log parse, {e['deadlocks']:,} deadlocks ({e['bytes'] / 1e6:.1f} MB)",
             f"{e['median_s']} s ({e['deadlocks_per_s']:,} deadlocks/s, {e['mb_per_s']} MB/s)")]


def _logs(doc: Any) -> Rows:
    r = doc["runs"][-1]
    return [(f"query-log analysis, {r['bytes'] / (1 << 20):.0f} MB MariaDB general log",
             (f"{r['mb_per_s']} MB/s wall, {r['mb_per_cpu_s']} MB/CPU-s, "
             f"peak RSS {r['peak_rss_mb']} MB"))]


def _dead_tuples(doc: Any) -> Rows:
    return [(f"dead-tuple probe (PG202), {doc['tables']:,} tables",
             (f"{doc['server_ms_median']} ms server, {doc['client_ms_median']} ms round trip, "
             f"{doc['rows_fetched']} rows (limit {doc['row_limit']})"))]


def _queue(doc: Any) -> Rows:
    out = []
    for r in doc["results"]:
        ms = {name: q.get("server_ms", q.get("wall_ms", 0.0)) for name, q in r["queries"].items()}
        worst = max(ms.items(), key=lambda kv: kv[1], default=None)
        slow = f"; slowest query {worst[0]} {worst[1]} ms server" if worst else ""
        out.append(((f"queue probes, {r['engine']}, {r['jobs_rows']:,} jobs / "
                    f"{r['failed_rows']:,} failed"), f"{r['probe_seconds']} s whole probe{slow}"))
    return out


def _daemon(doc: Any) -> Rows:
    runs = doc if isinstance(doc, list) else [doc]
    return [(f"daemon, {r['targets']} targets at {r['interval']:g} s",
             (f"lateness p95 {r['lateness_p95']} s (max {r['lateness_max']}), "
             f"{r['cycles_run']}/{r['cycles_expected']} cycles, "
             f"CPU {r['dbwatch_cpu_pct_of_one_core']} % of one core")) for r in runs]


def _terminate(doc: Any) -> Rows:
    return [(f"time to terminate, daemon at {doc['interval']:g} s ({doc['mode']})",
             (f"median {doc['median']} s, max {doc['max']} s over {doc['runs']} runs "
             f"(bound {doc['bound']} s: {'met' if doc['within_bound'] else 'NOT met'})"))]


def _dashboard(doc: Any) -> Rows:
    p = doc["pages"]
    pick = [k for k in p if k in ("/", "/deadlocks", "/history?since=6h", "/actions")
            or k.startswith("/deadlocks?table=")]
    return [(f"dashboard, {doc['findings']:,} findings / {doc['deadlocks']:,} deadlocks",
             "; ".join(f"{k} {p[k]['cpu_ms_per_request']} ms CPU, {p[k]['bytes'] / 1000:.0f} kB"
                       for k in pick if k in p))]


BENCHES = (
    Bench("audit", "bench_audit.py", "audit cost, 5,000 tables / 300 sessions",
          ("--tables", "1000", "--sessions", "60"), 1200, _audit),
    Bench("dead_tuples", "bench_dead_tuples.py", "dead-tuple probe on 10,000 tables",
          ("--tables", "2000", "--runs", "3"), 900, _dead_tuples),
    Bench("parsers", "bench_parsers.py", "InnoDB status 1 MB, error log 10k deadlocks",
          ("--repeat", "3", "--deadlocks", "2000"), 600, _parsers),
    Bench("logs", "bench_logs.py", "log analysis MB/s", ("--size", "40"), 900, _logs),
    Bench("queue", "bench_queue.py", "queue probes on big jobs tables",
          ("--jobs", "100000", "--failed", "10000", "--repeat", "2"), 1200, _queue),
    Bench("daemon", "bench_daemon.py", "daemon targets at a 15 s interval",
          ("--sizes", "50", "--cycles", "2"), 2400, _daemon),
    Bench("terminate", "bench_terminate.py", "time to terminate, 5 s interval",
          ("--runs", "3"), 600, _terminate),
    Bench("dashboard", "bench_dashboard.py", "dashboard CPU per request and page size",
          ("--findings", "300", "--deadlocks", "2000", "--requests", "5"), 600, _dashboard),
)


def json_docs(text: str) -> list[Any]:
    """Every JSON value that starts a line of the output (benches may print text around it)."""
    dec, docs, pos = json.JSONDecoder(), [], 0
    while pos < len(text):
        nl = text.find("\n", pos)
        line_end = len(text) if nl < 0 else nl
        stripped = text[pos:line_end].lstrip()
        if stripped[:1] in ("{", "["):
            start = pos + (line_end - pos - len(stripped))
            try:
                doc, end = dec.raw_decode(text, start)
                docs.append(doc)
                pos = end
                continue
            except ValueError:
                pass
        pos = line_end + 1
    return docs


def run_one(b: Bench, quick: bool) -> dict[str, Any]:
    path = HERE / b.script
    argv = [sys.executable, str(path), *(b.quick if quick else ())]
    rec: dict[str, Any] = {"name": b.name, "script": f"contrib/bench/{b.script}", "what": b.what,
                           "argv": [rec_path(a) for a in argv[1:]], "quick": quick, "ran_at": machine_info()["date"],
                           # a shared machine skews timings; say how busy it was
                           "load_average_before": [round(x, 2) for x in os.getloadavg()]}
    if not path.exists():
        return rec | {"status": "missing", "error": f"{b.script} does not exist yet"}
    print(f"== {b.name}: {' '.join(argv[1:])} (timeout {b.timeout:g}s)", file=sys.stderr,
          flush=True)
    t0 = time.monotonic()
    # Own session: on timeout or Ctrl-C the whole group gets SIGINT, so a bench's own cleanup
    # (throwaway clusters, scratch databases) runs before anything is killed.
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    status = None
    try:
        out, err = proc.communicate(timeout=b.timeout)
    except (subprocess.TimeoutExpired, KeyboardInterrupt) as exc:
        status = "timeout" if isinstance(exc, subprocess.TimeoutExpired) else "interrupted"
        out, err = _stop(proc)
    rec["seconds"] = round(time.monotonic() - t0, 1)
    rec["exit_code"] = proc.returncode
    docs = json_docs(out or "")
    rec["result"] = docs[0] if len(docs) == 1 else (docs or None)
    if status is None:
        status = "ok" if proc.returncode == 0 and docs else (
            "no_json" if proc.returncode == 0 else "failed")
    rec["status"] = status
    if status != "ok":
        rec["stderr_tail"] = (err or "").strip().splitlines()[-15:]
    headline(b, rec)
    print(f"   {status} in {rec['seconds']}s", file=sys.stderr, flush=True)
    return rec


def rec_path(arg: str) -> str:
    """Paths inside the repository, relative: results.json is committed."""
    return arg[len(str(ROOT)) + 1:] if arg.startswith(str(ROOT) + os.sep) else arg


def headline(b: Bench, rec: dict[str, Any]) -> None:
    """The table rows of one result; a changed output format is reported, not fatal."""
    rec.pop("headline_error", None)
    try:
        rec["headline"] = [list(r) for r in b.headline(rec["result"])] if rec.get("result") else []
    except (KeyError, TypeError, IndexError, AttributeError, ValueError) as exc:
        rec["headline"] = []
        rec["headline_error"] = f"{type(exc).__name__}: {exc} (output format changed?)"


def _stop(proc: subprocess.Popen[str]) -> tuple[str, str]:
    for sig, wait in ((signal.SIGINT, 60.0), (signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            return proc.communicate(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
    return proc.communicate()


def server_versions() -> dict[str, str]:
    out = {}
    import psycopg
    import pymysql
    try:
        with psycopg.connect(PG_URL, connect_timeout=5) as c:
            out["postgresql"] = c.info.parameter_status("server_version") or "?"
    except psycopg.Error as exc:   # a bench result file must still be written
        out["postgresql"] = f"unreachable ({type(exc).__name__})"
    try:
        conn = pymysql.connect(**MY, connect_timeout=5)
        with conn.cursor() as cur:
            cur.execute("SELECT VERSION()")
            row = cur.fetchone()
            out["mariadb"] = str(row[0]) if row else "?"
        conn.close()
    except pymysql.MySQLError as exc:
        out["mariadb"] = f"unreachable ({type(exc).__name__})"
    return out


def write_markdown(doc: dict[str, Any], path: Path) -> None:
    m, v = doc["machine"], doc["servers"]
    lines = ["# dbwatch benchmarks", "",
             (f"Measured {m['date']} on {m['cpu_model']}, {m['cpu_count']} cores, "
             f"{(m.get('memory_mb') or 0) / 1024:.0f} GB RAM, {m['os']}; Python {m['python']}, "
             f"PostgreSQL {v.get('postgresql')}, MariaDB {v.get('mariadb')}."),
             ("Re-run: `python contrib/bench/run_all.py` (`--quick` for smaller sizes, "
             "`--only NAME`); raw figures, and the load average before each bench, in "
             "`results.json`."), "",
             "| benchmark | measured | figure | status |", "|---|---|---|---|"]
    for name in [b.name for b in BENCHES] + sorted(set(doc["benches"]) - {b.name for b in BENCHES}):
        rec = doc["benches"].get(name)
        if rec is None:
            lines.append(f"| {name} | – | not run yet | not run |")
            continue
        status = rec["status"] + (" (quick sizes)" if rec.get("quick") else "")
        rows = rec.get("headline") or []
        if not rows:
            why = rec.get("error") or rec.get("headline_error") or \
                " ".join(rec.get("stderr_tail", [])[-1:]) or "no figures"
            lines.append(f"| {name} | {rec.get('what', '')} | {_cell(why)} | **{status}** |")
        for what, figure in rows:
            lines.append(f"| {name} | {_cell(what)} | {_cell(figure)} | {status} |")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")[:300]


def main(argv: list[str] | None = None) -> int:
    names = [b.name for b in BENCHES]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", action="append", choices=names, metavar="NAME",
                    help=f"run only this bench (repeatable): {', '.join(names)}")
    ap.add_argument("--quick", action="store_true", help="smaller sizes where a bench has them")
    ap.add_argument("--out", default=str(HERE), help="directory for results.json and RESULTS.md")
    ap.add_argument("--report-only", action="store_true",
                    help="rebuild RESULTS.md from results.json without running anything")
    args = ap.parse_args(argv)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    results_path = out_dir / "results.json"
    doc: dict[str, Any] = {"benches": {}}
    if (args.only or args.report_only) and results_path.exists():
        try:                                     # --only updates its entries, keeps the rest
            doc = json.loads(results_path.read_text(encoding="utf-8"))
        except ValueError:
            pass
    if args.report_only:
        if "machine" not in doc:
            ap.error(f"{results_path}: no results to report")
        by_name = {b.name: b for b in BENCHES}
        for name, rec in doc["benches"].items():
            if name in by_name:
                headline(by_name[name], rec)
        results_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        write_markdown(doc, out_dir / "RESULTS.md")
        return 0
    doc["machine"], doc["servers"] = machine_info(), server_versions()
    failed = 0
    for b in BENCHES:
        if args.only and b.name not in args.only:
            continue
        try:
            rec = run_one(b, args.quick)
        except KeyboardInterrupt:
            rec = {"name": b.name, "status": "interrupted", "what": b.what}
        doc["benches"][b.name] = rec
        failed += rec["status"] != "ok"
        results_path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
        write_markdown(doc, out_dir / "RESULTS.md")
        if rec["status"] == "interrupted":
            break
    print(f"wrote {results_path} and {out_dir / 'RESULTS.md'}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
