from __future__ import annotations

import json
from typing import Any

import pytest

from agent_contracts.messages import Message
from agent_contracts.profiles import ProviderProfile
from agent_contracts.tools import ResponseFormat, ToolChoice, ToolDefinition
from agent_executor.providers.base import ModelTurnRequest
from agent_executor.providers.openai_requests import chat_body, chat_content
from agent_executor.providers.tool_names import tool_names_for

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def _turn(tools: list[ToolDefinition], task: str = "count") -> ModelTurnRequest:
    return ModelTurnRequest(
        messages=[Message.user(task)],
        tools=tools,
        tool_choice=ToolChoice.tool(tools[0].name) if tools else ToolChoice.auto(),
        max_tokens=50,
    )


SETTINGS: dict[str, Any] = {
    "model": "m",
    "profile": ProviderProfile(),
    "max_tokens_param": "max_tokens",
}


def _content(turn: ModelTurnRequest, **extra: object) -> bytes:
    return chat_content(turn, tool_names_for(turn), extra=dict(extra) or None, **SETTINGS)


def _body(turn: ModelTurnRequest) -> dict[str, object]:
    return chat_body(turn, tool_names_for(turn), **SETTINGS)


def test_the_bytes_are_the_body_with_its_tools() -> None:
    tools = [
        ToolDefinition(name="fs:read", description="Read \u00e9 file", parameters=SCHEMA),
        ToolDefinition(name="submit_result", parameters=SCHEMA, strict=True),
    ]
    turn = _turn(tools)
    assert json.loads(_content(turn)) == _body(turn)
    sent = json.loads(_content(turn, stream=True))
    assert sent["stream"] is True and sent["tools"] == _body(turn)["tools"]
    assert sent["tools"][0]["function"]["name"] != "fs:read"  # its wire name


def test_the_same_tools_give_the_same_bytes_with_each_conversation() -> None:
    tools = [ToolDefinition(name="submit_result", parameters=SCHEMA)]
    first = json.loads(_content(_turn(tools, "one")))
    second = json.loads(_content(_turn(tools, "two")))
    assert first["tools"] == second["tools"]
    assert [m["content"] for m in (first["messages"][0], second["messages"][0])] == ["one", "two"]


def test_other_tools_are_serialised_for_themselves() -> None:
    first = _turn([ToolDefinition(name="submit_result", parameters=SCHEMA)])
    other = {"type": "object", "properties": {"s": {"type": "string"}}}
    second = _turn([ToolDefinition(name="submit_result", parameters=other)])
    _content(first)
    sent = json.loads(_content(second))
    assert sent["tools"][0]["function"]["parameters"] == other


def test_a_lone_surrogate_in_a_tool_goes_out_as_its_escape_text() -> None:
    tools = [ToolDefinition(name="t", description="bad \ud800 text", parameters=SCHEMA)]
    sent = json.loads(_content(_turn(tools)))  # UTF-8 bytes: the surrogate could not go as is
    assert sent["tools"][0]["function"]["description"] == "bad \\ud800 text"


def test_a_body_without_tools_has_no_tools_list() -> None:
    sent = json.loads(_content(_turn([])))
    assert "tools" not in sent and "tool_choice" not in sent
    assert sent["max_tokens"] == 50


def test_a_body_whose_floats_are_not_all_finite_is_refused() -> None:
    # A conversation of text is written without a search for NaN; the floats that can be in a
    # body (the temperature, a native schema's numbers, extra fields) are still refused.
    plain = _turn([]).model_copy(update={"temperature": 0.5})
    assert json.loads(_content(plain))["temperature"] == 0.5
    text_like_nan = _turn([], task="NaN and Infinity are words here")
    assert json.loads(_content(text_like_nan))["messages"][0]["content"].startswith("NaN")
    for bad in (float("nan"), float("inf")):
        with pytest.raises(ValueError):
            _content(_turn([]).model_copy(update={"temperature": bad}))
        with pytest.raises(ValueError):
            _content(_turn([]), stream_options={"weight": bad})
        with pytest.raises(ValueError):
            _content(_turn([]), top_p=bad)
    schema = {"type": "object", "properties": {"n": {"type": "number", "maximum": float("inf")}}}
    native = _turn([]).model_copy(
        update={"response_format": ResponseFormat(name="out", json_schema=schema)}
    )
    with pytest.raises(ValueError):
        _content(native)


@pytest.mark.parametrize(
    ("system", "rest"),
    [
        ("You count. " * 200, [Message.user("count")]),
        ("You count.", []),
        ('Quote "this", then \\ and \u00e9 and \n', [Message.user("a"), Message.user("b")]),
        ("bad \ud800 prompt", [Message.user("count")]),
    ],
)
def test_a_system_message_goes_first_exactly_as_written(system: str, rest: list[Message]) -> None:
    tools = [ToolDefinition(name="submit_result", parameters=SCHEMA)]
    for turn in (_turn(tools), _turn([])):
        turn = turn.model_copy(update={"messages": [Message.system(system), *rest]})
        for extra in ({}, {"stream": True}):
            sent = json.loads(_content(turn, **extra))
            body: Any = _body(turn)  # a lone surrogate goes out as its escape text
            body["messages"][0]["content"] = system.replace("\ud800", "\\ud800")
            assert sent == {**body, **extra}
            assert len(sent["messages"]) == 1 + len(rest)


def test_the_same_system_message_is_sent_the_same_with_each_task() -> None:
    system = Message.system("You count.")
    first, second = (
        _turn([]).model_copy(update={"messages": [system, Message.user(task)]})
        for task in ("one", "two")
    )
    assert json.loads(_content(first))["messages"][1]["content"] == "one"
    assert json.loads(_content(second))["messages"] == [
        {"role": "system", "content": "You count."},
        {"role": "user", "content": "two"},
    ]
