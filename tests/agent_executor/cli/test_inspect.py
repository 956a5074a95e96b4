from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from agent_executor._cli import inspect as cli_inspect
from agent_executor._cli import main
from agent_executor._cli.inspect import class_name_for
from tests.agent_executor.cli.test_main import AGENT_YML
from tests.fake_llm import FakeLLM, anthropic_tool_use, openai_tool_call

pytestmark = pytest.mark.usefixtures("offline_model")

TOOLS_YML = AGENT_YML.replace("output:", "tools: [fs:read]\noutput:")
FREE_YML = "id: chatty\nsystem_prompt: You chat.\n"
DEFAULT_YML = (
    "id: summariser\nsystem_prompt: You summarise.\ndefault_output_schema:\n"
    "  type: object\n  required: [summary]\n  properties:\n    summary: {type: string}\n"
)
SHORT_YML = AGENT_YML.replace("title: { type: string }", "title: { type: string, minLength: 3 }")
HAS_CODEGEN = importlib.util.find_spec("datamodel_code_generator") is not None


@pytest.fixture(autouse=True)
def fleet(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    agents = {
        "grader": AGENT_YML,
        "reader": TOOLS_YML,
        "chatty": FREE_YML,
        "summariser": DEFAULT_YML,
        "short": SHORT_YML,
    }
    for name, text in agents.items():
        (tmp_path / "agents" / name).mkdir(parents=True)
        (tmp_path / "agents" / name / "agent.yml").write_text(text)
    return tmp_path / "agents"


def show_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    assert main(["show", *args, "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


# show ------------------------------------------------------------------------------------------


def test_show_prints_the_prompt_each_dialects_tool_and_its_report(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["show", "short"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("agent grader (Grader), agents/short/agent.yml\n")
    assert "output contract: the agent's output_schema (hash " in out
    prompt = out[out.index("=== system prompt (tool mode) ===") :]
    assert prompt.index("You grade essays.") < prompt.index("## Required Output Format")
    assert "call `submit_result` once with your final result" in prompt
    for title in ("OpenAI (function tool)", "Anthropic (tool)", "neutral (Ollama"):
        assert f"=== submit_result for {title}" in out
    assert "openai: strict; the provider enforces the schema, except as noted\n" in out
    assert "  - $.properties.title: minLength moved to description (not supported by OpenAI" in out
    assert "anthropic: strict; the provider enforces the schema, except as noted\n" in out
    assert "neutral: not strict; only agentshape's validation enforces the schema" in out


def test_show_json_is_what_the_openai_provider_sends(
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shown = show_json(capsys, "short")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    fake_llm.respond(openai_tool_call("submit_result", {"title": "abc", "score": 1}))
    assert main(["run", "short", "--task", "Go.", "--model", "openai:gpt-test"]) == 0
    sent = fake_llm.requests[0].body
    assert sent["tools"] == [shown["output_tool"]["openai"]]
    assert sent["messages"][0] == {"role": "system", "content": shown["system_prompt"]}


def test_show_json_is_what_the_anthropic_provider_sends(
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shown = show_json(capsys, "short")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_llm.anthropic_base_url)
    fake_llm.respond(anthropic_tool_use("submit_result", {"title": "abc", "score": 1}))
    assert main(["run", "short", "--task", "Go.", "--model", "anthropic:claude-test"]) == 0
    sent = fake_llm.requests[0].body
    assert sent["tools"] == [shown["output_tool"]["anthropic"]]
    system = sent["system"]
    text = system if isinstance(system, str) else "".join(block["text"] for block in system)
    assert text == shown["system_prompt"]


def test_show_json_fields(capsys: pytest.CaptureFixture[str]) -> None:
    shown = show_json(capsys, "grader")
    assert shown["agent"] == "grader" and shown["schema_source"] == "agent"
    assert len(shown["schema_hash"]) == 64 and shown["mode"] == "tool"
    assert shown["output_tool"]["neutral"]["parameters"]["required"] == ["title", "score"]
    assert shown["reports"]["neutral"]["strict"] is False
    assert shown["reports"]["openai"]["strict"] is True
    assert shown["input_tools"] == []


def test_show_input_tools_with_their_wire_names(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "reader"]) == 0
    out = capsys.readouterr().out
    assert "input tools: fs:read" in out
    assert "=== input tool fs:read (sent as fs_read) ===" in out
    tool = show_json(capsys, "reader")["input_tools"][0]
    assert tool["name"] == "fs_read" and tool["agentshape_name"] == "fs:read"
    assert tool["parameters"]["type"] == "object" and "path" in tool["parameters"]["properties"]


def test_show_and_run_say_input_tools_are_not_offered_in_prompted_mode(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["show", "reader", "--mode", "prompted"]) == 0
    shown = capsys.readouterr()
    assert "input tools: fs:read (not offered in prompted mode" in shown.out
    assert main(["show", "reader"]) == 0
    assert "not offered" not in capsys.readouterr().out

    assert main(["run", "reader", "--task", "Grade it.", "--mode", "prompted"]) == 0
    err = capsys.readouterr().err
    assert "note: agent 'grader': its input tools (fs:read) are not offered in prompted" in err
    assert main(["run", "reader", "--task", "Grade it."]) == 0
    assert "not offered" not in capsys.readouterr().err


def test_show_says_the_llamacpp_grammar_carries_a_whole_schema(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # minLength and an integer minimum: llama.cpp's own converter leaves the minimum out.
    assert main(["show", "short"]) == 0
    out = capsys.readouterr().out
    assert "=== native output for llama.cpp (agentshape's GBNF grammar) ===" in out
    assert "llamacpp: the grammar enforces the whole schema while decoding\n" in out
    assert show_json(capsys, "short")["reports"]["llamacpp_grammar"] == []


def test_show_lists_what_the_llamacpp_grammar_leaves_to_validation(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    listy = AGENT_YML.replace("id: grader", "id: listy").replace(
        "score: { type: integer, minimum: 0 }",
        "score: { type: number, minimum: 0 }\n"
        "      tags: { type: array, items: { type: string }, uniqueItems: true }",
    )
    (fleet / "listy").mkdir()
    (fleet / "listy" / "agent.yml").write_text(listy)

    assert main(["show", "listy"]) == 0
    out = capsys.readouterr().out
    assert (
        "llamacpp: the grammar enforces the schema while decoding, except as noted "
        "(validation and the re-ask enforce those)\n"
        "  - $.properties.score: minimum on a number is not in the grammar\n"
        "  - $.properties.tags: uniqueItems is not in the grammar\n"
    ) in out
    assert show_json(capsys, "listy")["reports"]["llamacpp_grammar"] == [
        "$.properties.score: minimum on a number is not in the grammar",
        "$.properties.tags: uniqueItems is not in the grammar",
    ]


def test_show_carries_the_definition_of_done_if_then_in_the_llamacpp_grammar(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # Its if (task_complete true) / then (remaining_items empty) is a boolean discriminator.
    dod = Path(__file__).parents[3] / "bench" / "integration_agents" / "execution-dod.yml"
    assert main(["show", str(dod)]) == 0
    out = capsys.readouterr().out
    assert "llamacpp: the grammar enforces the whole schema while decoding\n" in out
    assert "if is not in the grammar" not in out and "then is not" not in out
    assert show_json(capsys, str(dod))["reports"]["llamacpp_grammar"] == []


def test_show_prompted_mode(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "grader", "--mode", "prompted"]) == 0
    out = capsys.readouterr().out
    assert "=== system prompt (prompted mode) ===" in out
    assert "Reply with only the JSON value, with no other text, and stop right after it." in out
    assert "An example of the shape (its values are placeholders: write your own):" in out


def test_show_a_free_text_agent(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "chatty"]) == 0
    out = capsys.readouterr().out
    assert "output contract: none; the agent answers in free text" in out
    assert "=== system prompt ===\nYou chat.\n" in out and "submit_result" not in out
    assert show_json(capsys, "chatty")["output_tool"] is None


def test_show_with_a_schema_file_for_an_agent_with_a_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    Path("s.json").write_text('{"type": "object", "properties": {"n": {"type": "integer"}}}')
    assert show_json(capsys, "summariser")["schema_source"] == "default"
    shown = show_json(capsys, "summariser", "--schema-file", "s.json")
    assert shown["schema_source"] == "inline"
    assert '"n"' in json.dumps(shown["output_tool"]) and "summary" not in json.dumps(shown)


def test_show_unknown_agent_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "nobody"]) == 2
    assert "no agent 'nobody'" in capsys.readouterr().err


# validate --------------------------------------------------------------------------------------


def test_validate_a_valid_output(capsys: pytest.CaptureFixture[str]) -> None:
    Path("out.json").write_text('{"title": "On owls", "score": 4}')
    assert main(["validate", "grader", "out.json"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("OK: out.json meets agent grader's contract, the agent's output_schema")


def test_validate_lists_every_problem(capsys: pytest.CaptureFixture[str]) -> None:
    Path("out.json").write_text('{"score": -1, "extra": true}')
    assert main(["validate", "grader", "out.json"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "INVALID: out.json breaks agent grader's contract (3 problems):"
    assert sorted(lines[1:]) == sorted(
        [
            "  $: 'title' is a required property",
            "  $: Additional properties are not allowed ('extra' was unexpected)",
            "  $.score: -1 is less than the minimum of 0",
        ]
    )


def test_validate_null(capsys: pytest.CaptureFixture[str]) -> None:
    Path("out.json").write_text("null")
    assert main(["validate", "summariser", "out.json"]) == 1
    assert "  $: " in capsys.readouterr().out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"title": "x",\n  "score": }', "out.json is not valid JSON: Expecting value at line 2"),
        (None, "output file out.json does not exist"),
    ],
)
def test_validate_an_unreadable_file_exits_2(
    capsys: pytest.CaptureFixture[str], content: str | None, message: str
) -> None:
    if content is not None:
        Path("out.json").write_text(content)
    assert main(["validate", "grader", "out.json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err and err.count("\n") == 1


def test_validate_a_free_text_agent_needs_a_schema(capsys: pytest.CaptureFixture[str]) -> None:
    Path("out.json").write_text('{"n": 1}')
    assert main(["validate", "chatty", "out.json"]) == 2
    assert "has no output contract" in capsys.readouterr().err
    Path("s.yaml").write_text("type: object\nrequired: [n]\n")
    assert main(["validate", "chatty", "out.json", "--schema-file", "s.yaml"]) == 0
    Path("out.json").write_text("{}")
    assert main(["validate", "chatty", "out.json", "--schema-file", "s.yaml"]) == 1
    assert "  $: 'n' is a required property" in capsys.readouterr().out


# codegen ---------------------------------------------------------------------------------------


def load_class(source: str, name: str) -> type[BaseModel]:
    namespace: dict[str, Any] = {"__name__": "generated"}
    exec(compile(source, "<generated>", "exec"), namespace)
    cls = namespace[name]
    assert isinstance(cls, type) and issubclass(cls, BaseModel)
    cls.model_rebuild(_types_namespace=namespace)
    return cls


@pytest.mark.skipif(not HAS_CODEGEN, reason="datamodel-code-generator is not installed")
def test_codegen_prints_a_pydantic_class_that_validates(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["codegen", "grader"]) == 0
    source = capsys.readouterr().out
    assert source.startswith("# Generated by `agentshape codegen` from agent 'grader'")
    model = load_class(source, "GraderOutput")
    assert model.model_validate({"title": "On owls", "score": 4}).model_dump() == {
        "title": "On owls",
        "score": 4,
    }
    for bad in ({"title": "x", "score": -1}, {"title": "x", "score": 1, "extra": 1}, {}):
        with pytest.raises(ValidationError):
            model.model_validate(bad)


@pytest.mark.skipif(not HAS_CODEGEN, reason="datamodel-code-generator is not installed")
def test_codegen_to_a_file_with_a_class_name(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["codegen", "summariser", "--out", "gen/models.py", "--class-name", "Summary"])
    assert code == 0
    assert capsys.readouterr().err == "wrote Summary to gen/models.py\n"
    model = load_class(Path("gen/models.py").read_text(), "Summary")
    assert model.model_validate({"summary": "s"}).model_dump() == {"summary": "s"}


def test_codegen_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["codegen", "chatty"]) == 2
    assert "has no output contract" in capsys.readouterr().err
    assert main(["codegen", "grader", "--class-name", "not a name"]) == 2
    assert "is not a Python identifier" in capsys.readouterr().err


def test_codegen_without_the_generator_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name == "datamodel_code_generator" else real(name, *args)

    monkeypatch.setattr(cli_inspect.importlib.util, "find_spec", find_spec)
    assert main(["codegen", "grader"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "pip install 'agentshape[codegen]'" in err


def test_class_name_for() -> None:
    assert class_name_for("pr-reviewer") == "PrReviewerOutput"
    assert class_name_for("execution_qa") == "ExecutionQaOutput"
    assert class_name_for("9lives") == "Agent9livesOutput"


def test_show_prints_the_first_request_a_run_really_sends(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    fake_llm: FakeLLM,
) -> None:
    from tests.agent_executor.cli.test_main import AGENT_YML

    agents = tmp_path / "show-fleet"
    (agents / "grader").mkdir(parents=True)
    (agents / "grader" / "agent.yml").write_text(AGENT_YML)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-show")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    model = ["--model", "openai:gpt-show", "--agents-dir", str(agents)]
    assert main(["show", "grader", "--task", "Grade it.", "--json", *model]) == 0
    shown = json.loads(capsys.readouterr().out)["first_request"]

    fake_llm.respond(openai_tool_call("submit_result", '{"title": "t", "score": 3}'))
    analytics = str(tmp_path / "a")
    assert main(["run", "grader", "--task", "Grade it.", *model, "--analytics-dir", analytics]) == 0
    sent = fake_llm.requests[0].body
    assert isinstance(sent, dict)
    assert [m["content"] for m in shown["messages"]] == [m["content"] for m in sent["messages"]]
    assert [t["name"] for t in shown["tools"]] == [t["function"]["name"] for t in sent["tools"]]
    assert shown["tool_choice"] == {"mode": "tool", "tool_name": "submit_result"}


def test_show_with_parameters_and_no_task_shows_the_labelled_parameters_block(
    capsys: pytest.CaptureFixture[str],
) -> None:
    shown = show_json(capsys, "grader", "--param", "count=3", "--param", "who=Ann")
    user = [m["content"] for m in shown["first_request"]["messages"] if m["role"] == "user"]
    assert user == ['Parameters:\n{\n  "count": 3,\n  "who": "Ann"\n}']
    with_task = show_json(capsys, "grader", "--task", "Grade.", "--param", "count=3")
    user = [m["content"] for m in with_task["first_request"]["messages"] if m["role"] == "user"]
    assert user == ['Grade.\n\nParameters:\n{\n  "count": 3\n}']
    assert show_json(capsys, "grader")["first_request"]["messages"][-1]["content"] == "(the task)"


def test_show_follows_the_mode_the_model_profile_chooses(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["show", "summariser", "--model", "llamacpp:m"]) == 0
    out = capsys.readouterr().out
    # llama.cpp's grammar backs native output: an agent without input tools runs in native mode.
    assert "=== system prompt (prompted mode) ===" in out
    first = out[out.index("=== first request to llamacpp:m") :]
    assert '"response_format"' in first and '"tools"' not in first


LLAMACPP_YML = (
    "id: local\nmodel: llamacpp:gemma\nsystem_prompt: You grade.\ntools: [fs:read]\n"
    "output_schema:\n  type: object\n  required: [score]\n  properties:\n"
    "    score: {type: integer, minimum: 0, maximum: 10}\n"
)


def test_show_without_model_shows_the_mode_the_agents_own_model_gives(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (fleet / "local").mkdir()
    (fleet / "local" / "agent.yml").write_text(LLAMACPP_YML)
    assert main(["show", "local"]) == 0
    out = capsys.readouterr().out
    assert "output mode on llamacpp:gemma: native (the model's profile: a grammar" in out
    # Its input tools run before the answer, so they are offered.
    assert "input tools: fs:read\n" in out
    first = out[out.index("=== first request to llamacpp:gemma") :]
    assert '"fs:read"' in first and '"response_format"' not in first

    document = show_json(capsys, "local")
    assert document["output_mode"] == "native"
    assert show_json(capsys, "local", "--mode", "tool")["output_mode"] == "tool"
    assert show_json(capsys, "local", "--model", "test")["output_mode"] == "tool"


def test_show_without_model_falls_back_to_test_when_the_agents_model_needs_a_key(
    fleet: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (fleet / "paid").mkdir()
    (fleet / "paid" / "agent.yml").write_text(
        LLAMACPP_YML.replace("llamacpp:gemma", "openai:gpt-4.1-mini")
    )
    assert main(["show", "paid"]) == 0
    out = capsys.readouterr().out
    assert "note: openai:gpt-4.1-mini cannot be built here (" in out
    assert "output mode on test: tool (the model's profile)" in out
