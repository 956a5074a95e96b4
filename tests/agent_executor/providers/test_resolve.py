from __future__ import annotations

import subprocess
import sys

import pytest

from agent_contracts import ConfigError, Message
from agent_executor import AnthropicProvider, OpenAIProvider, TestModel, resolve_model
from agent_executor._providers.base import ModelTurnRequest, ToolChoice, ToolDefinition
from agent_executor._providers.resolve import DEFAULT_ANTHROPIC_MODEL, DEFAULT_OPENAI_MODEL
from tests.fake_llm import FakeLLM, anthropic_text, openai_text

OPENAI_ENV = {"OPENAI_API_KEY": "sk-test"}
ANTHROPIC_ENV = {"ANTHROPIC_API_KEY": "ak-test"}


def test_openai_spec() -> None:
    provider = resolve_model("openai:gpt-4.1-mini", env=OPENAI_ENV)

    assert isinstance(provider, OpenAIProvider)
    assert (provider.name, provider.model) == ("openai", "gpt-4.1-mini")
    assert provider.base_url == "https://api.openai.com/v1/"


def test_anthropic_spec() -> None:
    provider = resolve_model("anthropic:claude-sonnet-4-5", env=ANTHROPIC_ENV)

    assert isinstance(provider, AnthropicProvider)
    assert (provider.name, provider.model) == ("anthropic", "claude-sonnet-4-5")


@pytest.mark.parametrize(
    ("env", "base_url"),
    [
        ({}, "http://localhost:11434/v1/"),
        ({"OLLAMA_BASE_URL": "http://gpu-box:11434"}, "http://gpu-box:11434/v1/"),
        ({"OLLAMA_BASE_URL": "http://gpu-box:8080/v1"}, "http://gpu-box:8080/v1/"),
    ],
)
def test_ollama_spec_needs_no_key(env: dict[str, str], base_url: str) -> None:
    provider = resolve_model("ollama:qwen3", env=env)

    assert isinstance(provider, OpenAIProvider)
    assert (provider.name, provider.model, provider.base_url) == ("ollama", "qwen3", base_url)


async def test_ollama_talks_to_its_base_url(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_text("hi from ollama"))
    provider = resolve_model("ollama:qwen3", env={"OLLAMA_BASE_URL": fake_llm.openai_base_url})

    turn = await provider.request(ModelTurnRequest(messages=[Message.user("hi")]))

    assert (turn.text, turn.provider) == ("hi from ollama", "ollama")
    assert fake_llm.requests[0].body["model"] == "qwen3"


async def test_base_urls_come_from_the_given_env(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_text("o"), anthropic_text("a"))
    env = {
        **OPENAI_ENV,
        **ANTHROPIC_ENV,
        "OPENAI_BASE_URL": fake_llm.openai_base_url,
        "ANTHROPIC_BASE_URL": fake_llm.anthropic_base_url,
    }
    request = ModelTurnRequest(messages=[Message.user("hi")])

    for spec in ("openai:gpt-test", "anthropic:claude-test"):
        provider = resolve_model(spec, env=env)
        await provider.request(request)

    assert [r.path for r in fake_llm.requests] == ["/v1/chat/completions", "/v1/messages"]
    assert [r.headers["authorization"] for r in fake_llm.requests] == [
        "Bearer sk-test",
        "Bearer ak-test",
    ]


@pytest.mark.parametrize(
    ("env", "name", "model"),
    [
        ({**OPENAI_ENV, **ANTHROPIC_ENV}, "openai", DEFAULT_OPENAI_MODEL),
        (ANTHROPIC_ENV, "anthropic", DEFAULT_ANTHROPIC_MODEL),
        ({"AGENTSHAPE_MODEL": "test", **OPENAI_ENV}, "test", "test"),
    ],
)
@pytest.mark.parametrize("spec", [None, "", "  "])
def test_no_spec_picks_from_the_environment(
    env: dict[str, str], name: str, model: str, spec: str | None
) -> None:
    provider = resolve_model(spec, env=env)

    assert (provider.name, provider.model) == (name, model)


async def test_test_spec_with_options() -> None:
    provider = resolve_model("test:seed=3,fail_first=text+wrong_tool", env={})

    assert isinstance(provider, TestModel)
    assert provider.seed == 3
    assert provider.pending_failures == ["text", "wrong_tool"]
    request = ModelTurnRequest(
        messages=[Message.user("hi")],
        tools=[ToolDefinition(name="submit_result")],
        tool_choice=ToolChoice.required(),
    )
    first = await provider.request(request)
    assert first.tool_calls == []


def test_plain_test_spec() -> None:
    provider = resolve_model("test", env=OPENAI_ENV)

    assert isinstance(provider, TestModel)
    assert provider.seed == 0


