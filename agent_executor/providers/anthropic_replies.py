"""Parts of an Anthropic Messages reply, read into neutral types: token usage, tool calls."""

from __future__ import annotations

from pydantic import JsonValue

from agent_contracts.json_data import PARSED_JSON
from agent_contracts.messages import ToolCall, Usage
from agent_executor.providers.base import ToolNameMap, arguments_problem, echo_text


def _usage(usage: JsonValue) -> Usage:
    """Return token usage; cache writes and reads count as input tokens."""
    if not isinstance(usage, dict):
        return Usage(requests=1)

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) else 0

    return Usage(
        input_tokens=count("input_tokens")
        + count("cache_creation_input_tokens")
        + count("cache_read_input_tokens"),
        output_tokens=count("output_tokens"),
        requests=1,
    )


def _tool_use(block: dict[str, JsonValue], names: ToolNameMap, index: int) -> ToolCall:
    """Return a ``tool_use`` block as a call; an ``input`` no run can use is kept as text.

    Input nested too deep, holding ``NaN`` or not an object gives a call with ``parse_error``
    (a failed attempt, re-prompted), and the block's ``input`` becomes that text so the raw
    reply stays JSON data.
    """
    arguments = block.get("input")
    problem = arguments_problem(arguments)
    call = {
        "id": str(block.get("id") or f"toolu_{index}"),
        "name": names.from_wire(str(block.get("name") or "")),
        "arguments": None if problem else arguments,
        "raw_arguments": echo_text(arguments),
        "parse_error": problem,
    }
    if problem:
        block["input"] = call["raw_arguments"]
    return ToolCall.model_validate(call, context=PARSED_JSON)
