"""Anthropic Messages through the official ``anthropic`` SDK (``AsyncAnthropic``).

System messages become ``system``; tool calls and results become ``tool_use`` and ``tool_result``
blocks (with ``is_error``); the neutral tool choice becomes ``{"type": "auto" | "any" | "none"}``
or ``{"type": "tool", "name": ...}``. With extended thinking on, a forced tool choice is sent as
``auto`` (the API forbids forcing) and the turn says so in ``tool_choice_downgraded``. Every SDK
error becomes a :class:`ProviderError` in :func:`translate_errors`.

``stream`` sends the same request with ``stream: true``; the SDK's SSE decoder splits the events,
:class:`~agent_executor._providers.anthropic_events.MessageEvents` reads them as plain JSON and
assembles the message, which the same reply parser reads.

Below the provider sit its wire helpers (:func:`wire_messages`, the reply parser) and its SDK
clients (:data:`CLIENTS` per running loop, :data:`SYNC_CLIENTS` for ``run_sync``).
"""

from __future__ import annotations

import contextlib
import socket
import sys
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import anthropic
import httpx2
from pydantic import JsonValue

from agent_contracts._errors import ConfigError, ProviderError
from agent_contracts._json_data import PARSED_JSON
from agent_contracts._messages import Message, ToolCall, Usage
from agent_contracts._profiles import ProviderProfile
from agent_core._json_text import encodable, encodable_data, read_checked_json
from agent_executor._providers.anthropic_events import MessageEvents
from agent_executor._providers.base import (
    JsonObject,
    ModelTurn,
    ModelTurnRequest,
    StopReason,
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
    retry_after_s,
)
from agent_executor._providers.pooling import sharded_transports
from agent_executor._providers.profiles import ANTHROPIC_PROFILE
from agent_executor._providers.replies import (
    arguments_problem,
    call_usage,
    echo_text,
    model_arguments,
    parsed_turn,
    read_json,
)
from agent_executor._providers.sse import MalformedEvent, sse_batches
from agent_executor._providers.stream_errors import unfinished_stream
from agent_executor._providers.streaming import DeltaSink, replay_turn
from agent_executor._providers.tool_names import tool_names_for
from agent_executor._redaction import remember_secret

if TYPE_CHECKING:
    from anthropic.types import (
        MessageParam,
        OutputConfigParam,
        ThinkingConfigParam,
        ToolChoiceParam,
        ToolUnionParam,
    )
    from anthropic.types.message_create_params import MessageCreateParamsBase

__all__ = ["AnthropicProvider"]


class _Prepared(NamedTuple):
    """A Messages request ready to send: its parameters and what reading the reply needs."""

    names: ToolNameMap
    params: MessageCreateParamsBase
    extra_body: JsonObject | None
    timeout: float
    downgraded: bool


DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` sent when the request sets none (the Messages API requires one)."""


class AnthropicProvider:
    """A provider for the Anthropic Messages API.

    Example:
        ``AnthropicProvider("claude-sonnet-4-5")`` reads ``ANTHROPIC_API_KEY`` and
        ``ANTHROPIC_BASE_URL`` through the SDK.
    """

    supports_tools = True
    """Messages takes tools."""

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        name: str = "anthropic",
        max_retries: int = 2,
        timeout_s: float = 120.0,
        thinking_budget: int | None = None,
        default_max_tokens: int = DEFAULT_MAX_TOKENS,
        profile: ProviderProfile | None = None,
    ) -> None:
        """Create the provider (credentials are checked now, no request is made).

        Args:
            model: The model to call, such as ``claude-sonnet-4-5``.
            api_key: The API key; ``None`` lets the SDK read ``ANTHROPIC_API_KEY`` (or its other
                credential sources).
            base_url: The API's root URL; ``None`` lets the SDK read ``ANTHROPIC_BASE_URL``.
            name: The provider name reported in turns and errors.
            max_retries: The SDK's bounded retries (429, 5xx, 529, timeouts, connection errors).
            timeout_s: The default per-request timeout in seconds.
            thinking_budget: Turn extended thinking on with this many thinking tokens (at least
                1024). They come on top of the request's ``max_tokens``. Forced tool choices are
                then sent as ``auto``.
            default_max_tokens: ``max_tokens`` when a request sets none.
            profile: What the API can be sent; ``None`` is Anthropic's own. With extended
                thinking a forced tool choice cannot be honoured, so ``can_force_tool`` is off.

        Raises:
            ConfigError: No credentials were given or found, or ``thinking_budget`` is too small.
        """
        if thinking_budget is not None and thinking_budget < 1024:
            raise ConfigError(
                f"{name}: thinking_budget must be at least 1024, got {thinking_budget}"
            )
        self.name = name
        self.model = model
        self.timeout_s = timeout_s
        self.thinking_budget = thinking_budget
        base = profile if profile is not None else ANTHROPIC_PROFILE
        self.profile = (
            base if thinking_budget is None else base.model_copy(update={"can_force_tool": False})
        )
        self.default_max_tokens = default_max_tokens
        self._max_retries = max_retries
        missing = f"{name}: no API key: pass api_key= or set ANTHROPIC_API_KEY"
        try:
            client = async_client(
                api_key=api_key, base_url=base_url, max_retries=max_retries, timeout=timeout_s
            )
        except (anthropic.AnthropicError, ValueError) as exc:  # unusable profile or credentials
            raise ConfigError(f"{missing} ({exc})") from exc
        if client.api_key is None and client.auth_token is None and client.credentials is None:
            raise ConfigError(missing)
        self.base_url = str(client.base_url)
        self._api_key = client.api_key
        self._auth_token = client.auth_token
        remember_secret(self._api_key)  # never shown, whatever their shape
        remember_secret(self._auth_token)
        self._client_key = (self._api_key or "", self._auth_token or "", self.base_url, max_retries)
        self._credentials = client.credentials

    @property
    def max_retries(self) -> int:
        """The SDK's bounded retries of each call (429, 5xx, 529, timeouts, connection errors)."""
        return self._max_retries

    def variant(
        self, *, profile: ProviderProfile | None = None, max_retries: int | None = None
    ) -> AnthropicProvider:
        """Return a provider for the same API, model and credentials with other settings.

        Args:
            profile: The profile the copy sends by (``None``: this one's).
            max_retries: The copy's SDK retries (``None``: this one's); calls held to shared
                limits make their own retries with none (see
                :class:`~agent_executor._call_limits.LimitedProvider`).

        Returns:
            The new provider (no request is made).

        Raises:
            ConfigError: The credentials are no longer usable.
        """
        # without a key, the copy's SDK client finds the token or credentials this one found
        return AnthropicProvider(
            self.model,
            api_key=self._api_key,
            base_url=self.base_url,
            name=self.name,
            max_retries=self._max_retries if max_retries is None else max_retries,
            timeout_s=self.timeout_s,
            thinking_budget=self.thinking_budget,
            default_max_tokens=self.default_max_tokens,
            profile=self.profile if profile is None else profile,
        )

    def _new_client(self) -> anthropic.AsyncAnthropic:
        """Return a new SDK client (the TLS context, the costly part, is shared)."""
        return async_client(**self._settings())

    def sdk_client(self) -> anthropic.AsyncAnthropic:
        """Return a new SDK client with this provider's credentials, URL and retries.

        For the calls a run never makes, such as Message Batches; the caller closes it.

        Returns:
            The client.
        """
        return self._new_client()

    def request_params(self, turn: ModelTurnRequest) -> tuple[JsonObject, bool]:
        """Return the Messages parameters :meth:`request` would send for ``turn``.

        Args:
            turn: The conversation, tools and settings for one call.

        Returns:
            The parameters as one JSON object (extra body fields merged in, as the SDK merges
            them), and whether a forced tool choice was sent as ``auto``.
        """
        prepared = self._prepare(turn)
        params = cast("JsonObject", {**prepared.params, **(prepared.extra_body or {})})
        return params, prepared.downgraded

    def _settings(self) -> dict[str, object]:
        """Return the SDK client settings of this provider (credentials, URL, retries, timeout)."""
        return {
            "base_url": self.base_url,
            "max_retries": self._max_retries,
            "timeout": self.timeout_s,
            "api_key": self._api_key,
            "auth_token": None if self._api_key else self._auth_token,
            "credentials": None if self._api_key or self._auth_token else self._credentials,
        }

    async def request(self, turn: ModelTurnRequest) -> ModelTurn:
        """Make one Messages call.

        Args:
            turn: The conversation, tools and settings for this call.

        Returns:
            The normalised reply; ``raw`` is the response body exactly as the server sent it.

        Raises:
            ProviderError: The call failed after the SDK's retries, or the reply is not a message.
        """
        return await self._call(turn, None)

    async def stream(self, turn: ModelTurnRequest, on_delta: DeltaSink) -> ModelTurn:
        """Make one Messages call with streaming, handing the reply over as it comes.

        Args:
            turn: The conversation, tools and settings for this call.
            on_delta: Takes each piece of text and of tool input JSON as it arrives.

        Returns:
            The reply exactly as :meth:`request` returns it for the same reply (thinking blocks
            with their signatures included); ``raw`` is the message assembled from the events.

        Raises:
            ProviderError: The call failed after the SDK's retries, the server sent an ``error``
                event (typed as the same error before the stream), or the stream broke off or
                ended before ``message_stop``.
        """
        return await self._call(turn, on_delta)

    def _prepare(self, turn: ModelTurnRequest) -> _Prepared:
        """Return the Messages request for ``turn`` (the same for every way of sending it)."""
        names = tool_names_for(turn)
        tools: list[JsonObject] = []
        for tool in turn.tools:
            definition: JsonObject = {
                "name": names.to_wire(tool.name),
                "description": tool.description,
                "input_schema": tool.parameters,
            }
            if tool.strict:
                definition["strict"] = True
            tools.append(definition)
        downgraded = False
        choice: JsonObject | None = None
        if tools:
            choice, downgraded = self._tool_choice(turn, names)
        max_tokens = turn.max_tokens if turn.max_tokens is not None else self.default_max_tokens
        thinking: JsonObject | None = None
        extra: JsonObject = {}
        if self.thinking_budget is not None:
            thinking = {"type": "enabled", "budget_tokens": self.thinking_budget}
            max_tokens += self.thinking_budget
        elif turn.temperature is not None:
            extra["temperature"] = turn.temperature
        output_config: JsonObject | None = None
        if turn.response_format is not None:
            schema = turn.response_format.json_schema
            output_config = {"format": {"type": "json_schema", "schema": schema}}
        system = "\n\n".join(m.content for m in turn.messages if m.role == "system" and m.content)
        system, tools = encodable(system), encodable_data(tools)  # lone surrogates escaped
        messages = encodable_data(wire_messages(turn.messages, names))
        timeout = turn.timeout_s if turn.timeout_s is not None else self.timeout_s
        params: MessageCreateParamsBase = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": cast("Iterable[MessageParam]", messages),
        }
        if system:
            params["system"] = system
        if tools:
            params["tools"] = cast("Iterable[ToolUnionParam]", tools)
        if choice:
            params["tool_choice"] = cast("ToolChoiceParam", choice)
        if thinking:
            params["thinking"] = cast("ThinkingConfigParam", thinking)
        if output_config:
            params["output_config"] = cast("OutputConfigParam", output_config)
        if turn.stop:
            params["stop_sequences"] = list(turn.stop)
        return _Prepared(names, params, extra or None, timeout, downgraded)

    async def _call(self, turn: ModelTurnRequest, on_delta: DeltaSink | None) -> ModelTurn:
        """Make one Messages call, streamed when there is a sink for the pieces."""
        names, params, extra_body, timeout, downgraded = self._prepare(turn)
        started = time.perf_counter()
        with translate_errors(self.name):
            kept = await CLIENTS.get(self._client_key, self._new_client)
            async with contextlib.AsyncExitStack() as stack:
                client = (
                    kept
                    if kept is not None
                    else await stack.enter_async_context(self._new_client())
                )
                messages_api = client.messages
                if on_delta is None:
                    response = await messages_api.with_raw_response.create(
                        **params, extra_body=extra_body, timeout=timeout
                    )
                    body: str | JsonObject = await response.text()
                else:  # the events are read as plain JSON, not as the SDK's event types
                    stream = await messages_api.create(
                        **params, stream=True, extra_body=extra_body, timeout=timeout
                    )
                    http = stream.response
                    if http.headers.get("content-type", "").startswith("application/json"):
                        body = (await http.aread()).decode("utf-8", "replace")  # not streamed
                    else:
                        events = MessageEvents(self.name, names, on_delta)
                        await _read_events(http, events)
                        body = events.message()
        latency_ms = (time.perf_counter() - started) * 1000
        if isinstance(body, str):
            result = _turn(self.name, self.model, body, names, latency_ms)
            if on_delta is not None:  # a server that ignored ``stream``: the reply in one go
                replay_turn(result, on_delta)
        else:
            result = _turn_of(self.name, self.model, body, names, latency_ms)
        return result.model_copy(update={"tool_choice_downgraded": downgraded})

    def request_blocking(self, turn: ModelTurnRequest, deadline: float | None) -> ModelTurn:
        """Make one Messages call with the SDK's synchronous client (for ``run_sync``).

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
        names, params, extra_body, timeout, downgraded = self._prepare(turn)
        started = time.perf_counter()
        with translate_errors(self.name), call_deadline(deadline):
            client = SYNC_CLIENTS.get(self._client_key, lambda: sync_client(**self._settings()))
            response = client.messages.with_raw_response.create(
                **params, extra_body=extra_body, timeout=timeout
            )
            body = response.text()
        latency_ms = (time.perf_counter() - started) * 1000
        result = _turn(self.name, self.model, body, names, latency_ms)
        return result.model_copy(update={"tool_choice_downgraded": downgraded})

    def _tool_choice(self, turn: ModelTurnRequest, names: ToolNameMap) -> tuple[JsonObject, bool]:
        """Return the tool choice in Messages form, and whether thinking forced a downgrade."""
        choice = turn.tool_choice
        if choice.forces_tool and self.thinking_budget is not None:
            wire: JsonObject = {"type": "auto"}
            downgraded = True
        else:
            downgraded = False
            if choice.mode == "tool" and choice.tool_name is not None:
                wire = {"type": "tool", "name": names.to_wire(choice.tool_name)}
            else:
                wire = {"type": {"required": "any"}.get(choice.mode, choice.mode)}
        if turn.parallel_tool_calls is not None and wire["type"] != "none":
            wire["disable_parallel_tool_use"] = not turn.parallel_tool_calls
        return wire, downgraded


async def _read_events(response: httpx2.Response, events: MessageEvents) -> None:
    """Read a streamed reply's server-sent events into ``events``, a network read at a time."""
    try:
        async for values in sse_batches(response):
            for data in values:
                events.add(None, data)
    except httpx2.TimeoutException as exc:
        raise anthropic.APITimeoutError(request=response.request) from exc
    except httpx2.TransportError as exc:
        raise anthropic.APIConnectionError(request=response.request) from exc
    except MalformedEvent as exc:
        raise ProviderError(
            f"the stream sent an event that is not JSON ({exc})",
            provider=events.provider,
            body=error_body(exc.data),
        ) from exc
    finally:
        await response.aclose()
    if not events.finished:
        raise unfinished_stream(events.provider, "message_stop")


# Requests ---------------------------------------------------------------------------------------


def wire_messages(messages: list[Message], names: ToolNameMap) -> list[JsonObject]:
    """Return the conversation (system messages excluded) as Messages turns.

    Consecutive messages of one role are merged (tool results and a following re-prompt make
    one user turn); empty assistant turns are dropped; thinking blocks kept from earlier
    replies are put back before their tool calls, as the API requires.

    Args:
        messages: The conversation.
        names: The wire names of the request's tools.
    """
    turns: list[tuple[str, list[JsonValue]]] = []
    for message in messages:
        if message.role == "system":
            continue
        blocks: list[JsonValue] = []
        if message.role == "tool":
            role = "user"
            for result in message.tool_results:
                block: JsonObject = {
                    "type": "tool_result",
                    "tool_use_id": result.tool_call_id,
                    "content": result.content,
                }
                if result.is_error:
                    block["is_error"] = True
                blocks.append(block)
        else:
            role = message.role
        if message.role == "assistant" and message.tool_calls:
            blocks.extend(message.thinking)
        if message.content:
            blocks.append({"type": "text", "text": message.content})
        for call in message.tool_calls:
            arguments = call.arguments if isinstance(call.arguments, dict) else {}
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": names.to_wire(call.name),
                    "input": arguments,
                }
            )
        if not blocks:
            continue
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    return [{"role": role, "content": blocks} for role, blocks in turns]


# Replies ----------------------------------------------------------------------------------------


_STOP_REASONS: dict[str, StopReason] = {
    "end_turn": "end_turn",
    "stop_sequence": "end_turn",
    "tool_use": "tool_use",
    "max_tokens": "max_tokens",
    "model_context_window_exceeded": "max_tokens",
    "refusal": "refusal",
}
_THINKING_BLOCKS = ("thinking", "redacted_thinking")


def _turn(provider: str, model: str, body: str, names: ToolNameMap, latency_ms: float) -> ModelTurn:
    """Normalise a Messages response body."""
    checked = read_checked_json(body)  # then no tool input needs walking for NaN or depth
    if checked is not None:
        return _turn_of(provider, model, checked[0], names, latency_ms, checked=True)
    try:
        raw = read_json(body)
    except (ValueError, RecursionError) as exc:
        raise ProviderError(
            f"the reply is not JSON: {body[:200]!r}", provider=provider, body=body
        ) from exc
    return _turn_of(provider, model, raw, names, latency_ms)


def _turn_of(
    provider: str,
    model: str,
    raw: JsonValue,
    names: ToolNameMap,
    latency_ms: float,
    *,
    checked: bool = False,
) -> ModelTurn:
    """Normalise a Messages body already parsed (or assembled from a stream's events)."""
    if not isinstance(raw, dict) or "content" not in raw:
        raise ProviderError("the reply has no content blocks", provider=provider, body=raw)
    if not isinstance(content := raw["content"], list):  # malformed: no blocks, re-prompted
        content = raw["content"] = []
    texts: list[str] = []
    calls: list[ToolCall] = []
    thinking: list[JsonValue] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(text := block.get("text"), str):
            texts.append(text)
        elif kind in _THINKING_BLOCKS:
            thinking.append(block)
        elif kind == "tool_use":
            calls.append(_tool_use(block, names, len(calls), checked=checked))
    reason = raw.get("stop_reason")
    stop = _STOP_REASONS.get(reason, "other") if isinstance(reason, str) else "other"
    return parsed_turn(
        provider=provider,
        model=model,
        text="".join(texts),
        tool_calls=calls,
        stop_reason=stop,
        raw_stop_reason=reason if isinstance(reason, str) else None,
        usage=_usage(raw.get("usage")),
        raw=raw,
        latency_ms=latency_ms,
        thinking=thinking if calls else [],
    )


def _usage(usage: JsonValue) -> Usage:
    """Return token usage; cache writes and reads count as input tokens."""
    if not isinstance(usage, dict):
        return call_usage()

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) else 0

    return call_usage(
        count("input_tokens")
        + count("cache_creation_input_tokens")
        + count("cache_read_input_tokens"),
        count("output_tokens"),
    )


def _tool_use(
    block: dict[str, JsonValue], names: ToolNameMap, index: int, *, checked: bool = False
) -> ToolCall:
    """Return a ``tool_use`` block as a call; an ``input`` no run can use is kept as text."""
    arguments = block.get("input")
    if isinstance(arguments, str):
        raw = arguments
        arguments, problem = model_arguments(raw) if raw.strip() else ({}, None)
    else:
        problem = None if checked else arguments_problem(arguments)
        raw = echo_text(arguments)
    call = {
        "id": str(block.get("id") or f"toolu_{index}"),
        "name": names.from_wire(str(block.get("name") or "")),
        "arguments": None if problem else arguments,
        "raw_arguments": raw,
        "parse_error": problem,
    }
    if problem:
        block["input"] = raw
    return ToolCall.model_validate(call, context=PARSED_JSON)


# Clients ----------------------------------------------------------------------------------------


CLIENTS: LoopClients[anthropic.AsyncAnthropic] = LoopClients()
"""The process's pooled asynchronous Anthropic clients, one per running event loop and settings."""

SYNC_CLIENTS: SyncClients[anthropic.Anthropic] = SyncClients(lambda client: client.close())
"""The process's synchronous Anthropic clients, one per settings, closed at exit."""


def async_client(**settings: Any) -> anthropic.AsyncAnthropic:
    """Return a new asynchronous SDK client with ``settings`` (key, URL, retries, timeout...).

    Raises:
        anthropic.AnthropicError: The settings are unusable.
        ValueError: The SDK refused a setting.
    """
    transport, mounts = sharded_transports(
        verify=ssl_context(),
        limits=anthropic.DEFAULT_CONNECTION_LIMITS,
        socket_options=_KEEPALIVE_OPTIONS,
    )
    http = anthropic.DefaultAsyncHttpxClient(
        verify=ssl_context(), transport=transport, mounts=mounts
    )
    return anthropic.AsyncAnthropic(http_client=http, **settings)


def _keepalive_options() -> list[tuple[int, int, int]]:
    """Return the TCP keep-alive socket options the SDK's default client sets on its own pools.

    The SDK sets them only on transports it builds; the sharded ones are built here, so the
    long requests Anthropic allows keep their keep-alive probes (every 60 s, 5 missed: closed).
    """
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (("TCP_KEEPINTVL", 60), ("TCP_KEEPCNT", 5), ("TCP_KEEPIDLE", 60)):
        option = getattr(socket, name, None)
        if option is not None:
            options.append((socket.IPPROTO_TCP, option, value))
    if sys.platform == "darwin" and not hasattr(socket, "TCP_KEEPINTVL"):
        options.append((socket.IPPROTO_TCP, getattr(socket, "TCP_KEEPALIVE", 0x10), 60))
    return options


_KEEPALIVE_OPTIONS = _keepalive_options()


def sync_client(**settings: Any) -> anthropic.Anthropic:
    """Return a new synchronous SDK client whose attempts keep within a blocking call's deadline.

    Raises:
        anthropic.AnthropicError: The settings are unusable.
        ValueError: The SDK refused a setting.
    """
    hooks = deadline_hooks(lambda request: DeadlineTimeout())
    http = anthropic.DefaultHttpxClient(verify=ssl_context(), event_hooks=hooks)
    return anthropic.Anthropic(http_client=http, **settings)


class DeadlineTimeout(anthropic.AnthropicError):
    """A synchronous call's attempt ended by the run's deadline (cut, or not started).

    Not the SDK's ``APITimeoutError``: the SDK retries that one after a backoff, which the
    deadline would refuse. Translated like a timeout (``provider_timeout``).
    """

    def __init__(self) -> None:
        super().__init__("the request timed out: the run's deadline passed")


@contextmanager
def translate_errors(provider: str) -> Iterator[None]:
    """Turn every SDK error raised inside into a :class:`ProviderError` (the one place).

    Args:
        provider: The provider's name, for the error.

    Yields:
        Nothing; the block runs inside.

    Raises:
        ProviderError: The SDK raised an error inside, chained with ``from``.
    """
    try:
        yield
    except (anthropic.APITimeoutError, DeadlineTimeout) as exc:
        raise ProviderError(error_text(exc), provider=provider, kind="provider_timeout") from exc
    except anthropic.APIConnectionError as exc:
        kind = "provider_connection_error"
        raise ProviderError(
            error_text(connection_message(exc)), provider=provider, kind=kind
        ) from exc
    except anthropic.APIStatusError as exc:
        status = exc.status_code
        text = f"{exc.message} {exc.response.text}"
        raise ProviderError(
            error_text(exc.message),
            provider=provider,
            kind=refine_error_kind(error_kind_for_status(status), status, text),
            status=status,
            body=error_body(exc.body),
            retry_after_s=retry_after_s(exc.response.headers),
        ) from exc
    except anthropic.CredentialsError as exc:
        raise ProviderError(
            error_text(exc), provider=provider, kind="provider_authentication_error"
        ) from exc
    except anthropic.AnthropicError as exc:
        code = getattr(exc, "status_code", None)
        raise ProviderError(
            error_text(exc),
            provider=provider,
            kind="provider_error",
            status=code if isinstance(code, int) else None,
            body=error_body(getattr(exc, "body", None)),
        ) from exc
