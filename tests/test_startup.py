"""Startup: a command imports only what it needs (`dbwatch --version` and `--help` import no
driver or library), and every command module is registered (dbwatch/commands/__init__.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from dbwatch import cli
from dbwatch.commands import COMMANDS

ROOT = Path(__file__).resolve().parents[1]
HEAVY = {
    "psycopg",
    "pymysql",
    "tabulate",
    "sqlparse",
    "jinja2",
    "apscheduler",
    "prometheus_client",
    "tomllib",
    "shtab",
}
PROBE = r"""
import contextlib, io, sys
from dbwatch.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(" ".join(sorted({m.split(".")[0] for m in sys.modules})))
print(" ".join(sorted(m for m in sys.modules if m.startswith("dbwatch.commands."))))
"""


def imported(*argv: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", PROBE, *argv], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    top, commands = (out.stdout.split("\n") + ["", ""])[:2]
    return set(top.split()) | set(commands.split())


def test_version_and_help_import_no_dependency() -> None:
    for argv in (["--version"], ["--help"], []):
        mods = imported(*argv)
        assert "dbwatch" in mods
        assert not mods & HEAVY, (argv, mods & HEAVY)
        assert not any(m.startswith("dbwatch.commands") for m in mods)


def test_a_command_imports_its_own_module_only() -> None:
    mods = imported("rules", "--help")
    assert not mods & {"psycopg", "pymysql", "jinja2", "apscheduler"}, mods & HEAVY
    code = (
        "import sys\nfrom dbwatch.cli import build_parser\nbuild_parser(['status', '--help'])\n"
        "print(' '.join(m for m in sys.modules if m.startswith('dbwatch.commands.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert set(out.stdout.split()) <= {"dbwatch.commands.status", "dbwatch.commands.common"}
    assert "dbwatch.commands.status" in out.stdout.split()


def test_every_command_module_is_registered() -> None:
    """A module in dbwatch/commands/ is a registered command (or the shared `common`), and
    every registered command's module provides add_arguments and run."""
    modules = {p.stem for p in (ROOT / "dbwatch" / "commands").glob("*.py")}
    assert modules - {"__init__", "common"} == set(COMMANDS)
    for cmd in COMMANDS.values():
        mod = cmd.load()
        assert callable(mod.add_arguments) and callable(mod.run), cmd.name
        assert cmd.help and "\n" not in cmd.help, cmd.name


def test_whole_parser_still_has_every_command() -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    choices = getattr(sub, "choices", {}) or {}
    for name in COMMANDS:
        assert name in choices
        assert choices[name]._actions, name  # arguments added, not a stub
    assert any(a.option_strings for a in choices["audit"]._actions if a.dest != "help")


def test_a_command_line_builds_its_own_parser_only_unless_the_top_help_lists_all() -> None:
    """`dbwatch audit …` makes the audit parser and no other command's (not even the stubs
    the top-level help lists); with -h/--help (or an abbreviation) before the command, every
    command is listed, as with `dbwatch --help`."""

    def commands(argv: list[str]) -> list[str]:
        parser = cli.build_parser(argv)
        sub = next(a for a in parser._actions if a.dest == "command")
        return sorted(getattr(sub, "choices", {}) or {})

    assert commands(["audit", "postgresql://x/y"]) == ["audit"]
    assert commands(["audit", "--help"]) == ["audit"]
    every = sorted(COMMANDS)
    for argv in (["-h", "audit"], ["--help", "audit"], ["--he", "audit"], ["--version"], []):
        assert commands(argv) == every, argv
    assert cli.build_parser(["--hel", "audit"]).format_help() == cli.build_parser([]).format_help()


# What a one-target audit must not import: the other engine's driver, libraries only other
# commands or flags use (--log, --format nagios, the daemon, the web dashboard), the session
# culprit machinery when no session finding was made. Modules, not timings: a count cannot flake.
AUDIT_NEVER = {"tabulate", "jinja2", "apscheduler", "prometheus_client", "shtab"}
AUDIT_NEVER_DBWATCH = (
    "dbwatch.daemon",
    "dbwatch.web",
    "dbwatch.actions",
    "dbwatch.sqlpatterns.logs",
    "dbwatch.nagios",
)
# imported only to name the culprit of a session or deadlock finding (checks/culprit_rules.py)
CULPRIT = (
    "dbwatch.checks.culprit",
    "dbwatch.checks.txn_activity",
    "dbwatch.sqlpatterns.fingerprint",
    "sqlparse",
)
MODULES = r"""
import contextlib, io, json, sys
from dbwatch.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        main(sys.argv[1:])
    except SystemExit as exc:
        print("exit", exc.code, file=sys.stderr)
print(" ".join(sorted(sys.modules)))
found = json.loads(out.getvalue())["findings"]
print(" ".join(sorted({f["rule"] for f in found})))
print(json.dumps(found))
"""


