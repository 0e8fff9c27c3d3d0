"""How many targets one daemon holds: cycle lateness and CPU at N targets, one interval each.

Targets are N databases (dbw_bench_<i>) on the local PostgreSQL, created for the run and
dropped afterwards. The daemon runs in this process with its real scheduler, state DB and
probes; each cycle's scheduled and actual start, duration and thread CPU by phase are kept.

    python contrib/bench/bench_daemon.py --sizes 50,200,500 --interval 15 --cycles 3
    python contrib/bench/bench_daemon.py --throwaway --sizes 500,1000,2000 --per-server 0,2100

--throwaway runs a PostgreSQL cluster of its own (max_connections 2300, pg_stat_statements)
so the server's CPU per cycle is measured too (from /proc of the cluster's processes: what
pg_stat_statements sums undercounts once it evicts entries) and the statements and rows per
cycle are counted (pg_stat_statements, max 20,000 entries); --per-server lists the pool caps
to compare (0 = a new session per cycle, the one-shot way). --smoke: 5 targets, 2 cycles of
2 s, databases named for this process (CI).
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import json
import logging
import math
import os
import pstats
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import psycopg

# DBWATCH_BENCH_ROOT: another checkout to measure (the "before" of a change)
sys.path.insert(0, os.environ.get("DBWATCH_BENCH_ROOT") or str(Path(__file__).resolve().parents[2]))

from dbwatch import pipeline
from dbwatch.daemon import loop as daemon_mod
from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config, DaemonConfig, TargetConfig
from dbwatch.daemon.loop import Daemon, Setup
from dbwatch.daemon.runner import Runner, Slot
from dbwatch.daemon.scheduler import WARMUPS, Scheduler, pool_size
from dbwatch.daemon.state import State
from dbwatch.targets import spec_for

from threadcpu import thread_cpu  # noqa: E402  (this directory: the script's own)

PREFIX = "dbw_bench_"
POSTMASTER: int | None = None  # the throwaway cluster's postmaster: server CPU from /proc


def admin(url: str) -> psycopg.Connection[Any]:
    return psycopg.connect(url, autocommit=True, dbname="postgres")


def create_databases(url: str, n: int) -> None:
    with admin(url) as conn:
        have = {r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                                           (PREFIX + "%",))}
    todo = [f"{PREFIX}{i}" for i in range(n) if f"{PREFIX}{i}" not in have]

    def make(names: list[str]) -> None:
        with admin(url) as conn:
            for name in names:
                conn.execute(f'CREATE DATABASE "{name}"')   # names are ours, not user input
    chunks = [todo[i::4] for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(make, chunks))


def drop_databases(url: str) -> None:
    with admin(url) as conn:
        names = [r[0] for r in conn.execute("SELECT datname FROM pg_database WHERE datname LIKE %s",
                                            (PREFIX + "%",))]

    def drop(chunk: list[str]) -> None:
        with admin(url) as conn:
            for name in chunk:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(drop, [names[i::4] for i in range(4)]))


def target_url(base: str, i: int) -> str:
    return base.rsplit("/", 1)[0] + f"/{PREFIX}{i}"


class Phases:
    """Thread CPU spent per phase of a cycle (connect, probes, evaluate, the rest)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.cpu: dict[str, float] = {}

    def wrap(self, module: Any, name: str, label: str) -> None:
        fn = getattr(module, name)

        def timed(*a: Any, **kw: Any) -> Any:
            t0 = time.thread_time()
            try:
                return fn(*a, **kw)
            finally:
                with self.lock:
                    self.cpu[label] = self.cpu.get(label, 0.0) + time.thread_time() - t0
        setattr(module, name, timed)


class Profiles:
    """--profile: a cProfile per worker thread on the CPU clock (time.thread_time), merged at
    the end; what runs outside the cycles (scheduler, runner hand-offs) is the process CPU the
    cycles' own thread CPU does not account for."""

    def __init__(self) -> None:
        self.local = threading.local()
        self.all: list[cProfile.Profile] = []
        self.lock = threading.Lock()

    def get(self) -> cProfile.Profile:
        prof = getattr(self.local, "prof", None)
        if prof is None:
            prof = cProfile.Profile(time.thread_time)
            self.local.prof = prof
            with self.lock:
                self.all.append(prof)
        return prof

    def dump(self, path: str) -> None:
        with self.lock:
            profs = list(self.all)
        if not profs:
            return
        stats = pstats.Stats(profs[0])
        for prof in profs[1:]:
            stats.add(prof)
        stats.dump_stats(path)


