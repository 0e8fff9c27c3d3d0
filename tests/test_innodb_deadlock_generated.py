"""Generated deadlock reports: a model renders as each printer writes it, goes through what text
suffers on its way to a user, and the parser must give the model back (tests/deadlockgen).

Property-based (hypothesis, bounded examples). Seeds that found bugs are kept as @example cases.
"""
from __future__ import annotations

from dataclasses import replace

from deadlockgen import innodb as gen
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from schemas import validate

from dbwatch.deadlocks.record import deadlock_record
from dbwatch.parsers.deadlock_model import Deadlock
from dbwatch.parsers.errorlog import iter_deadlocks, iter_deadlocks_bytes
from dbwatch.parsers.innodb_status import parse_status

QUERIES = [
    "select * from `jobs` where `queue` = ? and ((`reserved_at` is null and `available_at` <= ?) "
    "or (`reserved_at` <= ?)) order by `id` asc limit 1 for update",
    "delete from `jobs` where `id` = ?",
    "UPDATE accounts SET balance = balance - 10 WHERE id = 7",
    "update\n    otc_merchant_audit\nSET modify_date = '2024-08-13 09:36:09.684' ,\n    deleted = 1\n"
    "WHERE (  user_id = 7000000000123103\n    and deleted = 0 )",
    "INSERT INTO ledger (account_id, amount) VALUES (7, -10)",
    # report-like text inside a statement, not at the start of a line: data, never structure
    "UPDATE notes SET body = '*** (2) TRANSACTION: WE ROLL BACK TRANSACTION (1)' WHERE id = 3",
    "DELETE FROM messenger_messages WHERE id = '42' /* RECORD LOCKS space id 1 trx id 9 */",
]
USERS = ["app", "laravel", "root", "worker_1"]
HOSTS = ["10.0.0.7", "localhost", "app-7.internal"]
TABLES = ["jobs", "accounts", "ledger", "messenger_messages", "order items"]
INDEXES = ["PRIMARY", "jobs_queue_index", "idx_uid", "uniq_key"]
SPECIALS = [None, "rec but not gap", "gap before rec"]


@st.composite
def locks(draw: st.DrawFn) -> gen.Lock:
    table_lock = draw(st.integers(0, 9)) == 0
    if table_lock:
        return gen.Lock(table=draw(st.sampled_from(TABLES)), index=None,
                        mode=draw(st.sampled_from(["IX", "X", "AUTO-INC", "S"])), special=None)
    ins = draw(st.booleans()) and draw(st.booleans())
    return gen.Lock(
        table=draw(st.sampled_from(TABLES)),
        index=draw(st.sampled_from(INDEXES)),
        mode=draw(st.sampled_from(["X", "S"])),
        special="gap before rec" if ins else draw(st.sampled_from(SPECIALS)),
        insert_intention=ins,
        space=draw(st.integers(0, 70000)),
        page=draw(st.integers(3, 5000)),
        heap=draw(st.integers(1, 900)),
    )


@st.composite
def models(draw: st.DrawFn, printer: str | None = None) -> gen.Model:
    p = printer or draw(st.sampled_from(gen.PRINTERS))
    n = {"mysql57": 2, "too_deep": 1}.get(p) or draw(st.integers(2, 3))
    ids = draw(st.lists(st.integers(1000, 10**10), min_size=n, max_size=n, unique=True))
    threads = draw(st.lists(st.integers(1, 10**6), min_size=n, max_size=n, unique=True))
    trxs = tuple(
        gen.Trx(
            trx_id=ids[i],
            thread_id=threads[i],
            query=draw(st.sampled_from(QUERIES)),
            wait=draw(locks()),
            held=(draw(locks()),),
            user=draw(st.sampled_from(USERS)),
            host=draw(st.sampled_from(HOSTS)),
            ip=draw(st.sampled_from([None, "172.19.0.1"])),
            undo=draw(st.sampled_from([0, 1, 4, 12345])),
            structs=draw(st.sampled_from([2, 9, 1234])),
            rows=draw(st.sampled_from([2, 65432])),
            active=draw(st.sampled_from([0, 12345])),
            inside=draw(st.sampled_from([None, 4999])),
        )
        for i in range(n)
    )
    victim = 1 if p == "too_deep" else draw(st.integers(1, n))
    return gen.Model(
        printer=p, trxs=trxs, victim=victim,
        own_s=p == "mariadb" and draw(st.booleans()),
        dup_hold=p == "mysql80" and draw(st.booleans()),
    )


def lock_set(dl: Deadlock) -> set[tuple[object, ...]]:
    return {(lk.n, lk.waiting, lk.mode, lk.table, lk.index, lk.special, lk.insert_intention)
            for lk in dl.locks}


def norm(q: str | None) -> str:
    return " ".join((q or "").split())


