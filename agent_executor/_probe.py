"""What an OpenAI-compatible server accepts, found by asking: :func:`probe_profile`.

No model name or URL tells what a local server can be sent, so the prober makes a handful of
tiny requests through the provider's own wire code, each with one feature turned on (tools, a
forced or required tool, a strict tool, native output in both dialects, a GBNF grammar that allows
one answer no model gives unasked, a tool result sent at two lengths to see whether ``tool``
messages reach the model). A capability is on in the resulting profile only when its probe saw it
work; ``strict_tools`` is left as the model string's profile has it, since enforcement cannot be
seen from the answers.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from agent_contracts._errors import ProviderError
from agent_contracts._messages import Message, ToolCall, ToolResult
from agent_contracts._profiles import ProviderProfile
from agent_contracts._tools import ResponseFormat, ToolChoice, ToolDefinition
from agent_executor._providers.base import ModelTurn, ModelTurnRequest

__all__ = ["PROBE_REQUESTS", "Probe", "ProbeReport", "ProbeTarget", "probe_profile"]

_TOOL = ToolDefinition(
    name="record_answer",
    description="Record the answer.",
    parameters={
        "type": "object",
        "properties": {"answer": {"type": "string"}},
        "required": ["answer"],
        "additionalProperties": False,
    },
)
_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
_CANARY = "kq7z-grammar"
_CANARY_SCHEMA = {
    "type": "object",
    "properties": {"code": {"const": _CANARY}},
    "required": ["code"],
    "additionalProperties": False,
}
"""The grammar probe's schema: the grammar compiled from it derives one text only."""
_ASK = [
    Message.system("You answer briefly."),
    Message.user("What is the capital of France? Record the answer."),
]
_MAX_TOKENS = 64
_PADDING = " The check found one more problem in the answer." * 12
"""Added to the long tool result: some 100 tokens in any tokenizer."""
_REACHED_TOKENS = 40
"""How many more prompt tokens the long tool result must make for it to have reached the model."""
PROBE_REQUESTS = 9
"""How many requests a probe makes (the tool conversation is sent twice)."""
_UNREACHABLE = frozenset(
    {"provider_connection_error", "provider_timeout", "provider_authentication_error"}
)


@dataclass(frozen=True)
class Probe:
    """One probe's outcome."""

    name: str
    accepted: bool
    honoured: bool
    detail: str = ""


@dataclass(frozen=True)
class ProbeReport:
    """Every probe's outcome and the profile they add up to."""

    model: str
    probes: list[Probe] = field(default_factory=list)
    profile: ProviderProfile = field(default_factory=ProviderProfile)

    def overrides(self) -> dict[str, object]:
        """Return the profile as ``llm.profile`` fields (every field set, so nothing is assumed).

        A field left ``None`` (such as ``reask_frequency_penalty`` where none is sent) is left
        out: ``llm.profile`` reads an absent field and a ``null`` one alike.
        """
        return self.profile.model_dump(exclude_none=True)

    def flags(self, given: ProviderProfile) -> dict[str, object]:
        """Return the fields to pass as ``--profile`` flags next to the model string."""
        fields = self.overrides()
        if not self.profile.native_output:
            fields.pop("native_format")
        return {key: value for key, value in fields.items() if getattr(given, key) != value}

    @property
    def drops_tool_messages(self) -> bool:
        """Whether the server was seen to drop the tool message of a conversation."""
        return any(
            probe.name == "tool_conversation" and probe.accepted and not probe.honoured
            for probe in self.probes
        )


ProbeTarget = Callable[[ProviderProfile], Callable[[ModelTurnRequest], Awaitable[ModelTurn]]]
"""Gives the request function of the probed provider sending by a given profile."""


_Send = Callable[[ModelTurnRequest], Awaitable[ModelTurn]]


