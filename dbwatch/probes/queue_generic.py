"""Queue tables no library module knows, read by the one queue model (queues/roles.py): the
role columns composed into bounded queries (two windows of rows by an indexed order column),
the status values read from the data and mapped by meaning, and honest DW002 gaps for what a
table cannot tell. Catalog names are quoted by the driver's rules; values are bound.
"""

from __future__ import annotations

from ..errors import ProbeError
from ..queues.recognition import unjudged
from ..queues.roles import queue_named, type_kind
from ..queues.statuses import StatusMap, map_statuses
from ..snapshot import CoverageGap
from ..snapshot.values import as_row, opt_float, opt_int, to_str
from ..targets import Connection
from ..targets.quoting import my_ident_for_format, pg_ident_for_format
from .queue_shape import GenericTable, enum_labels, gap, question
from .queue_sql import compose
from .results import jsonable
from .sqlfiles import sql

WINDOW = 10_000  # rows per window (oldest and newest by the order column): <= 20,000 read
VALUES = 50  # status values read per table
GROUPS = 500
ASPECTS = ("summary", "reserved", "repeated", "failed")
SUCCESS, FAILURE = "success", "failed"  # a boolean success column's two values
NONE = "-dbwatch-no-value-"
SENTINEL = "9000-01-01"  # times from here on are placeholders, not times  # keeps a bound list non-empty (MySQL `IN ()` is a syntax error)


def _q(engine: str, *parts: str) -> str:
    if engine == "postgresql":
        return pg_ident_for_format(*parts)
    return my_ident_for_format(*parts)


def _epoch(engine: str, col: str, ctype: str) -> str:
    q = _q(engine, col)
    if type_kind(ctype) == "time":
        # timestamp without time zone is read in the session's time zone (as DEFAULT now() wrote
        # it); a far-future time is a sentinel for "not set" (django-tasks' run_after = the
        # maximum date, `infinity`): no time, so the row falls back to its created-at
        kept = f"CASE WHEN {q} < '{SENTINEL}' THEN {q} END"
        return (
            f"extract(epoch FROM ({kept})::timestamptz)"
            if engine == "postgresql"
            else f"UNIX_TIMESTAMP({kept})"
        )
    # integers: epoch seconds, or milliseconds past year 5138; 0 (or less) is "not set"
    cast = "::float8" if engine == "postgresql" else ""
    return f"(CASE WHEN {q} > 100000000000 THEN {q} / 1000.0 WHEN {q} > 0 THEN {q} END){cast}"


def _text(engine: str, col: str, width: int, alias: str = "") -> str:
    q = f"{alias}{_q(engine, col)}"
    if engine == "postgresql":
        return f"left({q}::text, {width})"
    # CHAR(n), not CHAR: a sized string keeps MariaDB's temporary tables in memory
    return f"CAST({q} AS CHAR({width}))"


def _head(engine: str, col: str, alias: str = "") -> str:
    if engine == "postgresql":
        return f"split_part({_text(engine, col, 400, alias)}, chr(10), 1)"
    return f"SUBSTRING_INDEX({_text(engine, col, 300, alias)}, CHAR(10), 1)"


