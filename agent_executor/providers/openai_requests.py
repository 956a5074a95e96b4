"""How a neutral request becomes a Chat Completions request body.

The conversation, tools and tool choice in Chat Completions form (tool names put on the wire
with the request's :class:`ToolNameMap`), and the settings a request carries. Both the plain
and the streamed call send this body (a streamed one adds ``stream`` and ``stream_options``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from math import isfinite
from typing import Literal, cast

from pydantic import JsonValue

from agent_contracts.messages import Message, ToolCall
from agent_contracts.profiles import ProviderProfile
from agent_core.gbnf_grammar import schema_to_gbnf
from agent_core.json_text import json_body
from agent_executor.providers.base import (
    JsonObject,
    ModelTurnRequest,
    ToolDefinition,
    ToolNameMap,
)

__all__ = ["TOOL_ERROR_PREFIX", "chat_body", "chat_content"]

TOOL_ERROR_PREFIX = "[tool error] "
"""Prefix of a failed tool's result: Chat Completions has no ``is_error`` flag."""


def chat_body(
    turn: ModelTurnRequest,
    names: ToolNameMap,
    *,
    model: str,
    profile: ProviderProfile,
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"],
    tools: bool = True,
) -> JsonObject:
    """Return the Chat Completions request body for one call.

    Args:
        turn: The conversation, tools and settings for this call.
        names: The wire names of the request's tools.
        model: The model to call.
        profile: What the server can be sent (how native output is spelled).
        max_tokens_param: Which field carries ``max_tokens``.
        tools: Whether to put the ``tools`` list in (without it, the rest of a body that
            offers tools, ``tool_choice`` included).

    Returns:
        The body as plain JSON.
    """
    messages: list[JsonValue] = [*_messages(turn.messages, names)]
    body: JsonObject = {"model": model, "messages": messages}
    if turn.tools:
        if tools:
            body["tools"] = _tool_params(turn.tools, names)
        body["tool_choice"] = _tool_choice(turn, names)
        if turn.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = turn.parallel_tool_calls
    if turn.max_tokens is not None:
        body[max_tokens_param] = turn.max_tokens
    if turn.temperature is not None:
        body["temperature"] = turn.temperature
    if turn.stop:
        body["stop"] = list(turn.stop)
    if turn.response_format is not None:
        fmt = turn.response_format
        if profile.takes_grammar:
            # llama.cpp refuses a body with both a schema and a grammar, and llama-cpp-python
            # lets a json_object response format replace the grammar: the grammar goes alone.
            # As the server's own converter: only declared properties where the schema does
            # not say, and compact JSON. A small model free to add keys, or to lay the JSON out
            # over lines, was seen to loop until its token limit.
            grammar = schema_to_gbnf(fmt.json_schema, declared_only=True, compact=True)
            body["grammar"] = grammar.text
        elif profile.native_format == "json_object_schema":
            body["response_format"] = {"type": "json_object", "schema": fmt.json_schema}
        else:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": fmt.name,
                    "schema": fmt.json_schema,
                    "strict": fmt.strict,
                },
            }
    return body


def chat_content(
    turn: ModelTurnRequest,
    names: ToolNameMap,
    *,
    model: str,
    profile: ProviderProfile,
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"],
    extra: JsonObject | None = None,
) -> bytes:
    """Return :func:`chat_body` (and ``extra``'s fields) as the request's JSON bytes.

    The ``tools`` list, the largest part of most bodies and the same on every call, is
    serialised once per set of tool definitions (definitions are frozen; the same objects
    under the same wire names give the same bytes) and put in as bytes; the rest is
    serialised by :func:`~agent_core.json_text.json_body` on every call.

    Args:
        turn: The conversation, tools and settings for this call.
        names: The wire names of the request's tools.
        model: The model to call.
        profile: What the server can be sent.
        max_tokens_param: Which field carries ``max_tokens``.
        extra: Fields to add to the body (``stream``, ``stream_options``).

    Raises:
        TypeError: The body holds an object no JSON serialiser knows.
        ValueError: The body holds NaN or an infinite number.
    """
    body = chat_body(
        turn, names, model=model, profile=profile, max_tokens_param=max_tokens_param, tools=False
    )
    opens = turn.messages[0] if turn.messages else None
    system = opens.content if opens is not None and opens.role == "system" else None
    if system is not None:  # its JSON is made once per prompt and put in as bytes
        body["messages"] = cast("list[JsonValue]", body["messages"])[1:]
    if extra:
        body.update(extra)
    # The conversation is text: the body's floats are the temperature's and any in a native
    # output schema or in ``extra``; only when there are none of the latter two is the written
    # body not searched for NaN.
    temperature = turn.temperature
    finite = (
        turn.response_format is None
        and (temperature is None or isfinite(temperature))
        and (not extra or all(_no_float(value) for value in extra.values()))
    )
    content = json_body(body, finite=finite)
    if system is not None:
        content = _with_system(content, model, system, body, finite)
    if not turn.tools:
        return content
    return b"".join((content[:-1], b',"tools":', _tools_json(turn.tools, names), b"}"))


