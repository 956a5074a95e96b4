"""The store's promises, on SQLite and PostgreSQL: one claim per run, one finish, no run lost."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_coordinator import SqlStore, open_store
from agent_coordinator._errors import Conflict, NotFound
from agent_coordinator._store import NewRun, RunInput
from agent_coordinator._store.migrations import MIGRATIONS
from agent_coordinator._store.overview import error_types


@pytest.fixture
def store(database: str) -> Iterator[SqlStore]:
    opened = open_store(database)
    yield opened
    opened.close()


def _new(n: int, **extra: object) -> NewRun:
    return NewRun(
        id=f"run_{n}",
        session_id=f"ses_{n}",
        kind="start_session",
        agent_name="a",
        input=RunInput(prompt=f"task {n}"),
        **extra,  # type: ignore[arg-type]
    )


def test_migrations_are_recorded_and_applied_once(store: SqlStore, database: str) -> None:
    latest = MIGRATIONS[-1][0]
    assert store.migrate() == latest
    again = open_store(database)
    try:
        assert again.migrate() == latest
    finally:
        again.close()


def test_concurrent_claims_hand_each_run_to_exactly_one_runner(store: SqlStore) -> None:
    for n in range(40):
        store.create_run(_new(n))
    claimed: list[str] = []
    lock = threading.Lock()

    def runner(owner: str) -> None:
        while (claim := store.claim(owner, 30)) is not None:
            with lock:
                claimed.append(claim.run.id)

    threads = [threading.Thread(target=runner, args=(f"r{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(claimed) == sorted(f"run_{n}" for n in range(40))


def test_only_the_lease_holder_finishes_and_only_once(store: SqlStore) -> None:
    store.create_run(_new(1))
    claim = store.claim("first", 0.2)
    assert claim is not None and claim.run.claims == 1
    time.sleep(0.3)
    taken = store.claim("second", 30)
    assert taken is not None and taken.run.id == "run_1" and taken.run.claims == 2
    assert store.renew("run_1", "first", 30).held is False
    assert not store.finish("run_1", "first", status="completed", result={}, error=None)
    ended = store.finish("run_1", "second", status="completed", result={"a": 1}, error=None)
    assert ended is not None and ended.status == "completed" and ended.result == {"a": 1}
    assert ended.lease_owner is None and ended.finished_at is not None
    assert not store.finish("run_1", "second", status="failed", result=None, error={})
    run = store.get_run("run_1")
    assert run is not None and run.status == "completed" and run.result == {"a": 1}


def test_the_turns_a_runner_recorded_go_to_the_runner_that_takes_the_run_over(
    store: SqlStore,
) -> None:
    store.create_run(_new(1))
    first = store.claim("first", -1)  # a lease already run out: the runner is gone
    assert first is not None and first.progress is None
    assert store.record_progress("run_1", "first", {"steps": 2, "turns": []})
    taken = store.claim("second", 30)
    assert taken is not None and taken.progress == {"steps": 2, "turns": []}
    assert not store.record_progress("run_1", "first", {"steps": 3})  # not its run any more
    assert store.release("run_1", "second")
    again = store.claim("third", 30)
    assert again is not None and again.progress == {"steps": 2, "turns": []}
    store.finish("run_1", "third", status="completed", result={}, error=None)
    assert not store.record_progress("run_1", "third", {"steps": 4})  # ended


def test_a_finished_run_keeps_its_transcript_for_resume(store: SqlStore) -> None:
    store.create_run(_new(1))
    store.claim("r", 30)
    store.finish(
        "run_1", "r", status="completed", result={}, error=None, transcript=[{"role": "user"}]
    )
    resume = _new(2).model_copy(update={"session_id": "ses_1", "kind": "resume_session"})
    store.create_run(resume)
    claim = store.claim("r", 30)
    assert claim is not None and claim.transcript == [{"role": "user"}]


def test_resume_refuses_a_busy_or_missing_session(store: SqlStore) -> None:
    store.create_run(_new(1))
    busy = _new(2).model_copy(update={"session_id": "ses_1", "kind": "resume_session"})
    with pytest.raises(Conflict) as caught:
        store.create_run(busy)
    assert caught.value.code == "SessionBusy"
    missing = _new(3).model_copy(update={"session_id": "ses_x", "kind": "resume_session"})
    with pytest.raises(NotFound):
        store.create_run(missing)


def test_idempotency_keys_give_back_the_same_run(store: SqlStore) -> None:
    first, created = store.create_run(_new(1, idempotency_key="k", request_hash="h"))
    again, created_again = store.create_run(_new(2, idempotency_key="k", request_hash="h"))
    assert created and not created_again and again.id == first.id
    with pytest.raises(Conflict):
        store.create_run(_new(3, idempotency_key="k", request_hash="other"))


def test_release_puts_a_run_back_for_another_runner(store: SqlStore) -> None:
    store.create_run(_new(1))
    store.claim("r", 30)
    assert store.release("run_1", "r")
    again = store.claim("s", 30)
    assert again is not None and again.run.claims == 2
    assert [event.type for event in store.events_after("run_1")] == [
        "run_claimed",
        "run_requeued",
        "run_claimed",
    ]


def test_cancel_of_a_running_run_is_a_request_the_runner_sees(store: SqlStore) -> None:
    store.create_run(_new(1))
    store.claim("r", 30)
    assert store.request_cancel("run_1").status == "running"
    assert store.renew("run_1", "r", 30).cancel_requested is True
    with pytest.raises(NotFound):
        store.request_cancel("run_x")


def test_a_finish_racing_a_cancel_ends_the_run_cancelled_keeping_its_result(
    store: SqlStore,
) -> None:
    store.create_run(_new(1))
    store.claim("r", 30)
    assert store.cancel_requests(["run_1"]) == set()
    store.request_cancel("run_1")
    assert store.cancel_requests(["run_1", "run_x"]) == {"run_1"}
    ended = store.finish(
        "run_1", "r", status="completed", result={"a": 1}, error=None, transcript=[{"x": 1}]
    )
    assert ended is not None and ended.status == "cancelled"
    assert ended.error is not None and ended.error["type"] == "cancelled"
    run = store.get_run("run_1")
    assert run is not None and run.status == "cancelled" and run.result == {"a": 1}
    assert run.error == ended.error
    session = store.get_session("ses_1")
    assert session is not None and session.status == "cancelled"
    assert session.transcript == [{"x": 1}]
    assert [event.type for event in store.events_after("run_1")][-1] == "run_cancelled"
    with pytest.raises(Conflict):
        store.request_cancel("run_1")


def test_a_run_whose_lease_keeps_running_out_fails_lease_exhausted(store: SqlStore) -> None:
    store.create_run(_new(1))
    for owner in ("a", "b"):
        claim = store.claim(owner, 0.05, 2)
        assert claim is not None and claim.run.id == "run_1"
        time.sleep(0.1)
    store.create_run(_new(2))
    taken = store.claim("c", 30, 2)  # waiting runs go first
    assert taken is not None and taken.run.id == "run_2"
    # run_1's lease ran out twice: it fails instead of being handed out a third time
    assert store.claim("d", 30, 2) is None
    run = store.get_run("run_1")
    assert run is not None and run.status == "failed" and run.lease_owner is None
    assert run.error is not None and run.error["type"] == "lease_exhausted"
    session = store.get_session("ses_1")
    assert session is not None and session.status == "failed"
    runs = [store.get_run(run_id) for run_id in ("run_1", "run_2")]
    history = store.claim_history([run for run in runs if run is not None])
    assert [(c.number, c.runner, c.ended) for c in history["run_1"]] == [
        (1, "a", "expired"),
        (2, "b", "expired"),
    ]
    assert all(c.ended_at is not None for c in history["run_1"])
    assert [e.type for e in store.events_after("run_1")] == [
        "run_claimed",
        "claim_expired",
        "run_claimed",
        "claim_expired",
        "run_failed",
    ]
    assert [(c.runner, c.ended) for c in history["run_2"]] == [("c", None)]
    # the failure is among the sessions list's filter choices, as every ended run's is
    assert "lease_exhausted" in error_types(store)


def test_each_claims_end_is_kept(store: SqlStore) -> None:
    store.create_run(_new(1))
    store.claim("a", 30)
    store.release("run_1", "a")
    store.claim("b", 0.05)
    time.sleep(0.1)
    store.claim("c", 30)
    store.finish("run_1", "c", status="failed", result=None, error={"type": "x"})
    run = store.get_run("run_1")
    assert run is not None
    history = store.claim_history([run])["run_1"]
    assert [(c.runner, c.ended) for c in history] == [
        ("a", "shutdown"),
        ("b", "expired"),
        ("c", "failed"),
    ]


def test_text_utf8_cannot_carry_is_stored_as_its_escape_and_read_back_equal(
    store: SqlStore,
) -> None:
    store.create_run(_new(1))
    store.claim("r", 30)
    # lone halves of emoji, as a model's JSON may spell them, beside a whole one
    value = {"summary": "cut \ud83d", "\udc80 key": ["\ude00 tail", "\U0001f600 whole"]}
    ended = store.finish(
        "run_1", "r", status="completed", result=value, error=None, transcript=[value]
    )
    assert ended is not None
    run = store.get_run("run_1")
    assert run is not None and run.result == value
    session = store.get_session("ses_1")
    assert session is not None and session.transcript == [value]


def test_one_renewal_extends_every_held_lease_and_reports_the_rest(store: SqlStore) -> None:
    for n in (1, 2, 3):
        store.create_run(_new(n))
        store.claim("r", 30)
    store.request_cancel("run_2")
    store.finish("run_3", "r", status="completed", result={}, error=None)
    states = store.renew_many(["run_1", "run_2", "run_3", "run_x"], "r", 60)
    assert {run_id: (s.held, s.cancel_requested) for run_id, s in states.items()} == {
        "run_1": (True, False),
        "run_2": (True, True),
        "run_3": (False, False),
        "run_x": (False, False),
    }
    assert store.renew_many(["run_1"], "someone else", 60)["run_1"].held is False
    run = store.get_run("run_1")
    assert run is not None and run.lease_expires_at is not None
    assert run.lease_expires_at > time.time() + 50


def test_events_of_several_runs_are_stored_together_in_order(store: SqlStore) -> None:
    for n in (1, 2):
        store.create_run(_new(n))
    store.add_events_many(
        {"run_1": [("a", {"n": 1}), ("b", {"n": 2})], "run_2": [("c", {"é": "ü"})], "run_3": []}
    )
    assert [(e.type, e.data) for e in store.events_after("run_1")] == [
        ("a", {"n": 1}),
        ("b", {"n": 2}),
    ]
    assert [(e.type, e.data) for e in store.events_after("run_2")] == [("c", {"é": "ü"})]


def test_async_calls_give_what_the_method_gives_and_its_errors(store: SqlStore) -> None:
    async def main() -> None:
        run, created = await store.call(store.create_run, _new(1))
        assert created and run.status == "queued"
        claim = await store.call(store.claim, "r", 30)
        assert claim is not None and claim.run.id == "run_1"
        assert (await store.call(store.get_run, "run_1")) == store.get_run("run_1")
        with pytest.raises(NotFound):
            await store.call(store.request_cancel, "run_x")

    asyncio.run(main())


def test_sqlite_calls_wait_for_another_writer_without_blocking_the_loop(tmp_path: Path) -> None:
    """In place when they can; when another process holds the write lock, in a thread."""
    store = open_store(tmp_path / "c.db")
    other = sqlite3.connect(tmp_path / "c.db", isolation_level=None)
    try:

        async def main() -> tuple[bool, int]:
            assert (await store.call(store.create_run, _new(1)))[1]  # in place, nothing held
            other.execute("BEGIN IMMEDIATE")  # another process's write transaction
            ticks = 0

            async def tick() -> None:
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            ticking = asyncio.create_task(tick())
            asyncio.get_running_loop().call_later(0.3, other.execute, "COMMIT")
            _, created = await store.call(store.create_run, _new(2))
            ticking.cancel()
            return created, ticks

        created, ticks = asyncio.run(main())
        assert created
        assert ticks >= 10  # the loop went on while the call waited for the lock
        assert store.count_runs() == 2
    finally:
        other.close()
        store.close()
