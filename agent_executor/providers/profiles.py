"""The profile each kind of provider starts from; the model string's prefix picks one.

Overrides (an agent's ``llm.profile``, the command line's ``--profile``) are applied on top by
:func:`agent_contracts.profiles.apply_profile_overrides`.
"""

from __future__ import annotations

from agent_contracts.profiles import ProviderProfile

__all__ = [
    "ANTHROPIC_PROFILE",
    "COMPATIBLE_PROFILE",
    "LLAMACPP_PROFILE",
    "OPENAI_PROFILE",
    "TEST_PROFILE",
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
    }
)
"""llama.cpp's servers (``llamacpp:``): as a compatible server (a tool forced by name, never
``required``), and native output as a GBNF ``grammar`` agentshape compiles from the schema
(:func:`agent_core.gbnf_grammar.schema_to_gbnf`; its notes say what stays with validation;
with ``takes_grammar`` off, ``{"type": "json_object", "schema": ...}``, which the server
turns into a grammar itself): an agent runs in native mode unless it asks for another, its
input tools first. Re-prompts go as user messages: llama-cpp-python's fallback chat formats
(Llama 2's, for a model file without a chat template) keep only user and assistant turns."""

TEST_PROFILE = ProviderProfile(
    tool_dialect="neutral",
    strict_tools=False,
    can_force_tool=True,
    supports_required_tool_choice=True,
    native_output=True,
    stop_sequences=True,
)
"""The offline test model and ``FunctionModel``: neutral tools; every mode is answered."""