PROFILES: Profiles | None = None


class GcTime:
    """Seconds spent in the garbage collector (gc.callbacks; it holds the GIL: CPU), and
    collections per generation."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.runs = [0, 0, 0]
        self.by_gen = [0.0, 0.0, 0.0]  # seconds per generation
        self.cpu_by_gen = [0.0, 0.0, 0.0]  # the collecting thread's CPU seconds (thread_time)
        self.longest = 0.0  # the longest collection (a pause of every thread: lateness)
        self._t0 = self._c0 = 0.0
        gc.callbacks.append(self._cb)

    def _cb(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._t0, self._c0 = time.perf_counter(), time.thread_time()
        else:
            took = time.perf_counter() - self._t0
            self.seconds += took
            self.runs[info["generation"]] += 1
            self.by_gen[info["generation"]] += took
            self.cpu_by_gen[info["generation"]] += time.thread_time() - self._c0
            self.longest = max(self.longest, took)


GC = GcTime()


def machine_busy() -> tuple[float, float]:
    """(busy, total) jiffies of the whole machine, from /proc/stat."""
    fields = [float(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


def server_cpu() -> float | None:
    """CPU seconds (user + system) of the throwaway cluster's processes so far, from /proc:
    the postmaster and its children (backends, background workers)."""
    if POSTMASTER is None:
        return None
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(d.name) == POSTMASTER or int(fields[1]) == POSTMASTER:
            total += int(fields[11]) + int(fields[12])
    return total / tick


def statements(url: str) -> tuple[int, int] | None:
    """(calls, rows) pg_stat_statements counted in the targets' databases."""
    try:
        with admin(url) as conn:
            row = conn.execute(
                "SELECT coalesce(sum(s.calls), 0), coalesce(sum(s.rows), 0) FROM pg_stat_statements s"
                " JOIN pg_database d ON d.oid = s.dbid WHERE d.datname LIKE %s", (PREFIX + "%",)
            ).fetchone()
            return (int(row[0]), int(row[1])) if row else None
    except psycopg.Error:
        return None


def server_ms(url: str, reset: bool = False) -> float | None:
    """Server execution time of all statements (pg_stat_statements), in ms; None without it."""
    try:
        with admin(url) as conn:
            if reset:
                conn.execute("SELECT pg_stat_statements_reset()")
                return 0.0
            row = conn.execute("SELECT sum(total_exec_time) FROM pg_stat_statements").fetchone()
            return float(row[0] or 0.0) if row else None
    except psycopg.Error:
        return None



class _StackSampler:
    """DBWATCH_BENCH_STACKS=FILE: every 0.2 s, where each thread of the process stands (its
    innermost dbwatch frame, else its innermost frame), counted and written to FILE at the end:
    what the cycles wait on, which a CPU profile does not show."""

    def __init__(self, path: str | None) -> None:
        self.path = path
        self.counts: dict[str, int] = {}
        self.done = threading.Event()
        if path:
            threading.Thread(target=self._run, daemon=True).start()

    def _run(self) -> None:
        me = threading.get_ident()
        while not self.done.wait(0.2):
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                where, f = None, frame
                chain = []
                while f is not None:
                    code = f.f_code
                    if "/dbwatch/" in code.co_filename and where is None:
                        where = f"{code.co_filename.split('/dbwatch/')[-1]}:{f.f_lineno} {code.co_name}"
                    if len(chain) < 2:
                        chain.append(f"{code.co_filename.rsplit('/', 1)[-1]}:{f.f_lineno} {code.co_name}")
                    f = f.f_back
                key = f"{where} <- {' <- '.join(chain)}"
                self.counts[key] = self.counts.get(key, 0) + 1

    def stop(self) -> None:
        self.done.set()
        if self.path:
            top = sorted(self.counts.items(), key=lambda kv: -kv[1])
            Path(self.path).write_text("\n".join(f"{n:7d} {k}" for k, n in top))

