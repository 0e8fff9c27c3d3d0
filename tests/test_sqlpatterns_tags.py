"""Framework tags in SQL comments (issue 23): sqlcommenter and marginalia / Rails query-log
tags, as the frameworks print them; hostile text stays bounded, linear and inert."""

from __future__ import annotations

import time
from urllib.parse import quote

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbwatch.sqlpatterns.tags import (
    MAX_INPUT,
    MAX_TAGS,
    MAX_VALUE,
    parse_tags,
    without_comments,
)
from dbwatch.targets.secrets import register_secret


def _sqlcommenter(**kv: str) -> str:
    """The spec's serialisation: url-encoded key and value, ' escaped, sorted, quoted."""
    parts = [
        f"{quote(k, safe='')}='{quote(v, safe='').replace(chr(39), chr(92) + chr(39))}'"
        for k, v in sorted(kv.items())
    ]
    return "/*" + ",".join(parts) + "*/"


def test_sqlcommenter_at_the_end_decoded() -> None:
    sql = "SELECT * FROM orders WHERE id = %s FOR UPDATE " + _sqlcommenter(
        controller="orders",
        action="create",
        framework="django:4.2",
        route="/orders/<int:pk>/",
        traceparent="00-5bd66ef5095369c7b0d1f8f4bd33716a-c532cb4098ac3dd2-01",
    )
    t = parse_tags(sql)
    assert t.format == "sqlcommenter"
    assert t.named("controller") == "orders" and t.named("action") == "create"
    assert t.named("framework") == "django:4.2"
    assert t.named("route") == "/orders/<int:pk>/"
    assert t.others() == {"traceparent": "00-5bd66ef5095369c7b0d1f8f4bd33716a-c532cb4098ac3dd2-01"}
    assert t.phrase() == "orders#create"


def test_marginalia_and_rails_query_log_tags() -> None:
    t = parse_tags("SELECT 1 /*application:Shop,controller:orders,action:create*/")
    assert t.format == "marginalia" and t.phrase() == "Shop orders#create"
    job = parse_tags("/*application:Shop,job:SendInvoiceJob*/ UPDATE invoices SET sent = true")
    assert job.phrase() == "Shop, job SendInvoiceJob"
    # Rails 7 with the sqlcommenter formatter, and marginalia's line tag (':' in the value)
    rails = parse_tags("SELECT 1 /*action='show',application='Shop',controller='orders'*/")
    assert rails.format == "sqlcommenter" and rails.phrase() == "Shop orders#show"
    line = parse_tags("SELECT 1 /*app:Shop,line:/app/models/order.rb:12:in `lock!'*/")
    assert line.named("application") == "Shop"
    assert line.others() == {"line": "/app/models/order.rb:12:in `lock!'"}


def test_knex_comment_at_the_start_and_escaped_quote() -> None:
    t = parse_tags("/* route='%2Forders%2F%3Aid',action='it\\'s' */ select * from orders")
    assert t.named("route") == "/orders/:id" and t.named("action") == "it's"


def test_url_encoded_keys() -> None:
    t = parse_tags("SELECT 1 /*route%20name='x',db_driver='psycopg'*/")
    assert t.get("route name") == "x" and t.get("db_driver") == "psycopg"


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT 1",
        "SELECT 1 /* just a note for the reader */",
        "SELECT '/*controller=''orders''*/' AS spoof",  # a literal is no tag
        'SELECT "/*job:X*/" FROM t',
        "SELECT 1 -- /*job:X*/\n",
        "SELECT /*+ MAX_EXECUTION_TIME(1000) */ 1",  # an optimizer hint
        "SELECT /*!40001 SQL_NO_CACHE */ 1",  # MySQL executable comment
        "SELECT 1 /*controller='orders'",  # never closed: the value never ends
        "",
        None,
    ],
)
def test_nothing_is_invented(sql: str | None) -> None:
    assert not parse_tags(sql) and parse_tags(sql).phrase() is None


