"""A provider that runs your code for each turn: scripted conversations in tests and examples.

``FunctionModel(fn)`` calls ``fn(messages, request)`` (sync or async) and turns what it returns
into a :class:`ModelTurn`:

- a ``ModelTurn``: used as is (provider and model filled in when blank);
- a ``str``: a text reply;
- a ``dict`` (or another JSON value, or a Pydantic model): the arguments of a call to the tool
  the request forces, else to ``submit_result`` when offered, else to the only tool offered;
- a ``ToolCall`` or a list of them: those calls.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable
from typing import TypeAlias

from pydantic import BaseModel, JsonValue

from agent_contracts._errors import ConfigError
from agent_contracts._messages import Message, ToolCall, Usage
from agent_executor._providers.base import ModelTurn, ModelTurnRequest
from agent_executor._providers.profiles import TEST_PROFILE

__all__ = ["FunctionModel", "FunctionReply", "TurnFunction"]

FunctionReply: TypeAlias = ModelTurn | ToolCall | list[ToolCall] | BaseModel | str | JsonValue
"""What a turn function may return (see the module docstring)."""

TurnFunction: TypeAlias = Callable[
    [list[Message], ModelTurnRequest], FunctionReply | Awaitable[FunctionReply]
]
"""``fn(messages, request)``: the conversation so far and the whole request (tools, choice...)."""


class FunctionModel:
    """A provider whose every turn comes from a user function."""

    supports_tools = True
    """The function sees the tools and may call them."""
    profile = TEST_PROFILE
    """Neutral tools; every output mode is answered."""

    def __init__(
        self,
        fn: TurnFunction,
        *,
        model: str = "function",
        output_tool: str = "submit_result",
    ) -> None:
        """Create the model.

        Args:
            fn: Called with ``(messages, request)`` for each turn; may be ``async``.
            model: The model name reported in turns.
            output_tool: The tool a returned ``dict`` calls when no tool is forced.
        """
        self.name = "function"
        self.model = model
        self.fn = fn
        self.output_tool = output_tool

    async def request(self, turn: ModelTurnRequest) -> ModelTurn:
        """Run the function for one turn.

        Args:
            turn: The conversation, tools and settings for this call.

        Returns:
            The function's reply as a turn.

        Raises:
            ConfigError: The function returned ``None`` or something that is not JSON, or it
                returned arguments but no tool can be told to take them.
            Exception: Whatever the function raises, unchanged.
        """
        reply = self.fn(list(turn.messages), turn)
        if inspect.isawaitable(reply):
            reply = await reply
        result = self._to_turn(reply, turn)
        return result.model_copy(
            update={"provider": result.provider or self.name, "model": result.model or self.model}
        )

    def _to_turn(self, reply: object, turn: ModelTurnRequest) -> ModelTurn:
        if isinstance(reply, ModelTurn):
            return reply
        if isinstance(reply, str):
            return ModelTurn(text=reply, usage=Usage(requests=1))
        if isinstance(reply, ToolCall):
            return ModelTurn(tool_calls=[reply], stop_reason="tool_use")
        if isinstance(reply, list) and reply and all(isinstance(c, ToolCall) for c in reply):
            return ModelTurn(tool_calls=list(reply), stop_reason="tool_use")
        if reply is None:
            raise ConfigError("function model: the function returned None (a missing return?)")
        if isinstance(reply, BaseModel):
            reply = reply.model_dump(mode="json")
        try:
            arguments: JsonValue = json.loads(json.dumps(reply))
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"function model: cannot use a {type(reply).__name__} as a reply: {exc}"
            ) from exc
        name = self._tool_for_arguments(turn)
        call = ToolCall(
            id=f"call_function_{len(turn.messages)}",
            name=name,
            arguments=arguments,
            raw_arguments=json.dumps(arguments),
        )
        return ModelTurn(tool_calls=[call], stop_reason="tool_use")

    def _tool_for_arguments(self, turn: ModelTurnRequest) -> str:
        choice = turn.tool_choice
        if choice.mode == "tool" and choice.tool_name is not None:
            return choice.tool_name
        if turn.tool(self.output_tool) is not None:
            return self.output_tool
        if len(turn.tools) == 1:
            return turn.tools[0].name
        offered = [tool.name for tool in turn.tools]
        raise ConfigError(
            f"function model: the function returned tool arguments, but no tool is forced and "
            f"{self.output_tool!r} is not among the offered tools {offered}; "
            "return a ToolCall naming the tool instead"
        )
