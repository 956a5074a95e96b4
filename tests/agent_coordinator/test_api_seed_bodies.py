"""The design documents' own request bodies, verbatim, over real HTTP to the service."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import Service
from tests.agent_coordinator.test_mcp_server import http_session
from tests.fake_llm import FakeLLM, openai_tool_call

# Seed 001, "Configuration Summary": the run-level options body, verbatim.
SEED_001_OPTIONS = {
    "max_retries": 2,
    "extract_json": True,
    "strict_json_only": False,
    "validation_mode": "strict",
}
DATED = {
    "type": "object",
    "required": ["due"],
    "properties": {"due": {"type": "string", "format": "date"}},
}
NOT_A_DATE = {"due": "next Tuesday"}


def _openai(fake_llm: FakeLLM) -> dict[str, str]:
    return {"OPENAI_API_KEY": "sk-test-0000", "OPENAI_BASE_URL": fake_llm.openai_base_url}


@pytest.mark.parametrize("mode", ["strict", "lenient"])
def test_seed_001s_options_body_with_validation_mode_is_accepted_and_obeyed(
    make_service: ServiceFactory, fake_llm: FakeLLM, mode: str
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", NOT_A_DATE))
    service = make_service(env=_openai(fake_llm), model="openai:gpt-test")
    body = {
        "agent_name": "writer",
        "prompt": "When is it due?",
        "output_schema": DATED,
        "output_schema_options": {**SEED_001_OPTIONS, "validation_mode": mode},
    }
    run = service.run(body)
    assert run.status_code == 200, run.text
    result = service.client.get(f"/sessions/{run.json()['session_id']}/result").json()
    if mode == "strict":
        assert result["status"] == "failed"
        assert result["error"]["validation_errors"] == ["$.due: 'next Tuesday' is not a 'date'"]
        assert result["schema_validation"]["retry_count"] == 2
    else:
        assert result["status"] == "completed"
        assert result["result_data"] == NOT_A_DATE


def test_a_validation_mode_that_is_not_strict_or_lenient_is_422_naming_it(
    make_service: ServiceFactory,
) -> None:
    service = make_service()
    body = {
        "agent_name": "writer",
        "prompt": "x",
        "output_schema_options": {**SEED_001_OPTIONS, "validation_mode": "loose"},
    }
    response = service.client.post("/runs", json=body)
    assert response.status_code == 422
    assert "validation_mode" in response.text and "'strict' or 'lenient'" in response.text


def test_the_environment_default_validation_mode_is_lenient_when_set(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", NOT_A_DATE))
    env = {**_openai(fake_llm), "SCHEMA_ENFORCEMENT_VALIDATION_MODE": "lenient"}
    service = make_service(env=env, model="openai:gpt-test")
    body = {"agent_name": "writer", "prompt": "When?", "output_schema": DATED}
    assert service.run(body).json()["status"] == "completed"
    strict = {**body, "output_schema_options": SEED_001_OPTIONS}
    assert service.run(strict).json()["status"] == "failed"


async def test_the_mcp_tool_takes_seed_001s_options_with_validation_mode(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", NOT_A_DATE))
    service = make_service(env=_openai(fake_llm), model="openai:gpt-test", mcp=True)
    arguments = {
        "agent_name": "writer",
        "prompt": "When is it due?",
        "output_schema": DATED,
        "output_schema_options": {**SEED_001_OPTIONS, "validation_mode": "lenient"},
    }
    async with http_session(f"{service.url}/mcp") as session:
        result = await session.call_tool("start_agent_session", arguments)
    assert not result.is_error and result.structured_content is not None
    assert result.structured_content["result_data"] == NOT_A_DATE


# Seed 000, "Complete Data Flow" step 1 (its pr-reviewer is the test fleet's reviewer).
SEED_000_START = {"agent_name": "reviewer", "parameters": {"pr_url": "https://example.com/pr/1"}}
REVIEWED = {"summary": "Subtracts instead of adding.", "approval": "request_changes"}


def test_seed_000s_start_with_parameters_and_no_prompt_runs_on_the_parameters(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(openai_tool_call("submit_result", REVIEWED))
    service = make_service(env=_openai(fake_llm), model="openai:gpt-test")
    run = service.run(SEED_000_START)
    assert run.status_code == 200, run.text
    assert run.json()["status"] == "completed" and run.json()["type"] == "start_session"
    messages = fake_llm.requests[0].body["messages"]
    user = [m["content"] for m in messages if m["role"] == "user"]
    assert user == ['Parameters:\n{\n  "pr_url": "https://example.com/pr/1"\n}']
    result = service.client.get(f"/sessions/{run.json()['session_id']}/result").json()
    assert result["result_data"] == REVIEWED
    session = service.client.get(f"/sessions/{run.json()['session_id']}").json()
    assert session["runs"][0]["prompt"] == ""


def test_a_start_without_prompt_still_checks_the_parameters(
    make_service: ServiceFactory,
) -> None:
    service = make_service()
    response = service.client.post(
        "/runs", json={"agent_name": "reviewer", "parameters": {"pr_url": 7}}
    )
    assert response.status_code == 422
    body = response.json()
    assert body["error"] == "InputValidationFailed"
    assert [d["path"] for d in body["details"]] == ["$.pr_url"]


def test_a_start_with_neither_prompt_nor_parameters_is_422_saying_what_to_give(
    make_service: ServiceFactory,
) -> None:
    service = make_service()
    response = service.client.post("/runs", json={"agent_name": "writer"})
    assert response.status_code == 422
    assert response.json()["error"] == "InvalidRequest"
    assert "needs a prompt, or the agent's parameters" in response.json()["message"]
    started = service.run({"agent_name": "writer", "prompt": "Hi"}).json()
    resume = {"type": "resume_session", "session_id": started["session_id"]}
    refused = service.client.post("/runs", json=resume)
    assert refused.status_code == 422
    assert refused.json()["message"] == "resume_session needs a prompt"


def test_a_waited_run_answers_with_its_result_in_one_request(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(openai_tool_call("submit_result", REVIEWED))
    service = make_service(env=_openai(fake_llm), model="openai:gpt-test")
    answer = service.client.post("/runs", params={"wait": 30}, json=SEED_000_START)
    assert answer.status_code == 200
    body = answer.json()
    assert body["status"] == "completed"
    result = service.client.get(f"/sessions/{body['session_id']}/result").json()
    assert body["result"] == result
    assert body["result"]["result_data"] == REVIEWED and body["result"]["result_text"] is None
    assert body["result"]["run_id"] == body["run_id"]


def test_a_waited_failed_run_answers_with_the_failure_body(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond_always(openai_tool_call("submit_result", NOT_A_DATE))
    service = make_service(env=_openai(fake_llm), model="openai:gpt-test")
    body = {
        "agent_name": "writer",
        "prompt": "When is it due?",
        "output_schema": DATED,
        "output_schema_options": SEED_001_OPTIONS,
    }
    answer = service.run(body).json()
    assert answer["status"] == "failed"
    assert answer["result"]["error"]["type"] == "output_schema_validation_failed"
    assert answer["result"] == service.client.get(f"/sessions/{answer['session_id']}/result").json()


def test_an_unwaited_run_answers_202_without_a_result(make_service: ServiceFactory) -> None:
    service = make_service(workers=0)
    answer = service.client.post("/runs", json={"agent_name": "writer", "prompt": "Hi"})
    assert answer.status_code == 202
    assert answer.json()["status"] == "queued" and answer.json()["result"] is None


def _events(service: Service, run_id: str) -> list[tuple[str, dict[str, object]]]:
    """Read a run's server-sent events to the end: (event, data) pairs."""
    with service.client.stream("GET", f"/runs/{run_id}/events") as response:
        text = "".join(response.iter_text())
    events = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        events.append((fields["event"], json.loads(fields["data"])))
    return events


