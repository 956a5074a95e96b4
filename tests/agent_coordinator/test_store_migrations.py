"""Migrations 11 and 12, on SQLite and PostgreSQL: lean indexes, the system message kept once.

Most runs belong to no batch and most sessions have no parent; migration 11 makes ``runs_batch``
and ``sessions_parent`` partial, so a new run or session no longer writes a NULL entry to each.
A store at migration 10 (and one written by 0.2.0) is migrated with every batch's runs and every
child session still found, and on SQLite every statement the store runs to find them reads an
index, never a whole table (``EXPLAIN QUERY PLAN``). A store at migration 11 reads its sessions'
transcripts (the system message inline) as written after migration 12, and resumes them.

Another program's database (or a file that is not SQLite's) is refused and left as it was; opened
without migrating (a dry run), a store behind this version is refused, and an up-to-date one is
read only.
"""

from __future__ import annotations

import re
import shutil
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import JsonValue

from agent_contracts._errors import ConfigError
from agent_coordinator import SqlStore, open_store
from agent_coordinator._store import NewRun, RunInput, SqliteStore
from agent_coordinator._store.migrations import MIGRATIONS
from agent_coordinator._store.sql import dumps, stored_transcript
from tests.agent_coordinator.harness import Postgres

STORE_0_2_0 = Path(__file__).parent / "data" / "store-0.2.0.db"
"""A store written by agentshape 0.2.0 (migration 1 only; see test_rollups.py)."""
PARTIAL = {
    "runs_batch": "batch_id IS NOT NULL",
    "sessions_parent": "parent_session_id IS NOT NULL",
}
"""Each partial index and the condition its rows meet."""


def _new(name: str, parent: str | None = None) -> NewRun:
    return NewRun(
        id=f"run_{name}",
        session_id=f"ses_{name}",
        kind="start_session",
        agent_name="grader",
        input=RunInput(prompt=f"Grade {name}."),
        parent_session_id=parent,
        depth=0 if parent is None else 1,
    )


def _fill(store: SqlStore) -> None:
    """Store plain runs, a parent with two children and a batch of two runs."""
    for name in ("a", "b", "parent"):
        store.create_run(_new(name))
    for name in ("child1", "child2"):
        store.create_run(_new(name, parent="ses_parent"))
    store.create_batch("bat_1", "grader", [("i1", _new("item1")), ("i2", _new("item2"))])


def _index_definition(store: SqlStore, name: str) -> str:
    with store._tx(write=False) as cursor:
        if isinstance(store, SqliteStore):
            query = "SELECT sql FROM sqlite_master WHERE type = 'index' AND name = ?"
        else:
            query = "SELECT indexdef FROM pg_indexes WHERE indexname = ?"
        row = store._exec(cursor, query, (name,)).fetchone()
    assert row is not None, name
    return str(row[0])


def _assert_found_by_batch_and_parent(store: SqlStore) -> None:
    children = store.list_sessions(limit=10, parent_session_id="ses_parent")
    assert [session.id for session in children] == ["ses_child2", "ses_child1"]
    assert store.list_sessions(limit=10, parent_session_id="ses_a") == []
    taken = store.claim_batch("runner-1", 30)
    assert taken is not None and taken.batch.id == "bat_1"
    assert sorted(claim.run.id for claim in taken.runs) == ["run_item1", "run_item2"]
    # a plain run is claimed alone, never a batch's
    claimed = [store.claim("runner-1", 30) for _ in range(6)]
    assert sorted(claim.run.id for claim in claimed if claim is not None) == [
        "run_a",
        "run_b",
        "run_child1",
        "run_child2",
        "run_parent",
    ]


@pytest.fixture
def store(database: str) -> Iterator[SqlStore]:
    opened = open_store(database)
    yield opened
    opened.close()


def test_a_store_at_migration_10_gets_partial_indexes_and_finds_the_same_rows(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "agent_coordinator._store.sql.MIGRATIONS",
        tuple(item for item in MIGRATIONS if item[0] <= 10),
    )
    old = open_store(database)
    try:
        assert "IS NOT NULL" not in _index_definition(old, "runs_batch")
        _fill(old)
    finally:
        old.close()
    monkeypatch.undo()
    store = open_store(database)
    try:
        assert store.migrate() == MIGRATIONS[-1][0]
        for name, condition in PARTIAL.items():
            assert condition in _index_definition(store, name), name
        _assert_found_by_batch_and_parent(store)
    finally:
        store.close()


