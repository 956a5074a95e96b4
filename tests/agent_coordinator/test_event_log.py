"""A run's stream events in the service: in its server-sent events, coalesced per write."""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import replace
from pathlib import Path

from pydantic import JsonValue

from agent_contracts import ModelTurnEvent, RunRequest, RunResult
from agent_coordinator._event_log import STREAM_TYPES, EventBuffer
from agent_executor import (
    Agent,
    NullAnalytics,
    PartialOutput,
    RetryStarted,
    RunStarted,
    TextDelta,
    ToolCallStarted,
)
from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import Service
from tests.agent_core.test_partial_output import is_prefix
from tests.fake_llm import FakeLLM, openai_text, openai_tool_call
from tests.fake_llm_streams import openai_stream

REVIEW: dict[str, object] = {
    "agent_name": "reviewer",
    "prompt": "Review PR 1",
    "parameters": {"pr_url": "u"},
}
STREAMED = {**REVIEW, "stream": True}
RESCUED = "test:fail_first=invalid_arguments"
VALID = {"summary": "ok", "approval": "approve"}

Event = tuple[str, dict[str, JsonValue]]


def sse_events(service: Service, run_id: str) -> list[Event]:
    """Read ``GET /runs/{run_id}/events`` to its end; return each event's type and data."""
    with service.client.stream("GET", f"/runs/{run_id}/events") as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        text = "".join(response.iter_text())
    events: list[Event] = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((fields["event"], json.loads(fields["data"])))
    return events


prefix_of = is_prefix  # what a partial holds is final; its strings may grow


def test_a_runs_events_carry_its_partial_outputs_and_retries(service: Service) -> None:
    created = service.client.post("/runs", json={**STREAMED, "model": RESCUED}).json()
    events = sse_events(service, created["run_id"])
    kinds = [kind for kind, _ in events]
    assert kinds[-1] == "end" and events[-1][1] == {"status": "completed"}
    result = service.client.get(f"/sessions/{created['session_id']}/result").json()
    final = result["result_data"]
    raw = {
        data["number"]: json.loads(str(data["raw_output"])) for k, data in events if k == "attempt"
    }
    assert set(raw) == {1, 2} and raw[2] == final

    partials = [(i, data) for i, (kind, data) in enumerate(events) if kind == "partial_output"]
    assert {data["attempt"] for _, data in partials} == {1, 2}
    for _, data in partials:
        assert data["type"] == "partial_output"
        assert prefix_of(data["data"], raw[int(str(data["attempt"]))]), data
    assert partials[-1][1]["data"] == final  # the last partial output is the result
    [(retry_at, retry)] = [
        (i, data) for i, (kind, data) in enumerate(events) if kind == "retry_started"
    ]
    assert retry == {
        "type": "retry_started",
        "attempt": 1,
        "reason": "output_schema_validation_failed",
        "errors": ["$: 'summary' is a required property"],
    }
    first = [i for i, data in partials if data["attempt"] == 1]
    second = [i for i, data in partials if data["attempt"] == 2]
    assert max(first) < retry_at < min(second) < kinds.index("run_completed")
    # the analytics events are as they were: one run_started (the stream's is not stored)
    assert kinds.count("run_started") == 1 and "type" not in events[kinds.index("run_started")][1]
    assert kinds.count("attempt") == 2 and kinds.count("retry") == 1


def test_a_streamed_service_run_ends_as_the_library_run_ends(
    service: Service, tmp_path: Path
) -> None:
    created = service.run({**STREAMED, "model": RESCUED}).json()
    stored = service.store.get_run(created["run_id"])
    assert stored is not None and stored.result is not None
    kept = RunResult.model_validate(stored.result)
    assert kept.status == "completed" and len(kept.attempts) == 2  # rescued by the re-prompt
    agent = Agent(
        service.execution.fleet["reviewer"], analytics=NullAnalytics(), workspace=tmp_path
    )
    request = RunRequest(task="Review PR 1", parameters={"pr_url": "u"})
    direct = asyncio.run(agent.run(request, model=RESCUED)).result
    assert (
        kept.status,
        kept.result_data,
        kept.result_text,
        kept.error,
        kept.schema_validation,
    ) == (
        direct.status,
        direct.result_data,
        direct.result_text,
        direct.error,
        direct.schema_validation,
    )
    assert [(a.raw_output, a.errors) for a in kept.attempts] == [
        (a.raw_output, a.errors) for a in direct.attempts
    ]
    assert [m.content for m in kept.transcript] == [m.content for m in direct.transcript]


