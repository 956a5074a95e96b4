"""Prompted mode that can finish: a compact outline, and an end marker the reply stops at.

Where the provider's profile takes stop sequences (OpenAI-compatible servers, Anthropic), the
output section asks the model to write ``</json>`` right after its JSON and every model call
sends it as a stop sequence, so a small model's answer ends with the JSON instead of running on
to its token limit. OpenAI's own API gets neither (its reasoning models refuse ``stop``).
"""

from __future__ import annotations

import json
from typing import Any

from tests.agent_executor.test_run import VALID, agent_for, bodies, provider_for, system_text
from tests.compatible_servers import gemma3_prompt, llamacpp_python
from tests.fake_llm import FakeLLM, anthropic_text, openai_text

PROMPTED = {"output_mode": "prompted"}
CLOSE = "Reply with only the JSON value, with no other text, and write `</json>` right after it."
STOPS = ["</json>", "\n```"]


def llamacpp_agent(fake_llm: FakeLLM) -> Any:
    env = {"LLAMACPP_BASE_URL": fake_llm.openai_base_url}
    return agent_for("llamacpp:gemma", env=env, options=PROMPTED)


async def test_a_compatible_server_is_sent_the_end_marker_as_a_stop_sequence(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.refuse_when(llamacpp_python)
    # The server cuts the reply where the stop sequence began.
    fake_llm.respond(openai_text(json.dumps(VALID) + "\n"))
    result = await llamacpp_agent(fake_llm).run("Grade the essay.")

    assert result.ok and result.result_data == VALID
    (body,) = bodies(fake_llm)
    assert body["stop"] == STOPS
    system = system_text("openai", body)
    assert system.endswith(CLOSE)
    assert "  title: string\n  score: integer  // 0 <= x\n" in system
    # An example of the shape, fenced: the closing fence is a stop sequence too.
    example = "(its values are placeholders: write your own):\n\n```json\n"
    assert example + '{"title": "india bravo golf", "score": ' in system


async def test_a_reply_stopped_at_the_closing_fence_is_read(fake_llm: FakeLLM) -> None:
    fake_llm.refuse_when(llamacpp_python)
    # A model that fenced its JSON as the example was, without the marker: the server cut the
    # reply where the closing fence began.
    fake_llm.respond(openai_text("```json\n" + json.dumps(VALID)))
    result = await llamacpp_agent(fake_llm).run("Grade the essay.")

    assert result.ok and result.result_data == VALID


async def test_a_reply_that_runs_past_an_ignored_stop_sequence_is_still_read(
    fake_llm: FakeLLM,
) -> None:
    fake_llm.respond(openai_text(json.dumps(VALID) + "\n</json>\nI hope this helps!"))
    result = await llamacpp_agent(fake_llm).run("Grade the essay.")

    assert result.ok and result.result_data == VALID


async def test_anthropic_is_sent_stop_sequences(fake_llm: FakeLLM) -> None:
    fake_llm.respond(anthropic_text(json.dumps(VALID)))
    agent = agent_for(provider_for("anthropic", fake_llm), options=PROMPTED)
    assert (await agent.run("Grade the essay.")).ok

    (body,) = bodies(fake_llm)
    assert body["stop_sequences"] == STOPS
    assert system_text("anthropic", body).endswith(CLOSE)


async def test_openai_is_sent_no_stop_sequence(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_text(json.dumps(VALID)))
    agent = agent_for(provider_for("openai", fake_llm), options=PROMPTED)
    assert (await agent.run("Grade the essay.")).ok

    (body,) = bodies(fake_llm)
    assert "stop" not in body
    assert system_text("openai", body).endswith(
        "Reply with only the JSON value, with no other text, and stop right after it."
    )


async def test_native_mode_sends_no_stop_sequence(fake_llm: FakeLLM) -> None:
    fake_llm.respond(openai_text(json.dumps(VALID)))
    env = {"LLAMACPP_BASE_URL": fake_llm.openai_base_url}
    agent = agent_for("llamacpp:gemma", env=env, options={"output_mode": "native"})
    assert (await agent.run("Grade the essay.")).ok

    (body,) = bodies(fake_llm)
    assert "stop" not in body and "</json>" not in system_text("openai", body)
    assert "An example of the shape" not in system_text("openai", body)


ECHO = (
    "You grade essays.\n\n## Required Output Format\n\nAnswer with one JSON value of this shape:\n"
)
"""A first try of a small model that writes the prompt back, cut where the outline's fence began."""


def echoed_then_valid(fake_llm: FakeLLM, *, finish_reason: str = "stop") -> None:
    fake_llm.refuse_when(llamacpp_python)
    fake_llm.respond(openai_text(ECHO, finish_reason=finish_reason), openai_text(json.dumps(VALID)))


async def test_a_reask_is_sent_as_the_first_try_with_the_reply_closed_by_the_end_marker(
    fake_llm: FakeLLM,
) -> None:
    # Sent back as the server returned it (the stop sequence cut out), the echo ended mid-prompt,
    # and Gemma 3 270M, re-asked, copied that ending and wrote on to its token limit.
    echoed_then_valid(fake_llm)
    result = await llamacpp_agent(fake_llm).run("Grade the essay.")

    assert result.ok and result.retries == 1
    first, second = bodies(fake_llm)
    assert first["stop"] == second["stop"] == STOPS
    assert system_text("openai", second) == system_text("openai", first)
    assert system_text("openai", second).endswith(CLOSE)
    *_, reply, reask = second["messages"]
    assert reply == {"role": "assistant", "content": ECHO + "</json>"}
    assert reask["role"] == "user" and ECHO in reask["content"]
    assert ECHO + "</json><end_of_turn>\n<start_of_turn>user\n" in gemma3_prompt(second)
    # The attempt keeps what the model sent.
    assert result.attempts[0].raw_output == ECHO


async def test_a_reply_cut_off_by_the_token_limit_is_sent_back_as_written(
    fake_llm: FakeLLM,
) -> None:
    echoed_then_valid(fake_llm, finish_reason="length")
    result = await llamacpp_agent(fake_llm).run("Grade the essay.")

    assert result.ok and result.retries == 1
    reply = bodies(fake_llm)[1]["messages"][-2]
    assert reply == {"role": "assistant", "content": ECHO}


async def test_native_mode_sends_the_reply_back_as_written(fake_llm: FakeLLM) -> None:
    fake_llm.refuse_when(llamacpp_python)
    fake_llm.respond(openai_text(ECHO), openai_text(json.dumps(VALID)))
    env = {"LLAMACPP_BASE_URL": fake_llm.openai_base_url}
    agent = agent_for("llamacpp:gemma", env=env, options={"output_mode": "native"})
    result = await agent.run("Grade the essay.")

    assert result.ok and result.retries == 1
    assert bodies(fake_llm)[1]["messages"][-2] == {"role": "assistant", "content": ECHO}


async def test_openai_is_sent_the_reply_back_as_written(fake_llm: FakeLLM) -> None:
    # No stop sequence was sent, so nothing was cut from the reply.
    fake_llm.respond(openai_text(ECHO), openai_text(json.dumps(VALID)))
    agent = agent_for(provider_for("openai", fake_llm), options=PROMPTED)
    result = await agent.run("Grade the essay.")

    assert result.ok and result.retries == 1
    assert bodies(fake_llm)[1]["messages"][-2] == {"role": "assistant", "content": ECHO}
