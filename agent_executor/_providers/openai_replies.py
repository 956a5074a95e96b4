"""How an OpenAI-compatible reply body becomes a neutral ``ModelTurn``.

Text, tool calls (with the quirks of compatible servers: arguments as an object, missing ids),
the stop reason and usage.
"""

from __future__ import annotations

import hashlib
from typing import cast

from pydantic import JsonValue

from agent_contracts._errors import ProviderError
from agent_contracts._json_data import PARSED_JSON
from agent_contracts._messages import ToolCall, Usage
from agent_executor._providers.base import ModelTurn, StopReason, ToolNameMap
from agent_executor._providers.replies import (
    arguments_problem,
    call_usage,
    echo_text,
    model_arguments,
    parsed_turn,
    read_json,
)

_FINISH_REASONS: dict[str, StopReason] = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def _turn(
    provider: str,
    model: str,
    body: str | bytes,
    names: ToolNameMap,
    position: int,
    latency_ms: float,
) -> ModelTurn:
    """Normalise a Chat Completions response body (its text, or its UTF-8 bytes)."""
    try:
        raw = read_json(body)
    except (ValueError, RecursionError) as exc:
        text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
        raise ProviderError(
            f"the reply is not JSON: {text[:200]!r}", provider=provider, body=text
        ) from exc
    return _turn_of(provider, model, raw, names, position, latency_ms)


def _turn_of(
    provider: str, model: str, raw: JsonValue, names: ToolNameMap, position: int, latency_ms: float
) -> ModelTurn:
    """Normalise a Chat Completions response body already parsed (or assembled from chunks)."""
    if not isinstance(raw, dict):
        raise ProviderError("the reply has no choices", provider=provider, body=raw)
    choices = raw.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ProviderError("the reply has no choices", provider=provider, body=raw)
    choice = choices[0]
    message = choice.get("message")
    message = message if isinstance(message, dict) else {}
    text = _content_text(message.get("content"))
    refusal = message.get("refusal")
    listed = message.get("tool_calls")
    # Anything but a list of objects is no tool call: the run loop then re-prompts the model.
    calls = [
        _tool_call(item, index, names, position)
        for index, item in enumerate(listed if isinstance(listed, list) else [])
        if isinstance(item, dict)
    ]
    finish = choice.get("finish_reason")
    stop: StopReason = _FINISH_REASONS.get(finish, "other") if isinstance(finish, str) else "other"
    if isinstance(refusal, str) and refusal:
        stop, text = "refusal", text or refusal
    elif calls and stop in ("end_turn", "other"):
        stop = "tool_use"  # a forced tool often comes back with finish_reason "stop"
    return parsed_turn(
        provider=provider,
        model=model,
        text=text,
        tool_calls=calls,
        stop_reason=stop,
        raw_stop_reason=finish if isinstance(finish, str) else None,
        usage=_usage(raw.get("usage")),
        raw=raw,
        latency_ms=latency_ms,
    )


def _content_text(content: object) -> str:
    """Return a message's text, whether ``content`` is a string, a list of parts or missing."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str)
        )
    return ""


def _tool_call(
    item: dict[str, JsonValue], index: int, names: ToolNameMap, position: int
) -> ToolCall:
    """Normalise one ``tool_calls`` entry, tolerating object arguments and missing ids."""
    function = item.get("function")
    function = function if isinstance(function, dict) else {}
    name = function.get("name")
    name = name if isinstance(name, str) else ""
    arguments = function.get("arguments")
    parsed: JsonValue = None
    error: str | None = None
    if isinstance(arguments, str):
        raw = arguments
        if not raw.strip():
            parsed = {}
        else:
            parsed, error = model_arguments(raw)
    elif arguments is None:
        raw, parsed = "", {}
    else:
        error = arguments_problem(arguments)
        parsed = None if error else cast(JsonValue, arguments)
        raw = echo_text(arguments)
        if error:  # keep the raw reply usable data: the refused arguments as text
            function["arguments"] = raw
    call_id = item.get("id")
    if not isinstance(call_id, str) or not call_id:
        digest = hashlib.sha256(f"{position}:{index}:{name}:{raw}".encode()).hexdigest()[:24]
        call_id = f"call_{digest}"
    call = {
        "id": call_id,
        "name": names.from_wire(name),
        "arguments": parsed,
        "raw_arguments": raw,
        "parse_error": error,
    }
    return ToolCall.model_validate(call, context=PARSED_JSON)  # arguments: parsed JSON


def _usage(usage: JsonValue) -> Usage:
    """Return token usage from a Chat Completions ``usage`` object (zeros when missing)."""
    if not isinstance(usage, dict):
        return call_usage()
    prompt, completion = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return call_usage(
        prompt if isinstance(prompt, int) else 0, completion if isinstance(completion, int) else 0
    )