def test_a_completed_runs_events_end_with_seed_000s_result_event(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(openai_tool_call("submit_result", REVIEWED))
    service = make_service(env=_openai(fake_llm), model="openai:gpt-test")
    run = service.run(SEED_000_START).json()
    events = _events(service, run["run_id"])
    assert [kind for kind, _ in events][-3:] == ["run_completed", "result", "end"]
    result = events[-2][1]
    assert set(result) == {
        "event_type",
        "session_id",
        "run_id",
        "timestamp",
        "result_text",
        "result_data",
    }
    assert result["event_type"] == "result"
    assert (result["session_id"], result["run_id"]) == (run["session_id"], run["run_id"])
    assert (result["result_text"], result["result_data"]) == (None, REVIEWED)
    ended = datetime.fromisoformat(str(result["timestamp"]))
    assert ended == datetime.fromisoformat(
        service.client.get(f"/runs/{run['run_id']}").json()["finished_at"]
    )


def test_a_text_runs_result_event_carries_result_text_and_a_failed_run_has_none(
    make_service: ServiceFactory,
) -> None:
    service = make_service()
    text_run = service.run({"agent_name": "writer", "prompt": "Say hi"}).json()
    result = dict(_events(service, text_run["run_id"]))["result"]
    answer = service.client.get(f"/sessions/{text_run['session_id']}/result").json()
    assert result["result_data"] is None
    assert result["result_text"] == answer["result_text"] and result["result_text"]
    failing = {**SEED_000_START, "model": "test:fail_first=invalid_arguments+invalid_arguments"}
    failed = service.run(failing).json()
    assert failed["status"] == "failed"
    kinds = [kind for kind, _ in _events(service, failed["run_id"])]
    assert "result" not in kinds and kinds[-1] == "end"


async def test_the_mcp_progress_carries_the_result_event(
    make_service: ServiceFactory, fake_llm: FakeLLM
) -> None:
    fake_llm.respond(openai_tool_call("submit_result", REVIEWED))
    service = make_service(env=_openai(fake_llm), model="openai:gpt-test", mcp=True)
    messages: list[str | None] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        messages.append(message)

    async with http_session(f"{service.url}/mcp") as session:
        result = await session.call_tool(
            "start_agent_session", SEED_000_START, progress_callback=on_progress
        )
    assert not result.is_error and result.structured_content is not None
    last = json.loads(str(messages[-1]))
    assert last["event_type"] == "result" and last["result_data"] == REVIEWED
    assert last["run_id"] == result.structured_content["run_id"]


# Seed 001, "Named Schema Registry": the registration body (its "..." filled in).
CODE_ANALYSIS = {
    "name": "code-analysis-result",
    "description": "Standard format for code analysis output",
    "schema": {
        "type": "object",
        "required": ["summary", "issues"],
        "properties": {
            "summary": {"type": "string"},
            "issues": {"type": "array", "items": {"type": "string"}},
        },
    },
}
COUNT = {
    "type": "object",
    "required": ["files"],
    "properties": {"files": {"type": "integer"}},
    "additionalProperties": False,
}


def _validation(service: Service, body: dict[str, object]) -> dict[str, object]:
    run = service.run(body).json()
    assert run["status"] == "completed", run
    validation: dict[str, object] = run["result"]["schema_validation"]
    return validation


def test_inline_and_named_together_run_on_the_inline_one_and_say_so(
    make_service: ServiceFactory,
) -> None:
    service = make_service()
    assert service.client.post("/schemas", json=CODE_ANALYSIS).status_code == 201
    both = {
        "agent_name": "writer",
        "prompt": "Count the files.",
        "output_schema": COUNT,
        "output_schema_name": "code-analysis-result",
    }
    run = service.run(both).json()
    assert run["status"] == "completed"
    assert set(run["result"]["result_data"]) == {"files"}
    assert run["result"]["schema_validation"] == {
        "valid": True,
        "schema_name": None,
        "retry_count": 0,
        "errors": [],
        "schema_source": "inline",
        "unused_schema_name": "code-analysis-result",
    }
    stored = service.client.get(f"/sessions/{run['session_id']}/result").json()
    assert stored["schema_validation"]["unused_schema_name"] == "code-analysis-result"


def test_schema_source_names_each_step_of_seed_001s_resolution_order(
    make_service: ServiceFactory,
) -> None:
    service = make_service()
    service.client.post("/schemas", json=CODE_ANALYSIS)
    named = _validation(
        service,
        {"agent_name": "writer", "prompt": "Go.", "output_schema_name": "code-analysis-result"},
    )
    assert (named["schema_source"], named["schema_name"]) == ("named", "code-analysis-result")
    assert named["unused_schema_name"] is None
    default = _validation(service, {"agent_name": "summariser", "prompt": "Go."})
    assert default["schema_source"] == "default"
    agent = _validation(service, SEED_000_START)
    assert agent["schema_source"] == "agent"
    inline_over_default = _validation(
        service, {"agent_name": "summariser", "prompt": "Go.", "output_schema": COUNT}
    )
    assert inline_over_default["schema_source"] == "inline"


def test_inline_and_named_for_an_agent_with_its_own_schema_is_still_refused(
    make_service: ServiceFactory,
) -> None:
    service = make_service()
    service.client.post("/schemas", json=CODE_ANALYSIS)
    body = {
        **SEED_000_START,
        "output_schema": COUNT,
        "output_schema_name": "code-analysis-result",
    }
    response = service.client.post("/runs", json=body)
    assert response.status_code == 400 and response.json()["error"] == "ConfigError"
