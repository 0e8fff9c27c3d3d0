"""`dbwatch deadlocks`: InnoDB deadlocks from a live server, a saved status text, an error log,
or the daemon's history; innotop-style tables plus the diagnosis."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator

from ..deadlocks.record import DeadlockRecord, check_threads, deadlock_record
from ..deadlocks.sources import ReadStats, read_log, read_status_file, require_recognisable
from ..deadlocks.summary import summarize
from ..durations import plural
from ..errors import UsageError
from ..snapshot.my import MY_INNODB_STATUS, MY_TRX
from ..snapshot.values import JSON, JSONObject
from ..termout import chop, fit_lines, fit_table, hanging, term_width
from .common import add_all_databases, arg_flag, arg_int, arg_str


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("target", nargs="?", metavar="TARGET", help="mysql:// URL or configured name")
    src = p.add_mutually_exclusive_group()
    src.add_argument(
        "--file", metavar="F", help="saved SHOW ENGINE INNODB STATUS text ('-' = stdin)"
    )
    src.add_argument(
        "--error-log",
        "--log",
        dest="error_log",
        metavar="F",
        help="MySQL/MariaDB error log (innodb_print_all_deadlocks=ON) or PostgreSQL log "
        "(stderr, csvlog, jsonlog); gzip is read too",
    )
    src.add_argument("--history", action="store_true", help="deadlocks recorded by the daemon")
    p.add_argument("--state", help="daemon state DB (with --history)")
    p.add_argument("--limit", type=int, default=0, help="show only the last N deadlocks")
    p.add_argument(
        "--summary",
        action="store_true",
        help="counts by diagnosis, table, the victim's statement and hour instead of each one",
    )
    p.add_argument("--format", "-f", choices=("table", "json"), default="table")
    add_all_databases(p)
    p.add_argument("--config", "-c")
    p.add_argument("--password-file", metavar="FILE", help="read the target's password from FILE")
    p.add_argument("--debug", action="store_true")


def _from_target(args: argparse.Namespace) -> list[DeadlockRecord]:
    from ..probes import run_probes
    from ..targets import open_target
    from .common import load_all, resolve_targets

    _, config = load_all(arg_str(args, "config"))
    target = arg_str(args, "target")
    specs = resolve_targets(
        [target] if target else [],
        config,
        say=False,
        password_file=arg_str(args, "password_file"),
        all_databases=arg_flag(args, "all_databases"),
    )
    specs = [s for s in specs if s.engine == "mysql"]
    if len(specs) != 1:
        raise UsageError("name one mysql:// target (or use --file / --error-log / --history)")
    conn = open_target(specs[0])
    try:
        snap = run_probes(conn, specs[0].name, ["my.innodb_status", "my.trx"])
    finally:
        conn.close()
    status = snap.get(MY_INNODB_STATUS)
    if status is None:
        f = snap.failures[0]
        raise UsageError(
            f"{specs[0].name}: cannot read SHOW ENGINE INNODB STATUS: {f.message}"
            + (f" — {f.grant}" if f.grant else "")
        )
    # what the live server can still confirm: the printed threads and open transactions
    threads = snap.get(MY_TRX) or ()
    dl = deadlock_record(check_threads(status.deadlock, threads)) if status.deadlock else None
    scope = specs[0].scoped_database
    if dl and not dl.in_scope(scope):
        print(
            f"dbwatch: the server's latest deadlock touches no table of schema {scope}; "
            "--all-databases shows it",
            file=sys.stderr,
        )
        return []
    return [dl] if dl else []


def _from_history(args: argparse.Namespace) -> list[DeadlockRecord]:
    """Deadlocks recorded by the daemon, oldest first, each tagged with its target. The state
    is found as `status` and `history` find it (--state, else [daemon] state / [state] url of
    --config, else the default path); a configured target scoped to one schema lists only
    the deadlocks that touch it, even those recorded before the daemon filtered them."""
    from ..targets import spec_from_config
    from .status import open_reader

    reader, config = open_reader(args)
    limit = arg_int(args, "limit") or 1000
    rows = reader.deadlocks(target=arg_str(args, "target"), limit=limit).rows
    scopes = {
        t.name: spec.scoped_database
        for t in config.targets
        if (spec := spec_from_config(t)).engine == "mysql" and not arg_flag(args, "all_databases")
    }
    out: list[DeadlockRecord] = []
    for r in reversed(rows):
        target = r.get("target")
        dl = DeadlockRecord.from_json(r["data"]).tagged(
            target=target if isinstance(target, str) else None
        )
        if dl.target is not None and not dl.in_scope(scopes.get(dl.target)):
            continue
        out.append(dl)
    return out


def history_not_shown(args: argparse.Namespace) -> dict[str, int]:
    """Per target, the deadlocks the server counted that the daemon did not record."""
    from pathlib import Path

    from ..daemon.state import State, default_state_path
    from ..deadlocks.unshown import NOT_SHOWN_KEY

    state = arg_str(args, "state")
    path = Path(state) if state else default_state_path()
    st = State(path)
    try:
        last = st.series_last(NOT_SHOWN_KEY)
    finally:
        st.close()
    want = arg_str(args, "target")
    return {t: int(v) for t, (_ts, v) in sorted(last.items()) if want in (None, "", t)}


def collect(args: argparse.Namespace, stats: ReadStats | None = None) -> Iterator[DeadlockRecord]:
    """Deadlock records from the chosen source; files must hold something recognisable."""
    stats = stats if stats is not None else ReadStats()
    file, error_log = arg_str(args, "file"), arg_str(args, "error_log")
    if file:
        out = read_status_file(file, stats)
        require_recognisable(file, stats)
        yield from out
        return
    if error_log:
        yield from read_log(error_log, stats)
        require_recognisable(error_log, stats)
        return
    if arg_flag(args, "history"):
        yield from _from_history(args)
        return
    yield from _from_target(args)


def _json(dl: DeadlockRecord, history: bool) -> JSONObject:
    """A record's JSON; from the history as the state stores it (keys sorted, the target
    last), as this command has always printed it."""
    doc = dl.to_json()
    if not history:
        return doc
    target = doc.pop("target", None)
    return {**_sorted(doc), "target": target}


def _sorted(value: JSONObject) -> JSONObject:
    return {k: _sorted_value(value[k]) for k in sorted(value)}


def _sorted_value(value: JSON) -> JSON:
    if isinstance(value, dict):
        return _sorted(value)
    if isinstance(value, list):
        return [_sorted_value(v) for v in value]
    return value


def _cell(value: object) -> str:
    return "" if value is None else str(value)


def render_table(deadlocks: list[DeadlockRecord], width: int | None = None) -> str:
    """innotop-style transaction and lock tables and the diagnosis, within `width` (COLUMNS):
    each statement on its own lines under its transaction, paragraphs wrapped, nothing cut."""
    width = width or term_width()
    if not deadlocks:
        return "No deadlocks found."
    out = []
    for i, dl in enumerate(deadlocks, 1):
        out.append(f"== Deadlock {i} at {dl.at or '?'}")
        trx = [
            [
                t.n,
                t.user,
                t.host,
                "yes" if t.victim else "",
                t.active_seconds,
                t.undo_entries,
                t.lock_structs,
            ]
            for t in dl.transactions
        ]
        queries = [
            hanging(" ".join((t.query or "?").split()), width, "    query: ", " " * 11)
            for t in dl.transactions
        ]
        out.append("Deadlock Transactions")
        heads = ["ID", "User", "Host", "Victim", "Time", "Undo", "LStrcts"]
        out.append(fit_table(heads, [[_cell(v) for v in r] for r in trx], width, queries))
        locks = [
            [
                lk.n,
                "yes" if lk.waiting else "",
                lk.mode,
                lk.db,
                lk.table,
                lk.index,
                lk.special or "",
                "yes" if lk.insert_intention else "",
            ]
            for lk in dl.locks
        ]
        out.append("\nDeadlock Locks")
        heads = ["ID", "Wait", "Mode", "DB", "Table", "Index", "Special", "InsInt"]
        out.append(fit_table(heads, [[_cell(v) for v in r] for r in locks], width))
        if dl.victim_inferred:
            out += ["", *hanging(f"Victim inferred: {dl.victim_evidence}", width)]
        elif dl.victim_evidence:
            out += ["", *hanging(f"Victim: {dl.victim_evidence}", width)]
        if dl.ambiguity is not None:
            text = f"Structure ambiguous: {dl.ambiguity}; no victim named"
            out += ["", *hanging(text, width)]
        for raw in dl.unverified:
            # never facts: the text as read, quoted, so that it cannot pass for dbwatch's output
            out += ["", "Unverified (text, not facts):"]
            for line in raw.splitlines()[:40]:
                out += hanging(chop(line, width - 4), width, "  | ", "  | ")
        for what, items in (("Not understood", dl.unparsed), ("Inconsistent", dl.inconsistencies)):
            if items:
                out += ["", *hanging(f"{what}: " + "; ".join(items[:8]), width)]
        diag = dl.diagnosis
        rules = f" [{', '.join(diag.rules)}]" if diag.rules else ""
        out += ["", *hanging(f"Diagnosis: {diag.pattern}{rules}", width)]
        out += hanging(diag.explanation, width, "  ", "  ")
        if diag.fix:
            out += hanging(diag.fix, width, "  Fix: ", "       ")
        out.append("")
    out.append(f"{plural(len(deadlocks), 'deadlock')}.")
    return "\n".join(out)


def run(args: argparse.Namespace) -> int:
    stats = ReadStats()
    source = arg_str(args, "file") or arg_str(args, "error_log")
    as_json = arg_str(args, "format") == "json"
    if arg_flag(args, "summary"):
        summary = summarize(collect(args, stats))
        if as_json:
            print(json.dumps({"summary": summary.to_dict()}, indent=2, default=str))
        else:
            text = summary.render(source or arg_str(args, "target") or "the daemon's history")
            print(fit_lines(text, term_width()))
        return 0
    deadlocks = list(collect(args, stats))
    limit = arg_int(args, "limit")
    if limit:
        deadlocks = deadlocks[-limit:]
    unshown = history_not_shown(args) if arg_flag(args, "history") else {}
    if as_json:
        history = arg_flag(args, "history")
        doc: dict[str, object] = {"deadlocks": [_json(dl, history) for dl in deadlocks]}
        if arg_flag(args, "history"):
            doc["not_shown"] = unshown
        print(json.dumps(doc, indent=2, default=str))
    elif not deadlocks and source:
        print(
            f"no deadlocks in {source} ({stats.lines:,} {'line' if stats.lines == 1 else 'lines'} read, {stats.kind})"
        )
    else:
        print(render_table(deadlocks))
    for target, n in unshown.items():
        if n and not as_json:
            print(
                f"{target}: {n} more deadlock(s) counted by the server and not shown (the "
                "daemon reads only the latest without log_file): give the target `log_file`"
            )
    return 0
