"""What a provider can be sent: :class:`ProviderProfile`, decided once, never from a name.

Each provider hands over a small profile; the run loop and the output contract ask it, and only
the provider modules spell wire format. The model string picks a provider and so its profile
(``openai:`` OpenAI's, ``ollama:``/``vllm:``/``llamacpp:``/``compatible:`` an OpenAI-compatible
server's conservative one); an agent's ``llm.profile`` and the command line's ``--profile
KEY=VALUE`` override single fields (:func:`apply_profile_overrides`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agent_contracts._errors import ConfigError
from agent_contracts._suggest import did_you_mean

__all__ = [
    "NativeFormat",
    "ProfileOverride",
    "ProfileOverrides",
    "ProviderProfile",
    "RepromptRole",
    "ToolDialect",
    "apply_profile_overrides",
]

ToolDialect = Literal["neutral", "openai", "anthropic"]
"""The JSON Schema rules a tool's parameters are compiled for: OpenAI's function tools,
Anthropic's tools, or neutral (the schema as written, for OpenAI-compatible servers)."""


NativeFormat = Literal["json_schema", "json_object_schema"]
"""How native structured output is asked for on the OpenAI wire: ``json_schema`` (OpenAI's
``response_format``), or ``json_object_schema`` (``{"type": "json_object", "schema": ...}``,
the dialect of llama.cpp's servers, which constrain decoding with a grammar made from it)."""


RepromptRole = Literal["tool", "user"]
"""Where the errors of a rejected tool call go: ``tool``, in the call's tool result; ``user``,
in a user message after a short tool result, for a server whose chat template drops ``tool``
messages before the model sees them (``agentshape probe`` finds such a server)."""


class ProviderProfile(BaseModel):
    """What one provider accepts, as far as the run loop and the contract need to know."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tool_dialect: ToolDialect = "neutral"
    """The rules ``submit_result``'s parameters are compiled for."""
    strict_tools: bool = False
    """Send tools strict (the provider constrains arguments to the schema) when the schema
    allows it without narrowing what is accepted."""
    supports_tools: bool = True
    """The provider takes tools at all; without them the output is asked for in the prompt."""
    can_force_tool: bool = True
    """A forced tool choice is honoured; when not, a written reminder stands in for it."""
    supports_required_tool_choice: bool = True
    """``tool_choice: required`` (any tool) is accepted; when not, ``auto`` is sent with the
    reminder, and ``submit_result`` is still forced by name on the last step."""
    native_output: bool = False
    """The provider's native structured output (a response schema) can be asked for."""
    native_format: NativeFormat = "json_schema"
    """How native structured output is spelled on the OpenAI wire (see :data:`NativeFormat`)."""
    grammar_output: bool = False
    """Native output is enforced while decoding, by a grammar the server makes of the schema
    (llama.cpp's servers): an agent then defaults to ``native`` mode, where its input tools
    run first and the answer is decoded under the grammar, so that the model cannot produce
    anything but JSON of the schema's shape."""
    reprompt_as: RepromptRole = "tool"
    """How a rejected tool call's errors reach the model (see :data:`RepromptRole`)."""
    stop_sequences: bool = False
    """Stop sequences are accepted (``stop`` on the OpenAI wire, ``stop_sequences`` on
    Anthropic's): prompted mode then asks the model to close its JSON with a marker that ends
    the reply, so that the answer costs no tokens after the JSON."""
    takes_grammar: bool = False
    """The server takes a GBNF grammar as the request's ``grammar`` field (llama.cpp's
    ``llama-server`` and llama-cpp-python's server): native output then sends agentshape's
    own grammar of the schema (:func:`agent_core._gbnf_grammar.schema_to_gbnf`, which carries
    integer ranges and more than the server's converter) instead of the schema."""
    reask_frequency_penalty: float | None = Field(default=None, ge=-2.0, le=2.0)
    """The ``frequency_penalty`` a re-ask (a call after a failed attempt) is sampled with, on
    the OpenAI wire; ``None`` sends none. At temperature 0 a small model asked again often
    writes the same reply again, a loop included: a penalty on repeated tokens lets the
    second try differ. The first try is sampled as the agent says."""


ProfileOverrides = Mapping[str, object]
"""Profile fields to override, by name: ``{"strict_tools": False}``."""


class ProfileOverride(BaseModel):
    """An agent's ``llm.profile``: each :class:`ProviderProfile` field it sets is overridden."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    tool_dialect: ToolDialect | None = None
    strict_tools: bool | None = None
    supports_tools: bool | None = None
    can_force_tool: bool | None = None
    supports_required_tool_choice: bool | None = None
    native_output: bool | None = None
    native_format: NativeFormat | None = None
    grammar_output: bool | None = None
    reprompt_as: RepromptRole | None = None
    stop_sequences: bool | None = None
    takes_grammar: bool | None = None
    reask_frequency_penalty: float | None = None

    def fields(self) -> dict[str, object]:
        """Return the overridden fields only."""
        return self.model_dump(exclude_none=True)


def apply_profile_overrides(
    profile: ProviderProfile, overrides: ProfileOverrides, *, source: str = "profile"
) -> ProviderProfile:
    """Return ``profile`` with the given fields replaced.

    Args:
        profile: The provider's own profile.
        overrides: Field values by name; booleans may be given as ``true``/``false`` text.
        source: Where the overrides came from, for messages (``agent 'x' llm.profile``...).

    Returns:
        The new profile (``profile`` itself when there is nothing to override).

    Raises:
        ConfigError: A field is unknown (with the nearest field name) or a value does not fit.
    """
    if not overrides:
        return profile
    fields = list(ProviderProfile.model_fields)
    for key in overrides:
        if key not in ProviderProfile.model_fields:
            more = did_you_mean(key, fields)
            raise ConfigError(
                f"{source}: unknown profile field {key!r}{more}; fields: {', '.join(fields)}"
            )
    try:
        return ProviderProfile.model_validate({**profile.model_dump(), **dict(overrides)})
    except ValidationError as exc:
        problems = "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"{source}: {problems}") from exc