def audit_modules(url: str) -> set[str]:
    """The modules a JSON audit of `url` imported, checked against its findings: the culprit
    machinery is there exactly when a finding needed it (the shared server's other sessions
    and deadlocks may give one)."""
    from dbwatch.checks.culprit_rules import enriched

    out = subprocess.run(
        [sys.executable, "-c", MODULES, "audit", "--format", "json", url],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    modules, rules = out.stdout.split("\n")[:2]
    mods = set(modules.split())
    assert "dbwatch.commands.audit" in mods and "dbwatch.evaluate" in mods, mods
    named = any(enriched(r) for r in rules.split())
    assert all((m in mods) == named for m in CULPRIT), (rules, mods & set(CULPRIT))
    return mods


def _never(mods: set[str]) -> set[str]:
    tops = {m.split(".")[0] for m in mods}
    under = tuple(p + "." for p in AUDIT_NEVER_DBWATCH)
    dbw = {m for m in mods if m in AUDIT_NEVER_DBWATCH or m.startswith(under)}
    return (tops & AUDIT_NEVER) | dbw


def test_postgresql_audit_imports_no_mysql_and_nothing_unneeded(own_pg_url: str) -> None:
    mods = audit_modules(own_pg_url)
    assert "psycopg" in mods and "dbwatch.targets.postgres" in mods  # it did audit
    assert "pymysql" not in mods
    assert not _never(mods), _never(mods)
    assert "importlib.metadata" not in mods  # psycopg's versions: targets/pgversions.py
    mysql_only = {
        "dbwatch.targets.mysql",
        "dbwatch.probes.mysql",
        "dbwatch.probes.innodb",
        "dbwatch.probes.my_locks",
        "dbwatch.checks.my101_lock_waits",
        "dbwatch.checks.my102_my201_innodb",
        "dbwatch.snapshot.my",  # the MySQL rows: built only for a MySQL section
    }
    assert not mods & mysql_only, mods & mysql_only
    assert not {m for m in mods if m.startswith("dbwatch.parsers")}  # the InnoDB parsers


def test_mysql_audit_imports_no_psycopg(own_my_url: str) -> None:
    mods = audit_modules(own_my_url)
    assert "pymysql" in mods and "dbwatch.targets.mysql" in mods
    assert not {m for m in mods if m.split(".")[0] in ("psycopg", "psycopg_binary")}
    assert not _never(mods), _never(mods)
    assert "cryptography" not in {m.split(".")[0] for m in mods}  # targets/mycrypto.py
    pg_only = {
        "dbwatch.targets.postgres",
        "dbwatch.probes.pg_mvcc",
        "dbwatch.probes.postgresql",
        "dbwatch.snapshot.pg",  # the PostgreSQL rows: built only for a PostgreSQL section
        "dbwatch.snapshot.pg_mvcc",
        "dbwatch.checks.models",
        "dbwatch.checks.pg_horizon",
    }
    assert not mods & pg_only, mods & pg_only


def test_mysql_culprit_path_imports_no_postgresql_rows() -> None:
    """The culprit and transaction-activity code runs for MySQL findings too (an audit of a
    server with a long transaction): importing it brings no PostgreSQL rows, whatever the
    audit finds (the audit test above sees it only when its server has such a session)."""
    code = (
        "import sys, dbwatch.checks.culprit, dbwatch.checks.txn_activity\n"
        "print(sorted(m for m in sys.modules if m.startswith('dbwatch.snapshot.pg')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout


REGISTERED = r"""
import collections, json, sys
from dbwatch.checks import load_checks
from dbwatch.probes import PROBES
from dbwatch.snapshot.sections import SECTIONS
probes = collections.defaultdict(set)
for p in PROBES.load().values():
    probes[p.engine].add(p.fn.__module__.rsplit(".", 1)[1])
checks = {n: c.fn.__module__.rsplit(".", 1)[1] for n, c in load_checks().items()}
reads = {n: {e: list(c.probes_for(e)) for e in ("postgresql", "mysql") if c.probes_for(e)}
         for n, c in load_checks().items()}
sections = {}
for m in SECTIONS.load().modules:  # each family's module: the keys defined in it
    for v in vars(sys.modules[m]).values():
        if any(v is k for k in SECTIONS.values()):
            sections[v.name] = m.rsplit(".", 1)[1]
print(json.dumps({"probes": {k: sorted(v) for k, v in probes.items()}, "checks": checks,
                  "sections": sections, "n_sections": len(SECTIONS), "reads": reads}))
"""


def test_module_tables_match_what_the_modules_register() -> None:
    """The tables that let an audit import only its own checks and engine's probes name
    exactly the modules registering them (in a fresh process: every module imported)."""
    from dbwatch.checks import CHECK_MODULES, CHECK_READS
    from dbwatch.probes.registry import ENGINE_MODULES
    from dbwatch.snapshot.sections import SECTION_MODULES

    out = subprocess.run(
        [sys.executable, "-c", REGISTERED], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["checks"] == CHECK_MODULES
    assert found["probes"] == {k: sorted(v) for k, v in ENGINE_MODULES.items()}
    assert found["sections"] == SECTION_MODULES
    assert found["n_sections"] == len(SECTION_MODULES)  # every registered section is listed
    # what each check probes, in its order (required, then optional), per engine
    assert found["reads"] == {n: {e: list(v) for e, v in r.items()} for n, r in CHECK_READS.items()}


SECTION = r"""
import sys
from dbwatch.snapshot.sections import SECTIONS, build
built = build(sys.argv[1], [] if sys.argv[1].endswith("sessions") else {})
print(type(built).__name__, sorted(m.rsplit(".", 1)[1] for m in SECTIONS.modules if m in sys.modules))
"""


def test_building_a_section_imports_its_own_family_only() -> None:
    """pg.sessions imports the pg family and nothing of MySQL; a name not in the table (no
    such section) imports every family and is kept as it is."""

    def run(name: str) -> str:
        out = subprocess.run(
            [sys.executable, "-c", SECTION, name], capture_output=True, text=True, cwd=ROOT
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert run("pg.sessions") == "Built ['pg']"
    everything = "['my', 'origin', 'pg', 'pg_mvcc', 'queues', 'settings', 'statements']"
    assert run("no.such_section") == "dict " + everything


LOADED = r"""
import sys
from dbwatch.checks import CHECKS, load_checks
got = load_checks(sys.argv[1:])
print(" ".join(sorted(n for n in sys.argv[1:] if n in got)), "|", len(CHECKS.registered()))
"""


def test_load_checks_by_name_registers_them_and_an_unknown_name_loads_all() -> None:
    def run(*names: str) -> tuple[list[str], int]:
        out = subprocess.run(
            [sys.executable, "-c", LOADED, *names], capture_output=True, text=True, cwd=ROOT
        )
        assert out.returncode == 0, out.stderr
        got, n = out.stdout.split("|")
        return got.split(), int(n)

    from dbwatch.checks import CHECK_MODULES

    got, n = run("pg_settings", "probe_failed")
    assert got == ["pg_settings", "probe_failed"] and n < len(CHECK_MODULES)
    got, n = run("pg_settings", "no_such_check")
    assert got == ["pg_settings"] and n == len(CHECK_MODULES)  # not in the table: all loaded


def test_a_session_finding_still_names_its_culprit(own_pg_url: str, tmp_path: Path) -> None:
    """The culprit machinery, imported only when needed, is imported and applied when a
    session finding is made (PG002 on a session idle in transaction in the test's database)."""
    import time

    import psycopg

    cfg = tmp_path / "dbwatch.toml"
    cfg.write_text('[rules.PG002]\nthresholds = { warning = "1s", critical = "1h" }\n')
    with psycopg.connect(own_pg_url, application_name="dbw-startup-idle") as idle:
        idle.execute("SELECT 1")  # autocommit off: idle in transaction from here
        time.sleep(1.5)
        out = subprocess.run(
            [sys.executable, "-c", MODULES, "audit", "--format", "json", "--select", "PG002",
             "--config", str(cfg), own_pg_url],
            capture_output=True, text=True, cwd=ROOT, timeout=120,
        )
    assert out.returncode == 0, out.stderr
    modules, rules, findings = out.stdout.split("\n")[:3]
    assert "PG002" in rules.split()
    assert set(CULPRIT) <= set(modules.split())
    found = [f for f in json.loads(findings) if f["rule"] == "PG002"]
    assert found and all("origin" in f["evidence"] for f in found), found


def test_registry_load_only_imports_some_of_its_modules() -> None:
    from dbwatch.registry import Registry

    reg: Registry[int] = Registry("thing", ("json", "csv"))
    assert reg.load_only(["json"]) == {} and not reg.loaded  # no discovery
    try:
        reg.load_only(["pickle"])
    except ValueError as exc:
        assert "pickle" in str(exc)
    else:
        raise AssertionError("a module not in the list was imported")
    assert len(reg) == 0 and reg.loaded  # reading it still imports the whole list


def test_the_cyclic_collector_stays_off_only_for_a_one_target_audit() -> None:
    """`dbwatch` starts with the collector off (cli._entry) and main() turns it back on unless
    the command is an audit of one named target without logs: the daemon, log analysis and
    several targets run with it (what is decided, not how fast)."""
    url = "postgresql://u@127.0.0.1:1/d"

    def stays_off(*argv: str) -> bool:
        return cli._gc_may_stay_off(cli.build_parser(list(argv)).parse_args(list(argv)))

    assert stays_off("audit", url)
    assert stays_off("audit", "--format", "nagios", url)
    assert not stays_off("audit", url, url)
    assert not stays_off("audit")  # the configured or default targets: maybe many
    assert not stays_off("audit", "--log", "x.log", url)
    assert not stays_off("watch")
    assert not stays_off("status")
    code = (
        "import gc, sys\nfrom dbwatch import cli\ngc.disable()\n"
        "cli.main(['rules'])\nprint(gc.isenabled())"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "True"  # main() turned it back on for another command


OVERLAP = r"""
import importlib.abc, json, sys, threading
import dbwatch.pipeline
from dbwatch.catalogue import load_catalogue
from dbwatch.checks import CHECK_MODULES
from dbwatch.config import Config
from dbwatch.evaluate import Selection
from dbwatch.pipeline import probe_target
from dbwatch.targets import spec_for
by_worker, before_probes = [], []
checks = {f"dbwatch.checks.{m}" for m in CHECK_MODULES.values()}
a_check_imported = threading.Event()


class Seen(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if threading.current_thread() is not threading.main_thread():
            by_worker.append(name)
        elif name in checks:
            a_check_imported.set()
        return None


run_probes = dbwatch.pipeline.run_probes


def probing(*args, **kwargs):
    # the checks imported so far; then probe once the main thread imports one (it does while
    # the worker probes: with no such import the wait times out, and the test fails)
    before_probes.extend(sorted(checks & set(sys.modules)))
    waited = a_check_imported.wait(30)
    return run_probes(*args, **kwargs) if waited else None


dbwatch.pipeline.run_probes = probing
sys.meta_path.insert(0, Seen())
cat, spec = load_catalogue(), spec_for(sys.argv[1], "t")
overlapped = probe_target(spec, cat, Config(), Selection(), overlap=True)
order = list(before_probes)
switch = sys.getswitchinterval()
plain = probe_target(spec, cat, Config(), Selection())
print(json.dumps({
    "by_worker": by_worker, "switch": switch, "before_probes": order,
    "sections": [sorted(r.snapshot.sections) for r in (overlapped, plain)],
    "ran": [sorted(r.evaluation.ran) for r in (overlapped, plain)],
    "unknown": [r.evaluation.unknown for r in (overlapped, plain)],
    "errors": [r.error for r in (overlapped, plain)],
}))
"""


def test_a_one_target_audit_probes_while_its_checks_import(
    own_pg_url: str, own_my_url: str
) -> None:
    """The probes run on a worker thread while the check modules import (probe_target with
    overlap; it opens the session while the main thread imports the probe modules): the
    same sections read and rules run as one after the other, the worker imports no module
    (everything it needs is imported before it connects or probes), and the switch
    interval is put back. The check modules import once the worker probes, not before
    (planning the rules imports none)."""
    for url in (own_pg_url, own_my_url):
        out = subprocess.run(
            [sys.executable, "-c", OVERLAP, url], capture_output=True, text=True, cwd=ROOT,
            timeout=120,
        )
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        assert got["by_worker"] == [], got["by_worker"]
        assert got["errors"] == [None, None]
        assert got["sections"][0] == got["sections"][1] and got["sections"][0]
        assert got["ran"][0] == got["ran"][1] and got["unknown"][0] == got["unknown"][1]
        assert got["switch"] == 0.005
        assert got["before_probes"] == [], got["before_probes"]


UNREACHABLE = r"""
import json, sys
from dbwatch.catalogue import load_catalogue
from dbwatch.config import Config
from dbwatch.evaluate import Selection
from dbwatch.pipeline import probe_target
from dbwatch.targets import spec_for
cat, spec = load_catalogue(), spec_for(sys.argv[1], "t")
got = [probe_target(spec, cat, Config(), Selection(), overlap=o) for o in (True, False)]
print(json.dumps({
    "errors": [r.error for r in got],
    "ran": [sorted(r.evaluation.ran) for r in got],
    "findings": [sorted((f.rule, f.subject) for f in r.evaluation.findings) for r in got],
    "switch": sys.getswitchinterval(),
}))
"""


def test_a_one_target_audit_of_an_unreachable_target_is_the_same_overlapped() -> None:
    """A session the worker cannot open: the same error and findings as without overlap."""
    for url in ("postgresql://postgres@127.0.0.1:1/x", "mysql://root@127.0.0.1:1/x"):
        out = subprocess.run(
            [sys.executable, "-c", UNREACHABLE, url], capture_output=True, text=True,
            cwd=ROOT, timeout=120,
        )
        assert out.returncode == 0, out.stderr
        got = json.loads(out.stdout)
        assert got["errors"][0] and got["errors"][0] == got["errors"][1], got["errors"]
        assert got["ran"][0] == got["ran"][1] and got["findings"][0] == got["findings"][1]
        assert got["switch"] == 0.005


def test_sql_files_listed_once_match_the_glob(tmp_path: Path) -> None:
    """probes/sqlfiles.py lists each SQL directory once instead of a Path.glob per name
    (startup): every name picks the files `{name}*.sql` picks, and the variants read are the
    files' texts."""
    from dbwatch.probes.sqlfiles import SQL_DIR, _sql_files, _sql_variants

    dirs = [d for d in SQL_DIR.iterdir() if d.is_dir()]
    assert dirs
    for d in dirs:
        for stem in {p.stem for p in d.glob("*.sql")}:
            globbed = sorted(p.name for p in d.glob(f"{stem}*.sql"))
            assert sorted(n for n in _sql_files(d) if n.startswith(stem)) == globbed
            texts = {t for _, _, t in _sql_variants(d.name, stem)}
            assert (d / f"{stem}.sql").read_text() in texts
    assert _sql_files(tmp_path / "none") == ()


def test_mysql_connection_tls_context_loads_no_ca_store_and_verifies_as_pymysql(
    own_my_url: str,
) -> None:
    """A MySQL/MariaDB connection's TLS context (PyMySQL's default 'preferred' mode) is made
    without the system CA store (~40 ms of CPU a connection): the same settings as the
    context PyMySQL makes itself (no certificate verified, no host name checked), and the
    connection still works."""
    import ssl

    import pymysql

    from dbwatch.targets.base import TargetSpec
    from dbwatch.targets.mysql import MyConnection, preferred_tls_context

    spec = TargetSpec(name="t", url=own_my_url, engine="mysql")
    mine = MyConnection.open(spec)
    try:
        assert mine.rows("SELECT 1 AS one") == [{"one": 1}]
        ctx = mine.conn.ctx
        assert ctx.cert_store_stats()["x509_ca"] == 0  # no CA store read
    finally:
        mine.conn.close()
    theirs = pymysql.connect(host="127.0.0.1", user="root", defer_connect=True).ctx
    assert theirs.cert_store_stats()["x509_ca"] > 0 or not ssl.get_default_verify_paths().cafile
    for c in (ctx, preferred_tls_context()):
        assert (c.verify_mode, c.check_hostname) == (theirs.verify_mode, theirs.check_hostname)
        assert (c.verify_mode, c.check_hostname) == (ssl.CERT_NONE, False)
        assert (c.protocol, c.options, c.verify_flags, c.minimum_version) == (
            theirs.protocol, theirs.options, theirs.verify_flags, theirs.minimum_version
        )


PSYCOPG_VERSIONS = r"""
import json, sys
import dbwatch.targets.postgres
import psycopg, psycopg_binary
got = [psycopg.__version__, psycopg_binary.__version__, "importlib.metadata" in sys.modules,
       psycopg.version.__version__, psycopg_binary.version.__version__]
from importlib import metadata
print(json.dumps(got + [metadata.version("psycopg"), metadata.version("psycopg-binary")]))
"""


def test_psycopg_versions_are_importlib_metadatas_without_importing_it() -> None:
    """targets/pgversions.py: psycopg imported through dbwatch has the versions
    importlib.metadata gives, and importlib.metadata is not imported for them."""
    out = subprocess.run([sys.executable, "-c", PSYCOPG_VERSIONS], capture_output=True,
                         text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    pg, binary, imported, pg_mod, binary_mod, pg_meta, binary_meta = json.loads(out.stdout)
    assert imported is False
    assert pg == pg_mod == pg_meta and binary == binary_mod == binary_meta


def test_pgversions_reads_what_importlib_metadata_finds_or_nothing(tmp_path: Path) -> None:
    """The first sys.path entry holding the project's dist-info answers, as for
    importlib.metadata; anything ambiguous (two candidates, an egg-info) answers None, and
    psycopg then imports its version module as it always did."""
    from importlib import metadata

    from dbwatch.targets.pgversions import _metadata_version

    first, second = tmp_path / "first", tmp_path / "second"
    for d, version in ((first, "9.8.7"), (second, "1.2.3")):
        (d / f"psycopg_binary-{version}.dist-info").mkdir(parents=True)
        (d / f"psycopg_binary-{version}.dist-info" / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: psycopg-binary\nVersion: {version}\n\nbody\n"
        )
    saved = sys.path[:]
    try:
        sys.path[:0] = [str(first), str(second)]
        assert _metadata_version("psycopg-binary") == "9.8.7"
        assert metadata.version("psycopg-binary") == "9.8.7"
        (first / "Psycopg.Binary-0.1.egg-info").mkdir()  # a second candidate in that entry
        assert _metadata_version("psycopg-binary") is None
        sys.path[:] = [str(second), *saved]
        assert _metadata_version("psycopg_binary") == metadata.version("psycopg-binary") == "1.2.3"
    finally:
        sys.path[:] = saved


def test_pymysql_loads_cryptography_only_for_an_rsa_password_exchange() -> None:
    """targets/mycrypto.py: importing the MySQL target imports no cryptography; PyMySQL's
    RSA password encryption (sha256_password / caching_sha2_password without TLS) still
    encrypts what the server's private key decrypts to the scrambled password."""
    code = (
        "import sys\nimport dbwatch.targets.mysql\nimport pymysql._auth as auth\n"
        "print('cryptography' in sys.modules)\n"
        "from cryptography.hazmat.primitives import hashes, serialization\n"
        "from cryptography.hazmat.primitives.asymmetric import padding, rsa\n"
        "key = rsa.generate_private_key(public_exponent=65537, key_size=2048)\n"
        "pem = key.public_key().public_bytes(serialization.Encoding.PEM,\n"
        "    serialization.PublicFormat.SubjectPublicKeyInfo)\n"
        "salt = b'0123456789abcdefghij'\n"
        "sent = auth.sha2_rsa_encrypt(b'secret', salt, pem)\n"
        "pad = padding.OAEP(mgf=padding.MGF1(algorithm=hashes.SHA1()),\n"
        "    algorithm=hashes.SHA1(), label=None)\n"
        "print(key.decrypt(sent, pad) == auth._xor_password(b'secret\\0', salt))\n"
        "print(auth._have_cryptography)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["False", "True", "True"]


def test_pymysql_without_cryptography_fails_the_rsa_exchange_as_it_always_did() -> None:
    code = (
        "import sys\nimport dbwatch.targets.mysql\nimport pymysql._auth as auth\n"
        "sys.modules['cryptography'] = None  # not installed\n"
        "try:\n    auth.sha2_rsa_encrypt(b'secret', b'0' * 20, b'')\n"
        "except RuntimeError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "'cryptography' package is required for sha256_password" in out.stdout
