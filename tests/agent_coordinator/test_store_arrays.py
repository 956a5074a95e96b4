"""The PostgreSQL store's arrays: what a real server reads from them is what was sent.

Each array goes through psycopg to a real PostgreSQL and back; a database whose encoding is
``SQL_ASCII`` gets text as psycopg's own strings do (UTF-8); a list that is not what it says
fails before anything is sent.
"""

from __future__ import annotations

import psycopg
import pytest

from agent_coordinator._store.array_dumpers import adapters
from agent_coordinator._store.arrays import BigintArray, TextArray
from tests.agent_coordinator.harness import Postgres

TEXTS = [
    '{"comments": [{"line": 3, "body": "a \\"quoted\\" word, a comma"}]}',
    "",
    None,
    "é, 中文, emoji 🙂, a backslash \\ and {braces}",
    "x" * 100_000,
]


def _round_trip(url: str, value: object, cast: str) -> object:
    with psycopg.connect(url, autocommit=True, context=adapters()) as connection:
        row = connection.execute(f"SELECT CAST(%b AS {cast})", (value,)).fetchone()
    assert row is not None
    return row[0]


def test_text_arrays_reach_the_server_as_sent(postgres: Postgres) -> None:
    url = postgres.new_database()
    assert _round_trip(url, TextArray(TEXTS), "TEXT[]") == TEXTS
    assert _round_trip(url, TextArray(), "TEXT[]") == []


def test_bigint_arrays_reach_the_server_as_sent(postgres: Postgres) -> None:
    numbers = [1, 0, -1, 2**63 - 1, -(2**63), 3]
    url = postgres.new_database()
    assert _round_trip(url, BigintArray(numbers), "BIGINT[]") == numbers
    assert _round_trip(url, BigintArray(), "BIGINT[]") == []


def test_arrays_unnest_into_rows_in_order(postgres: Postgres) -> None:
    url = postgres.new_database()
    with psycopg.connect(url, autocommit=True, context=adapters()) as connection:
        rows = connection.execute(
            "SELECT * FROM unnest(CAST(%b AS BIGINT[]), CAST(%b AS TEXT[]))",
            (BigintArray([1, 2, 3]), TextArray(["a", None, "c"])),
        ).fetchall()
    assert rows == [(1, "a"), (2, None), (3, "c")]


def test_a_sql_ascii_database_gets_utf8_text(postgres: Postgres) -> None:
    with psycopg.connect(postgres.url(), autocommit=True) as connection:
        connection.execute(
            "CREATE DATABASE arrays_sql_ascii ENCODING 'SQL_ASCII' LC_COLLATE 'C' LC_CTYPE 'C' "
            "TEMPLATE template0"
        )
    url = postgres.url("arrays_sql_ascii")
    with psycopg.connect(url, autocommit=True, context=adapters()) as connection:
        row = connection.execute(
            "SELECT octet_length((CAST(%b AS TEXT[]))[1])", (TextArray(["é"]),)
        ).fetchone()
    assert row == (len("é".encode()),)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (TextArray(["a", 1]), "TEXT\\[\\] array's elements must be strings, not int"),  # type: ignore[list-item]
        (BigintArray([1, "2"]), "BIGINT\\[\\] array's elements must be integers"),  # type: ignore[list-item]
        (BigintArray([True]), "BIGINT\\[\\] array's elements must be integers"),
    ],
)
def test_a_list_not_of_its_type_fails_before_anything_is_sent(
    postgres: Postgres, value: object, message: str
) -> None:
    url = postgres.new_database()
    with (
        psycopg.connect(url, autocommit=True, context=adapters()) as connection,
        pytest.raises(TypeError, match=message),
    ):
        connection.execute("SELECT CAST(%b AS TEXT[])", (value,))


def test_a_bigint_out_of_range_fails_before_anything_is_sent(postgres: Postgres) -> None:
    url = postgres.new_database()
    with (
        psycopg.connect(url, autocommit=True, context=adapters()) as connection,
        pytest.raises(OverflowError, match=r"BIGINT\[\] array.s element does not fit"),
    ):
        connection.execute("SELECT CAST(%b AS BIGINT[])", (BigintArray([2**63]),))