def run_size(base: str, n: int, interval: float, cycles: int, threads: int | None,
             phases: Phases, per_server: int = 10) -> dict[str, Any]:
    targets = tuple(TargetConfig(name=f"t{i}", url=target_url(base, i), interval=interval)
                    for i in range(n))
    config = Config(targets=targets, daemon=DaemonConfig(max_connections_per_server=per_server))
    setup = Setup(load_catalogue(), config, {t.name: (spec_for(t.url, t.name), t) for t in targets},
                  ())
    records: list[tuple[str, float, float, float, float]] = []
    lock = threading.Lock()
    # DBWATCH_BENCH_STATE_DIR: where the state database lives (e.g. /dev/shm, to see what the
    # state's fsyncs cost the fleet: no fsync reaches a disk there)
    with tempfile.TemporaryDirectory(dir=os.environ.get("DBWATCH_BENCH_STATE_DIR")) as tmp:
        state = State(Path(tmp) / "state.db")
        d = Daemon(None, state, setup)

        seen: set[str] = set()

        def job(slot: Slot) -> None:
            # what the daemon's own slot job does (loop.Daemon._slot_job), timed
            started, cpu0 = time.time(), time.thread_time()
            with lock:
                first = slot.name not in seen
                seen.add(slot.name)
            if PROFILES is not None and started >= steady_from:
                prof = PROFILES.get()
                prof.enable()
                try:
                    result = d.cycle(slot.name, slot.scheduled, slot)
                finally:
                    prof.disable()
            else:
                result = d.cycle(slot.name, slot.scheduled, slot)
            if not slot.abandoned:
                runner.answered(slot.name, result is not None and not result.error)
            sched.ended(slot.name, slot.started)
            with lock:
                records.append((slot.name, slot.scheduled, started, time.time() - started,
                                time.thread_time() - cpu0, first))
        # the daemon's runner (a worker per pool permit) and scheduler: first looks at the
        # start-up's rate, then each target on its interval (dbwatch.daemon.scheduler)
        runner = Runner(job, threads or pool_size(n), 30.0, lambda name, why: None)
        # the daemon's way (loop.Daemon._new_scheduler); older checkouts: a submit per target
        batch = {"jobs": runner.submit_all} if hasattr(runner, "submit_all") else {}
        sched = Scheduler(runner.submit, 2,
                          warmups=int(os.environ.get("DBWATCH_BENCH_WARMUPS", WARMUPS)), **batch)
        if hasattr(sched, "on_looked"):  # the daemon's settling of the heap after the start-up
            sched.on_looked = d.memory.settle  # (the daemon: in its memory keeper's thread)
        phases.cpu.clear()
        sched.set_targets((t.name, interval) for t in targets)
        steady_from = float("inf")  # profile steady cycles only
        server_ms(base, reset=True)
        srv_cpu0 = server_cpu()
        cpu0, busy0, wall0 = time.process_time(), machine_busy(), time.time()
        sched.start()
        sampler = _StackSampler(os.environ.get("DBWATCH_BENCH_STACKS"))
        # steady state: what the cycles after the start-up (every target's first look: its
        # session opened, catalog read, caches filled) and at least one interval cost
        time.sleep(interval)
        while sched.awaiting_first_look() and time.time() - wall0 < 20 * interval:
            time.sleep(0.1)
        # the heap settled after the start-up (its one full collection) is the start-up's
        while getattr(d.memory, "settles", 1) < 1 and time.time() - wall0 < 20 * interval:
            time.sleep(0.05)
        steady_from = time.time()
        steady_cpu0, steady_n0, steady_t0 = time.process_time(), len(records), time.time()
        ru0 = resource.getrusage(resource.RUSAGE_SELF)
        threads0 = thread_cpu()
        gc0, gcruns0, gcgen0, gccpu0 = GC.seconds, list(GC.runs), list(GC.by_gen), list(GC.cpu_by_gen)
        GC.longest = 0.0
        with phases.lock:
            phase0 = dict(phases.cpu)
        steady_srv0 = server_cpu()
        steady_stmts0 = statements(base)
        # DBWATCH_BENCH_TRACE: a command run over the steady window, "{pid}" replaced by this
        # process's id (e.g. "perf trace -s -p {pid} -o out.txt": syscalls per thread and kind),
        # stopped with SIGINT at the window's end
        tracer = (subprocess.Popen(os.environ["DBWATCH_BENCH_TRACE"].format(pid=os.getpid()),
                                   shell=True, start_new_session=True)
                  if os.environ.get("DBWATCH_BENCH_TRACE") else None)
        time.sleep(max(0.0, min(interval, 15.0) + interval * (cycles - 1) + 0.5 - interval))
        t_end = time.time()
        if tracer is not None:
            os.killpg(tracer.pid, signal.SIGINT)
            tracer.wait(30)
        threads1 = thread_cpu()
        steady_stmts1 = statements(base)
        steady_n_end = len(records)
        sampler.stop()
        anchors = dict(sched.anchor)
        if os.environ.get("DBWATCH_BENCH_RECORDS"):
            Path(os.environ["DBWATCH_BENCH_RECORDS"]).write_text(json.dumps(records))
        sched.shutdown(wait=True)
        runner.stop(30.0)
        steady_cpu, steady_n = time.process_time() - steady_cpu0, len(records) - steady_n0
        ru1 = resource.getrusage(resource.RUSAGE_SELF)
        gc1, gcruns1, gcgen1, gccpu1 = GC.seconds, list(GC.runs), list(GC.by_gen), list(GC.cpu_by_gen)
        with phases.lock:
            phase1 = dict(phases.cpu)
        steady_cycle_cpu = sum(r[4] for r in records[steady_n0:])
        steady_srv1 = server_cpu()
        cpu, busy, wall = time.process_time() - cpu0, machine_busy(), time.time() - wall0
        srv_cpu1 = server_cpu()
        srv = server_ms(base)
        stmts = statements(base)
        sessions = d.pool.sessions() if d.pool is not None else {}
        if d.pool is not None:
            d.pool.discard()
        state.close()
    # a first look is not due at a time (it runs at the start-up's rate): lateness is the
    # scheduled cycles'; the start-up is its own figure. Due: each target's first look and every
    # point of its schedule up to a second before the end (a cycle then may still be running)
    due_by = t_end - 1.0
    late = sorted(r[2] - r[1] for r in records if not r[5] and r[1] <= due_by)
    firsts = sorted(r[2] + r[3] - wall0 for r in records if r[5])
    ran = sum(1 for r in records if r[5] or r[1] <= due_by)
    due = n + sum(max(0, math.floor((due_by - a) / iv) + 1) for a, iv in anchors.values()
                  if a <= due_by)
    dur = sorted(r[3] for r in records)
    machine = (busy[0] - busy0[0]) / max(busy[1] - busy0[1], 1.0)
    return {
        "targets": n, "interval": interval, "threads": threads or pool_size(n),
        "per_server": per_server, "server_sessions_at_end": sum(sessions.values()),
        "server_ms_per_cycle": round(srv / max(len(records), 1), 2) if srv is not None else None,
        "server_cpu_ms_per_cycle": (
            round(1000 * (srv_cpu1 - srv_cpu0) / max(len(records), 1), 2)
            if srv_cpu0 is not None and srv_cpu1 is not None else None),
        "statements_per_cycle": round(stmts[0] / max(len(records), 1), 2) if stmts else None,
        # idle steady cycles only (pg_stat_statements between the steady window's ends; its
        # admin reads add 2 statements in all)
        "steady_statements_per_cycle": (
            round((steady_stmts1[0] - steady_stmts0[0]) / max(steady_n_end - steady_n0, 1), 2)
            if steady_stmts0 and steady_stmts1 else None),
        "steady_rows_per_cycle": (
            round((steady_stmts1[1] - steady_stmts0[1]) / max(steady_n_end - steady_n0, 1), 2)
            if steady_stmts0 and steady_stmts1 else None),
        "rows_per_cycle": round(stmts[1] / max(len(records), 1), 2) if stmts else None,
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "steady_cycles": steady_n,
        "steady_cpu_ms_per_cycle": round(1000 * steady_cpu / max(steady_n, 1), 2),
        # the cycles' own thread CPU; the rest of steady_cpu is scheduler, runner, GC elsewhere
        "steady_cycle_thread_cpu_ms": round(1000 * steady_cycle_cpu / max(steady_n, 1), 2),
        # of steady_cpu: kernel time, and context switches per cycle (threads handing off)
        "steady_sys_ms_per_cycle": round(1000 * (ru1.ru_stime - ru0.ru_stime) / max(steady_n, 1), 2),
        "steady_gc_ms_per_cycle": round(1000 * (gc1 - gc0) / max(steady_n, 1), 3),
        # by thread (names without their number): CPU ms and context switches per steady cycle
        "steady_by_thread": {
            k: (round(1000 * (v[0] - threads0.get(k, (0.0, 0))[0]) / max(steady_n, 1), 3),
                round((v[1] - threads0.get(k, (0.0, 0))[1]) / max(steady_n, 1), 2))
            for k, v in sorted(threads1.items())},
        "steady_gc_runs": [b - a for a, b in zip(gcruns0, gcruns1)],
        "steady_gc_ms_by_generation": [round(1000 * (b - a), 1) for a, b in zip(gcgen0, gcgen1)],
        "steady_gc_longest_ms": round(1000 * GC.longest, 1),
        # the collections' CPU (their thread's), per steady cycle: the figures above are wall
        "steady_gc_cpu_ms_per_cycle": round(1000 * (sum(gccpu1) - sum(gccpu0)) / max(steady_n, 1), 3),
        "steady_gc_cpu_ms_by_generation": [round(1000 * (b - a), 1) for a, b in zip(gccpu0, gccpu1)],
        "gc_frozen_at_end": gc.get_freeze_count(),
        "steady_switches_per_cycle": round(
            (ru1.ru_nvcsw - ru0.ru_nvcsw + ru1.ru_nivcsw - ru0.ru_nivcsw) / max(steady_n, 1), 1),
        # of them involuntary (a thread preempted, not waiting)
        "steady_involuntary_switches_per_cycle": round(
            (ru1.ru_nivcsw - ru0.ru_nivcsw) / max(steady_n, 1), 2),
        "steady_server_cpu_ms_per_cycle": (
            round(1000 * (steady_srv1 - steady_srv0) / max(steady_n, 1), 2)
            if steady_srv0 is not None and steady_srv1 is not None else None),
        "steady_lateness_p95": _q(sorted(r[2] - r[1] for r in records
                                         if not r[5] and steady_t0 <= r[1] <= due_by),
                                  0.95),
        "cycles_run": ran, "cycles_expected": due,
        "first_looks": len(firsts),
        "start_up_s": round(sched.first_looks_took, 2) if sched.first_looks_took else None,
        "first_look_done_p50_s": _q(firsts, 0.5), "first_look_done_max_s": _q(firsts, 1.0),
        "skipped": sched.missed + runner.skipped,
        "lateness_p50": _q(late, 0.5), "lateness_p95": _q(late, 0.95), "lateness_max": round(late[-1], 3) if late else None,
        "duration_p50": _q(dur, 0.5), "duration_p95": _q(dur, 0.95),
        "dbwatch_cpu_pct_of_one_core": round(100 * cpu / wall, 1),
        "machine_cpu_pct_of_all_cores": round(100 * machine, 1),
        "cpu_ms_per_cycle": round(1000 * cpu / max(len(records), 1), 2),
        "steady_cpu_ms_per_cycle_by_phase": {
            k: round(1000 * (v - phase0.get(k, 0.0)) / max(steady_n, 1), 3)
            for k, v in sorted(phase1.items())},
        "cpu_ms_per_cycle_by_phase": {k: round(1000 * v / max(len(records), 1), 2)
                                      for k, v in sorted(phases.cpu.items())},
        "wall_seconds": round(wall, 1),
    }