def test_a_text_reply_streams_as_text_deltas_that_spell_it(service: Service) -> None:
    created = service.run(
        {"agent_name": "writer", "prompt": "hi", "model": "test", "stream": True}
    ).json()
    events = sse_events(service, created["run_id"])
    deltas = [data for kind, data in events if kind == "text_delta"]
    result = service.client.get(f"/sessions/{created['session_id']}/result").json()
    assert deltas and all(data["step"] == 1 and data["text"] for data in deltas)
    assert "".join(str(data["text"]) for data in deltas) == result["result_text"]
    assert "partial_output" not in {kind for kind, _ in events}  # no contract, no partials


def test_input_tool_calls_show_in_the_callers_events_only(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(
        openai_tool_call("agents_start_session", {"agent_name": "writer", "prompt": "say hi"}),
        openai_text("hi from the child"),
        openai_text("done"),
    )
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    service = make_service(env=env, model="openai:gpt-test")
    parent = service.run(
        {"agent_name": "orchestrator", "prompt": "delegate", "stream": True}
    ).json()
    assert parent["status"] == "completed"
    events = sse_events(service, parent["run_id"])
    [started] = [data for kind, data in events if kind == "tool_call_started"]
    [finished] = [data for kind, data in events if kind == "tool_call_finished"]
    assert started["name"] == "agents:start_session" and started["step"] == 1
    assert started["arguments"] == {"agent_name": "writer", "prompt": "say hi"}
    assert finished["call_id"] == started["call_id"]
    assert (finished["content"], finished["is_error"]) == ("hi from the child", False)
    assert "".join(str(data["text"]) for kind, data in events if kind == "text_delta") == "done"
    (child_session,) = service.client.get(f"/sessions/{parent['session_id']}").json()["children"]
    [child] = service.client.get("/runs", params={"session_id": child_session}).json()["items"]
    child_events = sse_events(service, child["run_id"])
    child_text = "".join(str(d["text"]) for k, d in child_events if k == "text_delta")
    assert child_text == "hi from the child"  # a streamed run's children stream too
    assert not {"tool_call_started", "tool_call_finished"} & {k for k, _ in child_events}


def test_only_a_run_asked_to_stream_streams(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", VALID))
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    service = make_service(env=env, model="openai:gpt-test")
    plain = service.run(REVIEW).json()
    streamed = service.run(STREAMED).json()
    assert [request.body.get("stream") for request in fake_llm.requests] == [None, True]
    plain_kinds = {kind for kind, _ in sse_events(service, plain["run_id"])}
    streamed_kinds = {kind for kind, _ in sse_events(service, streamed["run_id"])}
    assert not plain_kinds & STREAM_TYPES and "run_completed" in plain_kinds
    assert "partial_output" in streamed_kinds
    results = [
        service.client.get(f"/sessions/{run['session_id']}/result").json()
        for run in (plain, streamed)
    ]
    assert results[0]["result_data"] == results[1]["result_data"] == VALID


def test_a_slow_streams_output_is_seen_growing_a_write_at_a_time(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    final = {"summary": " ".join(f"point {n}" for n in range(40)), "approval": "approve"}
    reply = openai_stream(openai_tool_call("submit_result", json.dumps(final)), piece_chars=4)
    fake_llm.respond(replace(reply, gap_s=0.01))  # about 2 s of arguments, 4 characters a chunk
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    service = make_service(env=env, model="openai:gpt-test")
    created = service.client.post("/runs", json=STREAMED).json()
    events = sse_events(service, created["run_id"])  # read while the run goes on
    partials = [data["data"] for kind, data in events if kind == "partial_output"]
    assert partials[-1] == final
    assert 2 <= len(partials) < len(reply.events or ()) // 2  # a few writes, not one a chunk
    for earlier, later in itertools.pairwise(partials):
        assert prefix_of(earlier, later) and earlier != later, (earlier, later)
    assert isinstance(partials[0], dict) and "approval" not in partials[0]  # not yet written


def test_the_analytics_review_leaves_the_stream_events_out(service: Service) -> None:
    for _ in range(2):
        assert service.run({**STREAMED, "model": RESCUED}).json()["status"] == "completed"
    review = service.client.get("/reports/analytics").json()
    assert review["overall"]["runs"] == 2 and review["overall"]["rescued"] == 2
    assert review["unrecognised_events"] == 0  # neither streamed events nor run_claimed count


def test_the_openapi_reference_names_every_stream_event_type(service: Service) -> None:
    operation = service.client.get("/openapi.json").json()["paths"]["/runs/{run_id}/events"]
    description = operation["get"]["description"]
    assert [kind for kind in sorted(STREAM_TYPES) if f"``{kind}``" not in description] == []
    example = operation["get"]["responses"]["200"]["content"]["text/event-stream"]["example"]
    assert "event: partial_output" in example


# The buffer between two writes -------------------------------------------------------------


def _buffer(*events: object) -> EventBuffer:
    buffer = EventBuffer()
    for event in events:
        buffer.stream(event)  # type: ignore[arg-type]
    return buffer


def test_a_write_joins_the_text_deltas_of_a_step() -> None:
    buffer = _buffer(TextDelta("Hel", 1), TextDelta("lo", 1), TextDelta(" again", 2))
    turn = ModelTurnEvent(run_id="run_1", agent_id="a", step=2)
    buffer.emit(turn)
    buffer.stream(TextDelta("!", 2))
    assert buffer.drain() == [
        ("text_delta", {"type": "text_delta", "text": "Hello", "step": 1}),
        ("text_delta", {"type": "text_delta", "text": " again", "step": 2}),
        ("model_turn", turn.model_dump(mode="json")),
        ("text_delta", {"type": "text_delta", "text": "!", "step": 2}),
    ]
    assert buffer.drain() == []


def test_each_write_joins_the_text_deltas_streamed_since_the_last() -> None:
    buffer = _buffer(TextDelta("a", 1), TextDelta("b", 1))
    assert buffer.drain() == [("text_delta", {"type": "text_delta", "text": "ab", "step": 1})]
    turn = ModelTurnEvent(run_id="run_1", agent_id="a", step=1)
    buffer.emit(turn)  # a write of analytics events alone keeps them as they are
    assert buffer.drain() == [("model_turn", turn.model_dump(mode="json"))]
    buffer.stream(TextDelta("c", 2))
    buffer.stream(TextDelta("d", 2))
    assert buffer.drain() == [("text_delta", {"type": "text_delta", "text": "cd", "step": 2})]


def test_a_write_keeps_the_latest_partial_output_of_each_attempt_where_it_was() -> None:
    buffer = _buffer(
        PartialOutput({"a": "x"}, {"a": "x"}, 1),
        TextDelta("{", 1),
        PartialOutput({"a": "xy"}, {"a": "xy"}, 1),
        RetryStarted(1, "output_schema_validation_failed", ["$: bad"]),
        PartialOutput({"a": ""}, {"a": ""}, 2),
        PartialOutput({"a": "z"}, {"a": "z"}, 2),
    )
    assert [(kind, data.get("data")) for kind, data in buffer.drain()] == [
        ("text_delta", None),
        ("partial_output", {"a": "xy"}),
        ("retry_started", None),
        ("partial_output", {"a": "z"}),
    ]
    buffer.stream(PartialOutput({"a": "zz"}, {"a": "zz"}, 2))  # the next write has its own
    assert buffer.drain() == [
        ("partial_output", {"type": "partial_output", "data": {"a": "zz"}, "attempt": 2})
    ]


def test_an_escalated_runs_tiers_keep_their_own_attempts_partial_outputs() -> None:
    buffer = _buffer(
        RunStarted("run_1", "a", "test"),
        PartialOutput({"a": "tier 0"}, {"a": "tier 0"}, 1),
        RunStarted("run_1", "a", "bigger", model_tier=1),
        PartialOutput({"a": "t"}, {"a": "t"}, 1),
        PartialOutput({"a": "tier 1"}, {"a": "tier 1"}, 1),
    )
    assert [data["data"] for _, data in buffer.drain()] == [{"a": "tier 0"}, {"a": "tier 1"}]


def test_the_streams_run_started_is_not_kept_and_every_kept_type_is_listed() -> None:
    buffer = _buffer(
        RunStarted("run_1", "a", "test"),
        ToolCallStarted("c1", "fs:read", {"path": "x"}, 1),
        TextDelta("t", 1),
        PartialOutput({}, {}, 1),
        RetryStarted(1, "no_tool_call"),
    )
    kinds = [kind for kind, _ in buffer.drain()]
    assert kinds == ["tool_call_started", "text_delta", "partial_output", "retry_started"]
    assert set(kinds) <= STREAM_TYPES and "run_started" not in STREAM_TYPES
