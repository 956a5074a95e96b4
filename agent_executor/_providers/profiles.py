"""Provider profiles: the one each kind of provider starts from, and a provider's own.

The model string's prefix picks a starting profile; :func:`profile_of` reads a provider's,
:func:`with_profile` gives a provider that spells its requests by another.

Overrides (an agent's ``llm.profile``, the command line's ``--profile``) are applied on top by
:func:`agent_contracts._profiles.apply_profile_overrides`.
"""

from __future__ import annotations

from typing import cast

from agent_contracts._profiles import ProviderProfile
from agent_executor._providers.base import Provider

__all__ = [
    "ANTHROPIC_PROFILE",
    "COMPATIBLE_PROFILE",
    "LLAMACPP_PROFILE",
    "OPENAI_PROFILE",
    "TEST_PROFILE",
    "profile_of",
    "with_profile",
]

OPENAI_PROFILE = ProviderProfile(
    tool_dialect="openai",
    strict_tools=True,
    can_force_tool=True,
    supports_required_tool_choice=True,
    native_output=True,
)
"""OpenAI itself (``openai:``): strict function tools, ``json_schema`` response formats; no
stop sequences (its reasoning models refuse ``stop``)."""

ANTHROPIC_PROFILE = ProviderProfile(
    tool_dialect="anthropic",
    strict_tools=True,
    can_force_tool=True,
    supports_required_tool_choice=True,
    native_output=True,
    stop_sequences=True,
)
"""Anthropic Messages (``anthropic:``); with extended thinking, ``can_force_tool`` is off."""

COMPATIBLE_PROFILE = ProviderProfile(
    tool_dialect="neutral",
    strict_tools=False,
    can_force_tool=True,
    supports_required_tool_choice=False,
    native_output=False,
    stop_sequences=True,
)
"""An OpenAI-compatible server (``ollama:``, ``vllm:``, ``compatible:``): the schema as
written, no strict mode, a tool forced by name only (several servers refuse ``required``), no
native structured output unless overridden; ``stop`` is taken (llama.cpp's servers, Ollama and
vLLM all read it)."""

LLAMACPP_PROFILE = COMPATIBLE_PROFILE.model_copy(
    update={
        "native_output": True,
        "native_format": "json_object_schema",
        "grammar_output": True,
        "takes_grammar": True,
        "reprompt_as": "user",
        "reask_frequency_penalty": 1.0,
    }
)
"""llama.cpp's servers (``llamacpp:``): as a compatible server (a tool forced by name, never
``required``), and native output as a GBNF ``grammar`` agentshape compiles from the schema
(:func:`agent_core._gbnf_grammar.schema_to_gbnf`; its notes say what stays with validation;
with ``takes_grammar`` off, ``{"type": "json_object", "schema": ...}``, which the server
turns into a grammar itself): an agent runs in native mode unless it asks for another, its
input tools first. Re-prompts go as user messages: llama-cpp-python's fallback chat formats
(Llama 2's, for a model file without a chat template) keep only user and assistant turns. A
re-ask is sampled with ``frequency_penalty`` 1.0: at temperature 0 a small model otherwise
writes the same reply (a loop to its token limit included) again."""

TEST_PROFILE = ProviderProfile(
    tool_dialect="neutral",
    strict_tools=False,
    can_force_tool=True,
    supports_required_tool_choice=True,
    native_output=True,
    stop_sequences=True,
)
"""The offline test model and ``FunctionModel``: neutral tools; every mode is answered."""


def profile_of(provider: Provider) -> ProviderProfile:
    """Return a provider's profile; one without a profile gets a neutral one."""
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
    """Return ``provider``, or a copy of it that spells its requests by ``profile``."""
    variant = getattr(provider, "variant", None)
    if profile == profile_of(provider) or not callable(variant):
        return provider
    return cast("Provider", variant(profile=profile))
