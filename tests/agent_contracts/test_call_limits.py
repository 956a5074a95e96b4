"""An agent's ``llm.limits``: read from either config form, typos and bad values refused."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from agent_contracts import AgentConfig, CallLimits


def test_llm_limits_in_the_file_form_and_call_limits_in_the_blueprint_form() -> None:
    filed = AgentConfig.model_validate(
        {"id": "a", "llm": {"limits": {"concurrency": 4, "requests_per_minute": 500}}}
    )
    blueprint = AgentConfig.model_validate(
        {"name": "a", "call_limits": {"concurrency": 4, "requests_per_minute": 500}}
    )
    assert filed.call_limits == blueprint.call_limits
    assert filed.call_limits == CallLimits(concurrency=4, requests_per_minute=500)


def test_a_typo_and_a_zero_are_errors_at_the_key_written() -> None:
    with pytest.raises(ValidationError) as raised:
        AgentConfig.model_validate({"id": "a", "llm": {"limits": {"concurency": 4}}})
    assert raised.value.errors()[0]["loc"] == ("llm", "limits", "concurency")
    with pytest.raises(ValidationError) as raised:
        AgentConfig.model_validate({"id": "a", "llm": {"limits": {"tokens_per_minute": 0}}})
    assert raised.value.errors()[0]["loc"] == ("llm", "limits", "tokens_per_minute")


def test_the_stricter_of_two_limits_wins() -> None:
    agent = CallLimits(concurrency=4, requests_per_minute=100)
    flags = CallLimits(concurrency=8, tokens_per_minute=1000)
    assert agent.tightest(flags) == CallLimits(
        concurrency=4, requests_per_minute=100, tokens_per_minute=1000
    )
    assert not CallLimits().any()
