"""The store's promises, on SQLite and PostgreSQL: one claim per run, one finish, no run lost."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from agent_coordinator.errors import Conflict, NotFound
from agent_coordinator.store import NewRun, RunInput, SqlStore, open_store


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
    assert store.migrate() == 1
    again = open_store(database)
    try:
        assert again.migrate() == 1
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
    assert store.finish("run_1", "second", status="completed", result={"a": 1}, error=None)
    assert not store.finish("run_1", "second", status="failed", result=None, error={})
    run = store.get_run("run_1")
    assert run is not None and run.status == "completed" and run.result == {"a": 1}


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