async def _send(name: str, send: _Send, request: ModelTurnRequest) -> ModelTurn | Probe:
    """Send one request: the reply, or the refusal as a probe outcome."""
    try:
        return await send(request)
    except ProviderError as exc:
        if exc.kind in _UNREACHABLE:
            raise  # no answer at all says nothing about what the server accepts
        status = f"{exc.status} " if exc.status else ""
        return Probe(name, accepted=False, honoured=False, detail=f"{status}{exc}"[:300])


async def _try(
    name: str,
    send: _Send,
    request: ModelTurnRequest,
    honoured: Callable[[ModelTurn], str | None],
) -> Probe:
    """Send one probe; ``honoured`` returns ``None`` when the reply did as asked, else why not."""
    turn = await _send(name, send, request)
    if isinstance(turn, Probe):
        return turn
    why_not = honoured(turn)
    return Probe(name, accepted=True, honoured=why_not is None, detail=why_not or "")


def _conversation(nonce: str, result: str) -> list[Message]:
    """A conversation with a refused tool call, as a re-prompt sends it."""
    # The nonce starts the prompt so that a server's prompt cache cannot make two conversations'
    # counts differ for another reason than their tool results.
    call = ToolCall(id="call_probe1", name=_TOOL.name, arguments={}, raw_arguments="{}")
    refused = ToolResult(tool_call_id=call.id, name=_TOOL.name, content=result, is_error=True)
    return [
        Message.system(f"Request {nonce}. You answer briefly."),
        _ASK[1],
        Message(role="assistant", content="", tool_calls=[call]),
        Message(role="tool", tool_results=[refused]),
    ]


async def _tool_conversation(
    send: _Send, request: Callable[[list[Message]], ModelTurnRequest]
) -> Probe:
    """Send a conversation with a tool result, then with a longer one, and compare the prompts."""
    # The prompt token count is the one thing a reply says about what the model was shown: a longer
    # tool result that does not lengthen it did not reach the model.
    name = "tool_conversation"
    error = "$: 'answer' is a required property"
    short = await _send(name, send, request(_conversation("A", error)))
    if isinstance(short, Probe):
        return short
    long = await _send(name, send, request(_conversation("B", error + _PADDING)))
    if isinstance(long, Probe):
        return Probe(
            name,
            accepted=True,
            honoured=False,
            detail=f"a longer tool result was refused: {long.detail}",
        )
    before, after = short.usage.input_tokens, long.usage.input_tokens
    if before == after == 0:
        detail = "the server reports no prompt tokens: whether it kept the tool message is unknown"
        return Probe(name, accepted=True, honoured=False, detail=detail)
    if after - before < _REACHED_TOKENS:
        detail = (
            f"the tool message did not reach the model (a tool result {len(_PADDING.split())} "
            f"words longer made the prompt {after - before} tokens longer)"
        )
        return Probe(name, accepted=True, honoured=False, detail=detail)
    return Probe(name, accepted=True, honoured=True)


def _called_tool(turn: ModelTurn) -> str | None:
    if any(call.name == _TOOL.name for call in turn.tool_calls):
        return None
    return f"answered in text instead of calling the tool: {turn.text[:80]!r}"


def _answered_json(turn: ModelTurn) -> str | None:
    try:
        value = json.loads(turn.text)
    except (ValueError, RecursionError):  # a model can send anything
        return f"the reply is not JSON: {turn.text[:80]!r}"
    return None if isinstance(value, dict) and "answer" in value else "the JSON misses 'answer'"


def _any_reply(turn: ModelTurn) -> str | None:
    return None


def _obeyed_grammar(turn: ModelTurn) -> str | None:
    try:
        value = json.loads(turn.text)
    except (ValueError, RecursionError):  # a model can send anything
        value = None
    if value == {"code": _CANARY}:
        return None
    return f"the reply does not follow the grammar (the field was ignored): {turn.text[:80]!r}"


