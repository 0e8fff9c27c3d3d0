"""targets.quoting.pg_text_array: the array literal the catalog queries bind as one text (a
Python list was dumped name by name) reads back as exactly the same strings on the server."""

from __future__ import annotations

import psycopg
from conftest import PG_URL
from hypothesis import given, settings
from hypothesis import strategies as st

from dbwatch.targets.quoting import pg_text_array

HOSTILE = ['a', 'b"c', "d\\e", "x,y", "{z}", " sp ", "NULL", "", "runAt", "é\u00a0ü", "'; --"]
# what array_in and the text type accept: no NUL (PostgreSQL text cannot hold it)
TEXT = st.text(alphabet=st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)))


def test_hostile_names_round_trip() -> None:
    with psycopg.connect(PG_URL, autocommit=True) as c:
        got = c.execute("SELECT %s::text[]", (pg_text_array(HOSTILE),)).fetchone()
        assert got is not None and got[0] == HOSTILE
        # as the catalog queries use it: name = ANY(...::name[])
        row = c.execute("SELECT 'runAt'::name = ANY (%s::name[])", (pg_text_array(HOSTILE),))
        assert row.fetchone() == (True,)


@settings(max_examples=150, deadline=None)
@given(st.lists(TEXT, max_size=12))
def test_any_strings_round_trip(values: list[str]) -> None:
    with psycopg.connect(PG_URL, autocommit=True) as c:
        got = c.execute("SELECT %s::text[]", (pg_text_array(values),)).fetchone()
    assert got is not None and got[0] == values
