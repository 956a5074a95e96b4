from __future__ import annotations

from pathlib import Path

import pytest

from agent_contracts import ConfigFileError, ConfigProblems
from agent_core import load_agent_config, parse_agent_config

FILE_FORM = """\
# .kb/agents/researcher/agent.yml
schema: 'kb.agent/1'
id: researcher
name: Code Researcher
llm:
  model: openai:gpt-4o-mini
  tiers: [openai:gpt-4o]
context:
  static:
    system: You research code.
tools: [fs:read, fs:search]
limits:
  maxSteps: 12
output:
  schema:
    type: object
    required: [summary, findings]
    properties:
      summary: {type: string, minLength: 50}
      findings:
        type: array
        items: {type: string}
  maxRetries: 2
"""

BLUEPRINT_FORM = """\
id: researcher
name: Code Researcher
model: openai:gpt-4o-mini
model_tiers: [openai:gpt-4o]
system_prompt: You research code.
tools: [fs:read, fs:search]
max_steps: 12
output_schema:
  type: object
  required: [summary, findings]
  properties:
    summary: {type: string, minLength: 50}
    findings: {type: array, items: {type: string}}
options:
  max_retries: 2
"""


def problems_of(text: str) -> list[str]:
    with pytest.raises(ConfigProblems) as info:
        parse_agent_config(text, source="agent.yml")
    return [str(problem) for problem in info.value.problems]


def single_error(text: str) -> ConfigFileError:
    with pytest.raises(ConfigFileError) as info:
        parse_agent_config(text, source="agent.yml")
    assert not isinstance(info.value, ConfigProblems)
    return info.value


def test_file_form_and_blueprint_form_load_to_the_same_config(tmp_path: Path) -> None:
    file_path = tmp_path / "agent.yml"
    file_path.write_text(FILE_FORM, encoding="utf-8")

    from_file = load_agent_config(file_path)

    assert from_file == parse_agent_config(BLUEPRINT_FORM, source="blueprint.yml")
    assert from_file.id == "researcher"
    assert from_file.system_prompt == "You research code."
    assert from_file.max_steps == 12
    assert from_file.model_tiers == ["openai:gpt-4o"]
    assert from_file.options.max_retries == 2
    assert from_file.output_schema == {
        "type": "object",
        "required": ["summary", "findings"],
        "properties": {
            "summary": {"type": "string", "minLength": 50},
            "findings": {"type": "array", "items": {"type": "string"}},
        },
    }


def test_unknown_key_names_file_line_field_and_suggestion() -> None:
    text = "name: a\nsytem_prompt: hi\n"
    assert problems_of(text) == [
        "agent.yml:2: sytem_prompt: unknown key 'sytem_prompt' at $ (did you mean 'system_prompt'?)"
    ]


def test_wrong_values_point_at_their_keys() -> None:
    text = FILE_FORM.replace("maxSteps: 12", "maxSteps: twelve").replace(
        "tools: [fs:read, fs:search]", "tools:\n  - fs:read\n  - 7"
    )
    assert problems_of(text) == [
        "agent.yml:13: tools[1]: Input should be a valid string (got 7)",
        "agent.yml:15: limits.maxSteps: Input should be a valid integer (got 'twelve')",
    ]


def test_every_problem_in_a_file_is_reported_at_once() -> None:
    text = """\
id: a
llm:
  temperature: hot
context:
  static:
    sytem: x
output_schema: {type: object}
output:
  schema: {type: object}
  mode: tools
id: b
"""
    with pytest.raises(ConfigProblems) as info:
        parse_agent_config(text, source="agent.yml")
    error = info.value

    assert [(p.line, p.field) for p in error.problems] == [
        (3, "llm.temperature"),
        (6, "context.static.sytem"),
        (9, "output.schema"),
        (10, "output.mode"),
        (11, "id"),
    ]
    assert (error.source, error.line, error.field) == ("agent.yml", 3, "llm.temperature")
    assert str(error).splitlines() == [
        "agent.yml: 5 problems",
        "  agent.yml:3: llm.temperature: Input should be a valid number (got 'hot')",
        "  agent.yml:6: context.static.sytem: unknown key 'sytem' at $.context.static "
        "(did you mean 'system'?)",
        "  agent.yml:9: output.schema: $.output_schema and $.output.schema both set "
        "output_schema; give only one",
        "  agent.yml:10: output.mode: Input should be 'tool', 'native', 'prompted' or 'text' "
        "(got 'tools')",
        "  agent.yml:11: id: duplicate key 'id' (first given at line 1); YAML would keep only "
        "the last",
    ]


