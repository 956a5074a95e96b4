from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from agent_contracts import ConfigError, ConfigFileError, FleetProblems
from agent_core import Fleet, load_fleet
from agent_core._caches import cache_sizes
from agent_executor import KNOWN_TOOLS

REPO_AGENTS = Path(__file__).resolve().parents[2] / "agents"
TOOLS = ("fs:list", "fs:read", "fs:search")

GOOD = """\
schema: kb.agent/1
id: {id}
context:
  static:
    system: You answer questions about code.
tools: [fs:read]
output:
  schema:
    type: object
    required: [answer]
    properties:
      answer: {{ type: string }}
    additionalProperties: false
"""


def write(fleet: Path, folder: str, text: str) -> Path:
    path = fleet / folder / "agent.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


def problems_of(directory: Path, known_tools: tuple[str, ...] | None = TOOLS) -> list[str]:
    with pytest.raises(FleetProblems) as caught:
        load_fleet(directory, known_tools=known_tools)
    for problem in caught.value.problems:
        assert isinstance(problem, ConfigFileError)
    return [str(problem) for problem in caught.value.problems]


def test_a_good_fleet_gives_configs_by_id_sorted_with_their_sources(tmp_path: Path) -> None:
    beta = write(tmp_path, "beta", GOOD.format(id="beta"))
    alpha = write(tmp_path, "alpha", GOOD.format(id="alpha"))
    (tmp_path / "notes").mkdir()  # a folder without agent.yml is not an agent

    fleet = load_fleet(tmp_path, known_tools=TOOLS)

    assert isinstance(fleet, Fleet)
    assert fleet.ids == ("alpha", "beta")
    assert list(fleet) == ["alpha", "beta"]
    assert [config.id for config in fleet.configs] == ["alpha", "beta"]
    assert len(fleet) == 2
    assert "alpha" in fleet and "gamma" not in fleet
    assert fleet["beta"].system_prompt == "You answer questions about code."
    assert fleet.source("alpha") == alpha
    assert fleet.source("beta") == beta
    assert fleet.directory == tmp_path
    assert fleet.warnings == ()
    with pytest.raises(KeyError):
        fleet["gamma"]
    with pytest.raises(KeyError):
        fleet.source("gamma")


def test_an_empty_directory_is_an_empty_fleet(tmp_path: Path) -> None:
    fleet = load_fleet(tmp_path, known_tools=TOOLS)
    assert fleet.ids == ()


def test_a_missing_directory_or_a_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="fleet directory not found"):
        load_fleet(tmp_path / "nowhere", known_tools=TOOLS)
    file = tmp_path / "agents.yml"
    file.write_text("id: x\n")
    with pytest.raises(ConfigFileError, match="not a directory"):
        load_fleet(file, known_tools=TOOLS)


def test_every_problem_in_every_file_is_reported_at_once(tmp_path: Path) -> None:
    syntax = write(tmp_path, "broken", "id: broken\ntools: [fs:read\n")
    keys = write(
        tmp_path,
        "typo",
        """\
        schema: kb.agent/1
        id: typo
        context:
          static:
            system: You review code.
        limits:
          maxStep: 3
        """,
    )
    tools = write(
        tmp_path,
        "tooly",
        """\
        id: tooly
        system_prompt: You read files.
        tools:
          - fs:read
          - fs:raed
          - web:*
        """,
    )

    with pytest.raises(FleetProblems) as caught:
        load_fleet(tmp_path, known_tools=TOOLS)

    error = caught.value
    assert isinstance(error, ConfigError)
    assert error.directory == str(tmp_path)
    assert [(p.source, p.line, p.field) for p in error.problems] == [
        (str(syntax), 3, None),
        (str(tools), 5, "tools[1]"),
        (str(tools), 6, "tools[2]"),
        (str(keys), 7, "limits.maxStep"),
    ]
    messages = [problem.message for problem in error.problems]
    assert messages[0].startswith("invalid YAML:")
    assert messages[1] == (
        "unknown tool 'fs:raed' (did you mean 'fs:read'?); known tools: fs:list, fs:read, fs:search"
    )
    assert (
        messages[2] == "no known tool starts with 'web:'; known tools: fs:list, fs:read, fs:search"
    )
    assert "unknown key 'maxStep'" in messages[3] and "did you mean 'maxSteps'?" in messages[3]
    assert str(error).splitlines()[0] == f"{tmp_path}: 4 problems in 3 agent configs"
    assert str(error).splitlines()[2] == f"  {tools}:5: tools[1]: {messages[1]}"


