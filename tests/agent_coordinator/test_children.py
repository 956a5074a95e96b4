"""``agents:start_session``: a parent agent starts a child session and gets its result back."""

from __future__ import annotations

import json

from tests.agent_coordinator.conftest import ServiceFactory
from tests.fake_llm import FakeLLM, openai_text, openai_tool_call

START = "agents_start_session"  # agents:start_session as the provider receives it


def _env(fake_llm: FakeLLM) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": fake_llm.openai_base_url}


def _tool_results(request_body: dict[str, object]) -> list[str]:
    messages = request_body["messages"]
    assert isinstance(messages, list)
    return [str(m["content"]) for m in messages if m.get("role") == "tool"]


def test_a_child_with_a_schema_returns_result_data_as_json(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    schema = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    fake_llm.respond(
        openai_tool_call(
            START, {"agent_name": "summariser", "prompt": "count", "output_schema": schema}
        ),
        openai_tool_call("submit_result", {"n": 7}),  # the child
        openai_text("The child counted 7."),  # the parent again
    )
    service = make_service(env=_env(fake_llm), model="openai:gpt-test")
    run = service.run({"agent_name": "orchestrator", "prompt": "delegate"}).json()
    assert run["status"] == "completed"
    assert _tool_results(fake_llm.requests[2].body) == [json.dumps({"n": 7}, indent=2)]
    parent = service.client.get(f"/sessions/{run['session_id']}").json()
    (child_id,) = parent["children"]
    child = service.client.get(f"/sessions/{child_id}").json()
    assert child["parent_session_id"] == run["session_id"] and child["depth"] == 1
    result = service.client.get(f"/sessions/{child_id}/result").json()
    assert result["result_data"] == {"n": 7}
    parent_result = service.client.get(f"/sessions/{run['session_id']}/result").json()
    assert parent_result["result_text"] == "The child counted 7."


def test_a_child_without_a_schema_returns_its_text(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(
        openai_tool_call(START, {"agent_name": "writer", "prompt": "say hi"}),
        openai_text("hi from the child"),
        openai_text("done"),
    )
    service = make_service(env=_env(fake_llm), model="openai:gpt-test")
    run = service.run({"agent_name": "orchestrator", "prompt": "delegate"}).json()
    assert run["status"] == "completed"
    assert _tool_results(fake_llm.requests[2].body) == ["hi from the child"]


def test_an_unknown_child_agent_is_an_error_result_the_parent_sees(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(
        openai_tool_call(START, {"agent_name": "nobody", "prompt": "x"}),
        openai_text("could not delegate"),
    )
    service = make_service(env=_env(fake_llm), model="openai:gpt-test")
    run = service.run({"agent_name": "orchestrator", "prompt": "delegate"}).json()
    assert run["status"] == "completed"
    (content,) = _tool_results(fake_llm.requests[1].body)
    assert "AgentNotFound" in content
    parent = service.client.get(f"/sessions/{run['session_id']}").json()
    assert parent["children"] == []


def test_a_failed_child_is_reported_with_its_problems(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    schema = {"type": "object", "required": ["n"], "properties": {"n": {"type": "integer"}}}
    fake_llm.respond(
        openai_tool_call(
            START, {"agent_name": "summariser", "prompt": "count", "output_schema": schema}
        ),
        openai_tool_call("submit_result", {"n": "seven"}),
        openai_tool_call("submit_result", {"n": "seven"}),
        openai_text("the child failed"),
    )
    service = make_service(env=_env(fake_llm), model="openai:gpt-test")
    run = service.run({"agent_name": "orchestrator", "prompt": "delegate"}).json()
    assert run["status"] == "completed"
    (content,) = _tool_results(fake_llm.requests[3].body)
    assert "output_schema_validation_failed" in content and "$.n" in content
