"""Provider-neutral conversation data: messages, tool calls, tool results, token usage.

The run loop speaks these; each provider translates them to and from its own wire format.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agent_contracts._json_data import JsonData

__all__ = ["Message", "Role", "ToolCall", "ToolResult", "Usage"]

Role = Literal["system", "user", "assistant", "tool"]
"""Who a message is from; ``tool`` messages carry tool results back to the model."""


class Usage(BaseModel):
    """Tokens and requests spent; add two with ``+``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    input_tokens: int = 0
    """Prompt tokens the provider billed."""
    output_tokens: int = 0
    """Completion tokens the provider billed."""
    requests: int = 0
    """Model calls made."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if not (self.input_tokens or self.output_tokens or self.requests):
            return other  # frozen: a sum with nothing is the other itself
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            requests=self.requests + other.requests,
        )


class ToolCall(BaseModel):
    """A tool call the model made.

    ``arguments`` holds the parsed JSON value when the raw text parsed; ``raw_arguments`` always
    holds exactly what the provider sent, so nothing the model wrote is lost.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    """The provider's call id (generated when an OpenAI-compatible server sent none)."""
    name: str
    """The tool name as the run loop knows it (provider-safe aliases already mapped back)."""
    arguments: JsonData = None
    """The parsed arguments, or ``None`` when ``raw_arguments`` is not valid JSON."""
    raw_arguments: str = ""
    """The arguments exactly as the provider sent them (JSON text)."""
    parse_error: str | None = None
    """Why ``raw_arguments`` did not parse, when it did not."""


class ToolResult(BaseModel):
    """The answer to one tool call, sent back to the model."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_call_id: str
    """The id of the call this answers."""
    name: str
    """The tool that was called."""
    content: str
    """What the tool returned, or the error text."""
    is_error: bool = False
    """Whether the call failed (Anthropic ``is_error``; stated in the text for OpenAI)."""


class Message(BaseModel):
    """One message of a conversation.

    A ``tool`` message carries ``tool_results``; an ``assistant`` message may carry ``tool_calls``
    beside its text.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Role
    """Who the message is from."""
    content: str = ""
    """The text of the message."""
    tool_calls: list[ToolCall] = Field(default_factory=list)
    """Tool calls an assistant message made."""
    tool_results: list[ToolResult] = Field(default_factory=list)
    """Tool results a ``tool`` message returns."""
    thinking: list[JsonValue] = Field(default_factory=list)
    """The provider's reasoning blocks that came with an assistant message's tool calls
    (Anthropic's ``thinking``/``redacted_thinking``), kept as sent: a provider that requires
    them back on the next turn gets them from the transcript, so a stored transcript resumes."""

    @classmethod
    def system(cls, text: str) -> Message:
        """Return a system message."""
        return cls(role="system", content=text)

    @classmethod
    def user(cls, text: str) -> Message:
        """Return a user message."""
        return cls(role="user", content=text)
