"""OpenAI Chat Completions, and any OpenAI-compatible server (Ollama, vLLM, llama.cpp, LM Studio).

Uses the official ``openai`` SDK (``AsyncOpenAI``) for transport, bounded retries and error types;
the reply body is read as plain JSON so that compatible servers' quirks survive: arguments sent as
an object instead of a string, missing or empty tool-call ids (deterministic ones are made up), a
``tool_choice`` ignored (the text is returned as is, and the run loop decides), ``content`` sent as
a list of parts. Every SDK error becomes a :class:`ProviderError` in :func:`translate_errors`.

``stream`` sends the same body with ``stream: true`` (and ``stream_options.include_usage``, left
out from then on for a server that refuses it); the SDK's SSE decoder splits the chunks,
:class:`~agent_executor._providers.openai_chunks.CompletionChunks` reads them as plain JSON and
assembles the ``chat.completion`` the same reply parser reads.

Clients (:data:`CLIENTS`) are pooled one per running event loop (an SDK client is bound to the
loop it first ran on) and per settings; ``request_blocking`` uses the SDK's synchronous client.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from collections.abc import Sequence
from math import isfinite
from types import TracebackType
from typing import Literal, cast

import httpx2
import openai
from pydantic import JsonValue

from agent_contracts._errors import ConfigError, ProviderError
from agent_contracts._messages import Message, ToolCall
from agent_contracts._profiles import ProviderProfile
from agent_core._gbnf_grammar import schema_to_gbnf
from agent_core._json_text import json_body
from agent_executor._providers.base import (
    JsonObject,
    ModelTurn,
    ModelTurnRequest,
    ToolDefinition,
    ToolNameMap,
)
from agent_executor._providers.blocking import call_deadline, deadline_hooks
from agent_executor._providers.clients import LoopClients, SyncClients, ssl_context
from agent_executor._providers.error_text import (
    connection_message,
    error_body,
    error_kind_for_status,
    error_text,
    refine_error_kind,
    refuse_retry_when_malformed,
    refuse_retry_when_malformed_sync,
    retry_after_s,
)
from agent_executor._providers.openai_chunks import CompletionChunks
from agent_executor._providers.openai_replies import _turn, _turn_of
from agent_executor._providers.pooling import sharded_transports
from agent_executor._providers.profiles import OPENAI_PROFILE
from agent_executor._providers.sse import MalformedEvent, sse_data
from agent_executor._providers.stream_errors import stream_error, unfinished_stream
from agent_executor._providers.streaming import DeltaSink, replay_turn
from agent_executor._providers.tool_names import tool_names_for
from agent_executor._redaction import remember_secret

__all__ = ["TOOL_ERROR_PREFIX", "OpenAIProvider"]

logger = logging.getLogger(__name__)

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
            client = async_client(api_key, base_url, max_retries, timeout_s)
        except openai.OpenAIError as exc:
            raise ConfigError(
                f"{name}: no API key: pass api_key= or set OPENAI_API_KEY ({exc})"
            ) from exc
        self._api_key = client.api_key
        remember_secret(self._api_key)  # never shown, whatever its shape
        self.base_url = str(client.base_url)
        self._url = completions_url(client.base_url)
        self._client_key = (self._api_key, self.base_url, max_retries)
        if max_tokens_param is None:
            official = client.base_url.host == _OFFICIAL_HOST
            max_tokens_param = "max_completion_tokens" if official else "max_tokens"
        self._max_tokens_param = max_tokens_param
        self._stream_usage = True  # ask streams for usage; off once the server refused it

    @property
    def max_retries(self) -> int:
        """The SDK's bounded retries of each call (429, 5xx, timeouts, connection errors)."""
        return self._max_retries

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
        return async_client(self._api_key, self.base_url, self._max_retries, self.timeout_s)

    def sdk_client(self) -> openai.AsyncOpenAI:
        """Return a new SDK client with this provider's key, URL and retries (the caller closes it).

        For the calls a run never makes, such as the Batch API's files and batches.

        Returns:
            The client.
        """
        return self._new_client()

    def request_body(self, turn: ModelTurnRequest) -> bytes:
        """Return the exact JSON bytes :meth:`request` would post for ``turn``.

        Args:
            turn: The conversation, tools and settings for one call.

        Returns:
            The request body.
        """
        return self._content(turn, tool_names_for(turn))

    def _content(
        self, turn: ModelTurnRequest, names: ToolNameMap, extra: JsonObject | None = None
    ) -> bytes:
        """Return the request body for ``turn`` as JSON bytes (see :func:`chat_content`)."""
        # A lone surrogate (in the task, or an echoed answer) goes out as its escape.
        return chat_content(
            turn,
            names,
            model=self.model,
            profile=self.profile,
            max_tokens_param=self._max_tokens_param,
            extra=extra,
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
        timeout = turn.timeout_s if turn.timeout_s is not None else self.timeout_s
        content = self._content(turn, names)
        started = time.perf_counter()
        with translate_errors(self.name):
            client = await CLIENTS.get(self._client_key, self._new_client)
            if client is not None:
                text = await _post(client, self._url, content, timeout)
            else:
                async with self._new_client() as fresh:
                    text = await _post(fresh, self._url, content, timeout)
        latency_ms = (time.perf_counter() - started) * 1000
        return _turn(self.name, self.model, text, names, len(turn.messages), latency_ms)

    def request_blocking(self, turn: ModelTurnRequest, deadline: float | None) -> ModelTurn:
        """Make one Chat Completions call with the SDK's synchronous client (for ``run_sync``).

        Args:
            turn: The conversation, tools and settings for this call.
            deadline: When the run must end (``time.monotonic()``): no HTTP attempt outlasts it
                (see :mod:`agent_executor._providers.blocking`); ``None`` for no bound.

        Returns:
            What :meth:`request` returns for the same reply.

        Raises:
            ProviderError: As :meth:`request` (``provider_timeout`` when the deadline cut an
                attempt short).
        """
        names = tool_names_for(turn)
        content = self._content(turn, names)
        timeout = turn.timeout_s if turn.timeout_s is not None else self.timeout_s
        started = time.perf_counter()
        with translate_errors(self.name), call_deadline(deadline):
            client = SYNC_CLIENTS.get(self._client_key, self._new_sync_client)
            response = client.post(
                self._url,
                content=content,
                cast_to=httpx2.Response,
                options=_options(timeout),
            )
            body = _body_of(response)
        latency_ms = (time.perf_counter() - started) * 1000
        return _turn(self.name, self.model, body, names, len(turn.messages), latency_ms)

    def _new_sync_client(self) -> openai.OpenAI:
        """Return a new synchronous SDK client with this provider's settings."""
        return sync_client(self._api_key, self.base_url, self._max_retries, self.timeout_s)

    async def stream(self, turn: ModelTurnRequest, on_delta: DeltaSink) -> ModelTurn:
        """Make one Chat Completions call with streaming, handing the reply over as it comes.

        The body is :meth:`request`'s with ``stream`` (and ``stream_options.include_usage``, so
        the last chunk carries the usage). A server that answers with a whole completion
        instead of a stream has its reply handed to ``on_delta`` in one piece per part.

        Args:
            turn: The conversation, tools and settings for this call.
            on_delta: Takes each piece of text and of tool-call arguments as it arrives.

        Returns:
            The reply exactly as :meth:`request` returns it for the same reply; ``raw`` is the
            ``chat.completion`` body assembled from the chunks.

        Raises:
            ProviderError: The call failed after the SDK's retries, the server sent an error in
                the stream (typed as the same error before the stream), or the stream broke
                off or ended before a ``finish_reason``.
        """
        names = tool_names_for(turn)
        usage = self._stream_usage
        extra: JsonObject = {"stream": True}
        if usage:
            extra["stream_options"] = {"include_usage": True}
        timeout = turn.timeout_s if turn.timeout_s is not None else self.timeout_s
        chunks = CompletionChunks(names, on_delta)
        started = time.perf_counter()
        try:
            whole = await self._send_stream(self._content(turn, names, extra), timeout, chunks)
        except ProviderError as exc:
            if not usage or not _refuses_stream_options(exc):
                raise
            self._stream_usage = False  # this server refuses it (Mistral's API does): not again
            content = self._content(turn, names, {"stream": True})
            whole = await self._send_stream(content, timeout, chunks)
        latency_ms = (time.perf_counter() - started) * 1000
        position = len(turn.messages)
        if whole is not None:  # the server ignored ``stream``
            reply = _turn(self.name, self.model, whole, names, position, latency_ms)
            replay_turn(reply, on_delta)
            return reply
        if chunks.finish_reason is None:
            raise unfinished_stream(self.name, "finish_reason")
        return _turn_of(self.name, self.model, chunks.completion(), names, position, latency_ms)

    async def _send_stream(
        self, content: bytes, timeout: float, chunks: CompletionChunks
    ) -> str | None:
        """Send a streamed request and read it into ``chunks`` (see :func:`_post_stream`)."""
        with translate_errors(self.name):
            client = await CLIENTS.get(self._client_key, self._new_client)
            if client is not None:
                return await _post_stream(client, self._url, content, timeout, chunks, self.name)
            async with self._new_client() as fresh:
                return await _post_stream(fresh, self._url, content, timeout, chunks, self.name)


def _refuses_stream_options(error: ProviderError) -> bool:
    """Tell whether a server refused a request for its ``stream_options`` field."""
    said = f"{error.message} {json.dumps(error.body, default=str)}"
    return error.kind == "provider_bad_request" and "stream_options" in said


async def _post(
    client: openai.AsyncOpenAI, url: str, content: bytes, timeout: float
) -> str | bytes:
    """Send a Chat Completions request body to ``url``; return the reply body (:func:`_body_of`)."""
    response = await client.post(
        url, content=content, cast_to=httpx2.Response, options=_options(timeout)
    )
    return _body_of(response)


def _options(timeout: float) -> openai.RequestOptions:
    """Return a call's request options: its timeout."""
    return {"timeout": timeout}


def _body_of(response: httpx2.Response) -> str | bytes:
    """Return a reply's body: its bytes, or its text when it declares a charset other than UTF-8."""
    # JSON between systems is UTF-8 and the parser reads bytes as they are: decoding first
    # would parse the Content-Type header and copy the body on every call.
    declared = response.headers.get("content-type", "").lower()
    if "charset" in declared and "utf-8" not in declared and "utf8" not in declared:
        return response.text
    return response.content


async def _post_stream(
    client: openai.AsyncOpenAI,
    url: str,
    content: bytes,
    timeout: float,
    chunks: CompletionChunks,
    provider: str,
) -> str | None:
    """Send a streamed Chat Completions request body and read its chunks into ``chunks``."""
    # With ``cast_to=httpx2.Response`` the SDK hands back the response unread (its stream
    # class is not used); the typing follows ``stream_cls``.
    sent: object = await client.post(
        url,
        content=content,
        cast_to=httpx2.Response,
        options=_options(timeout),
        stream=True,
        stream_cls=openai.AsyncStream[object],
    )
    response = cast(httpx2.Response, sent)

    def check(chunk: JsonValue) -> None:
        if isinstance(chunk, dict) and chunk.get("error") and "choices" not in chunk:
            raise stream_error(provider, {"error": error_body(chunk["error"])})

    try:
        if response.headers.get("content-type", "").startswith("application/json"):
            return (await response.aread()).decode("utf-8", "replace")
        async for datas in sse_data(response):
            chunks.read(datas, check)  # the pieces of a read go on merged
    except MalformedEvent as exc:
        raise ProviderError(
            f"the stream sent a chunk that is not JSON ({exc})",
            provider=provider,
            body=error_body(exc.data),
        ) from exc
    except httpx2.TimeoutException as exc:
        raise openai.APITimeoutError(request=response.request) from exc
    except httpx2.TransportError as exc:
        raise openai.APIConnectionError(request=response.request) from exc
    finally:
        await response.aclose()
    return None


# Requests ---------------------------------------------------------------------------------------


TOOL_ERROR_PREFIX = "[tool error] "
"""Prefix of a failed tool's result: Chat Completions has no ``is_error`` flag."""


def chat_body(
    turn: ModelTurnRequest,
    names: ToolNameMap,
    *,
    model: str,
    profile: ProviderProfile,
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"],
    tools: bool = True,
) -> JsonObject:
    """Return the Chat Completions request body for one call."""
    messages: list[JsonValue] = [*_messages(turn.messages, names)]
    body: JsonObject = {"model": model, "messages": messages}
    if turn.tools:
        if tools:
            body["tools"] = _tool_params(turn.tools, names)
        body["tool_choice"] = _tool_choice(turn, names)
        if turn.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = turn.parallel_tool_calls
    if turn.max_tokens is not None:
        body[max_tokens_param] = turn.max_tokens
    if turn.temperature is not None:
        body["temperature"] = turn.temperature
    if turn.frequency_penalty is not None:
        body["frequency_penalty"] = turn.frequency_penalty
    if turn.stop:
        body["stop"] = list(turn.stop)
    if turn.response_format is not None:
        fmt = turn.response_format
        if profile.takes_grammar:
            # llama.cpp refuses a body with both a schema and a grammar, and llama-cpp-python
            # lets a json_object response format replace the grammar: the grammar goes alone.
            # As the server's own converter: only declared properties where the schema does
            # not say, and compact JSON. A small model free to add keys, or to lay the JSON out
            # over lines, was seen to loop until its token limit.
            grammar = schema_to_gbnf(fmt.json_schema, declared_only=True, compact=True)
            body["grammar"] = grammar.text
        elif profile.native_format == "json_object_schema":
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
    return body


def chat_content(
    turn: ModelTurnRequest,
    names: ToolNameMap,
    *,
    model: str,
    profile: ProviderProfile,
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"],
    extra: JsonObject | None = None,
) -> bytes:
    """Return :func:`chat_body` (and ``extra``'s fields) as the request's JSON bytes."""
    body = chat_body(
        turn, names, model=model, profile=profile, max_tokens_param=max_tokens_param, tools=False
    )
    opens = turn.messages[0] if turn.messages else None
    system = opens.content if opens is not None and opens.role == "system" else None
    if system is not None:  # its JSON is made once per prompt and put in as bytes
        body["messages"] = cast("list[JsonValue]", body["messages"])[1:]
    if extra:
        body.update(extra)
    # The conversation is text: the body's floats are the temperature's, the frequency
    # penalty's and any in a native output schema or in ``extra``; only when there are none of
    # the latter two is the written body not searched for NaN.
    finite = (
        turn.response_format is None
        and all(x is None or isfinite(x) for x in (turn.temperature, turn.frequency_penalty))
        and (not extra or all(_no_float(value) for value in extra.values()))
    )
    content = json_body(body, finite=finite)
    if system is not None:
        content = _with_system(content, model, system, body, finite)
    if not turn.tools:
        return content
    # The tools list, the largest part of most bodies and the same on every call, is
    # serialised once per set of (frozen) tool definitions and put in as bytes.
    return b"".join((content[:-1], b',"tools":', _tools_json(turn.tools, names), b"}"))


def _with_system(content: bytes, model: str, system: str, body: JsonObject, finite: bool) -> bytes:
    """Return ``content`` (a body without its system message) with that message put first."""
    opening = _opening(model)
    if not content.startswith(opening):  # never seen: the exact way instead
        messages = cast("list[JsonValue]", body["messages"])
        body["messages"] = [{"role": "system", "content": system}, *messages]
        return json_body(body, finite=finite)
    rest = content[len(opening) :]
    between = b"" if rest.startswith(b"]") else b","
    return b"".join((opening, _system_json(system), between, rest))


@functools.lru_cache(maxsize=64)
def _opening(model: str) -> bytes:
    """Return how a body's JSON opens, up to its first message: ``{"model":...,"messages":[``."""
    return b'{"model":' + json_body(model) + b',"messages":['


@functools.lru_cache(maxsize=64)
def _system_json(text: str) -> bytes:
    """Return the JSON of the system message of ``text``, made once per prompt."""
    return json_body({"role": "system", "content": text})


def _no_float(value: JsonValue) -> bool:
    """Tell whether ``value`` is a scalar that is not a float, or an object of such scalars."""
    if isinstance(value, dict):
        return all(isinstance(item, str | int | None) for item in value.values())
    return isinstance(value, str | int | None)


_TOOLS_KEPT = 64
_tools_sent: dict[tuple[tuple[int, str], ...], tuple[tuple[ToolDefinition, ...], bytes]] = {}
"""The JSON of tool lists by their definitions' identity and wire names (kept with them, so an
id is not reused while its bytes are kept)."""


def _tools_json(tools: Sequence[ToolDefinition], names: ToolNameMap) -> bytes:
    """Return the JSON of the ``tools`` list for ``tools``, serialised once per set."""
    key = tuple((id(tool), names.to_wire(tool.name)) for tool in tools)
    known = _tools_sent.get(key)
    if known is not None:
        return known[1]
    content = json_body(_tool_params(tools, names))
    if len(_tools_sent) >= _TOOLS_KEPT:
        _tools_sent.clear()
    _tools_sent[key] = (tuple(tools), content)
    return content


def _tool_params(tools: Sequence[ToolDefinition], names: ToolNameMap) -> list[JsonValue]:
    """Return the ``tools`` list in Chat Completions form."""
    return [_tool_param(tool, names) for tool in tools]


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
    """Return the arguments to echo back: always the JSON text of an object."""
    # Arguments that were not an object are echoed as ``{}``: Ollama and llama.cpp parse the
    # echoed arguments and refuse the whole request otherwise.
    if not isinstance(call.arguments, dict):
        return "{}"
    if call.raw_arguments and call.raw_arguments.lstrip().startswith("{"):
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


# Clients ----------------------------------------------------------------------------------------


CLIENTS: LoopClients[openai.AsyncOpenAI] = LoopClients()
"""The process's pooled asynchronous OpenAI clients, one per running event loop and settings."""

SYNC_CLIENTS: SyncClients[openai.OpenAI] = SyncClients(lambda client: client.close())
"""The process's synchronous OpenAI clients, one per settings, closed at exit."""


def async_client(
    api_key: str | None, base_url: str | None, max_retries: int, timeout_s: float
) -> openai.AsyncOpenAI:
    """Return a new asynchronous SDK client (``None`` key or URL: the SDK reads the environment).

    Its direct requests are spread over several connection pools (:class:`ShardedTransport`)
    within the SDK's default connection limits; proxies from the environment are kept.
    """
    transport, mounts = sharded_transports(
        verify=ssl_context(), limits=openai.DEFAULT_CONNECTION_LIMITS
    )
    return openai.AsyncOpenAI(
        api_key=api_key,
        base_url=base_url,
        max_retries=max_retries,
        timeout=timeout_s,
        http_client=openai.DefaultAsyncHttpxClient(
            verify=ssl_context(),
            transport=transport,
            mounts=mounts,
            event_hooks={"response": [refuse_retry_when_malformed]},
        ),
    )


def sync_client(api_key: str, base_url: str, max_retries: int, timeout_s: float) -> openai.OpenAI:
    """Return a new synchronous SDK client whose attempts keep within a blocking call's deadline."""
    hooks = deadline_hooks(lambda request: openai.APITimeoutError(request=request))
    hooks["response"].insert(0, refuse_retry_when_malformed_sync)
    return openai.OpenAI(
        api_key=api_key,
        base_url=base_url,
        max_retries=max_retries,
        timeout=timeout_s,
        http_client=openai.DefaultHttpxClient(verify=ssl_context(), event_hooks=hooks),
    )


def completions_url(base_url: httpx2.URL) -> str:
    """Return the absolute Chat Completions URL under a client's ``base_url``, to post to."""
    return str(base_url.copy_with(raw_path=base_url.raw_path + b"chat/completions"))


class translate_errors:
    """Turn every SDK error raised inside into a :class:`ProviderError` (the one place)."""

    # A plain context manager rather than a generator one: it is entered on every model call.

    __slots__ = ("provider",)

    def __init__(self, provider: str) -> None:
        self.provider = provider

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if isinstance(exc, openai.OpenAIError | openai.InvalidWebhookSignatureError):
            raise _provider_error(self.provider, exc) from exc


def _provider_error(
    provider: str, exc: openai.OpenAIError | openai.InvalidWebhookSignatureError
) -> ProviderError:
    """Return the :class:`ProviderError` an SDK error stands for."""
    if isinstance(exc, openai.APITimeoutError):
        return ProviderError(error_text(exc), provider=provider, kind="provider_timeout")
    if isinstance(exc, openai.APIConnectionError):
        message = error_text(connection_message(exc))
        return ProviderError(message, provider=provider, kind="provider_connection_error")
    if isinstance(exc, openai.APIStatusError):
        status = exc.status_code
        text = f"{exc.message} {exc.response.text}"
        kind = refine_error_kind(error_kind_for_status(status), status, text)
        return ProviderError(
            error_text(exc.message),
            provider=provider,
            kind=kind,
            status=status,
            body=error_body(exc.body),
            retry_after_s=retry_after_s(exc.response.headers),
        )
    if type(exc) is openai.APIError:  # an error object sent inside a stream
        return stream_error(provider, {"error": error_body(exc.body)}, exc.message)
    code = getattr(exc, "status_code", None)
    return ProviderError(
        error_text(exc),
        provider=provider,
        kind="provider_error",
        status=code if isinstance(code, int) else None,
        body=error_body(getattr(exc, "body", None)),
    )
