"""A run's recorded turns, on SQLite and PostgreSQL: each turn writes what it adds, not the run.

A real run of many turns (the real SDK against the scripted local server, one ``fs_read`` tool
call a turn) records its progress through the store before each model call, as a runner does;
the bytes the database writes for each record stay flat as the run grows, and a runner taking
the run over reads back the progress last recorded, whole. A store at migration 8 (a run's turns
in ``runs.progress``) and one written by 0.2.0 are migrated by migration 9 with nothing lost.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from pydantic import JsonValue

from agent_contracts import RunProgress, RunRequest
from agent_coordinator import SqlStore, open_store
from agent_coordinator._store import NewRun, RunInput, sql
from agent_coordinator._store.migrations import MIGRATIONS
from tests.agent_executor.test_run import VALID, agent_for, call, provider_for
from tests.fake_llm import FakeLLM

TURNS = 32
"""Tool-call turns the run makes before it answers."""


@pytest.fixture
def store(database: str) -> Iterator[SqlStore]:
    opened = open_store(database)
    yield opened
    opened.close()


class WrittenBytes:
    """The bytes a store's database wrote since the last look (read beside the store).

    SQLite: the size of its write-ahead log (each look checkpoints and empties it).
    PostgreSQL: how far its write-ahead log moved.
    """

    def __init__(self, database: str) -> None:
        self.database = database
        self.postgres = database.startswith("postgresql")
        self.last = self._position()

    def _position(self) -> int:
        if self.postgres:
            import psycopg

            with psycopg.connect(self.database, autocommit=True) as connection:
                row = connection.execute(
                    "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint"
                ).fetchone()
            assert row is not None
            return int(row[0])
        log = Path(f"{self.database}-wal")
        size = log.stat().st_size if log.exists() else 0
        beside = sqlite3.connect(self.database)
        try:
            checkpoint = beside.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            beside.close()
        assert checkpoint is not None and checkpoint[0] == 0  # not busy: the log was emptied
        return size

    def since(self) -> int:
        """Return the bytes written since the last call (or since this was made)."""
        now = self._position()
        if self.postgres:
            written, self.last = now - self.last, now
            return written
        return now


async def test_each_recorded_turn_writes_about_one_turn_and_a_takeover_reads_them_all(
    store: SqlStore, database: str, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    store.create_run(
        NewRun(
            id="run_1",
            session_id="ses_1",
            kind="start_session",
            agent_name="grader",
            input=RunInput(prompt="Grade the notes."),
        )
    )
    assert store.claim("runner-1", -1) is not None  # its lease runs out: a takeover follows
    for n in range(TURNS):
        # each file different and incompressible enough that its bytes show in every copy
        (tmp_path / f"notes-{n}.txt").write_text(os.urandom(1500).hex())
    fake_llm.respond(
        *[call("openai", "fs_read", {"path": f"notes-{n}.txt"}, f"call_{n}") for n in range(TURNS)],
        call("openai", "submit_result", VALID, "call_answer"),
    )
    meter = WrittenBytes(database)
    written: list[int] = []
    recorded: list[dict[str, JsonValue]] = []

    async def record(progress: RunProgress) -> None:
        data = progress.model_dump(mode="json")
        meter.since()
        assert store.record_progress("run_1", "runner-1", data)
        written.append(meter.since())
        recorded.append(data)

    agent = agent_for(
        provider_for("openai", fake_llm), tools=["fs:read"], workspace=tmp_path, max_steps=64
    )
    result = await agent.run(RunRequest(task="Grade the notes.", run_id="run_1"), on_turn=record)
    assert result.status == "completed"
    assert len(written) == TURNS
    # Turn 30 holds ten times the messages turn 3 does; what its record writes does not grow.
    early, late = statistics.median(written[1:9]), statistics.median(written[-8:])
    assert late <= 2 * early, written

    taken = store.claim("runner-2", 30)
    assert taken is not None and taken.progress == recorded[-1]
    assert RunProgress.model_validate(taken.progress).steps == TURNS


def _at_version(monkeypatch: pytest.MonkeyPatch, version: int) -> None:
    """Make stores opened from now on migrate only up to ``version`` (as that release did)."""
    kept = tuple(item for item in MIGRATIONS if item[0] <= version)
    monkeypatch.setattr("agent_coordinator._store.sql.MIGRATIONS", kept)


def _version(store: SqlStore) -> int:
    with store._tx(write=False) as cursor:
        row = store._exec(cursor, "SELECT MAX(version) FROM schema_migrations").fetchone()
    assert row is not None
    return int(str(row[0]))


PROGRESS: dict[str, JsonValue] = {
    "turns": [
        {"role": "assistant", "content": "", "tool_calls": [], "tool_results": [], "thinking": []},
        {"role": "user", "content": "Fix the output.", "tool_calls": [], "tool_results": []},
    ],
    "attempts": [{"number": 1, "mode": "tool", "raw_output": "{}", "errors": ["$: bad"]}],
    "usage": {"input_tokens": 9, "output_tokens": 2, "requests": 1},
    "steps": 1,
    "last_output": {},
    "cannot_force": False,
    "model_tier": 0,
}
"""A run's progress as migration 8's store kept it in ``runs.progress``."""


def test_a_store_at_migration_8_keeps_a_run_s_recorded_turns_through_migration_9(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _at_version(monkeypatch, 8)
    old = open_store(database)
    try:
        assert _version(old) == 8
        for n in (1, 2):
            old.create_run(
                NewRun(
                    id=f"run_{n}",
                    session_id=f"ses_{n}",
                    kind="start_session",
                    agent_name="grader",
                    input=RunInput(prompt="Grade it."),
                )
            )
        with old._tx() as cursor:  # claimed by a runner now gone, as migration 8 kept it
            old._exec(
                cursor,
                "UPDATE runs SET status = 'running', lease_owner = 'runner-1', "
                "lease_expires_at = 0, claims = 1, started_at = 1, progress = ? "
                "WHERE id = 'run_1'",
                (sql.dumps(PROGRESS),),
            )
    finally:
        old.close()
    monkeypatch.undo()
    store = open_store(database)
    try:
        assert _version(store) == MIGRATIONS[-1][0]
        waiting = store.claim("runner-2", 30)  # waiting runs first
        assert waiting is not None and waiting.run.id == "run_2" and waiting.progress is None
        taken = store.claim("runner-2", 30)
        assert taken is not None and taken.run.id == "run_1"
        assert taken.progress == PROGRESS
        with store._tx(write=False) as cursor:
            left = store._exec(
                cursor, "SELECT COUNT(*) FROM runs WHERE progress IS NOT NULL"
            ).fetchone()
        assert left is not None and int(str(left[0])) == 0
        # a record after the migration continues the moved turns
        more = dict(PROGRESS, steps=2, turns=[*cast("list[JsonValue]", PROGRESS["turns"])] * 2)
        assert store.record_progress("run_1", "runner-2", more)
        assert store.release("run_1", "runner-2")
        again = store.claim("runner-3", 30)
        assert again is not None and again.run.id == "run_1" and again.progress == more
    finally:
        store.close()


STORE_0_2_0 = Path(__file__).parent / "data" / "store-0.2.0.db"
"""A store written by agentshape 0.2.0 (migration 1 only; see test_rollups.py)."""
TABLES_0_2_0 = ("sessions", "runs", "attempts", "events")


def _load_0_2_0(database: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the 0.2.0 store's rows at ``database``, a store at migration 1 as 0.2.0 made it."""
    if not database.startswith("postgresql"):
        shutil.copyfile(STORE_0_2_0, database)
        return
    _at_version(monkeypatch, 1)
    store = open_store(database)
    source = sqlite3.connect(STORE_0_2_0)
    try:
        with store._tx() as cursor:
            for table in TABLES_0_2_0:
                found = source.execute(f"SELECT * FROM {table}")
                columns = [column[0] for column in found.description]
                marks = ", ".join("?" * len(columns))
                for row in found:
                    store._exec(
                        cursor,
                        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({marks})",
                        row,
                    )
                key = "id" if table == "events" else "seq"
                if key in columns:
                    store._exec(
                        cursor,
                        f"SELECT setval(pg_get_serial_sequence('{table}', '{key}'), "
                        f"(SELECT MAX({key}) FROM {table}))",
                    )
    finally:
        source.close()
        store.close()
    monkeypatch.undo()


