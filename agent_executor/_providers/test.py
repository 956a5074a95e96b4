"""An offline model for tests and demos: no key, no network, deterministic for a seed.

:class:`TestModel` answers a forced (or required) tool call with arguments generated from the
tool's JSON Schema, checked with ``jsonschema_rs`` before they are sent. It can be told to fail
first (``fail_first=["invalid_arguments", "text"]``): one scripted failure a turn, then valid
answers, so a run loop's re-prompting can be exercised without a real model.

Generation covers: object (properties, ``required``, ``additionalProperties``, min/max
properties), array (``items``, ``prefixItems``/tuple ``items``, min/max items, ``uniqueItems``,
``contains``), string (min/max length, ``format`` date-time/date/time/email/uri/uuid/hostname/
ipv4/ipv6, ``pattern`` for simple regexes: literals, classes, groups, alternation, quantifiers),
number and integer (inclusive and exclusive bounds, ``multipleOf``), boolean, null, ``enum``,
``const``, type lists, local ``$ref`` with ``definitions``/``$defs`` (recursion is cut short),
``anyOf``/``oneOf`` (first branch, others tried when it fails validation) and ``allOf`` (merged).

Limits: ``not``, ``if``/``then``/``else``, ``dependencies``, ``patternProperties``,
``propertyNames``, regex lookarounds and back-references, and remote ``$ref`` are not generated for.
When no candidate validates, the first one is sent anyway (and a warning logged): the run loop's
validation then reports what is wrong, exactly as it would for a real model.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from collections import deque
from collections.abc import Sequence
from typing import Final, Literal, get_args

from pydantic import JsonValue

from agent_contracts._errors import ConfigError
from agent_contracts._messages import ToolCall, Usage
from agent_core._schema_sample import generate_value, invalid_value
from agent_executor._providers.base import ModelTurn, ModelTurnRequest, ToolDefinition
from agent_executor._providers.profiles import TEST_PROFILE
from agent_executor._providers.streaming import DeltaSink, TurnDelta

__all__ = ["FAILURE_MODES", "STREAM_PIECE", "FailureMode", "TestModel", "generate_value"]

logger = logging.getLogger(__name__)

FailureMode = Literal[
    "invalid_arguments",
    "text",
    "json_text",
    "no_tool_call",
    "unparseable_json",
    "wrong_tool",
    "max_tokens",
]
"""A scripted failure, consumed one a turn.

