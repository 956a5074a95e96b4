"""The provider interface: one async method, and the neutral data it takes and returns.

A provider turns one :class:`ModelTurnRequest` (messages, tools, a tool choice decided once by the
run loop) into one :class:`ModelTurn` (text, tool calls, a normalised stop reason, usage and the raw
response). Each adapter only translates these to and from its wire format; it never decides
anything the run loop should decide, such as re-prompting.
"""

from __future__ import annotations

import errno
import functools
import json
import re
from collections.abc import Mapping
from typing import Any, Literal, Protocol, cast, runtime_checkable

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, JsonValue, SkipValidation, model_validator

from agent_contracts.json_data import PARSED_JSON, JsonObjectData
from agent_contracts.messages import Message, ToolCall, Usage
from agent_contracts.profiles import ProviderProfile
from agent_contracts.tools import JsonObject, ResponseFormat, ToolChoice, ToolDefinition
from agent_core.json_text import MAX_JSON_DEPTH, read_checked_json, value_problem
from agent_core.tool_names import ToolNameMap
from agent_executor.redaction import redact, redact_text

__all__ = [
    "MAX_ARGUMENT_CHARS",
    "JsonObject",
    "ModelTurn",
    "ModelTurnRequest",
    "Provider",
    "ResponseFormat",
    "StopReason",
    "ToolChoice",
    "ToolDefinition",
    "ToolNameMap",
    "arguments_problem",
    "call_usage",
    "connection_message",
    "echo_text",
    "error_body",
    "error_kind_for_status",
    "error_text",
    "model_arguments",
    "parsed_turn",
    "profile_of",
    "read_json",
    "retry_after_s",
    "tool_names_for",
    "with_profile",
]


MAX_ARGUMENT_CHARS = 8 * 1024 * 1024
"""Longest tool-call arguments text read from a model (8 Mi characters); longer is refused."""

StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal", "other"]
"""Why the model stopped, normalised across providers.

``end_turn``: it finished (OpenAI ``stop``; Anthropic ``end_turn``/``stop_sequence``);
``tool_use``: it called tools; ``max_tokens``: it was cut off; ``refusal``: it refused or a
content filter stopped it; ``other``: anything else (``pause_turn``, a missing reason...).
"""


class ModelTurnRequest(BaseModel):
    """Everything a provider needs for one model call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    messages: list[Message]
    """The conversation so far; system messages first."""
    tools: list[ToolDefinition] = Field(default_factory=list)
    """The tools offered to the model."""
    tool_choice: ToolChoice = Field(default_factory=ToolChoice.auto)
    """Which tool the model must call; ignored when no tools are offered."""
    parallel_tool_calls: bool | None = None
    """Allow several tool calls in one turn; ``None`` leaves the provider's default."""
    max_tokens: int | None = None
    """Cap on the reply's tokens; ``None`` uses the provider's default."""
    temperature: float | None = None
    """Sampling temperature; ``None`` uses the provider's default."""
    response_format: ResponseFormat | None = None
    """Ask for native structured output (JSON text matching a schema)."""
    stop: list[str] = Field(default_factory=list)
    """Stop sequences: the reply ends before the first one the model writes (sent only to a
    provider whose profile has ``stop_sequences``)."""
    timeout_s: float | None = None
    """Per-request timeout in seconds; ``None`` uses the provider's default."""
    # Not validated again: it is the run's contract schema, checked when the contract was built.
    answer_schema: SkipValidation[dict[str, JsonValue] | bool | None] = Field(
        default=None, exclude=True
    )
    """The schema a text answer is judged against (prompted and native modes). No provider
    sends it (the prompt gives the model an outline of it): test doubles answer to it."""

    @model_validator(mode="after")
    def _choice_fits_tools(self) -> ModelTurnRequest:
        names = [tool.name for tool in self.tools]
        if len(set(names)) != len(names):
            raise ValueError(f"tool names must be unique, got {names}")
        choice = self.tool_choice
        if choice.mode == "tool" and choice.tool_name not in names:
            raise ValueError(f"tool_choice names {choice.tool_name!r}, which is not among {names}")
        if choice.mode == "required" and not names:
            raise ValueError("tool_choice 'required' needs at least one tool")
        return self

    def tool(self, name: str) -> ToolDefinition | None:
        """Return the offered tool called ``name``, or ``None``."""
        return next((tool for tool in self.tools if tool.name == name), None)