def test_wildcard_tools_and_unchecked_tools(tmp_path: Path) -> None:
    write(
        tmp_path,
        "reader",
        """\
        id: reader
        system_prompt: You read files.
        tools: ["fs:*", mind:rag-query]
        """,
    )
    assert problems_of(tmp_path) == [
        f"{tmp_path / 'reader' / 'agent.yml'}:3: tools[1]: unknown tool 'mind:rag-query'; "
        "known tools: fs:list, fs:read, fs:search"
    ]
    # Without a list of known tools the names are not checked.
    assert load_fleet(tmp_path, known_tools=None).ids == ("reader",)


def test_a_missing_or_blank_system_prompt_is_a_problem(tmp_path: Path) -> None:
    missing = write(tmp_path, "mute", "schema: kb.agent/1\nid: mute\nllm:\n  temperature: 0\n")
    blank = write(
        tmp_path,
        "blank",
        """\
        schema: kb.agent/1
        id: blank
        context:
          static:
            system: "   "
        """,
    )
    old_form = write(tmp_path, "plain", "name: plain\n")

    assert problems_of(tmp_path) == [
        f"{blank}:5: context.static.system: the system prompt is blank; say what the agent does "
        "and how",
        f"{missing}:1: context.static.system: the agent has no system prompt; say in "
        "context.static.system what it does, how it works and what good output is",
        f"{old_form}:1: system_prompt: the agent has no system prompt; say in system_prompt "
        "what it does, how it works and what good output is",
    ]


def test_schema_errors_point_at_the_line_of_the_offending_keyword(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "shaper",
        """\
        schema: kb.agent/1
        id: shaper
        context:
          static:
            system: You shape data.
        output:
          schema:
            type: object
            properties:
              verdict:
                type: string
                enum: []
              tags:
                type: array
                items:
                  type: strin
              "odd-name":
                type: string
                pattern: "(["
        """,
    )
    assert problems_of(tmp_path) == [
        f"{path}:12: output.schema.properties.verdict.enum: `enum` is empty, so no value can "
        "match; list the values",
        f"{path}:16: output.schema.properties.tags.items.type: unknown type 'strin' "
        "(did you mean 'string'?)",
        f"{path}:19: output.schema.properties.odd-name.pattern: `pattern` '([' is not a valid "
        "regular expression (ECMA-262)",
    ]


def test_meta_schema_errors_and_unresolvable_refs_are_located(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "meta",
        """\
        id: meta
        system_prompt: You count.
        output_schema:
          type: object
          required: count
          properties:
            count:
              $ref: "#/definitions/missing"
        parameters_schema:
          type: object
          properties:
            limit:
              type: integer
              minimum: ten
        """,
    )
    problems = problems_of(tmp_path)
    assert problems == [
        f"{path}:5: output_schema.required: 'count' is not of type 'array' (fails the draft's "
        "meta-schema)",
        f"{path}:8: output_schema.properties.count.$ref: `$ref` '#/definitions/missing' points "
        "to nothing in this schema",
        f"{path}:14: parameters_schema.properties.limit.minimum: 'ten' is not of type 'number' "
        "(fails the draft's meta-schema)",
    ]


def test_an_unsupported_draft_is_located_at_its_schema_key(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "old",
        """\
        id: old
        system_prompt: You are old.
        output_schema:
          type: object
          $schema: "http://json-schema.org/draft-03/schema#"
        """,
    )
    [problem] = problems_of(tmp_path)
    assert problem.startswith(f"{path}:5: output_schema.$schema: ")
    assert "is not supported" in problem


def test_duplicate_ids_name_both_files(tmp_path: Path) -> None:
    first = write(tmp_path, "a-researcher", GOOD.format(id="researcher"))
    second = write(tmp_path, "b-researcher", "name: researcher\nsystem_prompt: Again.\n")

    message = (
        f"{second}:1: name: duplicate agent id 'researcher': {first}:2 already uses it; ids "
        "must be unique in a fleet"
    )
    assert problems_of(tmp_path) == [message]
    with pytest.raises(FleetProblems) as caught:
        load_fleet(tmp_path, known_tools=TOOLS)
    assert str(caught.value) == f"{tmp_path}: 1 problem in 1 agent config\n  {message}"