@pytest.mark.parametrize(
    ("spec", "name"),
    [("gpt-4o", "openai"), ("o3-mini", "openai"), ("claude-opus-4-1", "anthropic")],
)
def test_bare_model_names_imply_their_provider(spec: str, name: str) -> None:
    provider = resolve_model(spec, env={**OPENAI_ENV, **ANTHROPIC_ENV})

    assert (provider.name, provider.model) == (name, spec)


def test_unknown_prefix_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_model("mistral:large", env={})

    message = str(caught.value)
    assert "'mistral'" in message
    assert "known: anthropic, compatible, llamacpp, ollama, openai, test, vllm" in message


@pytest.mark.parametrize(
    ("spec", "env", "match"),
    [
        ("openai:gpt-4.1", {}, "needs OPENAI_API_KEY"),
        ("anthropic:claude-x", {}, "needs ANTHROPIC_API_KEY"),
        ("openai:", OPENAI_ENV, "names no model"),
        ("test:speed=3", {}, "unknown option 'speed=3'"),
        ("test:fail_first=explode", {}, "unknown failure mode"),
    ],
)
def test_config_errors(spec: str, env: dict[str, str], match: str) -> None:
    with pytest.raises(ConfigError, match=match):
        resolve_model(spec, env=env)


@pytest.mark.parametrize("spec", [None, "", "  "])
def test_no_spec_and_no_key_is_an_error_that_says_how_to_pick(spec: str | None) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_model(spec, env={})

    message = caught.value.format_message()
    assert message.startswith("no model to run on")
    for hint in ("OPENAI_API_KEY", "openai:gpt-4.1-mini", "--model", "model=", "'test'"):
        assert hint in message


def test_keys_in_os_environ_are_not_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "from-os-environ")

    with pytest.raises(ConfigError, match="no model to run on"):
        resolve_model(None, env={})
    with pytest.raises(ConfigError, match="needs OPENAI_API_KEY"):
        resolve_model("openai:gpt-4.1", env={})


def test_sdk_providers_are_built_once_per_model_key_and_url() -> None:
    env = {"OPENAI_API_KEY": "sk-one", "OPENAI_BASE_URL": "http://127.0.0.1:9/v1"}
    first = resolve_model("openai:gpt-4.1", env=env)

    assert resolve_model("openai:gpt-4.1", env=env) is first
    assert resolve_model("openai:gpt-4.1", env={**env, "OPENAI_API_KEY": "sk-two"}) is not first
    assert resolve_model("test", env={}) is not resolve_model("test", env={})  # stateful


@pytest.mark.parametrize(
    ("spec", "env", "extra"),
    [
        ("openai:gpt-4.1", {"OPENAI_API_KEY": "sk-x"}, "openai"),
        ("ollama:qwen3", {}, "openai"),
        ("anthropic:claude-x", {"ANTHROPIC_API_KEY": "k"}, "anthropic"),
    ],
)
def test_a_missing_sdk_names_the_extra_to_install(
    spec: str, env: dict[str, str], extra: str
) -> None:
    """In a child interpreter whose import of the SDK is refused, as if it were not installed."""
    child = f"""
import importlib.abc, json, sys

class Absent(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ({extra!r}, "httpx2"):  # what the extra installs
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, Absent())
from agent_contracts._errors import ConfigError
from agent_executor._providers.resolve import resolve_model
try:
    resolve_model({spec!r}, env={env!r})
except ConfigError as error:
    print(error.format_message())
"""
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert f"pip install 'agentshape[{extra}]'" in done.stdout


@pytest.mark.parametrize(
    ("spec", "variable", "url", "problem"),
    [
        ("openai:gpt-4.1", "OPENAI_BASE_URL", "http://[::1", "Invalid IPv6 URL"),
        (
            "openai:gpt-4.1",
            "OPENAI_BASE_URL",
            "localhost:8000/v1",
            "it must start with http:// or https://",
        ),
        ("anthropic:claude-x", "ANTHROPIC_BASE_URL", "http://h:99999", "Port out of range 0-65535"),
        ("ollama:qwen3", "OLLAMA_BASE_URL", "http://exa mple", "it contains spaces"),
    ],
)
def test_a_malformed_base_url_is_one_config_error(
    spec: str, variable: str, url: str, problem: str
) -> None:
    env = {"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", variable: url}
    with pytest.raises(ConfigError) as caught:
        resolve_model(spec, env=env)
    assert str(caught.value) == (
        f"{variable} {url!r} is not a usable URL ({problem}); "
        "give one such as http://localhost:8000/v1"
    )


def test_a_test_model_seed_past_any_integer_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown option 'seed=9999"):
        resolve_model("test:seed=" + "9" * 5000, env={})