def fragments(engine: str, g: GenericTable) -> dict[str, str]:
    """Each role's SQL expression (typed NULL where the table lacks the role) and the window's
    order; the projection `cols` every generic query reads its rows through."""
    pg = engine == "postgresql"
    roles, types = g.reading.roles, g.types
    null = (
        {"e": "NULL::float8", "t": "NULL::text", "i": "NULL::bigint"}
        if pg
        else dict.fromkeys("eti", "NULL")
    )

    def epoch(role: str) -> str:
        col = roles.get(role)
        return _epoch(engine, col, types.get(col, "")) if col else null["e"]

    def present(*rs: str) -> str:
        conds = [f"{_q(engine, roles[r])} IS NOT NULL" for r in rs if r in roles]
        if "visible" in rs and "visible" in roles:  # a hidden row is held by a consumer
            conds.append(f"{_q(engine, roles['visible'])} = {'FALSE' if pg else '0'}")
        if "visible" in rs and "claimed_flag" in roles:  # a flag set while a worker holds it
            conds.append(f"{_q(engine, roles['claimed_flag'])} = {'TRUE' if pg else '1'}")
        return "(" + " OR ".join(conds) + ")" if conds else "FALSE"

    def num(role: str) -> str:
        col = roles.get(role)
        if not col:
            return null["i"]
        if role == "timeout" and type_kind(types.get(col, "")) == "interval":
            return f"extract(epoch FROM {_q(engine, col)})"
        return f"({_q(engine, col)}){'::bigint' if pg else ''}"

    cols = {
        "queue": f"coalesce({_text(engine, roles['queue'], 255)}, '(none)')"
        if "queue" in roles
        else "'(none)'",
        "status": _text(engine, roles["status"], 64) if "status" in roles else null["t"],
        "run_e": epoch("runnable_at"),
        "claim_e": epoch("claimed_at"),
        "claimed": present("claimed_at", "claimed_by", "visible"),
        "hb_e": epoch("heartbeat"),
        "exp_e": epoch("claim_expires_at"),
        "fin_e": epoch("finished_at"),
        "fin": present("finished_at"),
        "fail_e": epoch("failed_at"),
        "upd_e": epoch("updated_at"),
        "created_e": epoch("created_at"),
        "att": num("attempts"),
        "max_att": num("max_attempts"),
        "tmo": num("timeout"),
    }
    if "status" not in roles and "succeeded" in roles:
        # a boolean outcome read as the two status words it means
        ok = _q(engine, roles["succeeded"])
        yes, no = (ok, f"NOT {ok}") if pg else (f"{ok} <> 0", f"{ok} = 0")
        cols["status"] = f"CASE WHEN {yes} THEN '{SUCCESS}' WHEN {no} THEN '{FAILURE}' END"
    if not pg:
        cols["queue"] = cols["queue"].replace("coalesce", "COALESCE")
    order = g.order()
    err = (lambda a: _head(engine, roles["error"], a)) if "error" in roles else None
    kind = (lambda a: _text(engine, roles["job_type"], 255, a)) if "job_type" in roles else None
    texts: dict[str, str] = {"join": ""}
    if order and order == roles.get("job_id"):
        # the texts of the few rows an aspect keeps, by their key: the windows stay narrow
        # (MariaDB keeps them in memory) and no row's text is read twice
        cols["k"] = _q(engine, order)
        texts = {
            "join": f"JOIN {_q(engine, g.schema, g.table)} t ON t.{_q(engine, order)} = r.k",
            "err": err("t.") if err else null["t"],
            "kind": kind("t.") if kind else null["t"],
        }
    else:
        cols["err"] = err("") if err else null["t"]
        cols["kind"] = kind("") if kind else null["t"]
        texts |= {"err": "r.err", "kind": "r.kind"}
    return texts | {
        "cols": ", ".join(f"{expr} AS {name}" for name, expr in cols.items()),
        "order": _q(engine, order) if order else "NULL",
        "order_desc": f"{_q(engine, order)} DESC" if order else "NULL",
        "second": "%(window)s" if order else "0",
        "status": _q(engine, roles["status"]) if "status" in roles else "NULL",
    }


def window_text(g: GenericTable) -> str:
    order = g.order()
    if order:
        return f"the oldest and the newest {WINDOW} rows by {order} (indexed)"
    return f"the first {WINDOW} rows the server returned (no index on an id or time to order by)"


def _bind(statuses: StatusMap | None, claim_decides: bool) -> dict[str, object]:
    def values(state: str) -> object:
        vals = [NONE, *(statuses.values(state) if statuses else ())]
        return vals

    out: dict[str, object] = {s: values(s) for s in ("waiting", "running", "failed", "done")}
    out["claim_decides"] = claim_decides
    return out


def _statuses(
    conn: Connection, engine: str, g: GenericTable, frags: dict[str, str]
) -> tuple[StatusMap | None, str]:
    """The status column's values: the enum's labels, else every value by a skip scan of an index
    that leads with it, else those in the windows (said in evidence)."""
    col = g.reading.roles.get("status")
    if col is None and "succeeded" in g.reading.roles:
        ok = g.reading.roles["succeeded"]
        return map_statuses([SUCCESS, FAILURE]), f"the boolean {ok} (true: done, false: failed)"
    if col is None:
        return None, ""
    labels = g.reading.enums.get(col.lower()) or enum_labels(g.types.get(col, ""))
    if labels:
        return map_statuses(list(labels)), "the column's enum labels"
    indexed = col.lower() in g.indexed
    if indexed and engine != "postgresql":
        values = _my_index_values(conn, g, frags)
    else:
        name = "queue_generic_values_indexed" if indexed else "queue_generic_values"
        idents: dict[str, tuple[str, ...]] = {"table": (g.schema, g.table)}
        text = compose(engine, sql(engine, name, conn.version), idents, frags)
        rows = conn.rows(text, {"window": WINDOW, "values": VALUES})
        values = [to_str(as_row(r).get("value")) for r in rows]
    where = (
        "every distinct value (skip scan of its index)"
        if indexed
        else f"the values in {window_text(g)}"
    )
    return map_statuses(values, observed=True), where


def _my_index_values(conn: Connection, g: GenericTable, frags: dict[str, str]) -> list[str]:
    """MySQL/MariaDB: every distinct status value (at most VALUES) by one index dive each, in
    the index's order (the column's collation, as GROUP BY would merge them)."""
    idents: dict[str, tuple[str, ...]] = {"table": (g.schema, g.table)}
    first, then = (
        compose("mysql", sql("mysql", f"queue_generic_values_{n}", conn.version), idents, frags)
        for n in ("first", "next")
    )
    values: list[str] = []
    after: object = None
    while len(values) < VALUES:
        rows = conn.rows(first, {}) if after is None else conn.rows(then, {"after": after})
        row = as_row(rows[0]) if rows else None
        if row is None or row.get("raw") is None:
            break
        values.append(to_str(row.get("value")))
        after = row.get("raw")
    return values


