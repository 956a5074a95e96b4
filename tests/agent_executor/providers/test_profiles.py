"""The provider profile, never the provider's name or URL, decides what goes on the wire."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agent_contracts import AgentConfig, ConfigError, RunOptions
from agent_contracts._profiles import ProviderProfile, apply_profile_overrides
from agent_executor import Agent, NullAnalytics, OpenAIProvider, resolve_model
from agent_executor._providers.profiles import (
    COMPATIBLE_PROFILE,
    LLAMACPP_PROFILE,
    OPENAI_PROFILE,
)
from tests.fake_llm import FakeLLM, openai_tool_call

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["title"],
    "properties": {"title": {"type": "string"}, "note": {"type": "string"}},
    "additionalProperties": False,
}
FS_SCHEMA_TOOLS: list[str] = ["fs:read"]


def grader() -> AgentConfig:
    return AgentConfig.model_validate({"name": "grader", "output_schema": SCHEMA})


def sent(fake: FakeLLM, model: Any, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run the grader once on ``model`` and return the first request body the server got."""
    fake.respond(openai_tool_call("submit_result", '{"title": "ok", "note": null}'))
    fake.respond(openai_tool_call("submit_result", '{"title": "ok"}'))
    agent = Agent(grader(), model=model, analytics=NullAnalytics(), env=env or {})
    agent.run_sync("Grade it.")
    body = fake.requests[0].body
    assert isinstance(body, dict)
    fake.requests.clear()
    return body


def submit_tool(body: dict[str, Any]) -> dict[str, Any]:
    (tool,) = [t for t in body["tools"] if t["function"]["name"] == "submit_result"]
    function: dict[str, Any] = tool["function"]
    return function


def test_openai_prefix_with_a_base_url_is_sent_strict_tools(fake_llm: FakeLLM) -> None:
    env = {"OPENAI_API_KEY": "sk-x", "OPENAI_BASE_URL": fake_llm.openai_base_url}
    function = submit_tool(sent(fake_llm, "openai:gpt-test", env))

    assert function["strict"] is True
    assert set(function["parameters"]["required"]) == {"title", "note"}  # optional -> nullable


def test_compatible_prefix_is_sent_the_schema_as_written(fake_llm: FakeLLM) -> None:
    env = {"OPENAI_COMPATIBLE_BASE_URL": fake_llm.openai_base_url}
    function = submit_tool(sent(fake_llm, "compatible:some-model", env))

    assert "strict" not in function
    assert function["parameters"] == SCHEMA


@pytest.mark.parametrize(
    ("prefix", "profile"),
    [("ollama", COMPATIBLE_PROFILE), ("vllm", COMPATIBLE_PROFILE), ("llamacpp", LLAMACPP_PROFILE)],
)
def test_local_server_prefixes_get_their_profiles(prefix: str, profile: ProviderProfile) -> None:
    env = {f"{prefix.upper()}_BASE_URL": "http://127.0.0.1:9/v1"}
    provider = resolve_model(f"{prefix}:m", env=env)

    assert provider.profile == profile
    assert provider.name == prefix


def test_llamacpp_is_compatible_with_its_own_native_output() -> None:
    changed = {
        key
        for key, value in LLAMACPP_PROFILE.model_dump().items()
        if value != getattr(COMPATIBLE_PROFILE, key)
    }
    assert changed == {
        "native_output",
        "native_format",
        "grammar_output",
        "reprompt_as",
        "takes_grammar",
        "reask_frequency_penalty",
    }
    assert LLAMACPP_PROFILE.reprompt_as == "user"
    assert not LLAMACPP_PROFILE.supports_required_tool_choice


def test_compatible_needs_its_base_url() -> None:
    with pytest.raises(ConfigError, match="OPENAI_COMPATIBLE_BASE_URL"):
        resolve_model("compatible:m", env={})


def test_renaming_a_provider_changes_nothing_on_the_wire(fake_llm: FakeLLM) -> None:
    url = fake_llm.openai_base_url
    plain = sent(fake_llm, OpenAIProvider("gpt-test", api_key="sk-x", base_url=url))
    renamed = sent(
        fake_llm, OpenAIProvider("gpt-test", api_key="sk-x", base_url=url, name="ollama")
    )

    assert plain == renamed


