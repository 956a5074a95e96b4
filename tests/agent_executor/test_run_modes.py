"""The run loops' bounds on input-tool calls, over the real SDKs against the scripted server.

A model can ask for anything in one turn: thousands of calls, arguments of megabytes, a listing
of file names that are not UTF-8. Each is answered within bounds, and the run goes on.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent_core._prompts import FINAL_ANSWER_NOW
from agent_executor._run_modes import MAX_INPUT_CALLS_PER_TURN
from tests.agent_executor.test_run import (
    APIS,
    VALID,
    agent_for,
    bodies,
    call,
    last_tool_results,
    provider_for,
)
from tests.compatible_servers import llamacpp_python
from tests.fake_llm import FakeLLM, openai_text, openai_tool_calls


async def test_calls_past_the_fan_out_cap_are_answered_without_running(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    many = [("fs_read", json.dumps({"path": "a.txt"}), f"call_{n}") for n in range(40)]
    fake_llm.respond(openai_tool_calls(many), call("openai", "submit_result", VALID, "done"))
    agent = agent_for(provider_for("openai", fake_llm), tools=["fs:read"], workspace=tmp_path)
    result = await agent.run("Read it, a lot.")

    assert result.ok and result.retries == 0
    answers = last_tool_results("openai", bodies(fake_llm)[1])
    assert len(answers) == 40
    ran, refused = answers[:MAX_INPUT_CALLS_PER_TURN], answers[MAX_INPUT_CALLS_PER_TURN:]
    assert all(not a["is_error"] and "alpha" in a["content"] for a in ran)
    assert all(a["is_error"] and a["content"].startswith("not run: at most 32") for a in refused)


@pytest.mark.parametrize("api", APIS)
async def test_huge_input_tool_arguments_are_refused(
    fake_llm: FakeLLM, api: str, tmp_path: Path
) -> None:
    fake_llm.respond(
        call(api, "fs_read", {"path": "x" * 70_000}, "call_big"),
        call(api, "submit_result", VALID, "done"),
    )
    agent = agent_for(provider_for(api, fake_llm), tools=["fs:read"], workspace=tmp_path)
    result = await agent.run("Read it.")

    assert result.ok
    (answer,) = last_tool_results(api, bodies(fake_llm)[1])
    assert answer["is_error"]
    assert answer["content"] == (
        "the arguments are 70,012 characters long; an input tool takes at most 65,536"
    )


@pytest.mark.parametrize("api", APIS)
async def test_a_listing_of_names_that_are_not_utf8_reaches_the_model(
    fake_llm: FakeLLM, api: str, tmp_path: Path
) -> None:
    try:
        (tmp_path / os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 name\n")
    except (UnicodeEncodeError, OSError):
        pytest.skip("this filesystem refuses file names that are not UTF-8")
    fake_llm.respond(
        call(api, "fs_list", {}, "call_list"), call(api, "submit_result", VALID, "done")
    )
    agent = agent_for(provider_for(api, fake_llm), tools=["fs:list"], workspace=tmp_path)
    result = await agent.run("List it.")

    assert result.ok, result.error
    (answer,) = last_tool_results(api, bodies(fake_llm)[1])
    assert not answer["is_error"]
    assert answer["content"] == "caf\\xe9.txt"


# Input tools first, then the answer under llama.cpp's grammar -----------------------------------


def llamacpp_agent(fake_llm: FakeLLM, tmp_path: Path, **config: Any) -> Any:
    fake_llm.refuse_when(llamacpp_python)
    env = {"LLAMACPP_BASE_URL": fake_llm.openai_base_url}
    return agent_for("llamacpp:gemma", env=env, tools=["fs:read"], workspace=tmp_path, **config)


async def test_a_llamacpp_agent_runs_its_tools_then_answers_under_the_grammar(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    (tmp_path / "essay.txt").write_text("An essay about rivers.\n")
    fake_llm.respond(
        call("openai", "fs_read", {"path": "essay.txt"}, "call_read"),
        openai_text("I have read the essay."),
        openai_text(json.dumps(VALID)),
    )
    result = await llamacpp_agent(fake_llm, tmp_path).run("Grade essay.txt.")

    assert result.ok and result.retries == 0 and result.result_data == VALID
    first, second, last = bodies(fake_llm)
    # The tool turns offer the input tools and no grammar (llama.cpp refuses both together).
    for body in (first, second):
        assert [tool["function"]["name"] for tool in body["tools"]] == ["fs_read"]
        assert "grammar" not in body and "response_format" not in body
    assert "An essay about rivers." in second["messages"][-1]["content"]
    # The answer's turn: agentshape's grammar of the contract, no tools, after the ask for it.
    assert "tools" not in last and "tool_choice" not in last
    assert last["grammar"].startswith("root ::=")
    assert last["messages"][-1] == {"role": "user", "content": FINAL_ANSWER_NOW}
    assert [a.mode for a in result.attempts] == ["native"]


async def test_the_grammar_answer_keeps_its_step_when_the_model_keeps_calling_tools(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    (tmp_path / "essay.txt").write_text("An essay.\n")
    read = call("openai", "fs_read", {"path": "essay.txt"}, "call_read")
    fake_llm.respond(read, read, openai_text(json.dumps(VALID)))
    agent = llamacpp_agent(fake_llm, tmp_path, max_steps=3)
    result = await agent.run("Grade essay.txt.")

    assert result.ok
    *tool_turns, last = bodies(fake_llm)
    assert len(tool_turns) == 2 and all("grammar" not in body for body in tool_turns)
    assert "grammar" in last and "tools" not in last


async def test_an_asked_for_mode_still_wins_over_the_grammar(
    fake_llm: FakeLLM, tmp_path: Path
) -> None:
    fake_llm.respond(call("openai", "submit_result", VALID, "call_submit"))
    agent = llamacpp_agent(fake_llm, tmp_path, options={"output_mode": "tool"})
    assert (await agent.run("Grade it.")).ok

    (body,) = bodies(fake_llm)
    assert "grammar" not in body
    assert [tool["function"]["name"] for tool in body["tools"]] == ["fs_read", "submit_result"]
