"""Model strings to providers: ``openai:gpt-4.1-mini``, ``anthropic:...``, ``ollama:...``, ``test``.

The environment is passed in (the CLI passes ``os.environ``); nothing here reads it by itself.
"""

from __future__ import annotations

import importlib
import re
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from agent_contracts._errors import ConfigError
from agent_contracts._profiles import ProviderProfile
from agent_executor._providers.base import Provider
from agent_executor._providers.profiles import COMPATIBLE_PROFILE, LLAMACPP_PROFILE
from agent_executor._providers.test import TestModel

# The SDK-backed providers are imported where they are built: importing the SDKs is slow, and a
# run on the test model (and the CLI's start) should not wait for it.

__all__ = [
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_LLAMACPP_BASE_URL",
    "DEFAULT_OLLAMA_BASE_URL",
    "DEFAULT_OPENAI_MODEL",
    "DEFAULT_VLLM_BASE_URL",
    "ENV_COMPATIBLE_BASE_URL",
    "ENV_MODEL",
    "KNOWN_PREFIXES",
    "NO_MODEL",
    "resolve_model",
]

DEFAULT_OPENAI_MODEL = "gpt-4.1-mini"
"""The model used when no spec is given and ``OPENAI_API_KEY`` is set."""
DEFAULT_ANTHROPIC_MODEL = "claude-sonnet-4-5"
"""The model used when no spec is given and only ``ANTHROPIC_API_KEY`` is set."""
DEFAULT_OLLAMA_BASE_URL = "http://localhost:11434/v1"
"""Ollama's OpenAI-compatible endpoint when ``OLLAMA_BASE_URL`` is not set."""
DEFAULT_VLLM_BASE_URL = "http://localhost:8000/v1"
"""vLLM's OpenAI-compatible endpoint when ``VLLM_BASE_URL`` is not set."""
DEFAULT_LLAMACPP_BASE_URL = "http://127.0.0.1:8080/v1"
"""llama.cpp's server endpoint when ``LLAMACPP_BASE_URL`` is not set."""
ENV_COMPATIBLE_BASE_URL = "OPENAI_COMPATIBLE_BASE_URL"
"""Environment variable with the URL of the server a ``compatible:`` model runs on."""

Factory = Callable[[str, Mapping[str, str]], Provider]
"""Builds a provider from a model name and the environment."""


ENV_MODEL = "AGENTSHAPE_MODEL"
"""Environment variable with the model to use when neither the run nor the agent names one."""

NO_MODEL = (
    "no model to run on: none was given, the agent names none (llm.model), and neither "
    "AGENTSHAPE_MODEL, OPENAI_API_KEY nor ANTHROPIC_API_KEY is set. Pick one: set "
    "OPENAI_API_KEY (or ANTHROPIC_API_KEY), or name a model such as openai:gpt-4.1-mini, "
    "anthropic:claude-sonnet-4-5 or ollama:qwen3 (--model on the command line, model= in "
    "Python, llm.model in agent.yml); model 'test' is the offline test model"
)
"""The error for a run with no model anywhere and no API key: it says how to pick one."""


def _sdk_provider(module: str, extra: str) -> Any:
    """Import a provider module whose SDK is an extra, or say which extra to install."""
    try:
        return importlib.import_module(f"agent_executor._providers.{module}")
    except ModuleNotFoundError as exc:
        # The SDK, or the HTTP client it brings (httpx2), is what an extra installs.
        missing = (exc.name or "").split(".")[0]
        if missing not in (extra, "httpx2", "httpcore2"):
            raise
        raise ConfigError(
            f"this model needs the {extra} SDK, which is not installed: "
            f"pip install 'agentshape[{extra}]'"
        ) from exc


_SHARED: OrderedDict[tuple[str, ...], Provider] = OrderedDict()
_SHARED_MAX = 64