def probe_generic(
    conn: Connection, engine: str, g: GenericTable, base: dict[str, object]
) -> tuple[dict[str, object], list[CoverageGap]]:
    """The generic model's bounded queries of one table: the section entry (in the shape every
    queue table has: summary / reserved / repeated / failed) and its DW002 gaps."""
    frags = fragments(engine, g)
    roles = g.reading.roles
    out = dict(base)
    out.update(
        kind="generic",
        library="generic",
        scale_depth=False,
        window=2 * WINDOW if g.order() else WINDOW,
        failed_window=2 * WINDOW if g.order() else WINDOW,
        groups=GROUPS,
        roles=sorted(roles.items()),
        window_text=window_text(g),
    )
    try:
        statuses, where = _statuses(conn, engine, g, frags)
    except ProbeError as exc:
        return out | _failed(g, exc, "status values"), []
    if statuses is not None:
        out["statuses"] = sorted((v, s) for s, vs in statuses.states.items() for v in vs)
        out["unmapped"] = list(statuses.unmapped)
        out["statuses_from"] = where
    if g.reading.needs_status and (
        statuses is None
        or not statuses.queue_like
        or (g.reading.strict_status and not statuses.queue_only)
    ):
        # no claim and no status only a queue has: a question where the name or attempts
        # say queue, else an application's record (an order can be pending and scheduled)
        if queue_named(g.table) or "attempts" in roles:
            return {}, [
                question(g, statuses, "no claim column, and no status value only a queue has")
            ]
        return {}, []
    gaps = []
    missing = unjudged(roles, statuses)
    if g.reading.results:
        # finished runs only: nothing waits or is claimed here (its queue table says that)
        missing = {k: v for k, v in missing.items() if k in ("failed", "states")}
    if missing:
        gaps.append(gap(g, missing))
    out["unjudged"] = sorted(missing)
    claim_decides = statuses is None or not statuses.values("running")
    params: dict[str, object] = {
        "window": WINDOW,
        "groups": GROUPS,
        "horizon": base.get("horizon") or 7 * 86400,
    } | _bind(statuses, claim_decides)
    rows_sql = compose(
        engine,
        sql(engine, "queue_generic_rows", conn.version),
        {"table": (g.schema, g.table)},
        frags,
    )
    # an aspect the table cannot tell is not queried: its section entry stays None (the rule
    # judges nothing there) and the gap above says why
    skip = {"backlog": "summary", "stuck": "reserved", "failed": "failed"}
    aspects = [a for a in ASPECTS if a not in {skip[k] for k in missing if k in skip}]
    if g.reading.results:
        aspects = [a for a in aspects if a == "failed"]
    for aspect in aspects:
        text = compose(
            engine,
            sql(engine, f"queue_generic_{aspect}", conn.version),
            {},
            {"rows": rows_sql} | {k: frags[k] for k in ("join", "err", "kind")},
        )
        try:
            rows = [jsonable(r) for r in conn.rows(text, params)]
        except ProbeError as exc:
            return out | _failed(g, exc, aspect), gaps
        if aspect == "summary":
            out["summary"], out["states"] = fold_summary(rows)
        else:
            out[aspect] = rows
    return out, gaps


def _failed(g: GenericTable, exc: ProbeError, what: str) -> dict[str, object]:
    denied = exc.privilege or "denied" in exc.detail.lower()
    return {
        "error": f"{g.key}: {what}: {exc.detail}",
        "privilege": denied,
    }


def fold_summary(
    rows: list[dict[str, object]],
) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """Per (queue, state) rows -> the per-queue summary every queue table has, plus the state
    counts per queue for evidence."""
    queues: dict[str, dict[str, object]] = {}
    states: dict[str, dict[str, int]] = {}
    for r in rows:
        q = to_str(r.get("queue")) or "(none)"
        st = to_str(r.get("state"))
        n = opt_int(r.get("n")) or 0
        age = opt_float(r.get("oldest_seconds"))
        s = queues.setdefault(
            q,
            {
                "queue": q,
                "total": 0,
                "available": 0,
                "oldest_available_seconds": None,
                "reserved": 0,
                "oldest_reserved_seconds": None,
                "repeated": 0,
                "max_attempts": None,
            },
        )
        states.setdefault(q, {})[st] = n
        if st in ("waiting", "scheduled", "running", "unmapped"):
            s["total"] = int(str(s["total"])) + n
            s["repeated"] = int(str(s["repeated"])) + (opt_int(r.get("repeated")) or 0)
            m = opt_int(r.get("max_attempts"))
            if m is not None:
                s["max_attempts"] = max(m, opt_int(s["max_attempts"]) or 0)
        if st == "waiting":
            s["available"] = n
            s["oldest_available_seconds"] = age
        elif st == "running":
            s["reserved"] = n
            s["oldest_reserved_seconds"] = age
    return list(queues.values()), [{"queue": q, "states": v} for q, v in sorted(states.items())]
