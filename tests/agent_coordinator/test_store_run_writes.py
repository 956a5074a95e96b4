"""A run's creation and end, each one statement on PostgreSQL, on both stores alike.

The usual end is one statement; a run asked to cancel, one of another shape, or one another
run ends beside it must end exactly as before: once, its rollups counted once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from agent_coordinator import SqlStore, open_store
from agent_coordinator._store import NewRun, RunInput
from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.test_rollups import _cli_review, _same, _stored_events
from tests.fake_llm import FakeLLM, delayed, openai_tool_call

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
VALID = {"summary": "ok", "approval": "approve"}


@pytest.fixture
def store(database: str) -> Iterator[SqlStore]:
    opened = open_store(database)
    yield opened
    opened.close()


def _new(n: int) -> NewRun:
    return NewRun(
        id=f"run_{n}",
        session_id=f"ses_{n}",
        kind="start_session",
        agent_name="a",
        input=RunInput(prompt=f"task {n}"),
    )


def test_a_creation_sent_again_after_it_was_stored_gives_back_the_run(store: SqlStore) -> None:
    """What a retry after a lost connection meets when the first try was applied."""
    run, claim = store.create_claimed_run(_new(1), "r", 30)
    again, claimed = store.create_claimed_run(_new(1), "r", 30)
    assert (again.id, again.seq, again.status, again.lease_owner) == (
        run.id,
        run.seq,
        "running",
        "r",
    )
    assert claim is not None and claimed is not None and claimed.run.id == run.id
    assert claimed.transcript == [] and claimed.events == claim.events
    queued, created = store.create_run(_new(2))
    same, created_again = store.create_run(_new(2))
    assert (same.id, same.seq, same.status) == (queued.id, queued.seq, "queued")
    assert (created, created_again) == (True, False)
    assert store.count_runs() == 2
    assert [event.type for event in store.events_after("run_1")] == ["run_claimed"]


def test_a_run_cancelled_while_it_runs_ends_cancelled_counted_once(
    make_service: ServiceFactory, fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.respond(delayed(openai_tool_call("submit_result", VALID), 120))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    service = make_service(env=env, model="openai:gpt-test")
    run = service.client.post("/runs", json=REVIEW).json()
    deadline = time.monotonic() + 60
    while service.client.get(f"/runs/{run['run_id']}").json()["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    asked = service.client.post(f"/runs/{run['run_id']}/cancel", params={"wait": 20})
    assert asked.status_code == 200 and asked.json()["status"] == "cancelled"
    events = service.client.get(f"/runs/{run['run_id']}/events").text
    assert events.count("event: run_cancelled") == 1
    # The cancelled run's events are counted once: the review is the CLI's over them.
    api = service.client.get("/reports/analytics").json()
    cli = _cli_review(tmp_path, _stored_events(service))
    for key in ("events", "unrecognised_events"):
        assert api[key] == cli[key], key
    for key in ("runs", "failed", "incomplete", "attempted"):
        assert api["overall"][key] == cli["overall"][key], key  # type: ignore[index]
    session = service.client.get(f"/sessions/{run['session_id']}").json()
    assert session["status"] == "cancelled"


def test_runs_of_every_shape_ending_at_once_each_end_once(
    make_service: ServiceFactory, tmp_path: Path
) -> None:
    """Ends of different shapes lock the same rollup rows; none waits on another for ever."""
    service = make_service(workers=8)
    bodies = [
        {**REVIEW, "model": "test"},
        {**REVIEW, "model": "test:fail_first=invalid_arguments"},
        {**REVIEW, "model": "test:fail_first=invalid_arguments+invalid_arguments"},
        {"agent_name": "writer", "prompt": "hi"},
    ] * 8
    with ThreadPoolExecutor(16) as pool:
        answers = list(pool.map(lambda body: service.run(body, wait=60), bodies))
    statuses = [answer.json()["status"] for answer in answers]
    assert statuses == ["completed", "completed", "failed", "completed"] * 8
    review = service.client.get("/reports/analytics").json()
    by_agent = {agent["agent_id"]: agent["runs"] for agent in review["agents"]}
    assert by_agent == {"reviewer": 24, "writer": 8}
    _same(review, _cli_review(tmp_path, _stored_events(service)))
    before = service.client.get(f"/sessions/{answers[3].json()['session_id']}").json()
    resumed = service.run(
        {"type": "resume_session", "session_id": answers[3].json()["session_id"], "prompt": "more"}
    ).json()
    assert resumed["status"] == "completed"
    session = service.client.get(f"/sessions/{resumed['session_id']}").json()
    assert session["messages"] > before["messages"]
