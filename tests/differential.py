"""Golden outputs of dbwatch over recorded inputs (issue 25.7): behaviour unchanged while code moves.

The same command lines as contrib/differential.sh (InnoDB status texts, error and PostgreSQL
logs, query logs, refused files, rules/explain), run in-process through `dbwatch.cli.main`;
stdout, stderr and the exit code, normalised (timing figures, the checkout's and the corpus's
paths), are compared with the committed files under tests/fixtures/differential/.

The golden files are never rewritten by the test. To regenerate them (from main's code, after a
change that is meant to alter an output, say so in the commit):

    PYTHONPATH=. python tests/differential.py --write        # recorded inputs
    PYTHONPATH=. python tests/differential.py --write --live  # also the live scenario audits

Without --write it only compares and lists the differing cases (exit 1 when any differ).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
GOLDEN = FIXTURES / "differential"
# the external corpus, as tests/conftest.py finds it (cases from it skip when it is absent)
CORPUS = Path(os.environ.get("DBWATCH_CORPUS") or ROOT.parent / "shared" / "corpus")
INNODB_CORPUS = CORPUS / "innodb-status"
# the terminal the outputs are recorded for: fixed width, no colour
ENV = {"COLUMNS": "100", "NO_COLOR": "1"}
ENV_CLEARED = ("DBWATCH_CONFIG", "DBWATCH_TARGETS", "DBWATCH_STATE", "DBWATCH_STATE_SCHEMA")


@dataclass(frozen=True)
class Case:
    """One command line; `argv` holds <ROOT>/<CORPUS> placeholders for the input's path."""

    argv: tuple[str, ...]

    @property
    def name(self) -> str:
        """The golden file's stem: the command line without placeholders, as a file name."""
        text = " ".join(self.argv).replace("<ROOT>/tests/fixtures/", "").replace("<CORPUS>/", "")
        return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_")

    @property
    def needs_corpus(self) -> bool:
        return any("<CORPUS>" in a for a in self.argv)

    def real_argv(self) -> list[str]:
        return [a.replace("<ROOT>", str(ROOT)).replace("<CORPUS>", str(CORPUS)) for a in self.argv]


def _files(*globs: str) -> list[str]:
    """The recorded inputs under tests/fixtures matching the globs, as placeholder paths."""
    found: list[Path] = []
    for g in globs:
        found.extend(sorted(p for p in FIXTURES.glob(g) if p.is_file()))
    return [f"<ROOT>/{p.relative_to(ROOT)}" for p in found]


def cases() -> list[Case]:
    """contrib/differential.sh's command lines, in its order."""
    out: list[Case] = []
    corpus = sorted(p.name for p in INNODB_CORPUS.iterdir()) if INNODB_CORPUS.is_dir() else []
    statuses = [f"<CORPUS>/innodb-status/{n}" for n in corpus] + _files("innodb/*.txt")
    out += [Case(("deadlocks", "--file", f, "--format", "json")) for f in statuses]
    logs = _files(
        "innodb/*.log",
        "innodb/*.json",
        "pglog/*.*",
        "innodb/published/*",
        "innodb/variants/*",
        "pglog/published/*",
    )
    out += [Case(("deadlocks", "--log", f, "--format", "json")) for f in logs]
    for f in _files("logs/*"):
        out += [Case(("audit", "--log", f, "--format", "json")), Case(("audit", "--log", f))]
    out += [
        Case(("rules", "--format", "json")),
        Case(("explain", "PG201")),
        Case(("explain", "DW001")),
        Case(("audit", "--log", "/bin/ls")),
        Case(("deadlocks", "--file", "/bin/ls")),
        Case(("deadlocks", "--log", "/etc/hostname", "--format", "json")),
    ]
    return out


_TIMING = (
    (re.compile(r"[0-9.]+ MB/s"), "<RATE>"),
    (re.compile(r'"(seconds|generated_at)": [^,\n]*'), r'"\1": <VOLATILE>'),
    (re.compile(r"Generated \S+\."), "Generated <TIME>."),
)


def normalise(text: str) -> str:
    """Paths of the checkout and the corpus as placeholders; timing figures left out."""
    text = text.replace(str(CORPUS), "<CORPUS>").replace(str(ROOT), "<ROOT>")
    for pattern, repl in _TIMING:
        text = pattern.sub(repl, text)
    return text