def _shared(key: tuple[str, ...], build: Callable[[], Provider]) -> Provider:
    """Return the SDK-backed provider built for ``key`` before, or build and keep it."""
    found = _SHARED.get(key)
    if found is not None:
        _SHARED.move_to_end(key)
        return found
    provider = build()
    _SHARED[key] = provider
    while len(_SHARED) > _SHARED_MAX:
        _SHARED.popitem(last=False)
    return provider


def _url(env: Mapping[str, str], variable: str) -> str | None:
    """Return a base URL from the environment, checked, or ``None`` when it is not set."""
    value = env.get(variable)
    if not value:
        return None
    problem = ""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - reading it checks it
    except ValueError as exc:
        problem = str(exc)
    else:
        if parts.scheme not in ("http", "https"):
            problem = "it must start with http:// or https://"
        elif not parts.hostname:
            problem = "it names no host"
        elif any(character.isspace() for character in value):
            problem = "it contains spaces"
    if problem:
        raise ConfigError(
            f"{variable} {value!r} is not a usable URL ({problem}); "
            "give one such as http://localhost:8000/v1"
        )
    return value


def _openai(model: str, env: Mapping[str, str]) -> Provider:
    key = env.get("OPENAI_API_KEY")
    if not key:
        raise ConfigError(f"model 'openai:{model}' needs OPENAI_API_KEY to be set")
    base_url = _url(env, "OPENAI_BASE_URL")
    sdk = _sdk_provider("openai", "openai")
    return _shared(
        ("openai", model, key, base_url or ""),
        lambda: sdk.OpenAIProvider(model, api_key=key, base_url=base_url),
    )


def _anthropic(model: str, env: Mapping[str, str]) -> Provider:
    key = env.get("ANTHROPIC_API_KEY")
    if not key:
        raise ConfigError(f"model 'anthropic:{model}' needs ANTHROPIC_API_KEY to be set")
    base_url = _url(env, "ANTHROPIC_BASE_URL")
    sdk = _sdk_provider("anthropic", "anthropic")
    return _shared(
        ("anthropic", model, key, base_url or ""),
        lambda: sdk.AnthropicProvider(model, api_key=key, base_url=base_url),
    )


def _compatible(
    prefix: str,
    variable: str,
    default: str | None,
    profile: ProviderProfile = COMPATIBLE_PROFILE,
) -> Factory:
    """Return the factory for an OpenAI-compatible server named by ``prefix``."""

    def make(model: str, env: Mapping[str, str]) -> Provider:
        base_url = _url(env, variable) or default
        if not base_url:
            raise ConfigError(
                f"model '{prefix}:{model}' needs {variable} to be set to the server's URL "
                "(such as http://localhost:8000/v1)"
            )
        if urlsplit(base_url).path.strip("/") == "":  # "http://host:port" means its /v1 endpoint
            base_url = base_url.rstrip("/") + "/v1"
        key = env.get(f"{prefix.upper()}_API_KEY") or prefix  # local servers take any key
        sdk = _sdk_provider("openai", "openai")
        return _shared(
            (prefix, model, key, base_url),
            lambda: sdk.OpenAIProvider(
                model, api_key=key, base_url=base_url, name=prefix, profile=profile
            ),
        )

    return make


def _test(options: str, env: Mapping[str, str]) -> Provider:
    seed = 0
    fail_first: list[str] = []
    for option in filter(None, options.split(",")):
        key, _, value = option.partition("=")
        if key == "seed" and re.fullmatch(r"-?[0-9]{1,18}", value):
            seed = int(value)
        elif key == "fail_first" and value:
            fail_first = value.split("+")
        else:
            raise ConfigError(
                f"model 'test:{options}': unknown option {option!r}; "
                "use test:seed=N and/or test:fail_first=text+invalid_arguments"
            )
    return TestModel(seed=seed, fail_first=fail_first)


