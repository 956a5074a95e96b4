"""An event loop's own PostgreSQL connections: bounded, waited for in line, replaced when lost.

Each test drives a real :class:`PostgresStore` from async code against a throwaway cluster, and
watches the database's own view of the store's connections (``pg_stat_activity``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable

import psycopg
import pytest

from agent_coordinator._errors import StoreUnavailable
from agent_coordinator._store import PostgresStore
from tests.agent_coordinator.harness import Postgres, new_run

BOUND_S = 60
"""How long a condition may take to come true on a loaded machine."""


def _backends(database: str, *, waiting: bool = False) -> list[int]:
    """The pids of the other backends on ``database`` (only those waiting on a lock)."""
    with psycopg.connect(database, autocommit=True) as observer:
        rows = observer.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND (NOT %s OR wait_event_type = 'Lock')",
            (waiting,),
        ).fetchall()
    return [int(str(pid)) for (pid,) in rows]


async def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + BOUND_S
    while not await asyncio.to_thread(condition):
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.05)


@pytest.fixture
async def store(postgres: Postgres) -> AsyncIterator[PostgresStore]:
    opened = PostgresStore(postgres.new_database(), loop_connections=2, wait_s=1.0)
    opened.migrate()
    for number in range(5):
        opened.create_run(new_run(f"run_{number}"))
    yield opened
    opened.close()


async def test_calls_beyond_the_pool_s_size_wait_in_line_for_a_connection(
    store: PostgresStore,
) -> None:
    """With every connection held by a call waiting on a lock, the other calls wait their turn
    (no connection more is opened) and are answered once the lock is let go."""
    database = store._dsn
    with psycopg.connect(database) as locker:
        locker.execute("SELECT id FROM runs FOR UPDATE")
        cancels = [
            asyncio.create_task(store.call(store.request_cancel, f"run_{number}"))
            for number in range(5)
        ]
        await _until(
            lambda: len(_backends(database, waiting=True)) == store.loop_connections,
            "the pool's connections never all reached the lock",
        )
        await asyncio.sleep(0.2)  # a third connection, were one opened, would show now
        assert len(_backends(database, waiting=True)) == store.loop_connections
        locker.rollback()
        ended = await asyncio.wait_for(asyncio.gather(*cancels), BOUND_S)
    assert {run.status for run in ended} == {"cancelled"}


async def test_a_call_finding_every_connection_lent_too_long_is_told_the_store_is_unavailable(
    store: PostgresStore,
) -> None:
    """``wait_s`` bounds the wait for a connection: then StoreUnavailable (503), saying so."""
    database = store._dsn
    with psycopg.connect(database) as locker:
        locker.execute("SELECT id FROM runs WHERE id IN ('run_0', 'run_1') FOR UPDATE")
        held = [
            asyncio.create_task(store.call(store.request_cancel, f"run_{number}"))
            for number in range(2)
        ]
        await _until(lambda: len(_backends(database, waiting=True)) == 2, "the calls never waited")
        with pytest.raises(StoreUnavailable) as raised:
            await store.call(store.get_run, "run_4")
        assert raised.value.status_code == 503
        assert "no connection to the database" in raised.value.message
        assert "was free within 1.0 s" in raised.value.message
        locker.rollback()
        await asyncio.wait_for(asyncio.gather(*held), BOUND_S)
    run = await store.call(store.get_run, "run_4")
    assert run is not None and run.status == "queued"


async def test_connections_the_server_ended_are_replaced_without_the_callers_noticing(
    store: PostgresStore,
) -> None:
    database = store._dsn
    await asyncio.gather(*(store.call(store.get_run, "run_0") for _ in range(4)))
    with psycopg.connect(database, autocommit=True) as admin:
        admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    await _until(lambda: _backends(database) == [], "the backends were not ended")
    for _ in range(3):
        answers = await asyncio.gather(*(store.call(store.get_run, "run_0") for _ in range(4)))
        assert {run.id for run in answers if run is not None} == {"run_0"}
