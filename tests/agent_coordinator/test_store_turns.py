"""A run's recorded turns, on SQLite and PostgreSQL: each turn writes what it adds, not the run.

A real run of many turns (the real SDK against the scripted local server, one ``fs_read`` tool
call a turn) records its progress through the store before each model call, as a runner does;
the bytes the database writes for each record stay flat as the run grows, and a runner taking
the run over reads back the progress last recorded, whole.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import JsonValue

from agent_contracts.runs import RunProgress, RunRequest
from agent_coordinator.store import NewRun, RunInput, SqlStore, open_store
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
        connection = sqlite3.connect(self.database)
        try:
            busy, _, _ = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        finally:
            connection.close()
        assert busy == 0
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
