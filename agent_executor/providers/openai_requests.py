"""How a neutral request becomes a Chat Completions request body.

The conversation, tools and tool choice in Chat Completions form (tool names put on the wire
with the request's :class:`ToolNameMap`), and the settings a request carries. Both the plain
and the streamed call send this body (a streamed one adds ``stream`` and ``stream_options``).
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import JsonValue

from agent_contracts.messages import Message, ToolCall
from agent_contracts.profiles import ProviderProfile
from agent_executor.providers.base import (
    JsonObject,
    ModelTurnRequest,
    ToolDefinition,
    ToolNameMap,
)

__all__ = ["TOOL_ERROR_PREFIX", "chat_body"]

TOOL_ERROR_PREFIX = "[tool error] "
"""Prefix of a failed tool's result: Chat Completions has no ``is_error`` flag."""


def chat_body(
    turn: ModelTurnRequest,
    names: ToolNameMap,
    *,
    model: str,
    profile: ProviderProfile,
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"],
) -> JsonObject:
    """Return the Chat Completions request body for one call.

    Args:
        turn: The conversation, tools and settings for this call.
        names: The wire names of the request's tools.
        model: The model to call.
        profile: What the server can be sent (how native output is spelled).
        max_tokens_param: Which field carries ``max_tokens``.

    Returns:
        The body as plain JSON.
    """
    messages: list[JsonValue] = [*_messages(turn.messages, names)]
    body: JsonObject = {"model": model, "messages": messages}
    if turn.tools:
        body["tools"] = [_tool_param(tool, names) for tool in turn.tools]
        body["tool_choice"] = _tool_choice(turn, names)
        if turn.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = turn.parallel_tool_calls
    if turn.max_tokens is not None:
        body[max_tokens_param] = turn.max_tokens
    if turn.temperature is not None:
        body["temperature"] = turn.temperature
    if turn.response_format is not None:
        fmt = turn.response_format
        if profile.native_format == "json_object_schema":
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