def test_secrets_masked_control_characters_stripped_values_capped() -> None:
    register_secret("Q7f9Zk2Lw8Xp")
    t = parse_tags(
        "SELECT 1 /*api_token='abc',authorization='Bearer abc.def',jwt='eyJhbGciOiJI.eyJzdWIiOiIx.sig',"
        "note='pw Q7f9Zk2Lw8Xp',controller='ord%1B%5B31mers%E2%80%AE',"
        f"action='{'a' * 1000}'*/"
    )
    assert t.get("api_token") == "***" and t.get("authorization") == "***"
    assert t.get("jwt") == "***"
    assert "Q7f9" not in (t.get("note") or "")
    assert t.named("controller") == "ord[31mers"  # ESC and the bidi override gone
    action = t.named("action") or ""
    assert len(action) == MAX_VALUE and action.endswith("…")


def test_bounds() -> None:
    many = ",".join(f"k{i}='v'" for i in range(100))
    t = parse_tags(f"SELECT 1 /*{many}*/")
    assert len(t.pairs) == MAX_TAGS and t.dropped == 100 - MAX_TAGS
    late = "SELECT " + "1," * MAX_INPUT + "1 /*job:X*/"
    assert not parse_tags(late) and parse_tags(late).truncated  # past the cap: not read


def test_without_comments_keeps_literals() -> None:
    sql = "SELECT '/*x*/' FROM t /*controller='a'*/ WHERE a = 1"
    assert " ".join(without_comments(sql).split()) == "SELECT '/*x*/' FROM t WHERE a = 1"


HOSTILE = ["/*", "*/", "'", "\\'", '"', "`", "--", "\n", ",", "=", ":", "a", "%2", "/*a='", "a:b,"]


def _best(fn: object, text: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        fn(text)  # type: ignore[operator]
        best = min(best, time.process_time() - start)
    return best


@pytest.mark.parametrize("unit", HOSTILE + ["/*a='b',", "/*a=b*/", "'/*", "/*'*/'"])
@pytest.mark.parametrize("fn", [parse_tags, without_comments])
def test_linear_within_the_bound(unit: str, fn: object) -> None:
    """1.6 KB vs 16 KB (the cap): linear is ~10x; quadratic would be ~100x. As in
    test_sqlpatterns_redos.py: below 5 ms the shared machine dominates (the floor), and an
    absolute ceiling catches what growth alone would not."""
    small = unit * (1_600 // len(unit))
    big = unit * (MAX_INPUT // len(unit))
    t_small, t_big = _best(fn, small), _best(fn, big)
    assert t_big < 0.5, f"{unit!r}: {t_big * 1000:.1f} ms for 16 KB"
    assert t_big < 60 * max(t_small, 0.005), (unit, t_small, t_big)
    assert _best(fn, unit * (1_000_000 // len(unit))) < 0.5  # a megabyte: cut first


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(HOSTILE), max_size=40), st.text(max_size=200))
def test_hypothesis_never_raises_and_stays_bounded(pieces: list[str], noise: str) -> None:
    t = parse_tags("".join(pieces) + noise)
    assert len(t.pairs) <= MAX_TAGS
    for key, value in t.pairs:
        assert len(value) <= MAX_VALUE and len(key) <= 64
        assert not any(ord(c) < 32 or 0x7F <= ord(c) < 0xA0 for c in key + value)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=12),
                       st.text(max_size=60), min_size=1, max_size=8))
def test_hypothesis_sqlcommenter_round_trip(kv: dict[str, str]) -> None:
    """What the spec's serialisation writes, the parser reads back (as shown: cleaned)."""
    t = parse_tags("SELECT 1 " + _sqlcommenter(**kv))
    assert t.format == "sqlcommenter"
    for k, v in kv.items():
        shown = t.get(k)
        assert shown is not None
        if shown != "***" and v.isprintable() and "  " not in v and v == v.strip():
            assert shown == v[:MAX_VALUE]
