"""SQLite's group commit: a run's writes called together commit in one transaction.

Each write is a savepoint of the group's transaction: one that fails is undone alone, the
others are stored and answered; a group that finds the write lock taken tries again soon on the
event loop, then waits for it in worker threads, instead of failing.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import JsonValue

from agent_contracts import ModelTurnEvent, RunCompletedEvent, RunStartedEvent
from agent_coordinator._errors import Conflict, StoreFull
from agent_coordinator._store import NewRun, RunInput
from agent_coordinator._store import sqlite as sqlite_store
from agent_coordinator._store.records import Claim, RunRecord
from agent_coordinator._store.sqlite import PAGE_SIZE, SqliteStore

RUNS = 40


def _new(n: int, **fields: str) -> NewRun:
    return NewRun.model_validate(
        {
            "id": f"run_{n}",
            "session_id": f"ses_{n}",
            "kind": "start_session",
            "agent_name": "a",
            "input": RunInput(prompt=f"task {n}"),
            **fields,
        }
    )


def _store(path: Path) -> SqliteStore:
    store = SqliteStore(path)
    store.migrate()
    return store


def _queued(store: SqliteStore) -> int:
    """How many writes wait for this thread's next group (none once the group has run)."""
    pending = getattr(store._local, "group", None)
    return 0 if pending is None else len(pending[1])


def _wal_frames(path: Path) -> int:
    """Return the frames the WAL of ``path`` holds (each a page a commit wrote), then copy
    them to the database file."""
    with sqlite3.connect(path) as reader:
        _, frames, _ = reader.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    return int(frames)


async def _runs_together(store: SqliteStore) -> list[RunRecord | None]:
    made = await asyncio.gather(
        *(store.call(store.create_claimed_run, _new(n), "r1", 30) for n in range(RUNS))
    )
    assert [claim is not None for _, claim in made] == [True] * RUNS
    return await asyncio.gather(
        *(
            store.call(
                store.finish, f"run_{n}", "r1", status="completed", result={"n": n}, error=None
            )
            for n in range(RUNS)
        )
    )


async def _runs_one_by_one(store: SqliteStore) -> None:
    for n in range(RUNS):
        await store.call(store.create_claimed_run, _new(n), "r1", 30)
    for n in range(RUNS):
        await store.call(
            store.finish, f"run_{n}", "r1", status="completed", result={"n": n}, error=None
        )


def test_runs_written_together_are_each_stored_and_answered(tmp_path: Path) -> None:
    store = _store(tmp_path / "c.db")
    try:
        ended = asyncio.run(_runs_together(store))
    finally:
        store.close()
    assert [run.result if run else None for run in ended] == [{"n": n} for n in range(RUNS)]
    reader = _store(tmp_path / "c.db")  # what was committed, read by another connection
    try:
        stored = [reader.get_run(f"run_{n}") for n in range(RUNS)]
    finally:
        reader.close()
    assert [(run.status, run.result) if run else None for run in stored] == [
        ("completed", {"n": n}) for n in range(RUNS)
    ]


def test_runs_written_together_write_fewer_pages_than_one_by_one(tmp_path: Path) -> None:
    """The commits of runs written together share their pages: the WAL holds far fewer."""
    frames = {}
    for name, write in (("together", _runs_together), ("one by one", _runs_one_by_one)):
        path = tmp_path / f"{name}.db"
        store = _store(path)
        try:
            _wal_frames(path)  # all checkpointed: the next commit starts the WAL anew
            asyncio.run(write(store))  # type: ignore[operator]
            frames[name] = _wal_frames(path)
        finally:
            store.close()
    assert frames["together"] * 4 < frames["one by one"], frames