def test_a_store_written_by_0_2_0_gets_partial_indexes(tmp_path: Path) -> None:
    path = tmp_path / "coordinator.db"
    shutil.copyfile(STORE_0_2_0, path)
    store = open_store(path)
    try:
        for name, condition in PARTIAL.items():
            assert condition in _index_definition(store, name), name
        sessions = store.list_sessions(limit=100)
        assert sessions, "the 0.2.0 store holds sessions"
        for session in sessions:
            assert store.list_sessions(limit=100, parent_session_id=session.id) == []
    finally:
        store.close()


_FULL_SCAN = re.compile(r"^SCAN (runs|sessions)\b")
"""A query plan step that reads a whole table (or a whole index of it)."""


def test_every_lookup_by_batch_or_parent_reads_an_index(tmp_path: Path) -> None:
    store = open_store(tmp_path / "coordinator.db")
    assert isinstance(store, SqliteStore)
    statements: list[str] = []
    try:
        _fill(store)
        store._connection().set_trace_callback(statements.append)
        _assert_found_by_batch_and_parent(store)
        for name in ("c", "d"):  # ended sessions, for a deletion and a prune
            store.create_run(_new(name))
            store.request_cancel(f"run_{name}")
        store.delete_session("ses_c")
        assert store.prune_batch(before=time.time() + 60, limit=10).sessions == ("ses_d",)
    finally:
        store.close()
    lookups = [
        text
        for text in statements
        if re.search(r"\b(batch_id|parent_session_id)\b", text.split(" WHERE ", 1)[-1])
        and " WHERE " in text
        and not text.startswith("INSERT")
    ]
    assert any("batch_id = " in text for text in lookups), statements
    assert any("parent_session_id = " in text for text in lookups), statements
    assert any("parent_session_id IN " in text for text in lookups), statements
    check = sqlite3.connect(tmp_path / "coordinator.db")
    try:
        for text in lookups:
            plan = [str(row[3]) for row in check.execute(f"EXPLAIN QUERY PLAN {text}")]
            assert not [step for step in plan if _FULL_SCAN.match(step)], (text, plan)
    finally:
        check.close()


SYSTEM: dict[str, JsonValue] = {
    "role": "system",
    "content": "You grade answers. SYSMARK-grader.",
    "tool_calls": [],
}
"""The first message of the transcripts the migration 12 test stores."""


def _conversation(name: str) -> list[JsonValue]:
    return [
        SYSTEM,
        {"role": "user", "content": f"Grade {name}.", "tool_calls": []},
        {"role": "assistant", "content": f"{name}: pass", "tool_calls": []},
    ]


def test_a_store_at_migration_11_reads_its_transcripts_as_written_and_resumes_them(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        "agent_coordinator._store.sql.MIGRATIONS",
        tuple(item for item in MIGRATIONS if item[0] <= 11),
    )
    old = open_store(database)
    try:
        with old._tx() as cursor:
            old._exec(cursor, "SELECT 1 FROM sessions")  # at migration 11: no system_messages
        for name in ("a", "b"):
            old.create_run(_new(name))
        # A run's end, as the store wrote a session's row before migration 12: whole, inline.
        with old._tx() as cursor:
            for name in ("a", "b"):
                old._exec(
                    cursor,
                    "UPDATE sessions SET status = 'completed', transcript = ? WHERE id = ?",
                    (stored_transcript(_conversation(name)), f"ses_{name}"),
                )
                old._exec(
                    cursor,
                    "UPDATE runs SET status = 'completed', lease_owner = NULL WHERE id = ?",
                    (f"run_{name}",),
                )
    finally:
        old.close()
    monkeypatch.undo()
    store = open_store(database)
    try:
        assert store.migrate() == MIGRATIONS[-1][0]
        for name in ("a", "b"):
            session = store.get_session(f"ses_{name}")
            assert session is not None
            assert dumps(session.transcript) == dumps(_conversation(name))
        listed = {session.id: session.transcript for session in store.list_sessions(limit=10)}
        assert dumps(listed["ses_b"]) == dumps(_conversation("b"))
        # Resumed, the run's claim hands over the whole transcript, system message first.
        resume = _new("a").model_copy(update={"id": "run_a2", "kind": "resume_session"})
        store.create_run(resume)
        claim = store.claim_run("run_a2", "runner-1", 30)
        assert claim is not None and dumps(claim.transcript) == dumps(_conversation("a"))
        longer: list[JsonValue] = [
            *_conversation("a"),
            {"role": "user", "content": "Again.", "tool_calls": []},
        ]
        assert store.finish(
            "run_a2", "runner-1", status="completed", result=None, error=None, transcript=longer
        )
        session = store.get_session("ses_a")
        assert session is not None and dumps(session.transcript) == dumps(longer)
        with store._tx(write=False) as cursor:
            rows = store._exec(
                cursor, "SELECT id, transcript, system_digest FROM sessions ORDER BY id"
            ).fetchall()
        kept = {str(row[0]): (str(row[1]), row[2]) for row in rows}
        assert "SYSMARK" not in kept["ses_a"][0] and kept["ses_a"][1] is not None
        assert kept["ses_b"] == (stored_transcript(_conversation("b")), None)  # not rewritten
    finally:
        store.close()


