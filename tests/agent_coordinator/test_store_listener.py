"""PostgreSQL's notifications wake runners and ``?wait=`` requests in other processes."""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest

from agent_coordinator._store import PostgresStore
from agent_coordinator._store.listener import ANY, RUN_ENDED, RUN_QUEUED
from tests.agent_coordinator.harness import Postgres, throwaway_cluster, write_fleet
from tests.agent_coordinator.processes import Process, serve

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
BOUND_S = 60
"""How long a notification may take to arrive on a loaded machine."""


@pytest.fixture(scope="module")
def own_postgres() -> Iterator[Postgres]:
    """A cluster of this module's own, since a test restarts it."""
    yield from throwaway_cluster("agentshape-pg-listen-")


async def _until(heard: list[tuple[str, str, int]], count: int) -> None:
    deadline = time.monotonic() + BOUND_S
    while len(heard) < count:
        assert time.monotonic() < deadline, f"heard only {heard}"
        await asyncio.sleep(0.02)


def _notify(database: str, channel: str, payload: str) -> None:
    with psycopg.connect(database, autocommit=True) as sender:
        sender.execute("SELECT pg_notify(%s, %s)", (channel, payload))


def test_notifications_reach_each_subscriber_on_its_own_event_loop(postgres: Postgres) -> None:
    """A subscriber hears ``ANY`` once listening, then each payload, called on its loop's thread."""
    database = postgres.new_database()
    store = PostgresStore(database)

    async def listen() -> tuple[list[tuple[str, str, int]], int]:
        heard: list[tuple[str, str, int]] = []

        def hear(channel: str, payload: str) -> None:
            heard.append((channel, payload, threading.get_ident()))

        for channel in (RUN_QUEUED, RUN_ENDED):
            store.listen(channel, functools.partial(hear, channel))
        await _until(heard, 2)
        await asyncio.to_thread(_notify, database, RUN_ENDED, "run_1")
        await asyncio.to_thread(_notify, database, RUN_QUEUED, "run_2")
        await _until(heard, 4)
        return heard, threading.get_ident()

    try:
        heard, loop_thread = asyncio.run(listen())
    finally:
        store.close()
    assert sorted(heard[:2]) == [(RUN_ENDED, ANY, loop_thread), (RUN_QUEUED, ANY, loop_thread)]
    assert heard[2:] == [(RUN_ENDED, "run_1", loop_thread), (RUN_QUEUED, "run_2", loop_thread)]


class _Proactor(asyncio.SelectorEventLoop):
    """Stands for Windows' proactor loop, which cannot call back when a socket has data."""


def test_on_a_proactor_loop_a_thread_listens_and_hands_notifications_to_the_loop(
    postgres: Postgres, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(asyncio, "ProactorEventLoop", _Proactor, raising=False)
    database = postgres.new_database()
    store = PostgresStore(database)

    async def listen() -> tuple[list[tuple[str, str, int]], int]:
        heard: list[tuple[str, str, int]] = []
        store.listen(
            RUN_ENDED, lambda payload: heard.append((RUN_ENDED, payload, threading.get_ident()))
        )
        await _until(heard, 1)
        await asyncio.to_thread(_notify, database, RUN_ENDED, "run_1")
        await _until(heard, 2)
        return heard, threading.get_ident()

    loop = _Proactor()
    try:
        heard, loop_thread = loop.run_until_complete(listen())
    finally:
        store.close()
        loop.run_until_complete(asyncio.sleep(0))  # the listening task ends on its loop
        loop.close()
    assert heard == [(RUN_ENDED, ANY, loop_thread), (RUN_ENDED, "run_1", loop_thread)]


def test_a_restarted_database_is_listened_to_again(own_postgres: Postgres) -> None:
    """After the server restarts, subscribers hear ``ANY`` (anything may have happened), then
    the notifications sent from then on."""
    database = own_postgres.new_database()
    store = PostgresStore(database)

    async def listen() -> list[str]:
        heard: list[tuple[str, str, int]] = []
        store.listen(RUN_ENDED, lambda payload: heard.append((RUN_ENDED, payload, 0)))
        await _until(heard, 1)
        await asyncio.to_thread(own_postgres.stop_server, "fast")
        await asyncio.to_thread(own_postgres.start)
        await _until(heard, 2)  # connected again
        await asyncio.to_thread(_notify, database, RUN_ENDED, "run_after")
        await _until(heard, 3)
        return [payload for _, payload, _ in heard]

    try:
        assert asyncio.run(listen()) == [ANY, ANY, "run_after"]
    finally:
        store.close()


def test_a_runner_polling_once_an_hour_claims_each_run_another_process_stores(
    tmp_path: Path, postgres: Postgres
) -> None:
    """Only the database's notification can wake a runner that polls hourly: runs still end.

    Each run after the first is stored while the runner sleeps: it claimed (and found nothing)
    right after ending the previous one, before that run's answer reached the caller.
    """
    database = postgres.new_database()
    write_fleet(tmp_path / "agents")
    server, url = serve(tmp_path, database, {}, "--workers", "0", "--model", "test")
    runner = Process(
        ["runner", "--workers", "1", "--database", database, "--model", "test", "--poll", "3600"],
        cwd=tmp_path,
        env={},
    )
    try:
        runner.read_until("workers")
        statuses = [
            httpx.post(
                f"{url}/runs",
                params={"wait": 60},
                json={**REVIEW, "prompt": f"Review PR {n}"},
                timeout=90,
            ).json()["status"]
            for n in range(3)
        ]
    finally:
        assert runner.stop() == 0
        server.stop()
    assert statuses == ["completed", "completed", "completed"]


def test_a_runner_on_sqlite_polls_at_the_interval_it_was_given(tmp_path: Path) -> None:
    """SQLite cannot notify: ``--poll`` is how soon a runner in another process sees a run."""
    database = str(tmp_path / "coordinator.db")
    write_fleet(tmp_path / "agents")
    server, url = serve(tmp_path, database, {}, "--workers", "0", "--model", "test")
    runner = Process(
        ["runner", "--workers", "1", "--database", database, "--model", "test", "--poll", "0.05"],
        cwd=tmp_path,
        env={},
    )
    try:
        runner.read_until("workers")
        answer = httpx.post(f"{url}/runs", params={"wait": 60}, json=REVIEW, timeout=90)
    finally:
        assert runner.stop() == 0
        server.stop()
    assert answer.json()["status"] == "completed"


def test_poll_must_be_a_positive_number_of_seconds(tmp_path: Path) -> None:
    process = Process(["runner", "--poll", "0"], cwd=tmp_path, env={})
    code = process.popen.wait(60)
    assert process.popen.stderr is not None
    error = process.popen.stderr.read()
    process.stop()
    assert code == 2
    assert "'0' is not a positive number of seconds" in error
