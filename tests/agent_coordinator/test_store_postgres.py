"""The PostgreSQL store from async code: its calls run on the event loop without blocking it.

A call waiting on a row lock another connection holds leaves the service answering, over real
HTTP against a real ``agentshape serve``; a call cancelled while it waits leaves no transaction
open and its connection back in the pool; calls need no worker thread; a loop's connections are
closed when the loop ends; and only a PostgreSQL store needs the server extra's greenlet.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psycopg
import pytest

from agent_coordinator._errors import StoreUnavailable
from agent_coordinator._store import PostgresStore
from tests.agent_coordinator.harness import Postgres, new_run, write_fleet
from tests.agent_coordinator.processes import serve

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
BOUND_S = 60
"""How long a condition may take to come true on a loaded machine."""


def _busy_backends(database: str, *others: int) -> list[tuple[str, str | None]]:
    """The state and wait of each backend on ``database`` waiting on a lock or in a transaction.

    Args:
        database: The database's URL.
        *others: Backends to leave out (the test's own connections).
    """
    with psycopg.connect(database, autocommit=True) as observer:
        rows = observer.execute(
            "SELECT state, wait_event_type FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND NOT (pid = ANY(%s)) "
            "AND (wait_event_type = 'Lock' OR state LIKE 'idle in transaction%%')",
            (list(others),),
        ).fetchall()
    return [(str(state), wait) for state, wait in rows]


def _waiting_on_lock(database: str, *others: int) -> bool:
    return ("active", "Lock") in _busy_backends(database, *others)


async def _until(condition: Callable[[], bool], what: str) -> None:
    """Wait (off the loop) until ``condition`` holds, for up to :data:`BOUND_S`."""
    deadline = time.monotonic() + BOUND_S
    while not await asyncio.to_thread(condition):
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


@pytest.fixture
async def store(postgres: Postgres) -> AsyncIterator[PostgresStore]:
    opened = PostgresStore(postgres.new_database(), loop_connections=2)
    opened.migrate()
    yield opened
    opened.close()


def test_a_call_waiting_on_a_row_lock_leaves_serve_answering(
    tmp_path: Path, postgres: Postgres
) -> None:
    write_fleet(tmp_path / "agents")
    database = postgres.new_database()
    process, url = serve(tmp_path, database, {}, "--workers", "0")
    try:
        run_id = httpx.post(f"{url}/runs", json=REVIEW).json()["run_id"]
        with psycopg.connect(database) as locker, ThreadPoolExecutor(1) as caller:
            locker.execute("SELECT id FROM runs WHERE id = %s FOR UPDATE", (run_id,))
            cancel = caller.submit(httpx.post, f"{url}/runs/{run_id}/cancel", timeout=BOUND_S)
            deadline = time.monotonic() + BOUND_S
            while not _waiting_on_lock(database, locker.info.backend_pid):
                assert time.monotonic() < deadline, "the cancel never reached the row lock"
                time.sleep(0.05)
            for _ in range(5):
                assert httpx.get(f"{url}/health", timeout=BOUND_S).json() == {"status": "ok"}
            # Other store calls go on too: a read does not wait for the row's lock.
            read = httpx.get(f"{url}/runs/{run_id}", timeout=BOUND_S)
            assert (read.status_code, read.json()["status"]) == (200, "queued")
            assert not cancel.done()
            locker.rollback()
            answered = cancel.result(BOUND_S)
        assert (answered.status_code, answered.json()["status"]) == (200, "cancelled")
    finally:
        process.stop()


def _hold_run_row(locker: psycopg.Connection[tuple[object, ...]]) -> None:
    """Lock the row a cancel updates (its transaction waits on it, one statement at a time)."""
    locker.execute("SELECT id FROM runs WHERE id = 'run_1' FOR UPDATE")


def _hold_session_id(locker: psycopg.Connection[tuple[object, ...]]) -> None:
    """Insert, uncommitted, the session a new run starts (its pipelined insert waits on it)."""
    locker.execute(
        "INSERT INTO sessions (id, agent_name, status, transcript, depth, created_at, updated_at)"
        " VALUES ('ses_run_2', 'grader', 'queued', '[]', 0, 0, 0)"
    )


@pytest.mark.parametrize("hold", [_hold_run_row, _hold_session_id])
async def test_a_call_cancelled_while_it_waits_leaves_no_transaction_open(
    store: PostgresStore, hold: Callable[[psycopg.Connection[tuple[object, ...]]], None]
) -> None:
    store.create_run(new_run("run_1"))
    database = store._dsn
    calls = {
        _hold_run_row: lambda: store.call(store.request_cancel, "run_1"),
        _hold_session_id: lambda: store.call(store.create_run, new_run("run_2")),
    }
    # More cancelled calls than the loop's pool has connections: each connection came back.
    for _ in range(store.loop_connections + 1):
        with psycopg.connect(database) as locker:
            hold(locker)
            waiting = asyncio.create_task(calls[hold]())
            await _until(
                lambda: _waiting_on_lock(database, locker.info.backend_pid),
                "the call never reached the lock",
            )
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            # While the lock is still held, nothing of the store's waits for it or is left in
            # a transaction.
            await _until(
                lambda: _busy_backends(database, locker.info.backend_pid) == [],
                "the cancelled call left its transaction open",
            )
            locker.rollback()
    # Nothing the cancelled calls began was kept, and the store answers as before.
    run = await store.call(store.get_run, "run_1")
    assert (run.status, run.cancel_requested) == ("queued", False)
    assert await store.call(store.get_run, "run_2") is None
    answers = await asyncio.gather(
        *(store.call(store.get_run, "run_1") for _ in range(store.loop_connections * 3))
    )
    assert {answer.status for answer in answers} == {"queued"}
    await calls[hold]()


async def test_calls_need_no_worker_thread(store: PostgresStore) -> None:
    store.create_run(new_run("run_1"))
    idle = ThreadPoolExecutor(1)
    idle.shutdown()  # to_thread on this loop now fails
    asyncio.get_running_loop().set_default_executor(idle)
    answers = await asyncio.gather(*(store.call(store.get_run, "run_1") for _ in range(10)))
    assert {answer.id for answer in answers} == {"run_1"}
    assert (await store.call(store.request_cancel, "run_1")).status == "cancelled"


def _read_losing_its_first_connection(store: PostgresStore, url: str, tries: list[int]) -> str:
    """Read in a transaction; on the first try, the server ends the connection mid-read."""
    with store._tx(write=False) as cursor:
        row = store._exec(cursor, "SELECT pg_backend_pid()").fetchone()
        assert row is not None
        tries.append(int(str(row[0])))
        if len(tries) == 1:
            with psycopg.connect(url, autocommit=True) as other:
                other.execute("SELECT pg_terminate_backend(%s)", (tries[0],))
            store._exec(cursor, "SELECT 1").fetchone()
    return "read"


async def test_a_read_in_a_worker_thread_is_made_again_after_its_connection_is_lost(
    postgres: Postgres,
) -> None:
    url = postgres.new_database()
    store = PostgresStore(url)
    try:
        tries: list[int] = []
        read = await store.call_in_thread(_read_losing_its_first_connection, store, url, tries)
        assert read == "read"
        assert len(tries) == 2 and tries[0] != tries[1]
        # Without the retry, the same read fails with the lost connection.
        lost: list[int] = []
        with pytest.raises(StoreUnavailable, match="was lost") as raised:
            await asyncio.to_thread(_read_losing_its_first_connection, store, url, lost)
        assert raised.value.retryable
    finally:
        store.close()


class _Proactor(asyncio.SelectorEventLoop):
    """Stands for Windows' proactor loop, on which psycopg's async connections cannot run."""


def test_on_a_proactor_loop_calls_go_to_worker_threads(
    postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(asyncio, "ProactorEventLoop", _Proactor, raising=False)
    store = PostgresStore(postgres.new_database())
    store.migrate()
    store.create_run(new_run("run_1"))
    threads: set[str] = set()

    def get_run(run_id: str) -> str:
        threads.add(threading.current_thread().name)
        return store.get_run(run_id).id

    loop = _Proactor()
    try:
        found = loop.run_until_complete(store.call(get_run, "run_1"))
    finally:
        loop.close()
        store.close()
    assert found == "run_1"
    assert threading.main_thread().name not in threads


def _connections(database: str) -> int:
    with psycopg.connect(database, autocommit=True) as observer:
        row = observer.execute(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row is not None
    return int(row[0])


def test_a_loop_s_connections_are_closed_when_the_loop_ends(postgres: Postgres) -> None:
    database = postgres.new_database()
    store = PostgresStore(database, loop_connections=3)
    try:
        store.migrate()
        store.create_run(new_run("run_1"))
        blocking = _connections(database)  # the blocking pool's, which the migration used

        async def calls() -> set[str]:
            runs = await asyncio.gather(*(store.call(store.get_run, "run_1") for _ in range(9)))
            assert _connections(database) > blocking  # the loop's own connections
            return {run.id for run in runs if run is not None}

        assert asyncio.run(calls()) == {"run_1"}
        deadline = time.monotonic() + BOUND_S
        while _connections(database) != blocking:
            assert time.monotonic() < deadline, "the loop's connections outlived it"
            time.sleep(0.05)
        assert asyncio.run(calls()) == {"run_1"}  # a later loop has a pool of its own
    finally:
        store.close()


BLOCKED_IMPORTS = """
import sys

class Missing:
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in {"greenlet", "psycopg", "psycopg_pool"}:
            raise ImportError(f"No module named {name!r}")

sys.meta_path.insert(0, Missing())
import agent_coordinator, agentshape._cli
from agent_coordinator import open_store
try:
    open_store("postgresql://nobody@127.0.0.1:1/none")
except Exception as error:
    print(type(error).__name__, error)
"""


def test_without_the_server_extra_only_a_postgresql_store_needs_greenlet(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", BLOCKED_IMPORTS],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])},
        capture_output=True,
        text=True,
        timeout=BOUND_S,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "ConfigError PostgreSQL needs psycopg, psycopg_pool and greenlet: "
        "pip install 'agentshape[server]'"
    )