# Another program's database ------------------------------------------------------------------


def _tables(database: str) -> set[str]:
    """The tables a database holds, read without the store."""
    if database.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(database, autocommit=True) as connection:
            rows = connection.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            ).fetchall()
    else:
        with sqlite3.connect(database) as connection:
            rows = connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'"
            ).fetchall()
    return {str(row[0]) for row in rows}


def _execute(database: str, statements: list[str]) -> None:
    if database.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(database, autocommit=True) as connection:
            for statement in statements:
                connection.execute(statement)
    else:
        with sqlite3.connect(database) as connection:
            for statement in statements:
                connection.execute(statement)


FOREIGN = {
    # a table of its own named as one of the store's
    "sessions": ["CREATE TABLE sessions (name TEXT)", "INSERT INTO sessions VALUES ('theirs')"],
    # Rails' (golang-migrate, dbmate and Ecto name theirs the same)
    "rails": [
        "CREATE TABLE schema_migrations (version VARCHAR(255) PRIMARY KEY)",
        "INSERT INTO schema_migrations VALUES ('20240101120000')",
        "CREATE TABLE users (name TEXT)",
    ],
}


@pytest.mark.parametrize("kind", sorted(FOREIGN))
def test_another_programs_database_is_refused_and_left_as_it_was(database: str, kind: str) -> None:
    _execute(database, FOREIGN[kind])
    had = _tables(database)
    before = Path(database).read_bytes() if not database.startswith("postgresql") else b""
    for migrate in (True, False):
        with pytest.raises(ConfigError, match="is not an agentshape store") as raised:
            open_store(database, migrate=migrate)
        assert f"({', '.join(sorted(had))})" in str(raised.value)
        assert _tables(database) == had
    if before:
        assert Path(database).read_bytes() == before  # not even switched to WAL
        assert not Path(f"{database}-wal").exists()


def test_a_file_that_is_not_sqlites_is_refused_as_such(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    for migrate in (True, False):
        with pytest.raises(ConfigError, match="is not a SQLite database"):
            open_store(path, migrate=migrate)
    assert path.read_text() == "hello\n"


def test_without_migrating_a_store_behind_is_refused_and_its_file_left_alone(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "old.db"
    shutil.copyfile(STORE_0_2_0, copy)
    with pytest.raises(ConfigError, match=rf"at version 1 of its tables, not {MIGRATIONS[-1][0]}"):
        open_store(copy, migrate=False)
    assert copy.read_bytes() == STORE_0_2_0.read_bytes()
    open_store(copy).close()  # migrated
    store = open_store(copy, migrate=False)
    try:
        assert store.migrate(apply=False) == MIGRATIONS[-1][0]
        assert len(store.list_sessions(limit=10)) == 5
    finally:
        store.close()


def test_without_migrating_an_up_to_date_store_opens_read_only(tmp_path: Path) -> None:
    database = tmp_path / "c.db"
    open_store(database).close()
    store = open_store(database, migrate=False)
    try:
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.create_run(_new("a"))
    finally:
        store.close()


def test_a_new_postgresql_database_holding_an_extension_s_tables_is_a_store(
    postgres: Postgres,
) -> None:
    """pg_stat_statements (installed in template1 by some hosts) adds views to ``public``."""
    database = postgres.new_database()
    _execute(database, ["CREATE EXTENSION pg_stat_statements"])
    store = open_store(database)
    try:
        assert store.migrate() == MIGRATIONS[-1][0]
    finally:
        store.close()
    assert {"sessions", "runs", "schema_migrations"} <= _tables(database)


def test_without_migrating_an_empty_database_opens_at_version_0(database: str) -> None:
    if not database.startswith("postgresql"):
        with sqlite3.connect(database) as connection:  # a file of some bytes, no table
            connection.execute("PRAGMA user_version = 1")
    store = open_store(database, migrate=False)
    try:
        assert store.migrate(apply=False) == 0
    finally:
        store.close()
    assert _tables(database) == set()