def _bytes_written() -> int:
    """Return the bytes this process has handed to ``write``-like system calls so far."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/self/io")


async def _sessions_together(store: SqliteStore) -> None:
    """Create and end ``RUNS`` runs together, each with a transcript of a few KiB."""
    await asyncio.gather(
        *(store.call(store.create_claimed_run, _new(n), "r1", 30) for n in range(RUNS))
    )
    asked: list[JsonValue] = [
        {"role": "user", "content": f"review {n} " + "x" * 3000} for n in range(2)
    ]
    await asyncio.gather(
        *(
            store.call(
                store.finish,
                f"run_{n}",
                "r1",
                status="completed",
                result={"n": n, "summary": "y" * 900},
                error=None,
                transcript=[*asked, {"role": "assistant", "content": "z" * 900}],
                events=[("progress", {"n": n})],
            )
            for n in range(RUNS)
        )
    )


@pytest.mark.skipif(not Path("/proc/self/io").exists(), reason="needs Linux's /proc/self/io")
def test_a_group_writes_its_wal_pages_and_nothing_else(tmp_path: Path) -> None:
    """The savepoints' undo pages stay in memory: a group writes no temporary files."""
    path = tmp_path / "c.db"
    store = _store(path)
    try:
        _wal_frames(path)
        before = _bytes_written()
        asyncio.run(_sessions_together(store))
        written = _bytes_written() - before
        wal_bytes = _wal_frames(path) * (PAGE_SIZE + 24)  # a frame: its header and its page
    finally:
        store.close()
    assert wal_bytes > 0
    assert written < wal_bytes * 1.25, (written, wal_bytes)


def test_a_write_that_fails_in_a_group_is_undone_alone(tmp_path: Path) -> None:
    """A run stored under an id already taken: its session's row, written first, is undone too."""
    store = _store(tmp_path / "c.db")
    try:
        store.create_run(_new(1, request_hash="first"))

        async def together() -> list[object]:
            return await asyncio.gather(
                store.call(store.create_run, _new(2)),
                store.call(store.create_run, _new(1, session_id="ses_taken", request_hash="x")),
                store.call(store.create_run, _new(3)),
                return_exceptions=True,
            )

        first, taken, last = asyncio.run(together())
        assert isinstance(taken, Conflict)
        assert isinstance(first, tuple) and isinstance(last, tuple)
        assert store.get_session("ses_taken") is None
        assert [store.get_run(f"run_{n}") is not None for n in (2, 3)] == [True, True]
        assert [store.get_session(f"ses_{n}") is not None for n in (2, 3)] == [True, True]
    finally:
        store.close()


def test_a_write_whose_caller_gave_up_before_its_group_ran_is_still_made(tmp_path: Path) -> None:
    """As a write made in place was: a run's end asked for is stored, whoever stops waiting."""
    store = _store(tmp_path / "c.db")
    try:

        async def main() -> None:
            given_up = asyncio.ensure_future(store.call(store.create_run, _new(1)))
            kept = asyncio.ensure_future(store.call(store.create_run, _new(2)))
            for _ in range(100):  # both queued for the group, which has not run yet
                if _queued(store) == 2:
                    break
                await asyncio.sleep(0)
            assert _queued(store) == 2
            given_up.cancel()
            await kept

        asyncio.run(main())
        assert store.get_run("run_1") is not None and store.get_session("ses_1") is not None
        assert store.get_run("run_2") is not None
    finally:
        store.close()


def test_a_failure_that_ends_the_groups_transaction_fails_what_it_undid(tmp_path: Path) -> None:
    """A full database rolls SQLite's whole transaction back, not a savepoint: the writes the
    group made before are answered with the failure (nothing of them is stored), and those after
    it are made on their own."""
    store = _store(tmp_path / "c.db")
    try:
        store.create_run(_new(1))

        async def main() -> list[object]:
            await store.call(store.get_run, "run_1")  # the in-place connection exists
            in_place = store._local.in_place_connection
            pages = in_place.execute("PRAGMA page_count").fetchone()[0]
            in_place.execute(f"PRAGMA max_page_count = {pages + 30}")  # full, for it alone
            return await asyncio.gather(
                store.call(store.create_run, _new(2)),
                store.call(store.add_events_many, {"run_1": [("big", {"text": "x" * 2**21})]}),
                store.call(store.create_run, _new(3)),
                return_exceptions=True,
            )

        before, full, after = asyncio.run(main())
        assert isinstance(before, StoreFull) and isinstance(full, StoreFull)
        assert isinstance(after, tuple)
        assert store.get_run("run_2") is None and store.get_session("ses_2") is None
        assert store.get_run("run_3") is not None and store.get_session("ses_3") is not None
        assert store.events_after("run_1") == []
    finally:
        store.close()


