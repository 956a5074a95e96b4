"""The store's model-call slots, on SQLite and PostgreSQL: what the shared limits are made of."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from agent_contracts import CallLimits
from agent_coordinator import SqlStore, open_store

KEY = "openai:gpt-test"


@pytest.fixture
def store(database: str) -> Iterator[SqlStore]:
    opened = open_store(database)
    yield opened
    opened.close()


def test_concurrency_counts_slots_until_they_are_released(store: SqlStore) -> None:
    limits = CallLimits(concurrency=2)
    first = store.take_call_slot(KEY, limits, 60)
    second = store.take_call_slot(KEY, limits, 60)
    assert first is not None and second is not None
    assert store.take_call_slot(KEY, limits, 60) is None
    assert store.take_call_slot("anthropic:other", limits, 60) is not None  # its own count
    store.release_call_slot(first, 10)
    assert store.take_call_slot(KEY, limits, 60) is not None


def test_a_slot_not_released_in_time_frees_itself(store: SqlStore) -> None:
    limits = CallLimits(concurrency=1)
    assert store.take_call_slot(KEY, limits, 0.2) is not None
    deadline = time.monotonic() + 30
    while store.take_call_slot(KEY, limits, 60) is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_requests_and_tokens_a_minute_count_finished_calls(store: SqlStore) -> None:
    by_requests = CallLimits(requests_per_minute=2)
    for _ in range(2):
        slot = store.take_call_slot(KEY, by_requests, 60)
        assert slot is not None
        store.release_call_slot(slot, 0)
    assert store.take_call_slot(KEY, by_requests, 60) is None
    by_tokens = CallLimits(tokens_per_minute=100)
    slot = store.take_call_slot("openai:tokens", by_tokens, 60)
    assert slot is not None
    assert store.take_call_slot("openai:tokens", by_tokens, 60) is not None  # 0 used so far
    store.release_call_slot(slot, 100)
    assert store.take_call_slot("openai:tokens", by_tokens, 60) is None


def test_a_pause_stops_every_taker_until_it_ends_and_a_shorter_one_does_not_cut_it(
    store: SqlStore,
) -> None:
    store.pause_calls(KEY, time.time() + 1.0)
    store.pause_calls(KEY, time.time() - 5)
    assert store.take_call_slot(KEY, CallLimits(), 60) is None
    deadline = time.monotonic() + 30
    while store.take_call_slot(KEY, CallLimits(), 60) is None:
        assert time.monotonic() < deadline
        time.sleep(0.05)


def test_concurrent_takers_never_pass_the_limit(store: SqlStore, database: str) -> None:
    limits = CallLimits(concurrency=3)
    taken: list[str] = []
    lock = threading.Lock()

    def take() -> None:
        other = open_store(database)
        try:
            for _ in range(5):
                slot = other.take_call_slot(KEY, limits, 60)
                if slot is not None:
                    with lock:
                        taken.append(slot)
        finally:
            other.close()

    threads = [threading.Thread(target=take) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(taken) == 3