def _q(values: list[float], q: float) -> float | None:
    if not values:
        return None
    return round(values[min(len(values) - 1, int(q * len(values)))], 3)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pg", default="postgresql://postgres@127.0.0.1:5432/postgres")
    ap.add_argument("--sizes", default="50,200,500")
    ap.add_argument("--interval", type=float, default=15.0)
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--threads", type=int, help="scheduler threads (default: one per target, capped)")
    ap.add_argument("--keep", action="store_true", help="keep the databases afterwards")
    ap.add_argument("--json", help="write the results here too")
    ap.add_argument("--per-server", default="10",
                    help="pool caps to compare, e.g. 0,2100 (0: a new session per cycle)")
    ap.add_argument("--throwaway", action="store_true",
                    help="run against a PostgreSQL cluster of its own (max_connections 2300)")
    ap.add_argument("--smoke", action="store_true", help="CI: 5 targets, 2 short cycles")
    ap.add_argument("--profile", help="cProfile (CPU clock) of the steady cycles, to this file")
    args = ap.parse_args()
    if os.environ.get("DBWATCH_BENCH_NOBATCH"):  # the cycle threads left ordinary (batch.py)
        from dbwatch.daemon import batch

        batch.ENABLED = False
    if os.environ.get("DBWATCH_BENCH_SWITCH"):  # the interpreter's GIL switch interval, s
        sys.setswitchinterval(float(os.environ["DBWATCH_BENCH_SWITCH"]))
    if args.smoke:
        global PREFIX
        PREFIX = f"dbw_bench_{os.getpid()}_"  # beside other runs on a shared server
        args.sizes, args.interval, args.cycles, args.per_server = "5", 2.0, 2, "10"
    if args.throwaway:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from pgcluster import PgCluster

        settings = {"max_connections": "2300", "shared_buffers": "256MB", "fsync": "off",
                    "shared_preload_libraries": "'pg_stat_statements'",
                    "pg_stat_statements.track": "all", "pg_stat_statements.max": "20000",
                    "autovacuum": "off"}
        with PgCluster(settings) as cluster:
            with admin(cluster.url) as conn:
                conn.execute("CREATE EXTENSION pg_stat_statements")
            args.pg = cluster.url
            global POSTMASTER
            POSTMASTER = int(Path(cluster.data, "postmaster.pid").read_text().split()[0])
            return _main(args)
    return _main(args)


