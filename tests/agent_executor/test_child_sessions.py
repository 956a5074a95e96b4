"""``agents:start_session`` on the command line (issue 33 row 5): ``agentshape list`` accepts a
fleet with a parent agent, and ``agentshape run`` runs its children in this process with the
service's contract rules, depth and count limits and callback format.

The models are the real OpenAI SDK against the local fake server; each test asserts the CLI's
output and exit code and what the parent's model was sent back as the child's result.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_executor._cli import main
from tests.fake_llm import FakeLLM, openai_text, openai_tool_call, openai_tool_calls

START = "agents_start_session"  # agents:start_session as the provider receives it

GRADER = """\
id: grader
system_prompt: You grade essays.
output_schema:
  type: object
  required: [title, score]
  properties:
    title: {type: string}
    score: {type: integer, minimum: 0}
  additionalProperties: false
"""
COUNTER = """\
id: counter
system_prompt: You count.
parameters_schema:
  type: object
  required: [count]
  properties:
    count: {type: integer}
"""
WRITER = "id: writer\nsystem_prompt: You write short answers.\n"
ORCHESTRATOR = """\
id: orchestrator
system_prompt: You hand work to other agents.
tools: [agents:start_session, fs:read]
"""


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    agents = tmp_path / "agents"
    for name, text in [
        ("grader", GRADER),
        ("counter", COUNTER),
        ("writer", WRITER),
        ("orchestrator", ORCHESTRATOR),
    ]:
        (agents / name).mkdir(parents=True)
        (agents / name / "agent.yml").write_text(text)
    return agents


@pytest.fixture
def openai(fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> FakeLLM:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    return fake_llm


def run_parent(fleet: Path, *extra: str) -> int:
    return main(
        [
            "run",
            "orchestrator",
            "--task",
            "delegate",
            "--model",
            "openai:gpt-test",
            "--agents-dir",
            str(fleet),
            "--analytics-dir",
            str(fleet.parent / "analytics"),
            "--workspace",
            str(fleet.parent),
            *extra,
        ]
    )


def tool_results(fake_llm: FakeLLM, index: int) -> list[str]:
    messages = fake_llm.requests[index].body["messages"]
    assert isinstance(messages, list)
    return [str(m["content"]) for m in messages if m.get("role") == "tool"]


def test_list_accepts_a_fleet_with_a_parent_agent(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["list", str(fleet)]) == 0
    out, err = capsys.readouterr()
    assert "unknown tool" not in err
    row = next(line for line in out.splitlines() if line.startswith("orchestrator"))
    assert "agents:start_session" in row
    (fleet / "orchestrator" / "agent.yml").write_text(
        ORCHESTRATOR.replace("agents:start_session", "agents:start_sesion")
    )
    assert main(["list", str(fleet)]) == 1
    assert "unknown tool 'agents:start_sesion'" in capsys.readouterr().err


def test_run_gives_the_parent_a_childs_data_as_json(
    fleet: Path, openai: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    openai.respond(
        openai_tool_call(START, {"agent_name": "grader", "prompt": "Grade this essay."}),
        openai_tool_call("submit_result", {"title": "Essay", "score": 3}),  # the child
        openai_text("The grader gave 3."),  # the parent again
    )
    assert run_parent(fleet) == 0
    out, err = capsys.readouterr()
    assert "The grader gave 3." in out, err
    assert tool_results(openai, 2) == [json.dumps({"title": "Essay", "score": 3}, indent=2)]
    child_request = openai.requests[1].body
    assert child_request["tool_choice"]["function"]["name"] == "submit_result"
    offered = [t["function"]["name"] for t in openai.requests[0].body["tools"]]
    assert START in offered and "fs_read" in offered


def test_run_gives_a_text_childs_text_and_keeps_a_childs_own_contract(
    fleet: Path, openai: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    openai.respond(
        openai_tool_calls(
            [
                (START, {"agent_name": "writer", "prompt": "say hi"}, "call_1"),
                (
                    START,
                    {"agent_name": "grader", "prompt": "grade", "output_schema": schema},
                    "call_2",
                ),
                (START, {"agent_name": "countr", "prompt": "count"}, "call_3"),
                (START, {"agent_name": "counter", "prompt": "count", "parameters": {}}, "call_4"),
            ]
        ),
        openai_text("hi from the child"),  # writer; the others never reach a model
        openai_text("done"),
    )
    assert run_parent(fleet) == 0
    assert "done" in capsys.readouterr().out
    results = tool_results(openai, 2)
    assert results[0] == "hi from the child"
    assert "own output contract, which a caller cannot override" in results[1]
    assert "AgentNotFound: no agent 'countr'; did you mean 'counter'?" in results[2]
    assert "count" in results[3] and "required" in results[3]
    assert len(openai.requests) == 3


def test_children_nest_at_most_three_deep(
    fleet: Path, openai: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    deeper = openai_tool_call(START, {"agent_name": "orchestrator", "prompt": "deeper"})
    openai.respond(
        deeper,  # depth 0 starts 1
        deeper,  # 1 starts 2
        deeper,  # 2 starts 3
        deeper,  # 3 is refused
        openai_text("depth 3 done"),
        openai_text("depth 2 done"),
        openai_text("depth 1 done"),
        openai_text("depth 0 done"),
    )
    assert run_parent(fleet) == 0
    assert "depth 0 done" in capsys.readouterr().out
    (refused,) = tool_results(openai, 4)
    assert "child sessions may nest 3 deep; this session is at depth 3" in refused
    assert tool_results(openai, 5) == ["depth 3 done"]
    assert tool_results(openai, 7) == ["depth 1 done"]


def test_a_session_starts_at_most_ten_children(
    fleet: Path, openai: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = [
        (START, {"agent_name": "writer", "prompt": f"task {n}"}, f"call_{n}") for n in range(11)
    ]
    openai.respond(
        openai_tool_calls(calls), *[openai_text("ok") for _ in range(10)], openai_text("done")
    )
    assert run_parent(fleet) == 0
    assert "done" in capsys.readouterr().out
    results = tool_results(openai, 11)
    assert len(results) == 11 and results.count("ok") == 10
    (refused,) = [r for r in results if r != "ok"]
    assert "a session may start at most 10 children" in refused


def test_a_child_that_fails_its_contract_is_reported_with_its_problems(
    fleet: Path, openai: FakeLLM, capsys: pytest.CaptureFixture[str]
) -> None:
    openai.respond(
        openai_tool_call(START, {"agent_name": "grader", "prompt": "grade"}),
        openai_tool_call("submit_result", {"title": "t", "score": "three"}),
        openai_tool_call("submit_result", {"title": "t", "score": "three"}),
        openai_text("the child failed"),
    )
    assert run_parent(fleet) == 0
    assert "the child failed" in capsys.readouterr().out
    (content,) = tool_results(openai, 3)
    assert "child session of grader failed" in content
    assert "output_schema_validation_failed" in content and "$.score" in content


def test_show_gives_a_parent_agents_tools_and_first_request(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown = ["show", "orchestrator", "--task", "delegate", "--agents-dir", str(fleet)]
    assert main([*shown, "--workspace", str(fleet.parent)]) == 0
    out = capsys.readouterr().out
    assert "input tools: fs:read, agents:start_session" in out
    assert "=== input tool agents:start_session (sent as agents_start_session) ===" in out