def test_a_profile_override_changes_the_wire(fake_llm: FakeLLM) -> None:
    url = fake_llm.openai_base_url
    relaxed = apply_profile_overrides(OPENAI_PROFILE, {"strict_tools": False})
    provider = OpenAIProvider("gpt-test", api_key="sk-x", base_url=url, profile=relaxed)
    function = submit_tool(sent(fake_llm, provider))

    assert "strict" not in function and function["parameters"] == SCHEMA


def test_a_profile_without_required_sends_auto_while_input_tools_are_offered(
    fake_llm: FakeLLM, tmp_path: Any
) -> None:
    config = AgentConfig.model_validate(
        {"name": "reader", "output_schema": SCHEMA, "tools": FS_SCHEMA_TOOLS}
    )
    fake_llm.respond(openai_tool_call("submit_result", '{"title": "ok"}'))
    provider = OpenAIProvider(
        "m", api_key="x", base_url=fake_llm.openai_base_url, profile=COMPATIBLE_PROFILE
    )
    agent = Agent(config, model=provider, analytics=NullAnalytics(), env={}, workspace=tmp_path)
    assert agent.run_sync("Read.").ok
    body = fake_llm.requests[0].body
    assert isinstance(body, dict) and body["tool_choice"] == "auto"


def test_unknown_override_fields_are_errors_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match="did you mean 'strict_tools'"):
        apply_profile_overrides(ProviderProfile(), {"strict_tool": False})
    with pytest.raises(ConfigError, match="native_output"):
        apply_profile_overrides(ProviderProfile(), {"native_output": "maybe"})


def test_an_agents_llm_profile_overrides_the_providers(fake_llm: FakeLLM) -> None:
    config = AgentConfig.model_validate(
        {
            "schema": "kb.agent/1",
            "id": "grader",
            "llm": {"profile": {"strict_tools": False}},
            "output": {"schema": SCHEMA},
        }
    )
    assert config.model_dump()["profile"] == {"strict_tools": False}
    fake_llm.respond(openai_tool_call("submit_result", '{"title": "ok"}'))
    provider = OpenAIProvider("gpt-test", api_key="sk-x", base_url=fake_llm.openai_base_url)
    agent = Agent(config, model=provider, analytics=NullAnalytics(), env={})
    assert agent.run_sync("Grade.").ok
    body = fake_llm.requests[0].body
    assert isinstance(body, dict)
    assert "strict" not in submit_tool(body)


def test_native_mode_on_a_profile_without_native_output_is_refused_before_any_call() -> None:
    agent = Agent(
        grader(), model="test", analytics=NullAnalytics(), env={}, profile={"native_output": False}
    )
    with pytest.raises(ConfigError, match="no native structured output"):
        agent.run_sync("Grade.", options=RunOptions(output_mode="native"))


def test_unknown_llm_profile_keys_are_config_errors_at_their_key() -> None:
    with pytest.raises(ValidationError, match=r"did you mean 'strict_tools'"):
        AgentConfig.model_validate(
            {"schema": "kb.agent/1", "id": "a", "llm": {"profile": {"strict_tool": False}}}
        )


def test_the_cli_profile_flag(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from agent_executor._cli import main

    agent_dir = tmp_path / "agents" / "grader"
    agent_dir.mkdir(parents=True)
    agent_dir.joinpath("agent.yml").write_text(
        "id: grader\nsystem_prompt: Grade.\noutput_schema: {type: object}\n"
    )
    base = ["run", "grader", "--task", "Go.", "--model", "test"]
    base += ["--agents-dir", str(tmp_path / "agents"), "--analytics-dir", str(tmp_path / "a")]
    assert main([*base, "--profile", "strict_tool=false"]) == 2
    assert "did you mean 'strict_tools'" in capsys.readouterr().err
    assert main([*base, "--profile", "native_output=false", "--mode", "native"]) == 2
    assert "no native structured output" in capsys.readouterr().err
    assert main([*base, "--profile", "strict_tools=false"]) == 0
