"""``agentshape probe`` against the fake server judging requests as each real server does."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from agent_executor._cli import main
from agent_executor._providers.profiles import LLAMACPP_PROFILE
from tests.compatible_servers import llamacpp_python, ollama
from tests.fake_llm import (
    FakeLLM,
    ScriptedResponse,
    openai_text,
    openai_tool_call,
    status_error,
)
from tests.gbnf_recognizer import first_text

Check = Callable[[Any], ScriptedResponse | None]


def prompt_tokens(body: Any, *, drop_tool_messages: bool = False) -> int:
    """A word a token, over the messages the server's chat template keeps."""
    kept = [
        message
        for message in body["messages"]
        if not (drop_tool_messages and message["role"] == "tool")
    ]
    return sum(len(str(message.get("content") or "").split()) for message in kept)


def answering(
    check: Check,
    *,
    drop_tool_messages: bool = False,
    text_for_required: bool = False,
    grammar: bool = False,
) -> Check:
    """The server's checks, then an answer that does what the request asked.

    The answer reports the prompt's tokens as a server counts what its template kept;
    ``text_for_required`` answers ``tool_choice: "required"`` in text, as a server that accepts
    it without applying it does. With ``grammar`` a request's GBNF ``grammar`` field is decoded
    under (llama.cpp's servers); without, it is ignored as an unknown field (Ollama, vLLM).
    """

    def answer(body: Any) -> ScriptedResponse:
        refused = check(body)
        if refused is not None:
            return refused
        if grammar and body.get("grammar"):
            reply = openai_text(first_text(body["grammar"]))
        elif body.get("response_format") or body.get("grammar"):
            reply = openai_text(json.dumps({"answer": "Paris"}))
        elif text_for_required and body.get("tool_choice") == "required":
            reply = openai_text("Paris.")
        else:
            reply = openai_tool_call("record_answer", {"answer": "Paris"})
        tokens = prompt_tokens(body, drop_tool_messages=drop_tool_messages)
        usage = {"prompt_tokens": tokens, "completion_tokens": 5, "total_tokens": tokens + 5}
        assert isinstance(reply.body, dict)
        return replace(reply, body={**reply.body, "usage": usage})

    return answer


def everything(body: Any) -> ScriptedResponse | None:
    """A server that refuses nothing."""
    return None


def probe(
    fake_llm: FakeLLM,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    model: str,
    *flags: str,
) -> tuple[int, str]:
    prefix = model.split(":")[0]
    variable = (
        "OPENAI_COMPATIBLE_BASE_URL" if prefix == "compatible" else f"{prefix.upper()}_BASE_URL"
    )
    monkeypatch.setenv(variable, fake_llm.openai_base_url)
    code = main(["probe", model, *flags])
    return code, capsys.readouterr().out