def test_groups_of_two_event_loops_in_two_threads_are_each_answered(tmp_path: Path) -> None:
    store = _store(tmp_path / "c.db")
    done: dict[str, int] = {}

    def writer(name: str) -> None:
        async def main() -> None:
            for batch in range(20):
                await asyncio.gather(
                    *(
                        store.call(
                            store.create_run,
                            _new(0, id=f"{name}_{batch}_{n}", session_id=f"s{name}_{batch}_{n}"),
                        )
                        for n in range(10)
                    )
                )
                done[name] = batch + 1

        asyncio.run(main())

    threads = [threading.Thread(target=writer, args=(name,), daemon=True) for name in "ab"]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
        assert [thread.is_alive() for thread in threads] == [False, False], done
        assert done == {"a": 20, "b": 20}
        assert store.count_runs() == 400
    finally:
        store.close()


def _lock_taken_then_freed(
    store: SqliteStore, other: sqlite3.Connection, tried: Callable[[], bool]
) -> list[tuple[RunRecord, Claim | None]]:
    """Five runs stored while ``other`` holds the write lock, freed once ``tried()`` holds."""

    async def main() -> list[tuple[RunRecord, Claim | None]]:
        other.execute("BEGIN IMMEDIATE")
        made = asyncio.gather(
            *(store.call(store.create_claimed_run, _new(n), "r1", 30) for n in range(5))
        )
        deadline = time.monotonic() + 30
        while not tried():
            assert time.monotonic() < deadline, "the group never found the lock taken"
            await asyncio.sleep(0.001)
        other.execute("COMMIT")
        return await made

    return asyncio.run(main())


def test_a_group_that_finds_the_write_lock_taken_waits_for_it_on_the_event_loop(
    tmp_path: Path,
) -> None:
    """Another process holds the write lock: the group tries again soon, with the writes queued
    meanwhile, and is made in place (in one transaction) once the lock is free."""
    path = tmp_path / "c.db"
    store = _store(path)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        made = _lock_taken_then_freed(
            store, other, lambda: getattr(store._local, "waiting", None) is not None
        )
        assert [run.id for run, _ in made] == [f"run_{n}" for n in range(5)]
        assert store._writes_in_place == 5  # in place, as a group: no worker thread wrote them
        assert store._local.waiting is None  # the next group that waits starts its pauses anew
        assert [store.get_run(f"run_{n}") is not None for n in range(5)] == [True] * 5
    finally:
        other.close()
        store.close()


def test_a_group_that_waits_too_long_for_the_write_lock_goes_to_worker_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past its wait on the event loop, each write waits in a worker thread (up to the store's
    timeout), and is made there once the lock is free."""
    monkeypatch.setattr(sqlite_store, "_WAIT_IN_PLACE_S", 0.0)
    path = tmp_path / "c.db"
    store = _store(path)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        waited: list[int] = []
        each_in_thread = store._each_in_thread

        def _each_in_thread(group: list[Any]) -> None:
            waited.append(len(group))
            each_in_thread(group)

        monkeypatch.setattr(store, "_each_in_thread", _each_in_thread)
        made = _lock_taken_then_freed(store, other, lambda: bool(waited))
        assert waited == [5]
        assert [run.id for run, _ in made] == [f"run_{n}" for n in range(5)]
        assert store._writes_in_place == 0
        assert [store.get_run(f"run_{n}") is not None for n in range(5)] == [True] * 5
    finally:
        other.close()
        store.close()


def _ran(n: int, agent: str) -> list[tuple[str, dict[str, JsonValue]]]:
    """A run's analytics events as stored: started, one model turn, completed."""
    run_id = f"run_{n}"
    events = (
        RunStartedEvent(run_id=run_id, agent_id=agent),
        ModelTurnEvent(run_id=run_id, agent_id=agent, step=1, latency_ms=10.0 * (n + 1)),
        RunCompletedEvent(run_id=run_id, agent_id=agent, duration_ms=20.0 * (n + 1), retries=n % 2),
    )
    return [(event.event, event.model_dump(mode="json")) for event in events]