class ModelTurn(BaseModel):
    """One model reply, normalised across providers."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: str = ""
    """The provider's name (``openai``, ``anthropic``, ``test``...)."""
    model: str = ""
    """The model that answered (as requested)."""
    text: str = ""
    """The reply's text, exactly as sent (may hold JSON when a server ignored ``tool_choice``)."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """The tool calls made, names mapped back to the run loop's names."""
    stop_reason: StopReason = "end_turn"
    """Why the model stopped, normalised."""
    raw_stop_reason: str | None = None
    """The provider's own stop reason (``finish_reason``/``stop_reason``), when it sent one."""
    usage: Usage = Field(default_factory=lambda: Usage(requests=1))
    """Tokens spent by this call (``requests`` is 1)."""
    raw: JsonObjectData = Field(default_factory=dict)
    """The raw response body as JSON (taken as parsed, unwalked, under ``PARSED_JSON``)."""
    latency_ms: float = 0.0
    """Wall time of the call, SDK retries included."""
    thinking: list[JsonValue] = Field(default_factory=list)
    """Reasoning blocks to send back with this turn's tool calls (see ``Message.thinking``)."""
    tool_choice_downgraded: bool = False
    """A forced tool choice was sent as ``auto`` (Anthropic extended thinking cannot force)."""
    batch_id: str | None = None
    """The provider batch that answered this call, when it went through one."""

    def to_message(self) -> Message:
        """Return this reply as the assistant message to append to the conversation."""
        return Message(
            role="assistant",
            content=self.text,
            tool_calls=list(self.tool_calls),
            thinking=list(self.thinking),
        )


@functools.lru_cache(maxsize=1024)
def call_usage(input_tokens: int = 0, output_tokens: int = 0) -> Usage:
    """Return the usage of one model call; equal counts share one (frozen) ``Usage``.

    Args:
        input_tokens: The prompt tokens billed.
        output_tokens: The completion tokens billed.
    """
    return Usage(input_tokens=input_tokens, output_tokens=output_tokens, requests=1)


def parsed_turn(**fields: Any) -> ModelTurn:
    """Return a ``ModelTurn`` whose ``raw`` body (and tool-call arguments) a JSON parser read.

    The body is taken as it is, without ``JsonValue``'s walk and copy; the other fields are
    checked as usual.

    Args:
        fields: The turn's fields, as for ``ModelTurn(...)``.

    Raises:
        pydantic.ValidationError: A field is not of its type.
    """
    return ModelTurn.model_validate(fields, context=PARSED_JSON)


@runtime_checkable
class Provider(Protocol):
    """A model provider: the whole interface is :meth:`request`."""

    name: str
    """The provider's name: ``openai``, ``anthropic``, ``ollama``, ``test``, ``function``..."""
    model: str
    """The model it calls."""
    supports_tools: bool
    """Whether it can be offered tools."""
    profile: ProviderProfile
    """What it can be sent (tool dialect, strict tools, forcing, native output); the run loop
    and the contract decide from this, never from ``name``."""

    async def request(self, turn: ModelTurnRequest) -> ModelTurn:
        """Make one model call.

        Args:
            turn: The conversation, tools and settings for this call.

        Returns:
            The normalised reply.

        Raises:
            ProviderError: The provider failed after the SDK's bounded retries.
        """
        ...


def profile_of(provider: Provider) -> ProviderProfile:
    """Return a provider's profile; one written before profiles existed gets a neutral one.

    Args:
        provider: The provider.

    Returns:
        ``provider.profile``, or a neutral profile; a provider whose ``supports_tools`` is
        false never gets a profile that offers it tools.
    """
    tools = bool(getattr(provider, "supports_tools", True))
    profile = getattr(provider, "profile", None)
    if not isinstance(profile, ProviderProfile):
        return ProviderProfile(supports_tools=tools)
    return (
        profile
        if tools or not profile.supports_tools
        else profile.model_copy(update={"supports_tools": False})
    )


