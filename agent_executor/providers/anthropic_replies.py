"""How an Anthropic Messages reply becomes a neutral ``ModelTurn``.

Text, tool calls, thinking blocks (kept to send back with the calls), the stop reason and token
usage; a streamed reply is read by the same code once its events are assembled.
"""

from __future__ import annotations

from pydantic import JsonValue

from agent_contracts.errors import ProviderError
from agent_contracts.json_data import PARSED_JSON
from agent_contracts.messages import ToolCall, Usage
from agent_core.json_text import read_checked_json
from agent_executor.providers.base import ModelTurn, StopReason, ToolNameMap
from agent_executor.providers.replies import (
    arguments_problem,
    call_usage,
    echo_text,
    model_arguments,
    parsed_turn,
    read_json,
)

_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}
_THINKING_BLOCKS = ("thinking", "redacted_thinking")


def _turn(provider: str, model: str, body: str, names: ToolNameMap, latency_ms: float) -> ModelTurn:
    """Normalise a Messages response body.

    Raises:
        ProviderError: The body is not JSON or not a message.
    """
    checked = read_checked_json(body)  # then no tool input needs walking for NaN or depth
    if checked is not None:
        return _turn_of(provider, model, checked[0], names, latency_ms, checked=True)
    try:
        raw = read_json(body)
    except (ValueError, RecursionError) as exc:
        raise ProviderError(
            f"the reply is not JSON: {body[:200]!r}", provider=provider, body=body
        ) from exc
    return _turn_of(provider, model, raw, names, latency_ms)


def _turn_of(
    provider: str,
    model: str,
    raw: JsonValue,
    names: ToolNameMap,
    latency_ms: float,
    *,
    checked: bool = False,
) -> ModelTurn:
    """Normalise a Messages body already parsed (or assembled from a stream's events).

    Its thinking blocks travel on the turn (see ``Message.thinking``) when it calls tools.
    ``checked``: the body was read by :func:`~agent_core.json_text.read_checked_json`, so its
    tool inputs hold no ``NaN`` and are not too deep.

    Raises:
        ProviderError: The body is not a message.
    """
    if not isinstance(raw, dict) or "content" not in raw:
        raise ProviderError("the reply has no content blocks", provider=provider, body=raw)
    if not isinstance(content := raw["content"], list):  # malformed: no blocks, re-prompted
        content = raw["content"] = []
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[JsonValue] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(text := block.get("text"), str):
            texts.append(text)
        elif kind in _THINKING_BLOCKS:
            thinking.append(block)
        elif kind == "tool_use":
            calls.append(_tool_use(block, names, len(calls), checked=checked))
    reason = raw.get("stop_reason")
    stop = _STOP_REASONS.get(reason, "other") if isinstance(reason, str) else "other"
    return parsed_turn(
        provider=provider,
        model=model,
        text="".join(texts),
        tool_calls=calls,
        stop_reason=stop,
        raw_stop_reason=reason if isinstance(reason, str) else None,
        usage=_usage(raw.get("usage")),
        raw=raw,
        latency_ms=latency_ms,
        thinking=thinking if calls else [],
    )


def _usage(usage: JsonValue) -> Usage:
    """Return token usage; cache writes and reads count as input tokens."""
    if not isinstance(usage, dict):
        return call_usage()

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) else 0

    return call_usage(
        count("input_tokens")
        + count("cache_creation_input_tokens")
        + count("cache_read_input_tokens"),
        count("output_tokens"),
    )


def _tool_use(
    block: dict[str, JsonValue], names: ToolNameMap, index: int, *, checked: bool = False
) -> ToolCall:
    """Return a ``tool_use`` block as a call; an ``input`` no run can use is kept as text.

    Input nested too deep, holding ``NaN`` or not an object gives a call with ``parse_error``
    (a failed attempt, re-prompted), and the block's ``input`` becomes that text so the raw
    reply stays JSON data. An ``input`` that is text is read as JSON text, as a streamed
    input whose pieces never made JSON is left (or a server that sends the text).
    """
    arguments = block.get("input")
    if isinstance(arguments, str):
        raw = arguments
        arguments, problem = model_arguments(raw) if raw.strip() else ({}, None)
    else:
        problem = None if checked else arguments_problem(arguments)
        raw = echo_text(arguments)
    call = {
        "id": str(block.get("id") or f"toolu_{index}"),
        "name": names.from_wire(str(block.get("name") or "")),
        "arguments": None if problem else arguments,
        "raw_arguments": raw,
        "parse_error": problem,
    }
    if problem:
        block["input"] = raw
    return ToolCall.model_validate(call, context=PARSED_JSON)