async def probe_profile(
    model: str, target: ProbeTarget, base: ProviderProfile, *, timeout_s: float | None = None
) -> ProbeReport:
    """Probe a server and return what it accepts and the profile that follows."""
    neutral = base.model_copy(
        update={"strict_tools": False, "native_output": True, "takes_grammar": False}
    )
    forced = ToolChoice.tool(_TOOL.name)
    strict = _TOOL.model_copy(update={"strict": True})
    native = ResponseFormat(name="answer", json_schema=_SCHEMA, strict=True)
    canary = ResponseFormat(name="code", json_schema=_CANARY_SCHEMA, strict=True)
    # (name, profile, messages, tools, tool choice, response format, what counts as honoured)
    plan: list[tuple[str, ProviderProfile, list[Message], list[ToolDefinition], ToolChoice,
                     ResponseFormat | None, Callable[[ModelTurn], str | None]]] = [
        ("tools", neutral, _ASK, [_TOOL], ToolChoice.auto(), None, _any_reply),
        ("named_tool_choice", neutral, _ASK, [_TOOL], forced, None, _called_tool),
        ("required_tool_choice", neutral, _ASK, [_TOOL], ToolChoice.required(), None,
         _called_tool),
        ("strict_tools", neutral, _ASK, [strict], forced, None, _called_tool),
        ("json_schema_format", neutral.model_copy(update={"native_format": "json_schema"}),
         _ASK, [], ToolChoice.auto(), native, _answered_json),
        ("json_object_schema_format",
         neutral.model_copy(update={"native_format": "json_object_schema"}),
         _ASK, [], ToolChoice.auto(), native, _answered_json),
        ("grammar_field", neutral.model_copy(update={"takes_grammar": True}),
         _ASK, [], ToolChoice.auto(), canary, _obeyed_grammar),
    ]  # fmt: skip
    probes = []
    for name, profile, messages, tools, choice, response_format, honoured in plan:
        request = ModelTurnRequest(
            messages=messages,
            tools=tools,
            tool_choice=choice,
            response_format=response_format,
            max_tokens=_MAX_TOKENS,
            timeout_s=timeout_s,
        )
        probes.append(await _try(name, target(profile), request, honoured))

    def conversation(messages: list[Message]) -> ModelTurnRequest:
        return ModelTurnRequest(
            messages=messages,
            tools=[_TOOL],
            tool_choice=forced,
            max_tokens=_MAX_TOKENS,
            timeout_s=timeout_s,
        )

    probes.append(await _tool_conversation(target(neutral), conversation))
    return ProbeReport(model=model, probes=probes, profile=_profile(base, probes))


def _profile(base: ProviderProfile, probes: list[Probe]) -> ProviderProfile:
    """Return the profile the probes add up to."""
    # Every capability from what the server did (honoured), never from a 2xx alone.
    got = {probe.name: probe for probe in probes}
    tools = got["tools"].honoured
    json_schema = got["json_schema_format"].honoured  # accepted, and answered in JSON
    json_object = got["json_object_schema_format"].honoured
    # Answered with the one text its grammar allows: the server decodes under the field.
    grammar = got["grammar_field"].honoured
    # A strict tool the server accepts may still not be enforced, and nothing a probe sees
    # tells: strict_tools stays as the model string's profile has it (the probe informs).
    return base.model_copy(
        update={
            "supports_tools": tools,
            "can_force_tool": tools and got["named_tool_choice"].honoured,
            "supports_required_tool_choice": tools and got["required_tool_choice"].honoured,
            "native_output": json_schema or json_object or grammar,
            "native_format": "json_schema"
            if json_schema or not json_object
            else "json_object_schema",
            # A user message reaches the model on every server; a tool message only where a
            # longer tool result was seen to lengthen the prompt.
            "reprompt_as": "tool" if got["tool_conversation"].honoured else "user",
            # json_object with a schema is llama.cpp's dialect, which it turns into a grammar;
            # a json_schema answer does not show how it was made.
            "grammar_output": base.grammar_output or grammar or (json_object and not json_schema),
            "takes_grammar": grammar,
        }
    )
