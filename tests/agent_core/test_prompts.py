from __future__ import annotations

import pytest
from pydantic import BaseModel

from agent_contracts import ConfigError, InvalidSchemaError, ValidationIssue
from agent_core import (
    enriched_system_prompt,
    text_retry_prompt,
    tool_not_called_prompt,
    tool_retry_prompt,
)

SCHEMA = {
    "type": "object",
    "required": ["summary"],
    "properties": {"summary": {"type": "string"}},
}
RENDERED = """{
  "type": "object",
  "required": [
    "summary"
  ],
  "properties": {
    "summary": {
      "type": "string"
    }
  }
}"""
ISSUES = [
    ValidationIssue(path="$.summary", message="'summary' is a required property"),
    ValidationIssue(path="$.severity", message="'critical' is not one of ['low', 'high']"),
    ValidationIssue(path="$.summary", message="'summary' is a required property", keyword="x"),
]


class Answer(BaseModel):
    value: int


def test_prompted_mode_gives_a_compact_outline_and_asks_to_stop_after_the_json() -> None:
    prompt = enriched_system_prompt("You review code.\n", SCHEMA, mode="prompted")
    assert prompt == (
        "You review code.\n\n"
        "## Required Output Format\n\n"
        "Answer with one JSON value of this shape (`?` marks an optional key; `//` comments "
        "state constraints and are not part of the JSON):\n\n"
        "```\n{\n  summary: string\n}\n```\n\n"
        "Reply with only the JSON value, with no other text, and stop right after it."
    )
    assert RENDERED not in prompt


def test_prompted_mode_can_show_an_example_of_the_shape_before_the_closing_line() -> None:
    prompt = enriched_system_prompt(
        "You review code.", SCHEMA, mode="prompted", end_marker="</json>", example=True
    )
    assert prompt.endswith(
        "```\n{\n  summary: string\n}\n```\n\n"
        "An example of the shape (its values are placeholders: write your own):\n\n"
        '```json\n{"summary": "india bravo golf"}\n```\n\n'
        "Reply with only the JSON value, with no other text, and write `</json>` right after it."
    )


def test_tool_mode_names_the_tool_and_leaves_the_schema_to_its_parameters() -> None:
    prompt = enriched_system_prompt("You review code.", SCHEMA, mode="tool")
    assert prompt == (
        "You review code.\n\n"
        "## Required Output Format\n\n"
        "When your work is done, call `submit_result` once with your final result as its "
        "arguments. Only that call counts; if it is rejected, fix the reported errors and call it "
        "again."
    )


def test_tool_mode_states_what_the_tool_parameters_do_not_carry() -> None:
    note = "$.properties.summary: minLength (not supported by the provider's strict mode)"
    prompt = enriched_system_prompt("x", SCHEMA, mode="tool", not_in_tool=[note])
    assert prompt.endswith(f"\n\nThe result must also meet these constraints:\n- {note}")


def test_tool_mode_names_the_result_argument_for_a_wrapped_root() -> None:
    prompt = enriched_system_prompt("", {"type": "array"}, mode="tool", tool_name="finish")
    assert prompt.startswith("## Required Output Format\n\n")
    assert "call `finish` once with your final result as its `result` argument." in prompt


def test_output_section_is_the_last_section() -> None:
    system = "# Role\nYou review.\n\n## Rules\nBe kind."
    prompt = enriched_system_prompt(system, SCHEMA, mode="tool")
    assert prompt.startswith(system + "\n\n## Required Output Format")
    assert prompt.rsplit("\n## ", 1)[1].startswith("Required Output Format\n")


def test_pydantic_contract_is_outlined_from_its_json_schema() -> None:
    prompt = enriched_system_prompt("x", Answer, mode="prompted")
    assert "```\n{\n  value: integer\n}\n```" in prompt


def test_unknown_mode_and_bad_schema() -> None:
    with pytest.raises(ConfigError, match="unknown prompt mode 'native'"):
        enriched_system_prompt("x", SCHEMA, mode="native")  # type: ignore[arg-type]
    with pytest.raises(InvalidSchemaError):
        enriched_system_prompt("x", [1], mode="tool")  # type: ignore[arg-type]


