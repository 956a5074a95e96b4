"""How a neutral conversation becomes the ``messages`` of a Messages request.

Both the plain and the streamed call send it; the system prompt, tools and tool choice are
spelled by :class:`agent_executor.providers.anthropic.AnthropicProvider` itself.
"""

from __future__ import annotations

from pydantic import JsonValue

from agent_contracts.messages import Message
from agent_executor.providers.base import JsonObject, ToolNameMap

__all__ = ["wire_messages"]


def wire_messages(messages: list[Message], names: ToolNameMap) -> list[JsonObject]:
    """Return the conversation (system messages excluded) as Messages turns.

    Consecutive messages of one role are merged (tool results and a following re-prompt make
    one user turn); empty assistant turns are dropped; thinking blocks kept from earlier
    replies are put back before their tool calls, as the API requires.

    Args:
        messages: The conversation.
        names: The wire names of the request's tools.

    Returns:
        The ``messages`` of the request body.
    """
    turns: list[tuple[str, list[JsonValue]]] = []
    for message in messages:
        if message.role == "system":
            continue
        blocks: list[JsonValue] = []
        if message.role == "tool":
            role = "user"
            for result in message.tool_results:
                block: JsonObject = {
                    "type": "tool_result",
                    "tool_use_id": result.tool_call_id,
                    "content": result.content,
                }
                if result.is_error:
                    block["is_error"] = True
                blocks.append(block)
        else:
            role = message.role
        if message.role == "assistant" and message.tool_calls:
            blocks.extend(message.thinking)
        if message.content:
            blocks.append({"type": "text", "text": message.content})
        for call in message.tool_calls:
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": names.to_wire(call.name),
                    "input": arguments,
                }
            )
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    return [{"role": role, "content": blocks} for role, blocks in turns]