``invalid_arguments``: the tool is called with JSON that breaks its schema; ``text``: a prose
reply with no tool call and no JSON; ``json_text``: a valid answer written as JSON in the text
instead of a tool call; ``no_tool_call``: an empty reply; ``unparseable_json``: the tool is called
with arguments that are not JSON; ``wrong_tool``: a tool that was not offered is called;
``max_tokens``: the arguments are cut off and the stop reason is ``max_tokens``.
"""

FAILURE_MODES: Final[tuple[str, ...]] = get_args(FailureMode)
"""Every :data:`FailureMode`."""

STREAM_PIECE: Final = 8
"""Characters in each piece the test model streams its reply in."""

WRONG_TOOL_NAME: Final = "not_an_offered_tool"
"""The tool name a ``wrong_tool`` failure calls."""


class TestModel:
    """A deterministic offline provider (``name == "test"``).

    A turn calls a tool when one is forced (``tool_choice`` names it), or when tools are offered
    and either ``output_tool`` is among them or a tool is required; it also calls each of
    ``call_tools`` once, the first time it is offered. Otherwise it answers text: ``text``, or JSON
    generated from ``response_format`` when native structured output is asked for.
    """

    __test__ = False  # not a pytest test class
    supports_tools = True
    """The test model takes tools."""
    profile = TEST_PROFILE
    """Neutral tools; every output mode is answered."""

    def __init__(
        self,
        *,
        seed: int = 0,
        fail_first: Sequence[str] = (),
        text: str = "This is the test model's answer.",
        call_tools: Sequence[str] = (),
        output_tool: str = "submit_result",
        model: str = "test",
    ) -> None:
        """Create the model.

        Args:
            seed: Makes the generated values differ; the same seed and conversation give the same
                answer.
            fail_first: Scripted failures (see :data:`FailureMode`), used one a turn before the
                model answers validly.
            text: The reply when no tool is called.
            call_tools: Input tools to call once each, when first offered, before answering.
            output_tool: The tool that carries the answer, called when offered.
            model: The model name reported in turns.

        Raises:
            ConfigError: A failure mode is not one of :data:`FAILURE_MODES`.
        """
        unknown = [mode for mode in fail_first if mode not in FAILURE_MODES]
        if unknown:
            raise ConfigError(
                f"test: unknown failure mode(s) {unknown}; known: {', '.join(FAILURE_MODES)}"
            )
        self.name = "test"
        self.model = model
        self.seed = seed
        self.text = text
        self.call_tools = tuple(call_tools)
        self.output_tool = output_tool
        self._failures: deque[str] = deque(fail_first)

    @property
    def pending_failures(self) -> list[str]:
        """The scripted failures not used yet."""
        return list(self._failures)

    async def request(self, turn: ModelTurnRequest) -> ModelTurn:
        """Answer one turn offline.

        Args:
            turn: The conversation, tools and settings for this call.

        Returns:
            A valid answer, or the next scripted failure.
        """
        rng = random.Random(f"{self.seed}:{len(turn.messages)}")
        failure = self._failures.popleft() if self._failures else None
        targets = self._targets(turn)
        if failure is None:
            result = self._valid(turn, targets, rng)
        else:
            result = self._failure(failure, turn, targets[0] if targets else None, rng)
        words = sum(len(message.content.split()) for message in turn.messages)
        produced = len(result.text) + sum(len(call.raw_arguments) for call in result.tool_calls)
        return result.model_copy(
            update={
                "provider": self.name,
                "model": self.model,
                "usage": Usage(input_tokens=words, output_tokens=produced // 4 + 1, requests=1),
                "raw": {"test_model": {"seed": self.seed, "failure": failure}},
            }
        )

    async def stream(self, turn: ModelTurnRequest, on_delta: DeltaSink) -> ModelTurn:
        """Answer one turn offline, handing the reply over in pieces of :data:`STREAM_PIECE`.

        The loop runs other tasks between pieces, as it would while a server's stream arrives.

        Args:
            turn: The conversation, tools and settings for this call.
            on_delta: Takes each piece: the text's, then each tool call's arguments.

        Returns:
            The same reply :meth:`request` gives.
        """
        reply = await self.request(turn)
        for start in range(0, len(reply.text), STREAM_PIECE):
            on_delta(TurnDelta(text=reply.text[start : start + STREAM_PIECE]))
            await asyncio.sleep(0)
        for index, call in enumerate(reply.tool_calls):
            raw = call.raw_arguments
            for start in range(0, max(len(raw), 1), STREAM_PIECE):
                first = start == 0
                on_delta(
                    TurnDelta(
                        call_index=index,
                        call_id=call.id if first else None,
                        name=call.name if first else None,
                        arguments=raw[start : start + STREAM_PIECE],
                    )
                )
                await asyncio.sleep(0)
        return reply

    def _targets(self, turn: ModelTurnRequest) -> list[ToolDefinition]:
        """Return the tools this turn calls (empty for a text answer)."""
        choice = turn.tool_choice
        if not turn.tools or choice.mode == "none":
            return []
        if choice.mode == "tool" and choice.tool_name is not None:
            forced = turn.tool(choice.tool_name)
            return [forced] if forced is not None else []
        called = {call.name for message in turn.messages for call in message.tool_calls}
        pending = [
            tool for name in self.call_tools if name not in called and (tool := turn.tool(name))
        ]
        if pending:
            return pending
        output = turn.tool(self.output_tool)
        if output is not None:
            return [output]
        return [turn.tools[0]] if choice.mode == "required" else []

    def _valid(
        self, turn: ModelTurnRequest, targets: list[ToolDefinition], rng: random.Random
    ) -> ModelTurn:
        if targets:
            calls = [
                _call(turn, index, tool.name, generate_value(tool.parameters, rng=rng))
                for index, tool in enumerate(targets)
            ]
            return ModelTurn(tool_calls=calls, stop_reason="tool_use")
        schema = _answer_schema(turn)
        if schema is not None:
            return ModelTurn(text=json.dumps(generate_value(schema, rng=rng)))
        return ModelTurn(text=self.text)

    def _failure(
        self,
        failure: str,
        turn: ModelTurnRequest,
        target: ToolDefinition | None,
        rng: random.Random,
    ) -> ModelTurn:
        schema = target.parameters if target is not None else _answer_schema(turn)
        if failure == "text":
            return ModelTurn(text="I looked into it, and I'd rather explain it in words.")
        if failure == "no_tool_call":
            return ModelTurn()
        valid = generate_value(schema, rng=rng) if schema is not None else {}
        if failure == "json_text":
            return ModelTurn(text=f"Here is the result:\n```json\n{json.dumps(valid)}\n```")
        if failure == "wrong_tool":
            return ModelTurn(
                tool_calls=[_call(turn, 0, WRONG_TOOL_NAME, valid)], stop_reason="tool_use"
            )
        if failure == "invalid_arguments":
            invalid = invalid_value(schema, valid) if schema is not None else "not valid"
            if target is None:
                return ModelTurn(text=json.dumps(invalid))
            return ModelTurn(
                tool_calls=[_call(turn, 0, target.name, invalid)], stop_reason="tool_use"
            )
        broken = json.dumps(valid)[: max(1, len(json.dumps(valid)) // 2)]
        if broken and broken[0] not in "{[":
            broken = '{"' + broken
        stop = "max_tokens" if failure == "max_tokens" else "tool_use"
        if target is None:
            return ModelTurn(text=broken, stop_reason=stop if stop == "max_tokens" else "end_turn")
        try:
            json.loads(broken)
            error = "the JSON value is cut off"
        except ValueError as exc:
            error = str(exc)
        call = ToolCall(
            id=_call_id(turn, 0), name=target.name, raw_arguments=broken, parse_error=error
        )
        return ModelTurn(tool_calls=[call], stop_reason=stop)


_PROMPTED_SCHEMA = re.compile(r"## Required Output Format.*?```json\n(.*?)\n```", re.DOTALL)


def _answer_schema(turn: ModelTurnRequest) -> JsonValue | None:
    """Return the schema a text answer must match."""
    if turn.response_format is not None:
        return turn.response_format.json_schema
    if turn.answer_schema is not None:
        return turn.answer_schema
    for message in turn.messages:
        if message.role == "system":
            found = _PROMPTED_SCHEMA.findall(message.content)
            if found:
                try:
                    schema: JsonValue = json.loads(found[-1])
                except ValueError:
                    return None
                return schema
    return None


def _call_id(turn: ModelTurnRequest, index: int) -> str:
    return f"call_test_{len(turn.messages)}_{index}"


def _call(turn: ModelTurnRequest, index: int, name: str, arguments: JsonValue) -> ToolCall:
    return ToolCall(
        id=_call_id(turn, index),
        name=name,
        arguments=arguments,
        raw_arguments=json.dumps(arguments),
    )
