"""`dbwatch deadlocks`: InnoDB deadlocks from a live server, a saved status text, an error log,
or the daemon's history; innotop-style tables plus the diagnosis."""

from __future__ import annotations

import argparse
import gzip
import io
import json
import sys
from collections.abc import Iterator
from typing import IO, Any

from tabulate import tabulate

from ..errors import UsageError
from ..scope import deadlock_in_scope
from .common import add_all_databases

HELP = "parse and diagnose InnoDB deadlocks (live, --file, --error-log, --history)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", nargs="?", metavar="TARGET", help="mysql:// URL or configured name")
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--file", metavar="F", help="saved SHOW ENGINE INNODB STATUS text ('-' = stdin)"
    )
    src.add_argument(
        "--error-log", metavar="F", help="error log with innodb_print_all_deadlocks=ON"
    )
    src.add_argument("--history", action="store_true", help="deadlocks recorded by the daemon")
    p.add_argument("--state", help="daemon state DB (with --history)")
    p.add_argument("--limit", type=int, default=0, help="show only the last N deadlocks")
    p.add_argument("--format", "-f", choices=("table", "json"), default="table")
    add_all_databases(p)
    p.add_argument("--config", "-c")
    p.add_argument("--password-file", metavar="FILE", help="read the target's password from FILE")
    p.add_argument("--debug", action="store_true")


def _open_text(path: str) -> IO[str]:
    if path == "-":
        return sys.stdin
    try:
        raw = open(path, "rb")  # noqa: SIM115 (handed to the caller's with-block)
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    if raw.read(2) == b"\x1f\x8b":
        raw.seek(0)
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="utf-8", errors="replace")
    raw.seek(0)
    return io.TextIOWrapper(raw, encoding="utf-8", errors="replace")


def _from_status_text(text: str) -> list[dict[str, Any]]:
    from ..probes.innodb import status_section

    dl = status_section(text)["deadlock"]
    return [dl] if dl else []


def _from_error_log(path: str) -> Iterator[dict[str, Any]]:
    from ..parsers.errorlog import iter_deadlocks
    from ..probes.innodb import deadlock_record

    with _open_text(path) as fh:
        for dl in iter_deadlocks(fh):
            yield deadlock_record(dl)


def _from_target(args: argparse.Namespace) -> list[dict[str, Any]]:
    from ..probes import run_probes
    from ..targets import open_target
    from .common import load_all, resolve_targets

    _, config = load_all(args.config)
    specs = resolve_targets(
        [args.target] if args.target else [],
        config,
        say=False,
        password_file=args.password_file,
        all_databases=args.all_databases,
    )
    specs = [s for s in specs if s.engine == "mysql"]
    if len(specs) != 1:
        raise UsageError("name one mysql:// target (or use --file / --error-log / --history)")
    conn = open_target(specs[0])
    try:
        snap = run_probes(conn, specs[0].name, ["my.innodb_status"])
    finally:
        conn.close()
    if snap.section("my.innodb_status") is None:
        f = snap.failures[0]
        raise UsageError(
            f"{specs[0].name}: cannot read SHOW ENGINE INNODB STATUS: {f.message}"
            + (f" — {f.grant}" if f.grant else "")
        )
    dl = snap.section("my.innodb_status")["deadlock"]
    scope = specs[0].scoped_database
    if dl and not deadlock_in_scope(dl, scope):
        print(
            f"dbwatch: the server's latest deadlock touches no table of schema {scope}; "
            "--all-databases shows it",
            file=sys.stderr,
        )
        return []
    return [dl] if dl else []


def _from_history(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Deadlocks recorded by the daemon, oldest first, each tagged with its target."""
    from pathlib import Path

    from ..daemon.state import State, default_state_path

    path = Path(args.state) if args.state else default_state_path()
    if not path.exists():
        raise UsageError(f"{path}: no state database (has `dbwatch watch` run? use --state)")
    st = State(path)
    try:
        rows = st.deadlocks(target=args.target, limit=args.limit or 1000)
    finally:
        st.close()
    out = []
    for r in reversed(rows):
        data = r["data"] if isinstance(r["data"], dict) else {}
        out.append({**data, "target": r.get("target")})
    return out


def collect(args: argparse.Namespace) -> list[dict[str, Any]]:
    if args.file:
        with _open_text(args.file) as fh:
            return _from_status_text(fh.read(4 * 1024 * 1024))
    if args.error_log:
        return list(_from_error_log(args.error_log))
    if args.history:
        return _from_history(args)
    return _from_target(args)


def _short(q: Any, n: int = 60) -> str:
    text = " ".join(str(q or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def render_table(deadlocks: list[dict[str, Any]]) -> str:
    if not deadlocks:
        return "No deadlocks found."
    out = []
    for i, dl in enumerate(deadlocks, 1):
        out.append(f"== Deadlock {i} at {dl.get('at') or '?'}")
        trx = [
            [
                t["n"],
                dl.get("at"),
                t.get("user"),
                t.get("host"),
                "yes" if t.get("victim") else "",
                t.get("active_seconds"),
                t.get("undo_entries"),
                t.get("lock_structs"),
                _short(t.get("query")),
            ]
            for t in dl.get("transactions", [])
        ]
        out.append("Deadlock Transactions")
        out.append(
            tabulate(
                trx,
                headers=[
                    "ID",
                    "Timestamp",
                    "User",
                    "Host",
                    "Victim",
                    "Time",
                    "Undo",
                    "LStrcts",
                    "Query",
                ],
            )
        )
        locks = [
            [
                lk["n"],
                "yes" if lk.get("waiting") else "",
                lk.get("mode"),
                lk.get("db"),
                lk.get("table"),
                lk.get("index"),
                lk.get("special") or "",
                "yes" if lk.get("insert_intention") else "",
            ]
            for lk in dl.get("locks", [])
        ]
        out.append("\nDeadlock Locks")
        out.append(
            tabulate(
                locks,
                headers=["ID", "Waiting", "Mode", "DB", "Table", "Index", "Special", "Ins Intent"],
            )
        )
        diag = dl.get("diagnosis") or {}
        rules = f" [{', '.join(diag['rules'])}]" if diag.get("rules") else ""
        out.append(f"\nDiagnosis: {diag.get('pattern', 'generic')}{rules}")
        out.append(f"  {diag.get('explanation', '')}")
        if diag.get("fix"):
            out.append(f"  Fix: {diag['fix']}")
        out.append("")
    out.append(f"{len(deadlocks)} deadlock(s).")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    deadlocks = collect(args)
    if args.limit:
        deadlocks = deadlocks[-args.limit :]
    if args.format == "json":
        print(json.dumps({"deadlocks": deadlocks}, indent=2, default=str))
    else:
        print(render_table(deadlocks))
    return 0