def test_a_llamacpp_server_probes_to_the_llamacpp_profile(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.refuse_when(answering(llamacpp_python, grammar=True))

    code, out = probe(fake_llm, monkeypatch, capsys, "compatible:gemma", "--json")

    assert code == 0
    report = json.loads(out)
    outcomes = {p["name"]: (p["accepted"], p["honoured"]) for p in report["probes"]}
    assert outcomes == {
        "tools": (True, True),
        "named_tool_choice": (True, True),
        "required_tool_choice": (False, False),
        "strict_tools": (True, True),
        "json_schema_format": (False, False),
        "json_object_schema_format": (True, True),
        "grammar_field": (True, True),
        "tool_conversation": (True, True),
    }
    # This server keeps tool messages (its model has a chat template that renders them), so
    # re-prompts may go as tool results; the llamacpp: profile assumes a fallback template.
    # No probe tries sampling settings: the re-ask's penalty stays the model string's (none).
    kept = LLAMACPP_PROFILE.model_copy(
        update={"reprompt_as": "tool", "reask_frequency_penalty": None}
    )
    assert report["profile"] == kept.model_dump(exclude_none=True)
    refused = next(p for p in report["probes"] if p["name"] == "json_schema_format")
    assert "Input should be 'text' or 'json_object'" in refused["detail"]
    sent = [request.body for request in fake_llm.requests]
    assert sent[4]["response_format"]["type"] == "json_schema"
    assert sent[5]["response_format"] == {
        "type": "json_object",
        "schema": sent[5]["response_format"]["schema"],
    }
    # The grammar probe sends agentshape's grammar of a one-value schema, and no schema.
    assert "response_format" not in sent[6] and "kq7z-grammar" in sent[6]["grammar"]
    assert len(sent) == 9  # one request each (two for the conversation): none is retried


def test_the_text_report_gives_the_llm_section_and_the_flags(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.refuse_when(answering(llamacpp_python, grammar=True))

    code, out = probe(fake_llm, monkeypatch, capsys, "compatible:gemma")

    assert code == 0
    assert "  required_tool_choice        refused: 500 " in out
    assert "llm:\n  model: compatible:gemma\n  profile: {tool_dialect: neutral," in out
    assert "native_format: json_object_schema, grammar_output: true, reprompt_as: tool," in out
    assert (
        "--profile native_output=true --profile native_format=json_object_schema "
        "--profile grammar_output=true --profile takes_grammar=true\n"
    ) in out


def test_a_server_that_takes_everything(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.refuse_when(answering(ollama))

    code, out = probe(fake_llm, monkeypatch, capsys, "ollama:qwen3", "--json")

    profile = json.loads(out)["profile"]
    assert code == 0
    assert profile["supports_required_tool_choice"] is True
    assert (profile["native_output"], profile["native_format"]) == (True, "json_schema")
    assert profile["strict_tools"] is False  # acceptance does not show enforcement


def test_a_server_that_ignores_the_tool_choice(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.respond_always(openai_text("Paris."))

    code, out = probe(fake_llm, monkeypatch, capsys, "vllm:m", "--json")

    report = json.loads(out)
    named = next(p for p in report["probes"] if p["name"] == "named_tool_choice")
    assert named["accepted"] and not named["honoured"]
    assert "answered in text" in named["detail"]
    assert report["profile"]["can_force_tool"] is False
    assert report["profile"]["native_output"] is False  # accepted, but no JSON came back
    assert code == 0


def test_unreachable_and_wrong_models_are_one_line_errors(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("VLLM_BASE_URL", "http://127.0.0.1:9/v1")
    assert main(["probe", "vllm:m"]) == 2
    assert "the server at http://127.0.0.1:9/v1/ cannot be reached" in capsys.readouterr().err
    assert main(["probe", "test"]) == 2
    assert "probe asks servers that speak the OpenAI wire" in capsys.readouterr().err


def test_a_tool_choice_accepted_but_not_applied_is_not_recommended(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.refuse_when(answering(everything, text_for_required=True))

    code, out = probe(fake_llm, monkeypatch, capsys, "ollama:qwen3")

    assert code == 0
    assert "  required_tool_choice        accepted, but answered in text instead" in out
    # The compatible profile has it off already: the probe saw nothing to turn it on.
    assert "supports_required_tool_choice: false" in out
    assert "supports_required_tool_choice=true" not in out


def test_a_server_that_drops_tool_messages_is_seen_to(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.refuse_when(answering(everything, drop_tool_messages=True))

    code, out = probe(fake_llm, monkeypatch, capsys, "ollama:qwen3", "--json")

    assert code == 0
    report = json.loads(out)
    conversation = next(p for p in report["probes"] if p["name"] == "tool_conversation")
    assert conversation["accepted"] and not conversation["honoured"]
    assert "the tool message did not reach the model" in conversation["detail"]
    # The two conversations differ only in their tool results (and the nonce that opens them).
    sent = [request.body for request in fake_llm.requests][-2:]
    assert [m["role"] for m in sent[0]["messages"]] == ["system", "user", "assistant", "tool"]
    assert len(sent[1]["messages"][3]["content"]) > len(sent[0]["messages"][3]["content"])

    assert report["profile"]["reprompt_as"] == "user"

    code, out = probe(fake_llm, monkeypatch, capsys, "ollama:qwen3")
    assert "  tool_conversation           accepted, but the tool message did not reach" in out
    assert "this server drops tool messages: re-prompts go as user messages" in out
    assert "--profile reprompt_as=user" in out


def test_a_server_that_keeps_tool_messages_is_seen_to(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_llm.refuse_when(answering(everything))

    code, out = probe(fake_llm, monkeypatch, capsys, "ollama:qwen3")

    assert code == 0
    assert "  tool_conversation           accepted\n" in out
    assert "drops tool messages" not in out and "reprompt_as=" not in out
    assert "reprompt_as: tool, stop_sequences: true, takes_grammar: false}" in out


def test_no_flag_for_a_native_format_that_was_not_seen_to_work(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def no_native_output(body: Any) -> ScriptedResponse | None:
        if body.get("response_format"):
            return openai_text("Paris.")  # accepted, but not JSON
        return None

    fake_llm.refuse_when(answering(no_native_output))

    # The llamacpp: profile asks for json_object_schema native output.
    code, out = probe(fake_llm, monkeypatch, capsys, "llamacpp:gemma")

    assert code == 0
    assert "--profile native_output=false" in out
    assert "native_format=" not in out.split("or, for one run")[1]


def test_a_server_that_ignores_the_grammar_field_is_not_sent_one(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # llama-cpp-python's checks, but the field is dropped as an unknown one (as Ollama and vLLM
    # do): the reply is the model's own JSON, not the one text the grammar allows.
    fake_llm.refuse_when(answering(llamacpp_python))

    code, out = probe(fake_llm, monkeypatch, capsys, "llamacpp:gemma", "--json")

    assert code == 0
    report = json.loads(out)
    field = next(p for p in report["probes"] if p["name"] == "grammar_field")
    assert field["accepted"] and not field["honoured"]
    assert "the reply does not follow the grammar" in field["detail"]
    assert report["profile"]["takes_grammar"] is False
    # Native output still works through the server's own json_object grammar.
    assert report["profile"]["native_format"] == "json_object_schema"

    code, out = probe(fake_llm, monkeypatch, capsys, "llamacpp:gemma")
    assert "--profile takes_grammar=false" in out


def test_a_server_that_refuses_the_grammar_field(
    fake_llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def unknown_fields_refused(body: Any) -> ScriptedResponse | None:
        if "grammar" in body:
            return status_error(400, "Unrecognized request argument supplied: grammar")
        return None

    fake_llm.refuse_when(answering(unknown_fields_refused, grammar=True))

    code, out = probe(fake_llm, monkeypatch, capsys, "compatible:m", "--json")

    report = json.loads(out)
    field = next(p for p in report["probes"] if p["name"] == "grammar_field")
    assert (field["accepted"], field["honoured"]) == (False, False)
    assert "Unrecognized request argument supplied: grammar" in field["detail"]
    assert report["profile"]["takes_grammar"] is False
    assert code == 0
