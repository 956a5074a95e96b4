from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_contracts import AgentshapeError, RunResult
from agent_executor._cli import find_agent_file, main, parse_param
from tests.fake_llm import FakeLLM, openai_tool_call, status_error

pytestmark = pytest.mark.usefixtures("offline_model")

AGENT_YML = """\
schema: kb.agent/1
id: grader
name: Grader
context:
  static:
    system: You grade essays.
output:
  schema:
    type: object
    required: [title, score]
    properties:
      title: { type: string }
      score: { type: integer, minimum: 0 }
    additionalProperties: false
"""

PARAMS_YML = AGENT_YML.replace(
    "output:",
    "parameters_schema:\n  type: object\n  required: [count]\n"
    "  properties:\n    count: { type: integer }\noutput:",
)

NOTE = "note: using the offline test model"


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    agents = tmp_path / "agents"
    (agents / "grader").mkdir(parents=True)
    (agents / "grader" / "agent.yml").write_text(AGENT_YML)
    (agents / "counter").mkdir()
    (agents / "counter" / "agent.yml").write_text(PARAMS_YML)
    return agents


def run_cli(fleet: Path, *args: str) -> int:
    analytics = fleet.parent / "analytics"
    return main(["run", *args, "--agents-dir", str(fleet), "--analytics-dir", str(analytics)])


