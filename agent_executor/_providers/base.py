"""The provider interface: one async method, and the neutral data it takes and returns.

A provider turns one :class:`ModelTurnRequest` (messages, tools, a tool choice decided once by the
run loop) into one :class:`ModelTurn` (text, tool calls, a normalised stop reason, usage and the raw
response). Each adapter only translates these to and from its wire format; it never decides
anything the run loop should decide, such as re-prompting.
"""

from __future__ import annotations

from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue, SkipValidation, model_validator

from agent_contracts._json_data import JsonObjectData
from agent_contracts._messages import Message, ToolCall, Usage
from agent_contracts._profiles import ProviderProfile
from agent_contracts._tools import JsonObject, ResponseFormat, ToolChoice, ToolDefinition
from agent_core._tool_names import ToolNameMap

__all__ = [
    "JsonObject",
    "ModelTurn",
    "ModelTurnRequest",
    "Provider",
    "ResponseFormat",
    "StopReason",
    "ToolChoice",
    "ToolDefinition",
    "ToolNameMap",
]


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
    frequency_penalty: float | None = None
    """Penalty on tokens by how often they were already written (the OpenAI wire's
    ``frequency_penalty``); ``None`` sends none. Set on re-asks by the profile's
    ``reask_frequency_penalty``."""
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
        """Return the offered tool called ``name``, or ``None``.

        Returns:
            Its definition, or ``None`` when no offered tool has that name.
        """
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
        """Return this reply as the assistant message to append to the conversation.

        Returns:
            The message: the text, the tool calls and the reasoning blocks to send back.
        """
        return Message(
            role="assistant",
            content=self.text,
            tool_calls=list(self.tool_calls),
            thinking=list(self.thinking),
        )


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