def test_the_runs_a_group_ends_are_counted_in_the_rollups_once_each(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A group writes its runs' figures summed, once per agent and day; the figures of an end
    undone in its savepoint are not among them, and the review is the one of the runs ended."""
    store = _store(tmp_path / "c.db")
    agents = {n: ("a", "b")[n % 2] for n in range(RUNS)}
    broken = 5  # its end fails after its figures were added: undone with its savepoint
    end_session = store._end_session

    def _end_session(cursor: object, ended: RunRecord, *args: object) -> None:
        if ended.id == f"run_{broken}":
            raise RuntimeError("the session's end failed")
        end_session(cursor, ended, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(store, "_end_session", _end_session)

    async def main() -> list[object]:
        await asyncio.gather(
            *(store.call(store.create_claimed_run, _new(n), "r1", 30) for n in range(RUNS))
        )
        summed: list[int] = []
        add_held = store._add_held_figures

        def _add_held(connection: sqlite3.Connection, released: list[Any]) -> None:
            summed.append(len(released))
            add_held(connection, released)

        monkeypatch.setattr(store, "_add_held_figures", _add_held)
        ends: list[object] = await asyncio.gather(
            *(
                store.call(
                    store.finish,
                    f"run_{n}",
                    "r1",
                    status="completed",
                    result={"n": n},
                    error=None,
                    events=_ran(n, agents[n]),
                )
                for n in range(RUNS)
            ),
            return_exceptions=True,
        )
        assert summed == [RUNS - 1]  # one group: every end but the broken one
        return ends

    try:
        ends = asyncio.run(main())
        assert isinstance(ends[broken], RuntimeError)
        assert all(isinstance(end, RunRecord) for n, end in enumerate(ends) if n != broken)
        broken_run = store.get_run(f"run_{broken}")
        assert broken_run is not None and broken_run.status == "running"
        with store._tx(write=False) as cursor:
            rows = store._exec(cursor, "SELECT agent_id, runs FROM rollups ORDER BY agent_id")
            assert [tuple(row) for row in rows.fetchall()] == [
                ("a", RUNS // 2),
                ("b", RUNS // 2 - 1),
            ]
        review = store.rollup_review(source="test")
    finally:
        store.close()
    ended = [n for n in range(RUNS) if n != broken]
    assert review.overall.runs == review.overall.completed == RUNS - 1
    assert review.overall.retries == sum(n % 2 for n in ended)
    assert review.overall.model_latency.count == RUNS - 1
    assert review.overall.run_latency.max_ms == pytest.approx(20.0 * RUNS)
    assert {agent.agent_id: agent.runs for agent in review.agents} == {
        "a": RUNS // 2,
        "b": RUNS // 2 - 1,
    }


def test_writes_still_waiting_for_the_lock_when_the_loop_ends_are_made_as_the_store_closes(
    tmp_path: Path,
) -> None:
    """A group waiting on an event loop that ends (the service stopping) is not dropped."""
    path = tmp_path / "c.db"
    store = _store(path)
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")

        async def main() -> None:
            # Queued, and their callers gone (cancelled as the loop ends).
            calls = [asyncio.ensure_future(store.call(store.create_run, _new(n))) for n in range(3)]
            assert len(calls) == 3
            while getattr(store._local, "waiting", None) is None:
                await asyncio.sleep(0.001)

        asyncio.run(main())
        assert _queued(store) == 3  # the loop ended with the group waiting for the lock
        other.execute("COMMIT")
    finally:
        other.close()
        store.close()
    reader = _store(path)
    try:
        assert [reader.get_run(f"run_{n}") is not None for n in range(3)] == [True] * 3
    finally:
        reader.close()