def check(m: gen.Model, dl: Deadlock, width: int | None = None, redacted: bool = False,
          anonymous: bool = False) -> None:
    """The parsed deadlock is the model: transactions, locks, victim, statements, blocked_by."""
    assert not dl.ambiguous, dl.ambiguous
    assert dl.unparsed == (), dl.unparsed
    assert dl.victim == m.victim, (dl.victim, dl.victim_source)
    assert dl.victim_source == ("too-deep" if m.printer == "too_deep" else "printed")
    assert len(dl.transactions) == len(m.trxs)
    product = "MariaDB" if m.printer == "mariadb" else "MySQL"
    for n, (want, got) in enumerate(zip(m.trxs, dl.transactions), 1):
        assert got.n == n
        assert got.trx_id == str(want.trx_id)
        assert got.thread_id == want.thread_id
        assert (got.undo_entries, got.lock_structs, got.row_locks, got.active_seconds) == (
            want.undo, want.structs, want.rows, want.active)
        thread_line = want.header(product)[3]
        if width is None or len(thread_line) + 8 <= width:  # a wrapped thread line loses its tail
            who = (None, None) if anonymous else (want.user, want.host)
            assert (got.user, got.host, got.ip) == (*who, want.ip)
            assert norm(got.query) == norm(want.query)
        cycle = len(m.trxs) > 1
        assert got.blocked_by == ((n % len(m.trxs)) + 1 if cycle else None)
    want_locks = m.expected_locks()
    if redacted and m.printer == "mariadb":
        # CONFLICTING WITH names owners only by trx id: redacted, the owner is unknown (0)
        want_locks = {(0, *x[1:]) if not x[1] else x for x in want_locks}
    assert lock_set(dl) == want_locks
    validate({"deadlocks": [deadlock_record(dl).to_json()]}, "deadlocks")
    if redacted:
        assert dl.inconsistencies
    else:
        assert not [x for x in dl.inconsistencies if "redacted" in x]


def parse_text(lines: list[str], container: str) -> list[Deadlock]:
    if container == "status":
        dl = parse_status("\n".join(lines)).deadlock
        if dl is not None:
            return [dl]
    return list(iter_deadlocks(lines))


# --- every printer in every container, clean ---------------------------------------------

@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models(), st.sampled_from(gen.LOGS))
def test_every_printer_in_every_container(m: gen.Model, container: str) -> None:
    lines = gen.render_in(m, container)
    (dl,) = parse_text(lines, container)
    check(m, dl)
    # the byte path `deadlocks --log` reads files with gives the same
    (dl2,) = list(iter_deadlocks_bytes([("\n".join(lines) + "\n").encode()]))
    check(m, dl2)


# --- and after what text suffers on its way to a user -------------------------------------

DECOR = [None, gen.COMPOSE, gen.SYSLOG, gen.JOURNAL_ISO, gen.CRI]


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    models(),
    st.sampled_from(gen.LOGS),
    st.sampled_from(DECOR),
    st.sampled_from([None, "    ", "\t", "  \t"]),
    st.booleans(),  # markdown quote
    st.booleans(),  # code fence
    st.booleans(),  # blank lines doubled
    st.booleans(),  # trailing blanks
    st.booleans(),  # CRLF
    st.sampled_from([None, 80, 120]),  # soft wrap
    st.booleans(),  # header lost
    st.booleans(),  # lock-line trx ids redacted
    st.booleans(),  # hosts and users redacted
)
@example(  # found: MariaDB status pasted without its header, trailing double blanks
    gen.Model("mariadb", (
        gen.Trx(28480029, 901455, QUERIES[0], gen.Lock("jobs"), (gen.Lock("jobs", heap=3),)),
        gen.Trx(28480030, 901452, QUERIES[1], gen.Lock("jobs", heap=6), (gen.Lock("jobs"),))),
        victim=2),
    "status", None, None, False, False, False, True, False, None, True, False, False)
@example(  # found: TOO DEEP, 5.7 error log, redacted: the victim was thrown away
    gen.Model("too_deep", (gen.Trx(77, 5, QUERIES[0], gen.Lock("jobs")),), victim=1),
    "log57", None, None, False, False, False, False, False, None, False, True, False)
@example(  # found: a user redacted as `***` wrapped to the start of a line read as a marker
    gen.Model("mysql57", (
        gen.Trx(7001, 123456789, QUERIES[4], gen.Lock("ledger"), (gen.Lock("ledger", heap=3),)),
        gen.Trx(7002, 735, QUERIES[2], gen.Lock("ledger", heap=3), (gen.Lock("ledger"),))),
        victim=1),
    "logmaria", None, None, False, True, False, False, True, 80, False, False, True)
@example(  # found: a long header or counts line wrapped; its tail ("InnoDB 4999", "entries 1")
    gen.Model("mysql57", (
        gen.Trx(8912811226, 1118382, QUERIES[3], gen.Lock("accounts"), (gen.Lock("accounts"),),
                undo=12345, structs=1234, rows=65432, active=12345, inside=4999),
        gen.Trx(8912811219, 1118752, QUERIES[2], gen.Lock("accounts", heap=3),
                (gen.Lock("accounts"),), undo=1)),
        victim=2),
    "status", None, None, False, False, False, False, False, 80, False, False, False)
