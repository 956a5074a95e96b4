"""The words agentshape adds to a conversation: the output section, re-prompts and tool results.

:func:`enriched_system_prompt` appends the "Required Output Format" section last;
:func:`tool_retry_prompt`, :func:`text_retry_prompt` and :func:`tool_not_called_prompt` are the
re-prompts; the constants stand in for a forced tool choice or answer tool calls. Every function
is deterministic, and each validation error is stated once, in the order first given.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from agent_contracts._errors import ConfigError
from agent_contracts._validation import ValidationIssue
from agent_core._dialects import WRAPPER_PROPERTY, needs_wrapping
from agent_core._output_tool import OUTPUT_TOOL_NAME, Contract, json_schema_of
from agent_core._repetition import find_loop
from agent_core._schema_outline import schema_outline
from agent_core._schema_sample import generate_value

__all__ = [
    "ANSWER_END",
    "ANSWER_STOPS",
    "FINAL_ANSWER_NOW",
    "FORCE_REMINDER",
    "REJECTED_SEE_BELOW",
    "RESULT_ACCEPTED",
    "TOOLS_REQUIRED_REMINDER",
    "UNANSWERED_TOOL_CALL",
    "PromptMode",
    "bad_tool_arguments",
    "duplicate_result_ignored",
    "enriched_system_prompt",
    "parameters_section",
    "text_retry_prompt",
    "tool_arguments_too_large",
    "tool_call_not_run",
    "tool_not_called_prompt",
    "tool_retry_prompt",
    "unknown_tool",
    "wrong_tool",
]

PromptMode = Literal["tool", "prompted"]
"""How the model hands in its result: by calling ``submit_result``, or as JSON text."""

FORCE_REMINDER = (
    "<output-tool-required>\n"
    f"Call the `{OUTPUT_TOOL_NAME}` tool now, with your final result as its arguments. A reply "
    f"without a `{OUTPUT_TOOL_NAME}` call is not accepted.\n"
    "</output-tool-required>"
)
"""The reminder sent before a turn that should force ``submit_result`` when the provider cannot
force a tool (Anthropic with extended thinking)."""

TOOLS_REQUIRED_REMINDER = (
    "<tool-call-required>\n"
    "Answer only by calling tools: use the other tools to look things up, and hand in your final "
    f"result by calling `{OUTPUT_TOOL_NAME}`. A reply in plain text is not accepted.\n"
    "</tool-call-required>"
)
"""The reminder added to the task when the provider cannot be made to call a tool."""

UNANSWERED_TOOL_CALL = "not run: the conversation ended before this call was answered"
"""The error result filled in for a tool call a run ended before answering."""

RESULT_ACCEPTED = "Result accepted."
"""The tool result for an accepted ``submit_result`` call."""

ANSWER_END = "</json>"
"""The marker prompted mode asks the model to write after its JSON, where the provider takes
stop sequences: the reply stops there, so nothing after the JSON costs tokens."""

ANSWER_STOPS = (ANSWER_END, "\n```")
"""Prompted mode's stop sequences: the marker, and the end of a fenced block. A small model that
does not write the marker still closes the fenced JSON the prompt's example is shown in; an
opening fence is never preceded by a line break in a reply that starts with it."""

FINAL_ANSWER_NOW = (
    "Now give your final result: one JSON value of the shape the Required Output Format asks "
    "for, and nothing else."
)
"""The user message that ends the input-tool turns of a native-mode run whose model stopped
calling tools: the next reply is the answer, asked for under the provider's grammar."""

REJECTED_SEE_BELOW = "Rejected: the errors follow in the next message."
"""The tool result for a rejected call whose errors are sent as a user message (a server
that drops ``tool`` messages; see the profile's ``reprompt_as``)."""


def duplicate_result_ignored(tool_name: str = OUTPUT_TOOL_NAME) -> str:
    """Return the tool result for a second valid ``submit_result`` call in one turn.

    Args:
        tool_name: The output tool's name.
    """
    return f"Ignored: an earlier {tool_name} call in this turn was accepted."


def wrong_tool(
    name: str, offered: Sequence[str], *, known: bool, tool_name: str = OUTPUT_TOOL_NAME
) -> str:
    """Return the error result for a tool call made when only ``submit_result`` counts.

    Args:
        name: The tool the model called.
        offered: The tools offered on that turn.
        known: Whether ``name`` is one of the agent's input tools (not callable now).
        tool_name: The output tool's name.
    """
    what = "is not a tool you can call now" if known else "is not one of your tools"
    return (
        f"{name!r} {what}; call {tool_name} with your final result "
        f"(tools offered: {', '.join(offered)})"
    )