def _with_system(content: bytes, model: str, system: str, body: JsonObject, finite: bool) -> bytes:
    """Return ``content`` (a body without its system message) with that message put first.

    The body's JSON opens with its model and then its messages (the order :func:`chat_body`
    writes them in); should it not, the body is written again with the message in it.
    """
    opening = _opening(model)
    if not content.startswith(opening):  # never seen: the exact way instead
        messages = cast("list[JsonValue]", body["messages"])
        body["messages"] = [{"role": "system", "content": system}, *messages]
        return json_body(body, finite=finite)
    rest = content[len(opening) :]
    between = b"" if rest.startswith(b"]") else b","
    return b"".join((opening, _system_json(system), between, rest))


@functools.lru_cache(maxsize=64)
def _opening(model: str) -> bytes:
    """Return how a body's JSON opens, up to its first message: ``{"model":...,"messages":[``."""
    return b'{"model":' + json_body(model) + b',"messages":['


@functools.lru_cache(maxsize=64)
def _system_json(text: str) -> bytes:
    """Return the JSON of the system message of ``text``, made once per prompt."""
    return json_body({"role": "system", "content": text})


def _no_float(value: JsonValue) -> bool:
    """Tell whether ``value`` is a scalar that is not a float, or an object of such scalars."""
    if isinstance(value, dict):
        return all(isinstance(item, str | int | None) for item in value.values())
    return isinstance(value, str | int | None)


_TOOLS_KEPT = 64
_tools_sent: dict[tuple[tuple[int, str], ...], tuple[tuple[ToolDefinition, ...], bytes]] = {}
"""The JSON of tool lists by their definitions' identity and wire names (kept with them, so an
id is not reused while its bytes are kept)."""


def _tools_json(tools: Sequence[ToolDefinition], names: ToolNameMap) -> bytes:
    """Return the JSON of the ``tools`` list for ``tools``, serialised once per set."""
    key = tuple((id(tool), names.to_wire(tool.name)) for tool in tools)
    known = _tools_sent.get(key)
    if known is not None:
        return known[1]
    content = json_body(_tool_params(tools, names))
    if len(_tools_sent) >= _TOOLS_KEPT:
        _tools_sent.clear()
    _tools_sent[key] = (tuple(tools), content)
    return content


def _tool_params(tools: Sequence[ToolDefinition], names: ToolNameMap) -> list[JsonValue]:
    """Return the ``tools`` list in Chat Completions form."""
    return [_tool_param(tool, names) for tool in tools]


def _tool_param(tool: ToolDefinition, names: ToolNameMap) -> JsonObject:
    """Return a tool definition in Chat Completions form."""
    function: JsonObject = {
        "name": names.to_wire(tool.name),
        "description": tool.description,
        "parameters": tool.parameters,
    }
    if tool.strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def _tool_choice(turn: ModelTurnRequest, names: ToolNameMap) -> JsonValue:
    """Return the request's tool choice in Chat Completions form."""
    choice = turn.tool_choice
    if choice.mode == "tool" and choice.tool_name is not None:
        return {"type": "function", "function": {"name": names.to_wire(choice.tool_name)}}
    return choice.mode


def _messages(messages: list[Message], names: ToolNameMap) -> list[JsonObject]:
    """Return the conversation in Chat Completions form."""
    wire: list[JsonObject] = []
    for message in messages:
        if message.role == "tool":
            for result in message.tool_results:
                prefix = TOOL_ERROR_PREFIX if result.is_error else ""
                wire.append(
                    {
                        "role": "tool",
                        "tool_call_id": result.tool_call_id,
                        "content": prefix + result.content,
                    }
                )
            if message.content:
                wire.append({"role": "user", "content": message.content})
        elif message.role == "assistant" and message.tool_calls:
            wire.append(
                {
                    "role": "assistant",
                    # A string, never null: llama-cpp-python's server refuses a null content.
                    "content": message.content,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": names.to_wire(call.name),
                                "arguments": _arguments_text(call),
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        else:
            wire.append({"role": message.role, "content": message.content})
    return wire


def _arguments_text(call: ToolCall) -> str:
    """Return the arguments to echo back: always the JSON text of an object.

    What the model sent when it was a JSON object, else its parsed value as JSON; arguments
    that were not a JSON object (cut off, broken, a list) are echoed as ``{}``, because Ollama
    and llama.cpp parse the echoed arguments and refuse the whole request otherwise. The error
    tool result that follows tells the model what was wrong with what it sent.
    """
    if not isinstance(call.arguments, dict):
        return "{}"
    if call.raw_arguments and call.raw_arguments.lstrip().startswith("{"):
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)