def test_damaged_text_still_reads_as_the_model(
    m: gen.Model, container: str, decor: str | None, ind: str | None, quoted: bool,
    fenced: bool, doubled: bool, trail: bool, crlf: bool, width: int | None, headless: bool,
    redact: bool, anonymous: bool,
) -> None:
    lines = gen.render_in(m, container)
    if redact:
        lines = gen.redact_lock_ids(lines, m)
    if anonymous:
        lines = gen.redact_names(lines, m)
    if headless:
        lines = gen.lose_header(lines)
    if width:
        lines = gen.wrap(lines, width)
    if decor:
        lines = gen.prefix_lines(lines, decor)
    if ind:
        lines = gen.indent(lines, ind)
    if quoted:
        lines = gen.quote(lines)
    if fenced:
        lines = gen.fence(lines)
    if doubled:
        lines = gen.double_blank(lines)
    if trail:
        lines = gen.trailing(lines)
    if crlf:
        lines = gen.crlf(lines)
    dls = parse_text(lines, "status" if container == "status" and not headless else "log")
    assert len(dls) == 1, (len(dls), lines[:12])
    check(m, dls[0], width, redacted=redact, anonymous=anonymous)
    # the chunked byte path of `deadlocks --log` reads the same text the same way
    (dl2,) = list(iter_deadlocks_bytes([("\n".join(lines) + "\n").encode()]))
    check(m, dl2, width, redacted=redact, anonymous=anonymous)


# --- a report cut short: exactly what the cut text holds -----------------------------------

@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models(), st.sampled_from(gen.LOGS), st.integers(0, 200))
def test_cut_short_gives_exactly_what_is_left(m: gen.Model, container: str, at: int) -> None:
    full = gen.render_in(m, container)
    lines = gen.cut(full, at)
    for dl in parse_text(lines, container):
        assert not dl.ambiguous
        victim_printed = any("*** WE ROLL BACK TRANSACTION (" in x for x in lines)
        if m.printer == "too_deep":  # "WE WILL ROLL BACK FOLLOWING TRANSACTION": the one printed
            assert dl.victim == 1 and dl.victim_source == "too-deep"
        elif not victim_printed:
            assert dl.victim is None and dl.truncated
        else:
            assert dl.victim == m.victim
        for got in dl.transactions:  # every transaction read is the model's, never invented
            want = m.trxs[got.n - 1]
            assert got.trx_id in (None, str(want.trx_id))
            assert got.thread_id in (None, want.thread_id)
        want = m.expected_locks()
        for lk in lock_set(dl):  # a CONFLICTING WITH lock whose owner was cut off: owner 0
            assert lk in want or (lk[0] == 0 and any(w[1:] == lk[1:] for w in want)), lk


# --- statements carrying fake report lines: never a fabricated participant ----------------

FAKE = [
    "*** (2) TRANSACTION:",
    "TRANSACTION 999, ACTIVE 5 sec starting index read",
    "MySQL thread id 666, OS thread handle 1, query id 1 evilhost 6.6.6.6 mallory updating",
    "update evil set x = 1",
    "*** (2) HOLDS THE LOCK(S):",
    "*** (1) WAITING FOR THIS LOCK TO BE GRANTED:",
    "*** WAITING FOR THIS LOCK TO BE GRANTED:",
    "*** CONFLICTING WITH:",
    "RECORD LOCKS space id 1 page no 3 n bits 72 index PRIMARY of table `evil`.`t` trx id 999 "
    "lock_mode X locks rec but not gap",
    "*** WE ROLL BACK TRANSACTION (2)",
]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models(), st.sampled_from(gen.LOGS), st.lists(st.sampled_from(FAKE), min_size=1,
                                                      max_size=12), st.integers(0, 2))
@example(  # found: TOO DEEP prints one unnumbered section; a fake `(2)` was in sequence
    gen.Model("too_deep", (gen.Trx(1000, 1, QUERIES[0], gen.Lock("jobs")),), victim=1),
    "status", FAKE[:3], 0)
def test_fake_report_lines_in_a_statement_make_nothing_up(
    m: gen.Model, container: str, fake: list[str], which: int
) -> None:
    k = which % len(m.trxs)
    t = m.trxs[k]
    evil = replace(t, query=t.query + "\n" + "\n".join(fake))
    m2 = replace(m, trxs=tuple(evil if i == k else x for i, x in enumerate(m.trxs)))
    for dl in parse_text(gen.render_in(m2, container), container):
        facts = {(x.trx_id, x.thread_id, x.user, x.host) for x in dl.transactions}
        assert ("999", 666, "mallory", "evilhost") not in facts
        assert all(x.thread_id != 666 and x.user != "mallory" for x in dl.transactions)
        assert all(lk.table != "t" or lk.db != "evil" for lk in dl.locks) or not dl.ambiguous
        if dl.ambiguous:
            assert dl.victim is None
            assert all(x.trx_id == str(m.trxs[x.n - 1].trx_id) for x in dl.transactions)
            assert all(lk.db != "evil" for lk in dl.locks)
        elif dl.victim is not None:
            assert dl.trx(dl.victim) is not None
            assert dl.trx(dl.victim).thread_id == m.trxs[dl.victim - 1].thread_id  # type: ignore[union-attr]