def test_run_completes_with_the_offline_model(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(fleet, "grader", "--task", "Grade the essay.")
    out, err = capsys.readouterr()

    assert code == 0
    assert out.startswith("completed: agent grader on test, 1 attempt, ")
    body = json.loads(out[out.index("{") :])
    assert set(body) == {"title", "score"}
    assert NOTE in err and "named by AGENTSHAPE_MODEL" in err
    assert (fleet.parent / "analytics").is_dir()


def test_no_model_and_no_key_exits_2_saying_how_to_pick_one(
    fleet: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AGENTSHAPE_MODEL")
    code = run_cli(fleet, "grader", "--task", "Grade the essay.")
    out, err = capsys.readouterr()

    assert code == 2 and out == ""
    assert err.startswith("agentshape: no model to run on")
    assert "--model" in err and "OPENAI_API_KEY" in err and "'test'" in err
    assert "Traceback" not in err


def test_note_does_not_claim_no_model_when_test_was_asked_for(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(fleet, "grader", "--task", "Grade.", "--model", "test") == 0
    err = capsys.readouterr().err
    assert NOTE in err and "as asked" in err
    assert "no --model given" not in err


def test_json_output_is_the_full_run_result(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(fleet, "grader", "--task", "Grade.", "--json")
    result = RunResult.model_validate_json(capsys.readouterr().out)
    assert code == 0
    assert result.status == "completed" and result.model == "test"
    assert result.agent_id == "grader" and len(result.attempts) == 1


def test_a_failed_run_exits_1_with_the_error(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(fleet, "grader", "--task", "Grade.", "--model", "test:fail_first=text+text")
    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("failed: agent grader on test, 2 attempts")
    assert "error [output_tool_not_called]" in out
    assert "instead of calling submit_result" in out
    assert "last output:" in out


def test_a_failed_run_with_json(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli(
        fleet,
        "grader",
        "--task",
        "Grade.",
        "--model",
        "test:fail_first=text",
        "--json",
        "--max-retries",
        "0",
    )
    result = RunResult.model_validate_json(capsys.readouterr().out)
    assert code == 1
    assert result.error is not None and result.error.type == "output_tool_not_called"
    assert len(result.attempts) == 1


def test_pretty_output_shows_a_rescue_by_retry(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(
        fleet, "grader", "--task", "Grade.", "--model", "test:fail_first=invalid_arguments"
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "2 attempts" in out
    assert "rescued by 1 retry:" in out
    assert "  attempt 1 was rejected: $" in out


def test_mode_option(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run_cli(fleet, "grader", "--task", "Grade.", "--mode", "native", "--json")
    result = RunResult.model_validate_json(capsys.readouterr().out)
    assert code == 0 and result.attempts[0].mode == "native"


def test_params_are_parsed_and_validated(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(fleet, "counter", "--task", "Count.", "--param", "count=3") == 0
    capsys.readouterr()
    code = run_cli(fleet, "counter", "--task", "Count.", "--param", "count=three")
    out = capsys.readouterr().out
    assert code == 1
    assert "error [input_validation_failed]" in out
    assert "$.count: 'three' is not of type 'integer'" in out


def test_agent_given_as_a_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "custom.yml"
    path.write_text(AGENT_YML)
    analytics = str(tmp_path / "an")
    assert main(["run", str(path), "--task", "Go.", "--analytics-dir", analytics]) == 0
    assert main(["run", str(tmp_path / "nowhere"), "--task", "Go."]) == 2


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nobody", "--task", "Go."], "no agent 'nobody'"),
        (["grader", "--task", "Go.", "--param", "novalue"], "--param expects key=value"),
        (["grader", "--task", "Go.", "--model", "mystery:model"], "unknown model provider"),
        (["grader", "--task", "Go.", "--model", "openai:gpt-4.1"], "OPENAI_API_KEY"),
        (["grader", "--task", "Go.", "--max-retries", "-1"], "--max-retries"),
    ],
)
def test_bad_usage_exits_2(
    fleet: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert run_cli(fleet, *args) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("agentshape: ") and message in err


def test_unknown_agent_lists_the_fleet(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(fleet, "nobody", "--task", "Go.") == 2
    assert "counter, grader" in capsys.readouterr().err


def test_argparse_errors_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "grader"]) == 2  # --task is required
    assert "--task" in capsys.readouterr().err
    assert main([]) == 2
    assert main(["--help"]) == 0


def test_a_broken_agent_file_exits_2(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (fleet / "grader" / "agent.yml").write_text(
        AGENT_YML.replace("type: object\n", "type: objekt\n", 1)
    )
    assert run_cli(fleet, "grader", "--task", "Go.") == 2
    assert "objekt" in capsys.readouterr().err


def test_a_real_provider_over_http_without_leaking_the_key(
    fleet: Path,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-cli-secret-key")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    fake_llm.respond(openai_tool_call("submit_result", {"title": "ok", "score": 2}))
    code = run_cli(fleet, "grader", "--task", "Grade.", "--model", "openai:gpt-test")
    out, err = capsys.readouterr()

    assert code == 0
    assert out.startswith("completed: agent grader on openai:gpt-test")
    assert NOTE not in err
    assert fake_llm.requests[0].body["tool_choice"]["function"]["name"] == "submit_result"
    logged = "".join(p.read_text() for p in (fleet.parent / "analytics").glob("*.jsonl"))
    assert logged and "sk-cli-secret-key" not in logged


GROQ_STYLE_KEY = "gsk_" + "Qw3rTy8uIoP4aSdF" * 3


@pytest.mark.parametrize("as_json", [False, True])
def test_a_401_quoting_the_key_never_shows_it(
    fleet: Path,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    as_json: bool,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", GROQ_STYLE_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    fake_llm.respond_always(status_error(401, f"Incorrect API key provided: {GROQ_STYLE_KEY}"))
    args = ["grader", "--task", "Grade.", "--model", "openai:gpt-test"]
    code = run_cli(fleet, *args, *(["--json"] if as_json else []))
    out, err = capsys.readouterr()

    assert code == 1
    assert "Incorrect API key provided: [REDACTED]" in out
    if as_json:
        assert json.loads(out)["error"]["type"] == "provider_authentication_error"
    logged = "".join(p.read_text() for p in (fleet.parent / "analytics").glob("*.jsonl"))
    assert logged
    for text in (out, err, logged):
        assert GROQ_STYLE_KEY not in text


@pytest.mark.parametrize("as_json", [False, True])
def test_a_model_echoing_the_key_never_shows_it(
    fleet: Path,
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    as_json: bool,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", GROQ_STYLE_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", fake_llm.openai_base_url)
    fake_llm.respond(openai_tool_call("submit_result", {"title": GROQ_STYLE_KEY, "score": 2}))
    args = ["grader", "--task", "Grade.", "--model", "openai:gpt-test"]
    assert run_cli(fleet, *args, *(["--json"] if as_json else [])) == 0
    out, _ = capsys.readouterr()
    if as_json:
        assert json.loads(out)["result_data"] == {"title": "[REDACTED]", "score": 2}
    else:
        assert '"title": "[REDACTED]"' in out
    logged = "".join(p.read_text() for p in (fleet.parent / "analytics").glob("*.jsonl"))
    assert GROQ_STYLE_KEY not in out + logged


def test_parse_param() -> None:
    assert parse_param("count=3") == ("count", 3)
    assert parse_param("name=owl") == ("name", "owl")
    assert parse_param("tags=[1, 2]") == ("tags", [1, 2])
    assert parse_param(" key =a=b") == ("key", "a=b")
    assert parse_param("empty=") == ("empty", "")
    with pytest.raises(AgentshapeError, match="key=value"):
        parse_param("=v")


def test_find_agent_file(fleet: Path) -> None:
    assert find_agent_file("grader", fleet) == fleet / "grader" / "agent.yml"
    assert find_agent_file(str(fleet / "grader"), fleet) == fleet / "grader" / "agent.yml"
    with pytest.raises(AgentshapeError, match="counter, grader"):
        find_agent_file("nobody", fleet)


def test_the_installed_command(fleet: Path) -> None:
    command = Path(sys.executable).parent / "agentshape"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "ANTHROPIC_"))}
    completed = subprocess.run(
        [str(command), "run", "grader", "--task", "Grade.", "--json"],
        cwd=fleet.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    assert RunResult.model_validate_json(completed.stdout).status == "completed"
    assert NOTE in completed.stderr
    assert (fleet.parent / ".agentshape" / "analytics").is_dir()


# --schema / --schema-file / --registry ------------------------------------------------------

DEFAULT_YML = """\
id: summariser
system_prompt: You summarise.
default_output_schema:
  type: object
  required: [summary]
  properties:
    summary: { type: string }
"""

COUNT_SCHEMA = {
    "type": "object",
    "required": ["files", "loc"],
    "properties": {"files": {"type": "integer"}, "loc": {"type": "integer"}},
    "additionalProperties": False,
}


@pytest.fixture
def schema_fleet(fleet: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (fleet / "summariser").mkdir()
    (fleet / "summariser" / "agent.yml").write_text(DEFAULT_YML)
    monkeypatch.chdir(fleet.parent)
    (fleet.parent / "count.json").write_text(json.dumps(COUNT_SCHEMA))
    return fleet


def test_the_agents_default_schema_is_used_without_a_flag(
    schema_fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run_cli(schema_fleet, "summariser", "--task", "Go.", "--json") == 0
    result = RunResult.model_validate_json(capsys.readouterr().out)
    assert result.schema_source == "default" and set(result.result_data) == {"summary"}  # type: ignore[arg-type]


def test_schema_file_replaces_the_default(
    schema_fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(schema_fleet, "summariser", "--task", "Go.", "--schema-file", "count.json")
    out = capsys.readouterr().out
    assert code == 0
    assert "schema: the --schema-file schema" in out
    assert set(json.loads(out[out.index("{") :])) == {"files", "loc"}


def test_schema_file_may_be_yaml(schema_fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("count.yaml").write_text(
        "type: object\nrequired: [n]\nproperties:\n  n: {type: integer, minimum: 3}\n"
    )
    code = run_cli(
        schema_fleet, "summariser", "--task", "Go.", "--schema-file", "count.yaml", "--json"
    )
    result = RunResult.model_validate_json(capsys.readouterr().out)
    assert code == 0 and result.schema_source == "inline"
    assert isinstance(result.result_data, dict) and result.result_data["n"] >= 3


def test_named_schema_from_the_registry(
    schema_fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schemas", "add", "code-count", "count.json"]) == 0
    capsys.readouterr()
    code = run_cli(schema_fleet, "summariser", "--task", "Go.", "--schema", "code-count", "--json")
    result = RunResult.model_validate_json(capsys.readouterr().out)
    assert code == 0
    assert (result.schema_source, result.schema_name) == ("named", "code-count")
    assert set(result.result_data) == {"files", "loc"}  # type: ignore[arg-type]


def test_registry_flag_points_at_another_file(
    schema_fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = str(schema_fleet.parent / "elsewhere.db")
    assert main(["schemas", "add", "code-count", "count.json", "--registry", registry]) == 0
    capsys.readouterr()
    args = ("summariser", "--task", "Go.", "--schema", "code-count")
    assert run_cli(schema_fleet, *args, "--registry", registry) == 0
    capsys.readouterr()
    assert run_cli(schema_fleet, *args) == 2  # not in the default registry
    assert "no schema named 'code-count'" in capsys.readouterr().err


def test_unknown_schema_name_suggests_the_nearest(
    schema_fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schemas", "add", "code-count", "count.json"]) == 0
    capsys.readouterr()
    code = run_cli(schema_fleet, "summariser", "--task", "Go.", "--schema", "code-cont")
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert err.count("\n") == 1
    assert "no schema named 'code-cont'" in err and "did you mean 'code-count'?" in err


@pytest.mark.parametrize("flag", [["--schema", "code-count"], ["--schema-file", "count.json"]])
def test_an_agents_own_schema_cannot_be_overridden(
    schema_fleet: Path, capsys: pytest.CaptureFixture[str], flag: list[str]
) -> None:
    code = run_cli(schema_fleet, "grader", "--task", "Go.", *flag)
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("agentshape: agent 'grader' has its own output contract")
    assert "cannot override" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"type": "object",\n "properties": }', "count.json is not valid JSON"),
        ('{"type": "objekt"}', "count.json: $.type: unknown type 'objekt' (did you mean"),
        ("[1, 2]", "a JSON Schema is an object or a boolean, not list"),
    ],
)
def test_a_bad_schema_file_exits_2(
    schema_fleet: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    Path("count.json").write_text(content)
    code = run_cli(schema_fleet, "summariser", "--task", "Go.", "--schema-file", "count.json")
    err = capsys.readouterr().err
    assert code == 2 and message in err


def test_bad_json_schema_file_names_line_and_column(
    schema_fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Path("count.json").write_text('{"type": "object",\n "properties": }')
    run_cli(schema_fleet, "summariser", "--task", "Go.", "--schema-file", "count.json")
    assert "at line 2, column 16" in capsys.readouterr().err


def test_bad_yaml_schema_file(schema_fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    Path("s.yaml").write_text("type: object\nproperties: [\n")
    assert run_cli(schema_fleet, "summariser", "--task", "Go.", "--schema-file", "s.yaml") == 2
    err = capsys.readouterr().err
    assert "s.yaml is not valid YAML" in err and "line 3" in err


def test_missing_schema_file(schema_fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(schema_fleet, "summariser", "--task", "Go.", "--schema-file", "no.json") == 2
    assert "schema file no.json does not exist" in capsys.readouterr().err


def test_schema_and_schema_file_together_is_a_usage_error(
    schema_fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("summariser", "--task", "Go.", "--schema", "a", "--schema-file", "count.json")
    assert run_cli(schema_fleet, *args) == 2
    assert "not allowed with argument" in capsys.readouterr().err


# Model escalation ------------------------------------------------------------------------------

TIERED_YML = AGENT_YML.replace(
    "context:",
    "llm:\n  model: test:fail_first=invalid_arguments+invalid_arguments\n  tiers: [test]\ncontext:",
)


def test_run_escalates_to_the_next_tier(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (fleet / "grader" / "agent.yml").write_text(TIERED_YML)
    code = run_cli(fleet, "grader", "--task", "Grade.")
    out = capsys.readouterr().out
    assert code == 0
    assert out.startswith("completed: agent grader on test (escalated to tier 1), 3 attempts")
    assert "rescued by 2 retries:" in out
    assert "  attempt 1 on test was rejected: $" in out
    assert "  attempt 2 on test was rejected: $" in out


def test_no_escalate_flag(fleet: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (fleet / "grader" / "agent.yml").write_text(TIERED_YML)
    code = run_cli(fleet, "grader", "--task", "Grade.", "--no-escalate", "--json")
    result = RunResult.model_validate_json(capsys.readouterr().out)
    assert code == 1 and result.model_tier == 0
    assert result.error is not None and result.error.type == "output_schema_validation_failed"


def test_a_tier_without_its_key_is_a_config_error(
    fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (fleet / "grader" / "agent.yml").write_text(
        AGENT_YML.replace("context:", "llm:\n  tiers: [anthropic:claude-opus-4]\ncontext:")
    )
    assert run_cli(fleet, "grader", "--task", "Grade.", "--model", "test") == 2
    err = capsys.readouterr().err
    assert "cannot escalate to tier 1" in err and "ANTHROPIC_API_KEY" in err