_FACTORIES: dict[str, Factory] = {
    "anthropic": _anthropic,
    "compatible": _compatible("compatible", ENV_COMPATIBLE_BASE_URL, None),
    "llamacpp": _compatible(
        "llamacpp", "LLAMACPP_BASE_URL", DEFAULT_LLAMACPP_BASE_URL, LLAMACPP_PROFILE
    ),
    "ollama": _compatible("ollama", "OLLAMA_BASE_URL", DEFAULT_OLLAMA_BASE_URL),
    "openai": _openai,
    "test": _test,
    "vllm": _compatible("vllm", "VLLM_BASE_URL", DEFAULT_VLLM_BASE_URL),
}

KNOWN_PREFIXES = tuple(sorted(_FACTORIES))
"""The provider prefixes a model spec may start with."""


def resolve_model(spec: str | None, *, env: Mapping[str, str]) -> Provider:
    """Return the provider a model spec names.

    Specs: ``openai:MODEL``, ``anthropic:MODEL``; OpenAI-compatible servers with the
    compatible profile: ``ollama:MODEL`` (``OLLAMA_BASE_URL``, default
    ``http://localhost:11434/v1``), ``vllm:MODEL`` (``VLLM_BASE_URL``, default
    ``http://localhost:8000/v1``), ``llamacpp:MODEL`` (``LLAMACPP_BASE_URL``, default
    ``http://127.0.0.1:8080/v1``), ``compatible:MODEL`` (``OPENAI_COMPATIBLE_BASE_URL``,
    required); each reads an optional ``<PREFIX>_API_KEY``; ``test`` or ``test:seed=3`` (options
    joined by ``,``; ``fail_first=text+invalid_arguments`` scripts failures). A bare
    ``gpt-...``/``o1``-style name means OpenAI and ``claude-...`` means Anthropic.

    With no spec: the model named by ``AGENTSHAPE_MODEL``, else OpenAI's default model when
    ``OPENAI_API_KEY`` is set, else Anthropic's when ``ANTHROPIC_API_KEY`` is set; with none,
    a ``ConfigError`` that says how to pick a model (never a silent fake answer: the offline
    test model is used only when named).

    Args:
        spec: The model spec, or ``None``/empty to choose from the environment.
        env: The environment to read keys and base URLs from (the CLI passes ``os.environ``).

    Returns:
        The provider, ready to use.

    Raises:
        ConfigError: The prefix is unknown (the message lists the known ones), the model name is
            missing, a test option is unknown, the provider's API key is not in ``env``, or no
            spec was given and no API key is set.
    """
    spec = (spec or "").strip() or env.get(ENV_MODEL, "").strip()
    if not spec:
        if env.get("OPENAI_API_KEY"):
            return _openai(DEFAULT_OPENAI_MODEL, env)
        if env.get("ANTHROPIC_API_KEY"):
            return _anthropic(DEFAULT_ANTHROPIC_MODEL, env)
        raise ConfigError(NO_MODEL)
    prefix, colon, model = spec.partition(":")
    if not colon:
        prefix, model = _infer_prefix(spec), spec
        if prefix == "test":
            model = ""
    factory = _FACTORIES.get(prefix.strip().lower())
    if factory is None:
        raise ConfigError(
            f"unknown model provider {prefix!r} in {spec!r}; known: {', '.join(KNOWN_PREFIXES)} "
            "(write it as provider:model, such as openai:gpt-4.1-mini)"
        )
    model = model.strip()
    if not model and factory is not _test:
        raise ConfigError(f"model spec {spec!r} names no model (write {prefix}:MODEL)")
    return factory(model, env)


def _infer_prefix(name: str) -> str:
    """Return the provider a bare model name belongs to (the name itself when unknown)."""
    lowered = name.lower()
    if lowered.startswith(("gpt-", "chatgpt-")) or (lowered[:1] == "o" and lowered[1:2].isdigit()):
        return "openai"
    if lowered.startswith("claude"):
        return "anthropic"
    return lowered