def test_a_store_written_by_0_2_0_is_migrated_to_9_with_every_answer_read_back_the_same(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = sqlite3.connect(STORE_0_2_0)
    try:
        results = {
            str(run_id): sql.loads(text)
            for run_id, text in source.execute("SELECT id, result FROM runs")
        }
        statuses = dict(source.execute("SELECT id, status FROM runs").fetchall())
        transcripts = {
            str(session_id): sql.loads(text)
            for session_id, text in source.execute("SELECT id, transcript FROM sessions")
        }
        attempts: dict[str, list[JsonValue]] = {}
        for run_id, data in source.execute(
            "SELECT run_id, data FROM attempts ORDER BY run_id, number"
        ):
            attempts.setdefault(str(run_id), []).append(sql.loads(data))
        events: dict[str, list[JsonValue]] = {}
        for run_id, data in source.execute("SELECT run_id, data FROM events ORDER BY id"):
            events.setdefault(str(run_id), []).append(sql.loads(data))
    finally:
        source.close()
    assert results and transcripts and attempts and events
    _load_0_2_0(database, monkeypatch)
    store = open_store(database)
    try:
        assert _version(store) == MIGRATIONS[-1][0]
        for run_id, result in results.items():
            run = store.get_run(run_id)
            assert run is not None and run.status == statuses[run_id], run_id
            assert run.result == result, run_id
            assert store.attempts(run_id) == attempts.get(run_id, []), run_id
            assert [event.data for event in store.events_after(run_id)] == events[run_id]
        for session_id, transcript in transcripts.items():
            session = store.get_session(session_id)
            assert session is not None and session.transcript == transcript, session_id
    finally:
        store.close()
