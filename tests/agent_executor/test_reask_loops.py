"""A re-ask after a reply that looped until its token limit: named, quoted short, sampled apart.

Gemma 3 270M on llama-cpp-python's server, under the grammar of a ``minLength`` string, was seen
to write ``"summary: summary: ..."`` until its 300 tokens ran out, and at temperature 0 to write
the same loop again when asked again. The re-ask names the repeated piece, quotes the reply
without the loop, and (the ``llamacpp:`` profile's ``reask_frequency_penalty``) is sampled with
a frequency penalty; the first try is sampled as the agent says. The fake server judges requests
as llama-cpp-python does.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_contracts import ConfigError
from tests.agent_executor.test_run import VALID, agent_for, bodies
from tests.compatible_servers import llamacpp_python, vllm
from tests.fake_llm import FakeLLM, openai_text

LOOP = '{"title": "' + "score: " * 60
"""A reply cut off in a loop, as the model wrote it."""


def looped_then_valid(fake_llm: FakeLLM, server: Any = llamacpp_python) -> None:
    fake_llm.refuse_when(server)
    fake_llm.respond(openai_text(LOOP, finish_reason="length"), openai_text(json.dumps(VALID)))


async def run_native(fake_llm: FakeLLM, model: str, env_key: str, **config: Any) -> Any:
    env = {env_key: fake_llm.openai_base_url}
    agent = agent_for(model, env=env, options={"output_mode": "native"}, **config)
    result = await agent.run("Grade the essay.")
    assert result.ok and result.retries == 1, result.error
    return result


async def test_the_llamacpp_profile_samples_only_the_reask_with_a_frequency_penalty(
    fake_llm: FakeLLM,
) -> None:
    looped_then_valid(fake_llm)

    await run_native(fake_llm, "llamacpp:gemma", "LLAMACPP_BASE_URL", temperature=0)

    first, second = bodies(fake_llm)
    assert "frequency_penalty" not in first
    assert second["frequency_penalty"] == 1.0
    assert first["temperature"] == second["temperature"] == 0


async def test_the_reask_names_the_loop_and_quotes_the_reply_without_it(
    fake_llm: FakeLLM,
) -> None:
    looped_then_valid(fake_llm)

    result = await run_native(fake_llm, "llamacpp:gemma", "LLAMACPP_BASE_URL")

    reask = bodies(fake_llm)[1]["messages"][-1]
    assert reask["role"] == "user"
    assert (
        'the reply repeated "score: " over and over until the max_tokens limit'
        in (reask["content"])
    )
    assert '{"title": "score: score: [... the same 58 more times]' in reask["content"]
    assert "score: " * 3 not in reask["content"]
    # The attempt keeps what the model sent, loop and all.
    assert result.attempts[0].raw_output == LOOP
    assert "repeated" in result.attempts[0].errors[0].message


@pytest.mark.parametrize(("setting", "sent"), [(0, 0.0), (0.4, 0.4)])
async def test_an_agent_sets_the_reask_penalty_in_its_profile(
    fake_llm: FakeLLM, setting: float, sent: float
) -> None:
    looped_then_valid(fake_llm)
    profile = {"reask_frequency_penalty": setting}

    await run_native(fake_llm, "llamacpp:gemma", "LLAMACPP_BASE_URL", llm={"profile": profile})

    first, second = bodies(fake_llm)
    assert "frequency_penalty" not in first
    assert second["frequency_penalty"] == sent


async def test_a_compatible_server_is_sent_no_penalty(fake_llm: FakeLLM) -> None:
    looped_then_valid(fake_llm, vllm)
    profile = {"native_output": True}

    await run_native(
        fake_llm, "compatible:model", "OPENAI_COMPATIBLE_BASE_URL", llm={"profile": profile}
    )

    assert all("frequency_penalty" not in body for body in bodies(fake_llm))


async def test_a_penalty_out_of_range_is_a_config_error() -> None:
    with pytest.raises(
        ConfigError, match="reask_frequency_penalty: Input should be less than or equal to 2"
    ):
        agent = agent_for(
            "llamacpp:gemma",
            env={"LLAMACPP_BASE_URL": "http://127.0.0.1:9/v1"},
            llm={"profile": {"reask_frequency_penalty": 3.0}},
        )
        await agent.run("Grade the essay.")