def with_profile(provider: Provider, profile: ProviderProfile) -> Provider:
    """Return ``provider``, or a copy of it that spells its requests by ``profile``.

    A provider spells the wire by its own profile (how native output is asked for, whether a
    grammar is sent); overrides (``llm.profile``, ``--profile``) reach the wire through a copy
    made by the provider's ``variant(profile=...)``, where it has one.

    Args:
        provider: The provider.
        profile: The profile after overrides.

    Returns:
        ``provider`` when its profile is ``profile`` or it cannot be copied; else the copy.
    """
    variant = getattr(provider, "variant", None)
    if profile == profile_of(provider) or not callable(variant):
        return provider
    return cast("Provider", variant(profile=profile))


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_DURATION_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Return the seconds a rate-limited reply asks the caller to wait, when it says.

    Read from ``retry-after-ms``, ``retry-after`` (seconds), else the longest of OpenAI's
    ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens`` (durations such as ``1s``,
    ``6m0s``, ``20ms``).

    Args:
        headers: The reply's headers (case-insensitive, as httpx gives them).

    Returns:
        The seconds (0 or more), or ``None`` when no header says.
    """
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return max(0.0, float(headers.get(name, "")) * scale)
        except ValueError:
            continue
    resets = [
        sum(float(amount) * _DURATION_S[unit] for amount, unit in _DURATION.findall(value))
        for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
        if (value := headers.get(name))
    ]
    return max(resets) if resets else None


def error_kind_for_status(status: int) -> str:
    """Return the ``ProviderError.kind`` for an HTTP error status.

    Args:
        status: The HTTP status the provider answered with.

    Returns:
        ``provider_rate_limited`` (429), ``provider_authentication_error`` (401, 403),
        ``provider_bad_request`` (400, 404, 413, 422, 431), ``provider_timeout`` (408),
        ``provider_server_error`` (5xx), else ``provider_error``.
    """
    if status == 429:
        return "provider_rate_limited"
    if status in (401, 403):
        return "provider_authentication_error"
    if status in (400, 404, 413, 422, 431):
        return "provider_bad_request"
    if status == 408:
        return "provider_timeout"
    if status >= 500:
        return "provider_server_error"
    return "provider_error"


def error_body(body: object) -> JsonValue:
    """Return an SDK error's response body as JSON (its text when it is not JSON-shaped), redacted.

    A server may echo the key it refused (a 401's text); every secret is replaced (see
    :mod:`agent_executor.redaction`) before the body reaches a result, a log or the screen.

    Args:
        body: The decoded body an SDK error carries (never headers).

    Returns:
        The body as a JSON value.
    """
    if body is None or isinstance(body, int | float | bool):
        return body
    if isinstance(body, str):
        return redact_text(body)
    try:
        value: JsonValue = json.loads(json.dumps(body))
    except (TypeError, ValueError):
        return redact_text(str(body))
    return redact(value)


def read_json(text: str | bytes) -> Any:  # typed as json.loads is
    """Parse JSON text as ``json.loads`` does, about twice as fast for a large reply.

    Pydantic's parser reads it first; text it refuses (an escaped lone surrogate, which
    Python's parser accepts) is read by ``json.loads``, which also gives the error for text
    that is not JSON.

    Args:
        text: The JSON text.

    Returns:
        The value.

    Raises:
        ValueError: The text is not JSON (``json.JSONDecodeError``).
    """
    try:
        return pydantic_core.from_json(text)
    except ValueError:
        return json.loads(text)


def error_text(error: BaseException | str) -> str:
    """Return an SDK error's message with every secret redacted (a 401 may quote the key).

    Args:
        error: The SDK's exception, or its message.

    Returns:
        The redacted message.
    """
    return redact_text(error if isinstance(error, str) else str(error))


def tool_names_for(turn: ModelTurnRequest) -> ToolNameMap:
    """Return the wire names for every tool a request mentions: offered ones, then history's.

    Args:
        turn: The request.
    """
    names = [tool.name for tool in turn.tools]
    for message in turn.messages:
        if message.tool_calls:
            names.extend([call.name for call in message.tool_calls])
        if message.tool_results:
            names.extend([result.name for result in message.tool_results])
    return _name_map(tuple(dict.fromkeys(names)))


@functools.lru_cache(maxsize=256)
def _name_map(names: tuple[str, ...]) -> ToolNameMap:
    """Return the map for ``names``, made once per set of names (a map never changes)."""
    return ToolNameMap(names)


def model_arguments(raw: str) -> tuple[JsonValue, str | None]:
    """Parse a model's tool-call arguments text, within the bounds any JSON input gets.

    Whatever a model sends must become a contract failure the run loop re-prompts, never an
    error of ours: text that is not JSON, longer than :data:`MAX_ARGUMENT_CHARS`, nests past
    ``MAX_JSON_DEPTH``, holds ``NaN`` or an integer too long to read gives ``(None, why)``.
    ``why`` is the reason only (the re-prompt says what it is about), as ``parse_error`` holds.

    Args:
        raw: The arguments as the provider sent them (JSON text).

    Returns:
        ``(value, None)``, or ``(None, why)`` when the text cannot be used.
    """
    if len(raw) > MAX_ARGUMENT_CHARS:
        return None, f"{len(raw):,} characters is over the {MAX_ARGUMENT_CHARS:,}-character cap"
    checked = read_checked_json(raw)
    if checked is not None:
        return checked[0], None
    try:
        value: JsonValue = read_json(raw)
    except RecursionError:
        return None, f"it nests deeper than {MAX_JSON_DEPTH} levels"
    except ValueError as exc:
        return None, str(exc)
    problem = arguments_problem(value)
    return (None, problem) if problem else (value, None)


def arguments_problem(value: object) -> str | None:
    """Say why a model's already parsed tool-call arguments cannot be used, or ``None``.

    Args:
        value: The arguments as the SDK parsed them (an Anthropic ``input``).
    """
    return value_problem(value)


def echo_text(arguments: object) -> str:
    """Return already parsed tool-call arguments as JSON text, whatever they hold.

    Used for ``raw_arguments`` when a provider sent the arguments as a value: nesting too deep
    to write, or ``NaN``, still give text (the arguments are refused, the text is kept).

    Args:
        arguments: The arguments as the SDK parsed them.
    """
    try:
        return json.dumps(arguments, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):
        return repr(arguments)[:10_000]


def connection_message(exc: BaseException) -> str:
    """Return the message of an SDK connection error, naming a local cause the SDK hides.

    Running out of file descriptors makes every new connection fail; the SDK reports only
    "Connection error.", which sends the user looking at the provider. The cause is found in
    the exception chain and said instead.

    Args:
        exc: The SDK's connection error.
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and cause.errno in (errno.EMFILE, errno.ENFILE):
            return (
                f"{exc}: this process is out of file descriptors ({cause.strerror}), so no "
                "connection could be opened; raise the limit (ulimit -n) or run fewer at once"
            )
        cause = cause.__cause__ or cause.__context__
    return str(exc)