def test_a_missing_id_points_at_the_top_of_the_file() -> None:
    with pytest.raises(ConfigProblems) as info:
        parse_agent_config("\n\ndescription: nameless\n", source="agent.yml")
    assert str(info.value) == "agent.yml:3: an agent needs an 'id' or a 'name'"
    assert (info.value.line, info.value.field) == (3, None)


def test_yaml_syntax_error_names_the_line() -> None:
    error = single_error("id: a\nsystem_prompt: [unclosed\ntools: []\n")
    assert error.line == 3
    assert str(error) == (
        "agent.yml:3: invalid YAML: while parsing a flow sequence, expected ',' or ']', "
        "but got ':' (column 6)"
    )


def test_bad_indentation_names_the_line() -> None:
    error = single_error("id: a\nlimits:\n  maxSteps: 3\n maxTokens: 2\n")
    assert error.line == 4
    assert "invalid YAML" in error.message


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n"])
def test_an_empty_file_is_an_error(text: str) -> None:
    error = single_error(text)
    assert str(error) == "agent.yml: the file is empty; an agent config is a YAML mapping of keys"


@pytest.mark.parametrize(
    ("text", "kind"), [("- id: a\n", "a list"), ("just text\n", "a single value")]
)
def test_the_top_level_must_be_a_mapping(text: str, kind: str) -> None:
    error = single_error(text)
    assert str(error) == f"agent.yml:1: the top level must be a mapping of keys, not {kind}"


def test_only_one_document_is_read() -> None:
    error = single_error("id: a\n---\nid: b\n")
    assert error.line == 2
    assert "expected a single document" in error.message


def test_python_tags_are_never_constructed() -> None:
    error = single_error("id: !!python/object/apply:os.getcwd []\n")
    assert error.line == 1
    assert "could not determine a constructor" in error.message


def test_unprintable_characters_name_the_line() -> None:
    error = single_error("id: a\nname: \x07\n")
    assert error.line == 2
    assert "#x0007" in error.message


def test_timestamps_stay_strings() -> None:
    config = parse_agent_config(
        "id: a\noutput_schema: {type: string, default: 2026-01-19}\n", source="agent.yml"
    )
    assert config.output_schema == {"type": "string", "default": "2026-01-19"}


def test_a_missing_file_is_a_config_file_error(tmp_path: Path) -> None:
    path = tmp_path / "nope.yml"
    with pytest.raises(ConfigFileError) as info:
        load_agent_config(path)
    assert str(info.value) == f"{path}: file not found"


def test_a_directory_is_a_config_file_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigFileError, match="is a directory"):
        load_agent_config(tmp_path)


def test_non_utf8_bytes_name_the_line(tmp_path: Path) -> None:
    path = tmp_path / "agent.yml"
    path.write_bytes(b"id: a\nname: caf\xe9\n")
    with pytest.raises(ConfigFileError) as info:
        load_agent_config(path)
    assert str(info.value) == f"{path}:2: not UTF-8 text (byte 0xe9 cannot be decoded)"


def test_a_utf8_bom_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "agent.yml"
    path.write_bytes("\ufeffid: café\n".encode())
    assert load_agent_config(path).id == "café"


def test_an_alias_bomb_is_refused() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 7):
        aliases = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{aliases}]")
    error = single_error("\n".join([*lines, "id: a"]) + "\n")
    assert error.line == 5
    assert "expands to more than 100,000 values through its aliases" in error.message


def test_a_large_document_without_aliases_is_read() -> None:
    values = ", ".join(["1"] * 120_000)
    text = f"id: big\noutput_schema: {{type: array, examples: [[{values}]]}}\n"
    config = parse_agent_config(text, source="a.yml")
    assert config.id == "big"


def test_a_recursive_alias_is_refused() -> None:
    error = single_error("id: a\noutput_schema: &s {properties: {a: *s}}\n")
    assert str(error) == (
        "agent.yml:2: an alias refers to a value that contains it; configs cannot be recursive"
    )


def test_absurd_nesting_is_an_error_not_a_crash() -> None:
    error = single_error("id: " + "[" * 600 + "]" * 600 + "\n")
    assert str(error) == "agent.yml: the document nests deeper than 200 levels"


def test_nesting_below_the_recursion_limit_but_past_the_bound_is_refused() -> None:
    error = single_error("id: x\nmetadata: " + "[" * 300 + "]" * 300 + "\n")
    assert str(error) == "agent.yml: the document nests deeper than 200 levels"


def test_an_integer_past_the_digit_limit_is_an_error_not_a_traceback() -> None:
    error = single_error("id: x\nmaxSteps: " + "9" * 5000 + "\n")
    assert str(error).startswith("agent.yml: a value cannot be read: Exceeds the limit (4300")