def unknown_tool(name: str, offered: Sequence[str]) -> str:
    """Return the error result for a call to a tool the agent does not have.

    Args:
        name: The tool the model called.
        offered: The agent's input tools.
    """
    return f"there is no tool named {name!r} (tools: {', '.join(offered) or 'none'})"


def tool_arguments_too_large(size: int, cap: int) -> str:
    """Return the error result for an input-tool call whose arguments are over the size cap.

    Args:
        size: The arguments' length in characters.
        cap: The most an input tool's arguments may hold.
    """
    return f"the arguments are {size:,} characters long; an input tool takes at most {cap:,}"


def tool_call_not_run(cap: int) -> str:
    """Return the error result for an input-tool call past the most answered in one turn.

    Args:
        cap: The most input-tool calls answered in one turn.
    """
    return (
        f"not run: at most {cap} input-tool calls are answered in one turn; "
        "call this one again in a later turn if you still need it"
    )


def bad_tool_arguments(reason: str) -> str:
    """Return the error result for a tool call whose arguments are not JSON.

    Args:
        reason: Why the arguments did not parse.
    """
    return f"the arguments are not valid JSON: {reason}"


def parameters_section(task: str, parameters_json: str) -> str:
    """Return the task with the run's parameters appended, as the model reads them.

    Args:
        task: The user's task (empty when the parameters are the task).
        parameters_json: The parameters, rendered as indented JSON.
    """
    block = f"Parameters:\n{parameters_json}"
    return f"{task}\n\n{block}" if task else block


def enriched_system_prompt(
    system_prompt: str,
    schema: Contract,
    *,
    mode: PromptMode,
    tool_name: str = OUTPUT_TOOL_NAME,
    not_in_tool: Sequence[str] = (),
    end_marker: str | None = None,
    example: bool = False,
) -> str:
    """Return the system prompt with the "Required Output Format" section appended last.

    In tool mode the section names the tool and adds only what its parameters cannot carry; in
    prompted mode it gives the schema as a compact outline and asks for the JSON alone.

    Args:
        system_prompt: The agent's own system prompt (may be empty).
        schema: The output contract: a JSON Schema or a Pydantic model class.
        mode: ``tool`` (the model calls ``tool_name``) or ``prompted`` (the model answers with
            JSON only; also for providers' native structured output).
        tool_name: The output tool's name, in tool mode.
        not_in_tool: In tool mode, the constraints the provider was not sent in the tool's
            parameters, one line each (``$.path: keyword ...``).
        end_marker: In prompted mode, the marker to write right after the JSON (the run's
            stop sequence, such as :data:`ANSWER_END`), or ``None`` for none.
        example: In prompted mode, also show a value of the schema
            (:func:`~agent_core._schema_sample.generate_value`) as fenced JSON: a small model
            given only the outline was seen to copy the outline instead of writing JSON.

    Returns:
        The system prompt with the output section appended.

    Raises:
        ConfigError: When ``mode`` is neither ``tool`` nor ``prompted``.
        InvalidSchemaError: When ``schema`` is not a JSON Schema or a Pydantic model class.
    """
    document = json_schema_of(schema)
    if mode == "tool":
        target = (
            f"its `{WRAPPER_PROPERTY}` argument" if needs_wrapping(document) else "its arguments"
        )
        section = (
            "## Required Output Format\n\n"
            f"When your work is done, call `{tool_name}` once with your final result as "
            f"{target}. Only that call counts; if it is rejected, fix the reported errors and "
            "call it again."
        )
        if not_in_tool:
            lines = "\n".join(f"- {line}" for line in not_in_tool)
            section += f"\n\nThe result must also meet these constraints:\n{lines}"
    elif mode == "prompted":
        close = f"write `{end_marker}` right after it" if end_marker else "stop right after it"
        section = (
            "## Required Output Format\n\n"
            "Answer with one JSON value of this shape (`?` marks an optional key; `//` comments "
            "state constraints and are not part of the JSON):\n\n"
            f"```\n{schema_outline(document)}\n```\n\n"
        )
        if example:
            sample = json.dumps(generate_value(document), ensure_ascii=False)
            section += (
                "An example of the shape (its values are placeholders: write your own):\n\n"
                f"```json\n{sample}\n```\n\n"
            )
        section += f"Reply with only the JSON value, with no other text, and {close}."
    else:
        raise ConfigError(f"unknown prompt mode {mode!r}; use 'tool' or 'prompted'")
    base = system_prompt.rstrip()
    return f"{base}\n\n{section}" if base.strip() else section


