"""A re-prompt reaches the model on a server whose chat template drops ``tool`` messages.

llama-cpp-python's server, for a model file without a chat template, formats the conversation
with Llama 2's chat format, which keeps only user and assistant turns: a tool-mode re-prompt in
the rejected call's tool result never reaches the model. With the profile's ``reprompt_as:
user`` (the ``llamacpp:`` profile's, and what ``agentshape probe`` sets for such a server) the
errors go in a user message. The fake server judges requests as llama-cpp-python does and keeps
the prompt it would have formatted.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.agent_executor.test_run import VALID, agent_for, bodies, call
from tests.compatible_servers import gemma3_prompt, llama2_prompt, llamacpp_python
from tests.fake_llm import FakeLLM, ScriptedResponse, openai_text

MISSING_SCORE = "$: 'score' is a required property"


def formatting(prompts: list[str], template: Any = llama2_prompt) -> Any:
    """llama-cpp-python's request checks, keeping each accepted request's formatted prompt."""

    def check(body: Any) -> ScriptedResponse | None:
        refused = llamacpp_python(body)
        if refused is None:
            prompts.append(template(body))
        return refused

    return check


async def run_rejected_then_valid(fake_llm: FakeLLM) -> list[str]:
    prompts: list[str] = []
    fake_llm.refuse_when(formatting(prompts))
    fake_llm.respond(
        call("openai", "submit_result", {"title": "solid"}, "call_a"),
        call("openai", "submit_result", VALID, "call_b"),
    )
    env = {"LLAMACPP_BASE_URL": fake_llm.openai_base_url}
    agent = agent_for("llamacpp:gemma", env=env, options={"output_mode": "tool"})
    result = await agent.run("Grade the essay.")
    assert result.ok and result.retries == 1
    return prompts


async def test_the_llamacpp_profile_sends_the_errors_where_the_template_keeps_them(
    fake_llm: FakeLLM,
) -> None:
    prompts = await run_rejected_then_valid(fake_llm)

    first, second = prompts
    assert MISSING_SCORE not in first
    assert "<output-validation-error>" in second and MISSING_SCORE in second
    # Every call is still answered, as the API requires; the errors follow as the user's turn.
    messages = bodies(fake_llm)[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert "Rejected: the errors follow in the next message." in messages[3]["content"]
    assert MISSING_SCORE in messages[4]["content"]


@pytest.mark.parametrize("role", ["tool", "user"])
async def test_reprompt_as_is_a_profile_field_an_agent_can_set(
    fake_llm: FakeLLM, role: str
) -> None:
    prompts: list[str] = []
    fake_llm.refuse_when(formatting(prompts))
    fake_llm.respond(
        call("openai", "submit_result", {"title": "solid"}, "call_a"),
        call("openai", "submit_result", VALID, "call_b"),
    )
    env = {"LLAMACPP_BASE_URL": fake_llm.openai_base_url}
    profile = {"reprompt_as": role}
    agent = agent_for(
        "llamacpp:gemma", env=env, llm={"profile": profile}, options={"output_mode": "tool"}
    )
    assert (await agent.run("Grade the essay.")).ok

    messages = bodies(fake_llm)[1]["messages"]
    tool_message = next(m for m in messages if m["role"] == "tool")
    # With tool, the errors are in the tool message, which this template drops.
    assert (MISSING_SCORE in tool_message["content"]) == (role == "tool")
    assert (MISSING_SCORE in prompts[1]) == (role == "user")


@pytest.mark.parametrize("mode", ["tool", "native", "prompted"])
async def test_the_integration_chat_format_shows_the_model_the_reprompt_and_the_system_prompt(
    fake_llm: FakeLLM, mode: str
) -> None:
    # bench/integration.py starts llama-cpp-python's server with Gemma 3's chat format: the
    # prompt it formats holds the agent's system prompt and, after a rejected answer, the errors.
    prompts: list[str] = []
    fake_llm.refuse_when(formatting(prompts, gemma3_prompt))
    if mode == "tool":
        fake_llm.respond(
            call("openai", "submit_result", {"title": "solid"}, "call_a"),
            call("openai", "submit_result", VALID, "call_b"),
        )
    else:
        fake_llm.respond(
            openai_text(json.dumps({"title": "solid"})), openai_text(json.dumps(VALID))
        )
    env = {"LLAMACPP_BASE_URL": fake_llm.openai_base_url}
    agent = agent_for(
        "llamacpp:gemma", env=env, system_prompt="You grade essays.", options={"output_mode": mode}
    )
    result = await agent.run("Grade the essay.")
    assert result.ok and result.retries == 1

    first, second = prompts
    # The server tokenizes a formatted prompt without adding <bos> (added_special): the
    # template writes it, as Gemma 3's own does.
    assert first.startswith("<bos><start_of_turn>user\nYou grade essays.")
    assert MISSING_SCORE not in first
    assert MISSING_SCORE in second
    assert second.endswith("<end_of_turn>\n<start_of_turn>model\n")