@contextlib.contextmanager
def _environment() -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in (*ENV, *ENV_CLEARED)}
    os.environ.update(ENV)
    for k in ENV_CLEARED:
        os.environ.pop(k, None)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def run_inprocess(argv: list[str]) -> tuple[int, str, str]:
    """`dbwatch ARGV` in this process: exit code, stdout, stderr."""
    from dbwatch.cli import main

    out, err = io.StringIO(), io.StringIO()
    with (
        _environment(),
        _own_logging(),
        contextlib.redirect_stdout(out),
        contextlib.redirect_stderr(err),
    ):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse's exits (3 on a bad line)
            rc = exc.code if isinstance(exc.code, int) else 3
    return rc, out.getvalue(), err.getvalue()


@contextlib.contextmanager
def _own_logging() -> Iterator[None]:
    """The root logger as a fresh process has it (no handler): `main` sets it up on this
    run's stderr, as `python -m dbwatch` does; whatever was there before is put back."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    root.handlers.clear()
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def record(argv: tuple[str, ...], rc: int, stdout: str, stderr: str) -> str:
    """The golden file's text: the command line, the exit code, both streams, normalised."""
    return (
        f"$ dbwatch {' '.join(argv)}\nrc={rc}\n--- stdout\n{normalise(stdout)}"
        f"--- stderr\n{normalise(stderr)}"
    )


def run_case(case: Case) -> str:
    rc, out, err = run_inprocess(case.real_argv())
    return record(case.argv, rc, out, err)


def golden_path(name: str) -> Path:
    return GOLDEN / f"{name}.txt"


# -- the daemon's deadlock history: records as every version stored them ------------------------
OLD_RECORDS = FIXTURES / "state" / "deadlock-records-by-version.json"
HISTORY_ARGV = (
    ("deadlocks", "--history", "--state", "<STATE>", "--format", "json"),
    ("deadlocks", "--history", "--state", "<STATE>"),
    ("deadlocks", "--history", "--state", "<STATE>", "--summary", "--format", "json"),
)


def _current_records() -> list[dict[str, object]]:
    """Records as this tree builds them, as JSON (a dict before issue 25.3, to_json() after)."""
    from dbwatch.deadlocks.record import deadlock_record
    from dbwatch.parsers.innodb_status import parse_status

    out: list[dict[str, object]] = []
    for path in sorted((FIXTURES / "innodb").glob("*.txt")):
        dl = parse_status(path.read_text()).deadlock
        if dl is not None:
            rec: object = deadlock_record(dl)
            out.append(getattr(rec, "to_json", lambda r=rec: r)())
    out[0] = {**out[0], "source": "log_file"}
    return out


def history_cases(tmp: Path) -> dict[str, str]:
    """`deadlocks --history` over a state holding records of older versions and this one."""
    import json

    from dbwatch.daemon.state import State

    path = tmp / "state.db"
    st = State(path)
    try:
        older = json.loads(OLD_RECORDS.read_text())
        rows = [(f"old-{v}", r) for v, recs in sorted(older.items()) for r in recs]
        rows += [("current", r) for r in _current_records()]
        for n, (target, rec) in enumerate(rows):
            key = f"{n:03d}-{rec['key']}"  # one row per record even where versions share keys
            st.record_deadlock(target, key, rec.get("at"), rec)
    finally:
        st.close()
    out = {}
    for argv in HISTORY_ARGV:
        real = [a.replace("<STATE>", str(path)) for a in argv]
        rc, stdout, stderr = run_inprocess(real)
        name = re.sub(r"[^A-Za-z0-9._-]+", "_", " ".join(argv)).strip("_")
        out[name] = record(argv, rc, stdout.replace(str(path), "<STATE>"), stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", action="store_true", help="rewrite the golden files")
    ap.add_argument("--live", action="store_true", help="also the live scenario audits")
    args = ap.parse_args(argv)
    import dbwatch

    print(f"dbwatch from {Path(dbwatch.__file__).parent}", file=sys.stderr)
    results = {c.name: run_case(c) for c in cases()}
    with tempfile.TemporaryDirectory() as tmp:
        results.update(history_cases(Path(tmp)))
    if INNODB_CORPUS.is_dir() is False:
        print(f"note: {INNODB_CORPUS} not found: its cases are not checked", file=sys.stderr)
    if args.live:
        from differential_live import run_scenarios

        results.update(run_scenarios())
    bad = 0
    for name, text in results.items():
        path = golden_path(name)
        if args.write:
            GOLDEN.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        elif not path.exists() or path.read_text() != text:
            bad += 1
            print(f"DIFF: {name}")
    print(f"cases={len(results)} differing={bad}{' (written)' if args.write else ''}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    sys.exit(main())
