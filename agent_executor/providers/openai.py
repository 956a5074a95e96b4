"""OpenAI Chat Completions, and any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio).

Uses the official ``openai`` SDK (``AsyncOpenAI``) for transport, bounded retries and error types;
the reply body is read as plain JSON so that compatible servers' quirks survive: arguments sent as
an object instead of a string, missing or empty tool-call ids (deterministic ones are made up), a
``tool_choice`` ignored (the text is returned as is, and the run loop decides), ``content`` sent as
a list of parts. Every SDK error becomes a :class:`ProviderError` in :func:`_translate_errors`.

Clients: a pooled SDK client is bound to the event loop it first ran on, so clients are kept one per
running loop (and per key, base URL and retry setting) in :data:`_CLIENTS`, and each is closed when
its loop shuts down (``asyncio.run`` and ``asyncio.Runner`` finalise async generators before
closing the loop; a guard generator closes the client then). Connections are reused across calls
and runs. Where no such shutdown can be relied on (no asyncio loop, or no async-generator hooks),
each call gets a fresh client closed after it.
"""

from __future__ import annotations

import functools
import json
import logging
import ssl
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Literal

import httpx2
import openai
from pydantic import JsonValue

from agent_contracts.errors import ConfigError, ProviderError
from agent_contracts.messages import Message, ToolCall
from agent_contracts.profiles import ProviderProfile
from agent_core.json_text import json_body
from agent_executor.providers.base import (
    JsonObject,
    ModelTurn,
    ModelTurnRequest,
    ToolDefinition,
    ToolNameMap,
    connection_message,
    error_body,
    error_kind_for_status,
    error_text,
    tool_names_for,
)
from agent_executor.providers.clients import LoopClients
from agent_executor.providers.error_text import refine_error_kind, refuse_retry_when_malformed
from agent_executor.providers.openai_replies import (
    _turn,
)
from agent_executor.providers.profiles import OPENAI_PROFILE
from agent_executor.redaction import remember_secret

__all__ = ["TOOL_ERROR_PREFIX", "OpenAIProvider"]

logger = logging.getLogger(__name__)

TOOL_ERROR_PREFIX = "[tool error] "
"""Prefix of a failed tool's result: Chat Completions has no ``is_error`` flag."""

_OFFICIAL_HOST = "api.openai.com"


