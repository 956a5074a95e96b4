from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from agent_contracts import ConfigError, Message, ToolCall
from agent_executor import FunctionModel
from agent_executor._providers.base import (
    ModelTurn,
    ModelTurnRequest,
    ToolChoice,
    ToolDefinition,
)
from agent_executor._providers.function import FunctionReply

SUBMIT = ToolDefinition(name="submit_result", parameters={"type": "object"})
READ = ToolDefinition(name="fs:read", parameters={"type": "object"})
CONVERSATION = [Message.system("s"), Message.user("Review it.")]


class Answer(BaseModel):
    summary: str


async def test_text_reply_sees_the_messages_and_the_request() -> None:
    seen: list[tuple[list[Message], ModelTurnRequest]] = []

    def reply(messages: list[Message], request: ModelTurnRequest) -> FunctionReply:
        seen.append((messages, request))
        return f"You said: {messages[-1].content}"

    request = ModelTurnRequest(messages=CONVERSATION, max_tokens=10)
    turn = await FunctionModel(reply, model="scripted").request(request)

    assert (turn.text, turn.provider, turn.model) == (
        "You said: Review it.",
        "function",
        "scripted",
    )
    assert turn.usage.requests == 1
    assert seen == [(CONVERSATION, request)]


async def test_async_function_returning_arguments_calls_the_forced_tool() -> None:
    async def reply(messages: list[Message], request: ModelTurnRequest) -> FunctionReply:
        return {"path": "a.py"}

    request = ModelTurnRequest(
        messages=CONVERSATION, tools=[READ, SUBMIT], tool_choice=ToolChoice.tool("fs:read")
    )
    turn = await FunctionModel(reply).request(request)

    [call] = turn.tool_calls
    assert (call.name, call.arguments) == ("fs:read", {"path": "a.py"})
    assert json.loads(call.raw_arguments) == {"path": "a.py"}
    assert turn.stop_reason == "tool_use"


async def test_arguments_go_to_submit_result_when_offered() -> None:
    def reply(messages: list[Message], request: ModelTurnRequest) -> FunctionReply:
        return Answer(summary="ok")

    request = ModelTurnRequest(messages=CONVERSATION, tools=[READ, SUBMIT])
    turn = await FunctionModel(reply).request(request)

    assert [(c.name, c.arguments) for c in turn.tool_calls] == [
        ("submit_result", {"summary": "ok"})
    ]


async def test_tool_calls_and_turns_are_used_as_given() -> None:
    replies: list[FunctionReply] = [
        [ToolCall(id="a", name="fs:read", arguments={}), ToolCall(id="b", name="x")],
        ModelTurn(text="cut", stop_reason="max_tokens"),
    ]

    def reply(messages: list[Message], request: ModelTurnRequest) -> FunctionReply:
        return replies.pop(0)

    model = FunctionModel(reply)
    calls = await model.request(ModelTurnRequest(messages=CONVERSATION))
    cut = await model.request(ModelTurnRequest(messages=CONVERSATION))

    assert [call.id for call in calls.tool_calls] == ["a", "b"]
    assert (cut.text, cut.stop_reason, cut.provider) == ("cut", "max_tokens", "function")


async def test_arguments_with_no_tool_to_take_them_are_a_config_error() -> None:
    def reply(messages: list[Message], request: ModelTurnRequest) -> FunctionReply:
        return {"a": 1}

    request = ModelTurnRequest(
        messages=CONVERSATION, tools=[READ, READ.model_copy(update={"name": "b"})]
    )
    with pytest.raises(ConfigError, match="not among the offered tools"):
        await FunctionModel(reply).request(request)


@pytest.mark.parametrize(("value", "message"), [(None, "returned None"), (object(), "cannot use")])
async def test_unusable_replies_are_config_errors(value: object, message: str) -> None:
    def reply(messages: list[Message], request: ModelTurnRequest) -> FunctionReply:
        return value  # type: ignore[return-value]

    with pytest.raises(ConfigError, match=message):
        await FunctionModel(reply).request(ModelTurnRequest(messages=CONVERSATION, tools=[SUBMIT]))


async def test_errors_from_the_function_propagate() -> None:
    def reply(messages: list[Message], request: ModelTurnRequest) -> FunctionReply:
        raise RuntimeError("scripted failure")

    with pytest.raises(RuntimeError, match="scripted failure"):
        await FunctionModel(reply).request(ModelTurnRequest(messages=CONVERSATION))
