"""What real OpenAI-compatible servers refuse, as request checks for the fake server.

Each function judges a Chat Completions request body the way one server's request handling
does (read from each server's source) and returns the refusal that server sends, or ``None``:

- llama-cpp-python's server validates messages with TypedDicts: an assistant ``content`` must
  be a string when present (``null`` is refused), ``response_format.type`` must be ``text`` or
  ``json_object``, and ``tool_choice: "required"`` fails; every such failure is a 500 whose
  body is the validation's complaint. A ``grammar`` must parse as GBNF (``LlamaGrammar.
  from_string`` raises, a 500), and, as llama.cpp's ``llama-server`` rules, may not come with a
  schema ("Either json_schema or grammar can be specified, but not both", a 400).
- Ollama decodes each echoed tool call's ``arguments`` into an object ("invalid tool call
  arguments", 400) and needs ``content`` to be a string unless the message has tool calls.
- vLLM follows OpenAI's schema: ``content`` is a string, a list of parts or ``null``;
  ``arguments`` is a string; a tool message has a ``tool_call_id``.

:func:`llama2_prompt` is the prompt llama-cpp-python's server formats for a model file without
a chat template (it falls back to the ``llama-2`` chat format, whose role map keeps only
``user`` and ``assistant`` messages), so a test can see what reached such a model.
:func:`gemma3_prompt` is the prompt the same server formats with the chat format
``bench/integration.py`` starts it with (Gemma 3's, ``bench/gemma3_chat_format.json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from jinja2.sandbox import ImmutableSandboxedEnvironment

from tests.fake_llm import ScriptedResponse
from tests.gbnf_recognizer import parse_grammar

__all__ = ["SERVERS", "gemma3_prompt", "llama2_prompt", "llamacpp_python", "ollama", "vllm"]

GEMMA3_CHAT_FORMAT = Path(__file__).resolve().parents[1] / "bench" / "gemma3_chat_format.json"


def _error(status: int, message: str, kind: str = "invalid_request_error") -> ScriptedResponse:
    body = {"error": {"message": message, "type": kind, "param": None, "code": None}}
    return ScriptedResponse(status=status, body=body)


def llamacpp_python(body: Any) -> ScriptedResponse | None:
    """llama-cpp-python's ``/v1/chat/completions`` request validation."""
    problems = []
    for index, message in enumerate(body.get("messages", [])):
        role = message.get("role")
        if role == "assistant" and "content" in message and not isinstance(message["content"], str):
            problems.append(
                f"{{'type': 'string_type', 'loc': ('body', 'messages', {index}, 'typed-dict', "
                f"'content'), 'msg': 'Input should be a valid string', 'input': None}}"
            )
        for call in message.get("tool_calls") or []:
            if not isinstance(call.get("function", {}).get("arguments"), str):
                problems.append(f"messages.{index}.tool_calls: arguments should be a string")
    for name in ("frequency_penalty", "presence_penalty"):
        penalty = body.get(name)
        if penalty is not None and not (
            isinstance(penalty, int | float) and -2.0 <= penalty <= 2.0
        ):
            # Its request model's fields (``ge=-2.0, le=2.0``), checked before the handler.
            return ScriptedResponse(
                status=422, body={"detail": [{"loc": ["body", name], "msg": "out of range"}]}
            )
    fmt = body.get("response_format")
    if isinstance(fmt, dict) and fmt.get("type") not in ("text", "json_object"):
        problems.append(
            "{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            "'msg': \"Input should be 'text' or 'json_object'\"}"
        )
    if problems:
        return _error(500, "[" + ", ".join(problems) + "]", "internal_server_error")
    grammar = body.get("grammar")
    if grammar is not None:
        if isinstance(fmt, dict) and "schema" in fmt:
            return _error(400, 'Either "json_schema" or "grammar" can be specified, but not both')
        try:
            parse_grammar(grammar)
        except (ValueError, IndexError) as exc:
            return _error(500, f"failed to parse grammar: {exc}", "internal_server_error")
    if body.get("tool_choice") == "required":
        return ScriptedResponse(status=500, body="Internal Server Error")
    return None


def ollama(body: Any) -> ScriptedResponse | None:
    """Ollama's OpenAI-compatible layer (``openai.FromChatRequest``)."""
    for message in body.get("messages", []):
        content = message.get("content")
        if not isinstance(content, str | list) and not message.get("tool_calls"):
            return _error(400, f"invalid message content type: {type(content).__name__}")
        for call in message.get("tool_calls") or []:
            try:
                arguments = json.loads(call["function"]["arguments"])
            except (KeyError, TypeError, ValueError):
                return _error(400, "invalid tool call arguments")
            if not isinstance(arguments, dict):
                return _error(400, "invalid tool call arguments")
    return None


def vllm(body: Any) -> ScriptedResponse | None:
    """vLLM's OpenAI-schema request validation (422 with the field)."""
    for index, message in enumerate(body.get("messages", [])):
        if not isinstance(message.get("content"), str | list | type(None)):
            return _error(422, f"messages.{index}.content: Input should be a valid string")
        if message.get("role") == "tool" and not message.get("tool_call_id"):
            return _error(422, f"messages.{index}.tool_call_id: Field required")
        for call in message.get("tool_calls") or []:
            if not isinstance(call.get("function", {}).get("arguments"), str):
                return _error(422, f"messages.{index}: arguments: Input should be a valid string")
    return None


def llama2_prompt(body: Any) -> str:
    """The prompt llama-cpp-python's ``llama-2`` chat format makes of a request's messages.

    As ``format_llama2`` in its ``llama_chat_format.py``: the first system message goes in a
    ``<<SYS>>`` block; the other messages are mapped by role (``user`` to ``<s>[INST]``,
    ``assistant`` to ``[/INST]``) and every other role, ``tool`` among them, is left out; a
    message whose content is not a string keeps only its role marker.
    """
    messages = body.get("messages", [])
    system = next((m.get("content") or "" for m in messages if m.get("role") == "system"), "")
    if system:
        system = f"<s>[INST] <<SYS>>\n{system}\n<</SYS>>"
    markers = {"user": "<s>[INST]", "assistant": "[/INST]"}
    kept = [
        (markers[m["role"]], m.get("content") if isinstance(m.get("content"), str) else None)
        for m in messages
        if m.get("role") in markers
    ]
    separators = [" ", "</s>"]
    prompt = system + " "
    for index, (marker, content) in enumerate(kept):
        if system and index == 0:
            prompt += (content or "") + separators[index % 2]
        elif content:
            prompt += marker + content + " " + separators[index % 2]
        else:
            prompt += marker + " "
    return prompt + "[/INST]"


def gemma3_prompt(body: Any) -> str:
    """The prompt llama-cpp-python's server formats with the integration's Gemma 3 chat format.

    As ``hf_tokenizer_config_to_chat_formatter`` in its ``llama_chat_format.py``: an empty
    assistant message is appended (to open the model's turn) and the template is rendered in a
    sandboxed Jinja environment with ``trim_blocks`` and ``lstrip_blocks``.
    """
    config = json.loads(GEMMA3_CHAT_FORMAT.read_text())
    template = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True).from_string(
        config["chat_template"]
    )
    messages = [*body.get("messages", []), {"role": "assistant", "content": ""}]
    return template.render(
        messages=messages, bos_token=config["bos_token"], eos_token=config["eos_token"]
    )


SERVERS = {"llamacpp": llamacpp_python, "ollama": ollama, "vllm": vllm}
"""Each server's checks, by the model prefix that talks to it."""