class OpenAIProvider:
    """A provider for OpenAI Chat Completions or an OpenAI-compatible server.

    Example:
        ``OpenAIProvider("gpt-4.1-mini")`` reads ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` through
        the SDK; ``OpenAIProvider("qwen3", base_url="http://localhost:11434/v1", api_key="ollama",
        name="ollama")`` talks to Ollama.
    """

    supports_tools = True
    """Chat Completions takes tools."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        name: str = "openai",
        max_retries: int = 2,
        timeout_s: float = 120.0,
        max_tokens_param: Literal["max_tokens", "max_completion_tokens"] | None = None,
        profile: ProviderProfile | None = None,
    ) -> None:
        """Create the provider (credentials are checked now, no request is made).

        Args:
            model: The model to call, such as ``gpt-4.1-mini``.
            api_key: The API key; ``None`` lets the SDK read ``OPENAI_API_KEY``.
            base_url: The server's ``/v1`` URL; ``None`` lets the SDK read ``OPENAI_BASE_URL`` and
                fall back to OpenAI's.
            name: The provider name reported in turns and errors (``ollama`` for Ollama...).
            max_retries: The SDK's bounded retries (429, 5xx, timeouts, connection errors).
            timeout_s: The default per-request timeout in seconds.
            max_tokens_param: Which field carries ``max_tokens``; ``None`` picks
                ``max_completion_tokens`` for OpenAI itself and ``max_tokens`` for other servers.
            profile: What the server can be sent; ``None`` is OpenAI's own (strict tools, native
                structured output). ``resolve_model`` gives compatible servers theirs.

        Raises:
            ConfigError: No API key was given or found in the environment, or an option is invalid.
        """
        self.name = name
        self.model = model
        self.profile = profile if profile is not None else OPENAI_PROFILE
        self.timeout_s = timeout_s
        self._max_retries = max_retries
        try:
            client = openai.AsyncOpenAI(
                api_key=api_key,
                base_url=base_url,
                max_retries=max_retries,
                timeout=timeout_s,
                http_client=_http_client(),
            )
        except openai.OpenAIError as exc:
            raise ConfigError(
                f"{name}: no API key: pass api_key= or set OPENAI_API_KEY ({exc})"
            ) from exc
        self._api_key = client.api_key
        remember_secret(self._api_key)  # never shown, whatever its shape
        self.base_url = str(client.base_url)
        self._client_key = (self._api_key, self.base_url, max_retries)
        if max_tokens_param is None:
            official = client.base_url.host == _OFFICIAL_HOST
            max_tokens_param = "max_completion_tokens" if official else "max_tokens"
        self._max_tokens_param = max_tokens_param

    def variant(
        self, *, profile: ProviderProfile | None = None, max_retries: int | None = None
    ) -> OpenAIProvider:
        """Return a provider for the same server, model and key with other settings.

        Args:
            profile: The profile the copy sends by (``None``: this one's).
            max_retries: The copy's SDK retries (``None``: this one's); ``agentshape probe``
                asks once, with none.

        Returns:
            The new provider (no request is made).
        """
        return OpenAIProvider(
            self.model,
            api_key=self._api_key,
            base_url=self.base_url,
            name=self.name,
            max_retries=self._max_retries if max_retries is None else max_retries,
            timeout_s=self.timeout_s,
            max_tokens_param=self._max_tokens_param,
            profile=self.profile if profile is None else profile,
        )

    def _new_client(self) -> openai.AsyncOpenAI:
        """Return a new SDK client (the TLS context, the costly part, is shared)."""
        return openai.AsyncOpenAI(
            http_client=_http_client(),
            api_key=self._api_key,
            base_url=self.base_url,
            max_retries=self._max_retries,
            timeout=self.timeout_s,
        )

    async def request(self, turn: ModelTurnRequest) -> ModelTurn:
        """Make one Chat Completions call.

        Args:
            turn: The conversation, tools and settings for this call.

        Returns:
            The normalised reply; ``raw`` is the response body exactly as the server sent it.

        Raises:
            ProviderError: The call failed after the SDK's retries, or the reply is not a chat
                completion.
        """
        names = tool_names_for(turn)
        messages: list[JsonValue] = [*_messages(turn.messages, names)]
        body: JsonObject = {"model": self.model, "messages": messages}
        if turn.tools:
            body["tools"] = [_tool_param(tool, names) for tool in turn.tools]
            body["tool_choice"] = _tool_choice(turn, names)
            if turn.parallel_tool_calls is not None:
                body["parallel_tool_calls"] = turn.parallel_tool_calls
        if turn.max_tokens is not None:
            body[self._max_tokens_param] = turn.max_tokens
        if turn.temperature is not None:
            body["temperature"] = turn.temperature
        if turn.response_format is not None:
            fmt = turn.response_format
            if self.profile.native_format == "json_object_schema":
                body["response_format"] = {"type": "json_object", "schema": fmt.json_schema}
            else:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": fmt.name,
                        "schema": fmt.json_schema,
                        "strict": fmt.strict,
                    },
                }
        timeout = turn.timeout_s if turn.timeout_s is not None else self.timeout_s
        content = json_body(body)  # a lone surrogate (task, echoed answer) as its escape
        started = time.perf_counter()
        with _translate_errors(self.name):
            client = await _CLIENTS.get(self._client_key, self._new_client)
            if client is not None:
                text = await _post(client, content, timeout)
            else:
                async with self._new_client() as fresh:
                    text = await _post(fresh, content, timeout)
        latency_ms = (time.perf_counter() - started) * 1000
        return _turn(self.name, self.model, text, names, len(turn.messages), latency_ms)


async def _post(client: openai.AsyncOpenAI, content: bytes, timeout: float) -> str:
    """Send a Chat Completions request body and return the reply body's text.

    The body goes out as built (JSON bytes, serialised once by :func:`json_body`), through the
    SDK's generic ``post``: its retries, timeouts and error types apply, but not its per-call walk
    of the typed parameters (about a quarter of a call's client time with a schema the size of the
    pr-reviewer's).
    """
    response = await client.post(
        "/chat/completions", content=content, cast_to=httpx2.Response, options={"timeout": timeout}
    )
    return response.text


_CLIENTS: LoopClients[openai.AsyncOpenAI] = LoopClients()
"""The process's pooled OpenAI clients, one per running event loop and settings."""


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """Return the TLS context every client shares (loading CA certificates takes ~30 ms)."""
    return httpx2.create_ssl_context()


def _http_client() -> httpx2.AsyncClient:
    """Return the SDK's default HTTP client, with malformed-request 5xx answers not retried.

    See :mod:`agent_executor.providers.error_text`.
    """
    return openai.DefaultAsyncHttpxClient(
        verify=_ssl_context(), event_hooks={"response": [refuse_retry_when_malformed]}
    )


@contextmanager
def _translate_errors(provider: str) -> Iterator[None]:
    """Turn every SDK error raised inside into a :class:`ProviderError` (the one place)."""
    try:
        yield
    except openai.APITimeoutError as exc:
        raise ProviderError(error_text(exc), provider=provider, kind="provider_timeout") from exc
    except openai.APIConnectionError as exc:
        message = error_text(connection_message(exc))
        raise ProviderError(message, provider=provider, kind="provider_connection_error") from exc
    except openai.APIStatusError as exc:
        status = exc.status_code
        text = f"{exc.message} {exc.response.text}"
        kind = refine_error_kind(error_kind_for_status(status), status, text)
        raise ProviderError(
            error_text(exc.message),
            provider=provider,
            kind=kind,
            status=status,
            body=error_body(exc.body),
        ) from exc
    except (openai.OpenAIError, openai.InvalidWebhookSignatureError) as exc:
        code = getattr(exc, "status_code", None)
        raise ProviderError(
            error_text(exc),
            provider=provider,
            kind="provider_error",
            status=code if isinstance(code, int) else None,
            body=error_body(getattr(exc, "body", None)),
        ) from exc


def _tool_param(tool: ToolDefinition, names: ToolNameMap) -> JsonObject:
    """Return a tool definition in Chat Completions form."""
    function: JsonObject = {
        "name": names.to_wire(tool.name),
        "description": tool.description,
        "parameters": tool.parameters,
    }
    if tool.strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def _tool_choice(turn: ModelTurnRequest, names: ToolNameMap) -> JsonValue:
    """Return the request's tool choice in Chat Completions form."""
    choice = turn.tool_choice
    if choice.mode == "tool" and choice.tool_name is not None:
        return {"type": "function", "function": {"name": names.to_wire(choice.tool_name)}}
    return choice.mode


def _messages(messages: list[Message], names: ToolNameMap) -> list[JsonObject]:
    """Return the conversation in Chat Completions form."""
    wire: list[JsonObject] = []
    for message in messages:
        if message.role == "tool":
            for result in message.tool_results:
                prefix = TOOL_ERROR_PREFIX if result.is_error else ""
                wire.append(
                    {
                        "role": "tool",
                        "tool_call_id": result.tool_call_id,
                        "content": prefix + result.content,
                    }
                )
            if message.content:
                wire.append({"role": "user", "content": message.content})
        elif message.role == "assistant" and message.tool_calls:
            wire.append(
                {
                    "role": "assistant",
                    # A string, never null: llama-cpp-python's server refuses a null content.
                    "content": message.content,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": names.to_wire(call.name),
                                "arguments": _arguments_text(call),
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        else:
            wire.append({"role": message.role, "content": message.content})
    return wire


def _arguments_text(call: ToolCall) -> str:
    """Return the arguments to echo back: always the JSON text of an object.

    What the model sent when it was a JSON object, else its parsed value as JSON; arguments
    that were not a JSON object (cut off, broken, a list) are echoed as ``{}``, because Ollama
    and llama.cpp parse the echoed arguments and refuse the whole request otherwise. The error
    tool result that follows tells the model what was wrong with what it sent.
    """
    if not isinstance(call.arguments, dict):
        return "{}"
    if call.raw_arguments and call.raw_arguments.lstrip().startswith("{"):
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)
