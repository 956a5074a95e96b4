"""The store's webhook deliveries, on SQLite and PostgreSQL: stored with a run's end, one deliverer
an attempt, and a deliverer lost mid-attempt hands the delivery back."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest

from agent_coordinator import SqlStore, open_store
from agent_coordinator._store import NewRun, RunInput


@pytest.fixture
def store(database: str) -> Iterator[SqlStore]:
    opened = open_store(database)
    yield opened
    opened.close()


def _ended(store: SqlStore, n: int, webhook: str | None = "http://127.0.0.1:9/hook") -> str:
    store.create_run(
        NewRun(
            id=f"run_{n}",
            session_id=f"ses_{n}",
            kind="start_session",
            agent_name="a",
            input=RunInput(prompt=f"task {n}", webhook=webhook),
        )
    )
    claim = store.claim_run(f"run_{n}", "runner", 30)
    assert claim is not None
    result = {"result_data": {"n": n}, "result_text": None}
    assert store.finish(f"run_{n}", "runner", status="completed", result=result, error=None)
    return f"run_{n}"


def test_a_runs_end_stores_its_delivery_and_only_with_a_webhook(store: SqlStore) -> None:
    run_id = _ended(store, 1)
    delivery = store.run_delivery(run_id)
    assert delivery is not None and delivery.status == "pending" and delivery.attempts == 0
    assert delivery.id.startswith("evt_") and delivery.event == "run.completed"
    body = json.loads(delivery.body)
    assert body["run_id"] == run_id and body["result_data"] == {"n": 1}
    assert store.run_delivery(_ended(store, 2, webhook=None)) is None


def test_concurrent_deliverers_each_take_a_different_delivery(store: SqlStore) -> None:
    for n in range(30):
        _ended(store, n)
    taken: list[str] = []
    lock = threading.Lock()

    def deliverer(owner: str) -> None:
        while (delivery := store.claim_delivery(owner, 60)) is not None:
            with lock:
                taken.append(delivery.run_id)

    threads = [threading.Thread(target=deliverer, args=(f"d{i}",)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(taken) == sorted(f"run_{n}" for n in range(30))


def test_a_deliverer_lost_mid_attempt_hands_the_delivery_back(store: SqlStore) -> None:
    run_id = _ended(store, 1)
    first = store.claim_delivery("lost", 0.2)
    assert first is not None and first.attempts == 1
    assert store.claim_delivery("other", 60) is None  # held while the attempt may still run
    time.sleep(0.3)
    second = store.claim_delivery("other", 60)
    assert second is not None and second.id == first.id and second.attempts == 2
    assert not store.record_delivery(
        first.id, "lost", status="delivered", status_code=200, error=None
    )
    assert store.record_delivery(
        second.id, "other", status="delivered", status_code=200, error=None
    )
    shown = store.run_delivery(run_id)
    assert shown is not None and shown.status == "delivered" and shown.delivered_at is not None
    assert store.claim_delivery("other", 60) is None


def test_a_run_whose_lease_keeps_running_out_posts_its_failure(store: SqlStore) -> None:
    store.create_run(
        NewRun(
            id="run_1",
            session_id="ses_1",
            kind="start_session",
            agent_name="a",
            input=RunInput(prompt="task", webhook="http://127.0.0.1:9/hook"),
        )
    )
    for owner in ("a", "b"):
        assert store.claim(owner, 0.05, 2) is not None
        time.sleep(0.1)
    assert store.claim("c", 30, 2) is None  # its lease ran out twice: it fails, not run again
    delivery = store.run_delivery("run_1")
    assert delivery is not None and delivery.event == "run.failed"
    assert json.loads(delivery.body)["error"]["type"] == "lease_exhausted"
