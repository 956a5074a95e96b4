from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_contracts import AgentConfig
from agent_executor._cli import main
from agent_executor._cli.fleet import output_fields
from tests.agent_executor.cli.test_main import AGENT_YML

pytestmark = pytest.mark.usefixtures("offline_model")

TIERED_YML = AGENT_YML.replace(
    "context:", "llm:\n  model: test\n  tiers: [openai:gpt-4o]\ncontext:"
).replace("properties:\n      title", "properties:\n      note: { type: string }\n      title")
DEFAULT_YML = (
    "id: summariser\nname: Summariser\nsystem_prompt: You summarise.\ntools: [fs:read, fs:list]\n"
    "default_output_schema:\n  type: object\n  required: [summary]\n  properties:\n"
    "    summary: {type: string}\n"
)
FREE_YML = "id: chatty\nsystem_prompt: You chat.\n"


def write_fleet(root: Path, **agents: str) -> Path:
    for folder, text in agents.items():
        (root / folder).mkdir(parents=True)
        (root / folder / "agent.yml").write_text(text)
    return root


@pytest.fixture(autouse=True)
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_lists_every_agent_with_model_tools_and_output_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_fleet(Path("agents"), grader=TIERED_YML, summariser=DEFAULT_YML, chatty=FREE_YML)
    assert main(["list"]) == 0
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].split() == ["id", "name", "model", "tools", "output", "fields"]
    rows = {line.split()[0]: line for line in lines[2:5]}
    assert set(rows) == {"chatty", "grader", "summariser"}
    assert rows["grader"].split()[1:] == [
        "Grader",
        "test",
        ">",
        "openai:gpt-4o",
        "-",
        "note?,",
        "title,",
        "score",
    ]
    assert rows["summariser"].split()[1:] == [
        "Summariser",
        "(run",
        "time)",
        "fs:read,",
        "fs:list",
        "summary",
        "(default)",
    ]
    assert rows["chatty"].rstrip().endswith("(free text)")
    assert lines[-1] == "3 agents, every config valid"
    assert err == ""


def test_every_problem_in_every_file_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    write_fleet(
        Path("fleet"),
        a="id: a\nsystem_prompt: hi\ntools: [fs:raed]\noutput_schema:\n  type: object\n"
        "  properties:\n    x: {type: strin}\n",
        b="id: b\nsystem_prompt: hi\nmodle: x\n",
        grader=AGENT_YML,
    )
    assert main(["list", "fleet"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "fleet: 3 problems in 2 agent configs:",
        "fleet/a/agent.yml:3: tools[0]: unknown tool 'fs:raed' (did you mean 'fs:read'?); "
        "known tools: agents:start_session, fs:list, fs:read, fs:search",
        "fleet/a/agent.yml:7: output_schema.properties.x.type: unknown type 'strin' "
        "(did you mean 'string'?)",
        "fleet/b/agent.yml:3: modle: unknown key 'modle' at $ (did you mean 'model'?)",
    ]


def test_warnings_go_to_stderr(capsys: pytest.CaptureFixture[str]) -> None:
    write_fleet(Path("agents"), other=AGENT_YML)
    assert main(["list"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: agents/other/agent.yml:2: id: agent id 'grader' is not")


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    write_fleet(Path("agents"), grader=TIERED_YML, chatty=FREE_YML)
    assert main(["list", "--json"]) == 0
    agents = json.loads(capsys.readouterr().out)
    assert [agent["id"] for agent in agents] == ["chatty", "grader"]
    assert agents[1]["output_fields"] == ["note", "title", "score"]
    assert agents[1]["model_tiers"] == ["openai:gpt-4o"] and agents[1]["schema"] == "agent"
    assert agents[1]["file"] == str(Path("agents/grader/agent.yml"))
    assert agents[0]["schema"] is None and agents[0]["output_fields"] == []


def test_an_empty_fleet(capsys: pytest.CaptureFixture[str]) -> None:
    Path("agents").mkdir()
    assert main(["list"]) == 0
    assert capsys.readouterr().out.startswith("no agents in agents")


def test_a_missing_directory_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "nowhere"]) == 2
    err = capsys.readouterr().err
    assert err == "agentshape: nowhere: fleet directory not found\n"


def test_output_fields() -> None:
    config = AgentConfig.model_validate(
        {
            "id": "a",
            "output_schema": {
                "type": "object",
                "required": ["b"],
                "properties": {"a": {}, "b": {}},
            },
        }
    )
    assert output_fields(config) == ["a?", "b"]
    assert (
        output_fields(AgentConfig.model_validate({"id": "a", "output_schema": {"type": "array"}}))
        == []
    )
    assert output_fields(AgentConfig.model_validate({"id": "a"})) == []


# Seed 004's agent file, verbatim but for its output.schema, which breaks the seed's rules.
SEED_004_HEAD = """\
# .kb/agents/researcher/agent.yml
schema: 'kb.agent/1'
id: researcher
name: Code Researcher

# ... existing config ...

# NEW: Output schema (JSON Schema format)
output:
  schema:
"""


def test_seed_004s_output_schema_rules_are_errors_with_file_and_line(
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_fleet(
        Path("agents"),
        listing=SEED_004_HEAD + "    type: array\n    items: { type: string }\n",
        loose=SEED_004_HEAD + "    type: object\n",
        wrapped="id: wrapped\nsystem_prompt: hi\noutput_schema:\n  type: array\n",
    )
    assert main(["list"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        "agents: 3 problems in 2 agent configs:",
        "agents/listing/agent.yml:10: output.schema: must have properties: the fields the "
        "output has",
        "agents/listing/agent.yml:11: output.schema.type: must be \"object\", not 'array'; use "
        "the output_schema form for another root (it is wrapped for tool calls)",
        "agents/loose/agent.yml:10: output.schema: must have properties: the fields the output has",
    ]