def tool_retry_prompt(
    issues: Sequence[ValidationIssue],
    *,
    schema: Contract | None = None,
    tool_name: str = OUTPUT_TOOL_NAME,
) -> str:
    """Return the ``<output-validation-error>`` re-prompt for a rejected tool call.

    Args:
        issues: What was wrong; each distinct ``path: message`` is stated once.
        schema: The contract, repeated under "Required Schema" when given.
        tool_name: The output tool's name.

    Returns:
        The re-prompt's text.

    Raises:
        ConfigError: When ``issues`` is empty: there is nothing to ask the model to fix.
        InvalidSchemaError: When ``schema`` is not a JSON Schema or a Pydantic model class.
    """
    parts = [
        "<output-validation-error>",
        "Your output did not match the required schema.",
        "",
        "## Validation Errors",
        _issue_lines(issues),
    ]
    if schema is not None:
        parts += ["", "## Required Schema", f"```json\n{_render(json_schema_of(schema))}\n```"]
    parts += [
        "",
        f"Please call `{tool_name}` again with arguments matching the schema exactly.",
        "</output-validation-error>",
    ]
    return "\n".join(parts)


def text_retry_prompt(
    previous_response: str,
    issues: Sequence[ValidationIssue],
    *,
    schema: Contract | None = None,
) -> str:
    """Return the text-mode re-prompt, quoting the response that failed.

    A reply that ends in a loop (one piece written over and over) is quoted up to its second
    repetition and a note of how many more followed: quoting the whole loop back to a small
    model invites it to write the loop again.

    Args:
        previous_response: The model's previous reply, quoted as it was.
        issues: What was wrong; each distinct ``path: message`` is stated once.
        schema: The contract, repeated under "Required Schema" when given.

    Returns:
        The re-prompt's text.

    Raises:
        ConfigError: When ``issues`` is empty: there is nothing to ask the model to fix.
        InvalidSchemaError: When ``schema`` is not a JSON Schema or a Pydantic model class.
    """
    quoted = _quoted(previous_response)
    parts = [
        "Your previous response did not match the required JSON schema.",
        "",
        "## Validation Errors:",
        _issue_lines(issues),
        "",
        "## Your Previous Response:",
        quoted,
    ]
    if schema is not None:
        parts += ["", "## Required Schema:", _render(json_schema_of(schema))]
    parts += [
        "",
        "Please provide a corrected response that matches the schema exactly.",
        "Output ONLY the valid JSON, no additional text.",
    ]
    return "\n".join(parts)


def tool_not_called_prompt(tool_name: str = OUTPUT_TOOL_NAME) -> str:
    """Return the reminder for a model that answered in text instead of calling the tool.

    Args:
        tool_name: The output tool's name.

    Returns:
        The reminder's text.
    """
    return (
        "<output-tool-not-called>\n"
        f"You answered with text but did not call the `{tool_name}` tool. Your result is only "
        f"accepted through a `{tool_name}` call. Call `{tool_name}` now, with your final result "
        "as its arguments.\n"
        "</output-tool-not-called>"
    )


def _quoted(response: str) -> str:
    if not response.strip():
        return "(an empty response)"
    loop = find_loop(response)
    if loop is None:
        return response
    shown = loop.start + 2 * len(loop.piece)
    more = (len(response) - shown) / len(loop.piece)
    return f"{response[:shown]}[... the same {more:.0f} more times]"


def _render(schema: object) -> str:
    return json.dumps(schema, indent=2, ensure_ascii=False)


def _issue_lines(issues: Sequence[ValidationIssue]) -> str:
    if not issues:
        raise ConfigError("a re-prompt needs at least one validation issue")
    lines: list[str] = []
    seen: set[tuple[str, str]] = set()
    for issue in issues:
        key = (issue.path, issue.message)
        if key in seen:
            continue
        seen.add(key)
        message = issue.message.replace("\n", "\n  ")
        lines.append(f"- {issue.path}: {message}")
    return "\n".join(lines)