def test_warnings_do_not_stop_the_fleet(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "folder-name",
        """\
        schema: kb.agent/1
        id: other-name
        context:
          static:
            system: You warn.
        tools: [fs:read, fs:read]
        output:
          schema:
            type: object
            properties:
              answer: { type: string, requried: true }
        """,
    )
    fleet = load_fleet(tmp_path, known_tools=TOOLS)

    assert fleet.ids == ("other-name",)
    assert [str(warning) for warning in fleet.warnings] == [
        f"{path}:2: id: agent id 'other-name' is not its folder's name 'folder-name'; agents "
        "are found by folder, so name the folder 'other-name'",
        f"{path}:6: tools[1]: tool 'fs:read' is listed twice",
        f"{path}:11: output.schema.properties.answer.requried: unknown keyword `requried` is "
        "ignored by validation (did you mean 'required'?)",
    ]


def test_the_repository_fleet_loads_without_problems_or_warnings() -> None:
    fleet = load_fleet(REPO_AGENTS, known_tools=KNOWN_TOOLS)

    assert fleet.ids == (
        "execution-code-quality",
        "execution-dod",
        "execution-implementer",
        "execution-manager",
        "execution-qa",
        "implementer",
        "pr-reviewer",
        "researcher",
        "reviewer",
        "tester",
    )
    assert [str(warning) for warning in fleet.warnings] == []
    for agent_id in fleet:
        config = fleet[agent_id]
        assert fleet.source(agent_id) == REPO_AGENTS / agent_id / "agent.yml"
        assert len(config.system_prompt) > 300, agent_id
        assert config.output_schema is not None, agent_id
        if agent_id != "pr-reviewer":  # the reviewer of seed 000 reads the diff it is given
            assert config.tools, agent_id


def test_every_problem_of_a_file_at_once(tmp_path: Path) -> None:
    """An unknown key and a bad schema type in one file are both reported."""
    agent = tmp_path / "grader"
    agent.mkdir()
    (agent / "agent.yml").write_text(
        "id: grader\n"
        "system_prompt: Grade.\n"
        "sytem: oops\n"
        "output_schema:\n"
        "  type: object\n"
        "  properties:\n"
        "    score: {type: integr}\n"
    )
    with pytest.raises(FleetProblems) as caught:
        load_fleet(tmp_path, known_tools=None)
    lines = [str(problem) for problem in caught.value.problems]
    assert any("sytem" in line and ":3:" in line for line in lines), lines
    assert any("integr" in line and ":7:" in line for line in lines), lines


def test_model_prefixes_are_checked_when_known(tmp_path: Path) -> None:
    agent = tmp_path / "grader"
    agent.mkdir()
    (agent / "agent.yml").write_text(
        "schema: kb.agent/1\n"
        "id: grader\n"
        "llm:\n"
        "  model: opneai:gpt-4.1\n"
        "  tiers: [anthropic:claude-x, mistral:large]\n"
        "context: {static: {system: Grade.}}\n"
    )
    assert load_fleet(tmp_path, known_tools=None)["grader"].model == "opneai:gpt-4.1"
    with pytest.raises(FleetProblems) as caught:
        load_fleet(tmp_path, known_tools=None, known_model_prefixes=["anthropic", "openai"])
    lines = [str(problem) for problem in caught.value.problems]
    assert len(lines) == 2
    assert ":4: llm.model: unknown model provider 'opneai'" in lines[0]
    assert "did you mean 'openai'?" in lines[0]
    assert ":5: llm.tiers[1]: unknown model provider 'mistral'" in lines[1]


def test_a_fleet_larger_than_the_caches_keeps_every_schema(tmp_path: Path) -> None:
    count = 300  # more than the caches' 256 entries
    for n in range(count):
        write(tmp_path, f"a{n:03}", GOOD.format(id=f"a{n:03}").replace("answer", f"answer{n}"))
    fleet = load_fleet(tmp_path, known_tools=TOOLS)
    assert len(fleet) == count
    sizes = cache_sizes()
    assert sizes["agent_core.schema_findings"] >= count
    assert sizes["agent_core.compiled_schemas"] >= count
