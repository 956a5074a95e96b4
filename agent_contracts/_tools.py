"""The tools a model is offered, in neutral form: what the run loop decides, not how it is sent.

:class:`ToolDefinition` (a tool and its arguments' schema), :class:`ToolChoice` (which tool the
model must call) and :class:`ResponseFormat` (native structured output). Each provider module
translates them to its wire format.
"""

from __future__ import annotations

import functools
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, model_validator

__all__ = ["JsonObject", "ResponseFormat", "ToolChoice", "ToolDefinition"]

JsonObject = dict[str, JsonValue]
"""A JSON object, such as a JSON Schema or a raw provider response."""


def _empty_object_schema() -> JsonObject:
    return {"type": "object", "properties": {}}


class ToolDefinition(BaseModel):
    """A tool offered to the model, in neutral form.

    ``parameters`` is sent exactly as given, so the run loop can pass a schema already compiled to
    a provider's strict dialect.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    """The tool's name as the run loop knows it (``fs:read`` is fine: adapters alias it)."""
    description: str = ""
    """What the tool does, for the model."""
    parameters: JsonObject = Field(default_factory=lambda: _empty_object_schema())
    """The JSON Schema of the tool's arguments (an object schema)."""
    strict: bool = False
    """Ask the provider to enforce ``parameters`` exactly (OpenAI and Anthropic ``strict``)."""


class ToolChoice(BaseModel):
    """Which tool the model must call, decided once, provider-neutrally.

    Build one with :meth:`auto`, :meth:`required`, :meth:`none` or :meth:`tool` (choices are
    frozen: those give the same object for the same choice).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Literal["auto", "required", "none", "tool"] = "auto"
    """``auto``: the model decides; ``required``: any tool; ``none``: no tool; ``tool``: one."""
    tool_name: str | None = None
    """The tool to call when ``mode`` is ``tool``."""

    @model_validator(mode="after")
    def _name_matches_mode(self) -> ToolChoice:
        if (self.mode == "tool") != (self.tool_name is not None):
            raise ValueError("tool_name is required with mode 'tool' and only with it")
        return self

    @classmethod
    def auto(cls) -> ToolChoice:
        """Return the choice that lets the model decide whether to call a tool."""
        return _choice(cls, "auto", None)

    @classmethod
    def required(cls) -> ToolChoice:
        """Return the choice that makes the model call some tool."""
        return _choice(cls, "required", None)

    @classmethod
    def none(cls) -> ToolChoice:
        """Return the choice that forbids tool calls."""
        return _choice(cls, "none", None)

    @classmethod
    def tool(cls, name: str) -> ToolChoice:
        """Return the choice that forces a call to the tool called ``name``."""
        if not isinstance(name, str):  # the validation error names the field
            return cls(mode="tool", tool_name=name)
        return _choice(cls, "tool", name)

    @property
    def forces_tool(self) -> bool:
        """Whether this choice forces a tool call (``required`` or a named tool)."""
        return self.mode in ("required", "tool")


@functools.lru_cache(maxsize=256)
def _choice(kind: type[ToolChoice], mode: str, name: str | None) -> ToolChoice:
    """Return the (frozen) choice ``kind(mode=mode, tool_name=name)``, built once."""
    fields = {"mode": mode} if name is None else {"mode": mode, "tool_name": name}
    return kind.model_validate(fields)


class ResponseFormat(BaseModel):
    """Native structured output: the reply text must be JSON matching ``json_schema``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = "result"
    """A name for the schema (OpenAI requires one)."""
    json_schema: JsonObject
    """The JSON Schema the reply must match."""
    strict: bool = True
    """Ask the provider to enforce the schema exactly."""
