"""Server-sent events, cancelling a running run, and shutdown with runs in flight."""

from __future__ import annotations

import json
import time

from agent_coordinator import open_store
from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import Service
from tests.fake_llm import FakeLLM, delayed, openai_tool_call

REVIEW = {"agent_name": "reviewer", "prompt": "Review PR 1", "parameters": {"pr_url": "u"}}
VALID = {"summary": "ok", "approval": "approve"}


def _env(fake_llm: FakeLLM) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}


def _sse(text: str) -> list[tuple[str, dict[str, object]]]:
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def test_a_runs_events_stream_as_server_sent_events(service: Service) -> None:
    run = service.client.post(
        "/runs", json={**REVIEW, "model": "test:fail_first=invalid_arguments"}
    )
    run_id = run.json()["run_id"]
    with service.client.stream("GET", f"/runs/{run_id}/events") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        text = "".join(response.iter_text())
    events = _sse(text)
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "run_claimed"
    assert kinds[-1] == "end" and events[-1][1] == {"status": "completed"}
    assert "run_started" in kinds and "retry" in kinds and "run_completed" in kinds
    assert kinds.count("attempt") == 2
    library_ids = {data.get("run_id") for kind, data in events if kind == "attempt"}
    assert library_ids == {run_id}  # the library's events carry the service's run id
    assert service.client.get("/runs/run_nope/events").status_code == 404


def test_runs_at_once_each_keep_their_own_events(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    """One kept agent serves every run of an agent; its events still go to the right run."""
    fake_llm.respond_always(delayed(openai_tool_call("submit_result", VALID), 0.3))
    service = make_service(env=_env(fake_llm), model="openai:gpt-test", workers=4)
    runs = [service.client.post("/runs", json=REVIEW).json()["run_id"] for _ in range(4)]
    deadline = time.monotonic() + 20
    for run_id in runs:
        while service.client.get(f"/runs/{run_id}").json()["status"] != "completed":
            assert time.monotonic() < deadline
            time.sleep(0.05)
    for run_id in runs:
        with service.client.stream("GET", f"/runs/{run_id}/events") as response:
            events = _sse("".join(response.iter_text()))
        kinds = [kind for kind, _ in events]
        assert kinds.count("run_started") == 1 and kinds.count("attempt") == 1
        assert kinds.count("run_completed") == 1
        assert {data["run_id"] for _, data in events if "run_id" in data} == {run_id}


def test_cancelling_a_running_run_ends_it_cancelled(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(delayed(openai_tool_call("submit_result", VALID), 120))
    service = make_service(env=_env(fake_llm), model="openai:gpt-test", lease_s=1.5)
    run = service.client.post("/runs", json=REVIEW).json()
    deadline = time.monotonic() + 60
    while service.client.get(f"/runs/{run['run_id']}").json()["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    asked = service.client.post(f"/runs/{run['run_id']}/cancel", params={"wait": 20})
    # the answer says what happened: the runner stopped the run (its model call cancelled)
    assert asked.status_code == 200
    assert asked.json()["status"] == "cancelled" and asked.json()["cancel_requested"] is True
    final = service.client.get(f"/runs/{run['run_id']}").json()
    assert final["status"] == "cancelled" and final["error"]["type"] == "cancelled"
    assert [claim["ended"] for claim in final["claim_history"]] == ["cancelled"]
    session = service.client.get(f"/sessions/{run['session_id']}").json()
    assert session["status"] == "cancelled"
    again = service.client.post(f"/runs/{run['run_id']}/cancel")
    assert again.status_code == 409 and again.json()["error"] == "RunNotCancellable"
    resumed = service.client.post(
        "/runs",
        json={"type": "resume_session", "session_id": run["session_id"], "prompt": "x"},
    )
    assert resumed.status_code == 202  # the session is free again at once


def test_shutdown_puts_runs_in_flight_back_in_the_queue(
    make_service: ServiceFactory, fake_llm: FakeLLM, database: str
) -> None:
    # A shutdown that waited for the reply (120 s away) would find the run completed.
    fake_llm.respond(delayed(openai_tool_call("submit_result", VALID), 120))
    service = make_service(env=_env(fake_llm), model="openai:gpt-test")
    run = service.client.post("/runs", json=REVIEW).json()
    deadline = time.monotonic() + 60
    while service.client.get(f"/runs/{run['run_id']}").json()["status"] != "running":
        assert time.monotonic() < deadline
        time.sleep(0.05)
    service.close()
    store = open_store(database)
    try:
        stored = store.get_run(run["run_id"])
        assert stored is not None and stored.status == "queued"
        assert [e.type for e in store.events_after(run["run_id"])][-1] == "run_requeued"
    finally:
        store.close()
    fake_llm.respond(openai_tool_call("submit_result", VALID))
    again = make_service(env=_env(fake_llm), model="openai:gpt-test")
    deadline = time.monotonic() + 15
    while again.client.get(f"/runs/{run['run_id']}").json()["status"] != "completed":
        assert time.monotonic() < deadline, "the requeued run was not finished after a restart"
        time.sleep(0.1)
    history = again.client.get(f"/runs/{run['run_id']}").json()["claim_history"]
    assert [claim["ended"] for claim in history] == ["shutdown", "completed"]