def test_tool_retry_prompt_states_each_error_once() -> None:
    assert tool_retry_prompt(ISSUES) == (
        "<output-validation-error>\n"
        "Your output did not match the required schema.\n"
        "\n"
        "## Validation Errors\n"
        "- $.summary: 'summary' is a required property\n"
        "- $.severity: 'critical' is not one of ['low', 'high']\n"
        "\n"
        "Please call `submit_result` again with arguments matching the schema exactly.\n"
        "</output-validation-error>"
    )


def test_tool_retry_prompt_with_the_schema() -> None:
    prompt = tool_retry_prompt(ISSUES[:1], schema=SCHEMA, tool_name="finish")
    assert prompt == (
        "<output-validation-error>\n"
        "Your output did not match the required schema.\n"
        "\n"
        "## Validation Errors\n"
        "- $.summary: 'summary' is a required property\n"
        "\n"
        "## Required Schema\n"
        f"```json\n{RENDERED}\n```\n"
        "\n"
        "Please call `finish` again with arguments matching the schema exactly.\n"
        "</output-validation-error>"
    )


def test_text_retry_prompt_quotes_the_previous_response() -> None:
    previous = 'Here you go: {"summary": 1}'
    assert text_retry_prompt(previous, ISSUES, schema=SCHEMA) == (
        "Your previous response did not match the required JSON schema.\n"
        "\n"
        "## Validation Errors:\n"
        "- $.summary: 'summary' is a required property\n"
        "- $.severity: 'critical' is not one of ['low', 'high']\n"
        "\n"
        "## Your Previous Response:\n"
        'Here you go: {"summary": 1}\n'
        "\n"
        "## Required Schema:\n"
        f"{RENDERED}\n"
        "\n"
        "Please provide a corrected response that matches the schema exactly.\n"
        "Output ONLY the valid JSON, no additional text."
    )


def test_text_retry_prompt_quotes_a_looping_response_without_its_loop() -> None:
    previous = '{"summary": "' + "summary: " * 40 + "sum"
    prompt = text_retry_prompt(previous, ISSUES[1:2])
    assert (
        '## Your Previous Response:\n{"summary": "summary: summary: [... the same 38 more times]\n'
    ) in prompt
    assert "summary: " * 3 not in prompt


def test_text_retry_prompt_without_schema_and_with_an_empty_response() -> None:
    prompt = text_retry_prompt("  ", ISSUES[1:2])
    assert "## Required Schema" not in prompt
    assert "## Your Previous Response:\n(an empty response)\n\nPlease provide" in prompt


def test_multiline_messages_stay_inside_their_bullet() -> None:
    issue = ValidationIssue(path="$", message="first line\nsecond line")
    assert "- $: first line\n  second line\n" in tool_retry_prompt([issue])


def test_retry_prompts_need_issues() -> None:
    with pytest.raises(ConfigError, match="at least one validation issue"):
        tool_retry_prompt([])
    with pytest.raises(ConfigError, match="at least one validation issue"):
        text_retry_prompt("x", [])


def test_prompts_are_deterministic() -> None:
    assert tool_retry_prompt(ISSUES, schema=SCHEMA) == tool_retry_prompt(
        list(ISSUES), schema=SCHEMA
    )
    assert enriched_system_prompt("a", SCHEMA, mode="tool") == enriched_system_prompt(
        "a", dict(SCHEMA), mode="tool"
    )


def test_tool_not_called_prompt() -> None:
    assert tool_not_called_prompt() == (
        "<output-tool-not-called>\n"
        "You answered with text but did not call the `submit_result` tool. Your result is only "
        "accepted through a `submit_result` call. Call `submit_result` now, with your final "
        "result as its arguments.\n"
        "</output-tool-not-called>"
    )
    assert "`finish`" in tool_not_called_prompt("finish")