def _main(args: argparse.Namespace) -> int:
    sizes = [int(s) for s in args.sizes.split(",")]
    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("apscheduler").setLevel(logging.ERROR)
    phases = Phases()
    phases.wrap(pipeline, "open_target", "connect")
    phases.wrap(pipeline, "run_probes", "probes")
    phases.wrap(pipeline, "evaluate", "evaluate")
    phases.wrap(Daemon, "_after_probe", "state+alerts+metrics")
    assert daemon_mod.probe_target is pipeline.probe_target
    results = []
    if args.profile:
        global PROFILES
        PROFILES = Profiles()
    try:
        t0 = time.time()
        create_databases(args.pg, max(sizes))
        print(f"{max(sizes)} databases ready in {time.time() - t0:.0f}s", file=sys.stderr)
        for n in sizes:
            for cap in [int(c) for c in str(args.per_server).split(",")]:
                res = run_size(args.pg, n, args.interval, args.cycles, args.threads, phases, cap)
                results.append(res)
                print(json.dumps(res), flush=True)
    finally:
        if not args.keep and not args.throwaway:  # a throwaway cluster goes as a whole
            drop_databases(args.pg)
    if PROFILES is not None:
        PROFILES.dump(args.profile)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    print("\ntargets  pool  cycles  start-up s  late p50/p95/max s  steady p95 s  took p50/p95 s  dbwatch CPU"
          "  machine CPU  load  dbwatch CPU ms/cycle (steady)  server CPU ms/cycle (steady)"
          "  statements/cycle (steady)")
    for r in results:
        print(f"{r['targets']:7d}  {r['per_server']:4d}  {r['cycles_run']:3d}/{r['cycles_expected']:<4d} "
              f"{r['start_up_s']}  "
              f"{r['lateness_p50']}/{r['lateness_p95']}/{r['lateness_max']:<8} "
              f"{r['steady_lateness_p95']}  "
              f"{r['duration_p50']}/{r['duration_p95']:<8} "
              f"{r['dbwatch_cpu_pct_of_one_core']:5.1f}%    {r['machine_cpu_pct_of_all_cores']:5.1f}%"
              f"  {r['loadavg_1m']}"
              f"    {r['cpu_ms_per_cycle']} ({r['steady_cpu_ms_per_cycle']})"
              f"    {r['server_cpu_ms_per_cycle']} ({r['steady_server_cpu_ms_per_cycle']})"
              f"    {r['statements_per_cycle']} ({r['steady_statements_per_cycle']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
