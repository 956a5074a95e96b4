"""The OpenAI SDK's clients as the provider uses them, and the one place its errors are translated.

Asynchronous clients are pooled one per running event loop and settings (:data:`CLIENTS`, see
:class:`~agent_executor.providers.clients.LoopClients`); synchronous ones, for ``run_sync``'s
blocking calls, one per settings and process (:data:`SYNC_CLIENTS`), their attempts bounded by
the run's deadline (:func:`~agent_executor.providers.blocking.deadline_hooks`). Both send through
the SDK's default HTTP client settings, with malformed-request 5xx answers not retried
(:mod:`agent_executor.providers.error_text`).
"""

from __future__ import annotations

from types import TracebackType

import httpx2
import openai

from agent_contracts.errors import ProviderError
from agent_executor.providers.blocking import deadline_hooks
from agent_executor.providers.clients import LoopClients, SyncClients, ssl_context
from agent_executor.providers.error_text import (
    connection_message,
    error_body,
    error_kind_for_status,
    error_text,
    refine_error_kind,
    refuse_retry_when_malformed,
    refuse_retry_when_malformed_sync,
    retry_after_s,
)
from agent_executor.providers.stream_errors import stream_error

__all__ = ["CLIENTS", "SYNC_CLIENTS", "async_client", "sync_client", "translate_errors"]

CLIENTS: LoopClients[openai.AsyncOpenAI] = LoopClients()
"""The process's pooled asynchronous OpenAI clients, one per running event loop and settings."""

SYNC_CLIENTS: SyncClients[openai.OpenAI] = SyncClients(lambda client: client.close())
"""The process's synchronous OpenAI clients, one per settings, closed at exit."""


def async_client(
    api_key: str | None, base_url: str | None, max_retries: int, timeout_s: float
) -> openai.AsyncOpenAI:
    """Return a new asynchronous SDK client (``None`` key and URL: the SDK reads the environment).

    Args:
        api_key: The API key, or ``None``.
        base_url: The API's base URL, or ``None``.
        max_retries: The SDK's retries of a failed call.
        timeout_s: Seconds for a call.

    Returns:
        The client.

    Raises:
        openai.OpenAIError: No API key was given or found.
    """
    return openai.AsyncOpenAI(
        api_key=api_key,
        base_url=base_url,
        max_retries=max_retries,
        timeout=timeout_s,
        http_client=openai.DefaultAsyncHttpxClient(
            verify=ssl_context(),
            event_hooks={"response": [refuse_retry_when_malformed]},
        ),
    )


def sync_client(api_key: str, base_url: str, max_retries: int, timeout_s: float) -> openai.OpenAI:
    """Return a new synchronous SDK client whose attempts keep within a blocking call's deadline.

    Args:
        api_key: The API key.
        base_url: The API's base URL.
        max_retries: The SDK's retries of a failed call.
        timeout_s: Seconds for a call.

    Returns:
        The client.

    Raises:
        openai.OpenAIError: The key is unusable.
    """
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
    """Return the absolute Chat Completions URL under a client's ``base_url``, to post to.

    The URL the SDK would build from ``"/chat/completions"`` (its base URL's path, which ends in
    ``/``, then the endpoint's), made once per client.

    Args:
        base_url: The client's ``base_url``.

    Returns:
        The absolute URL.
    """
    return str(base_url.copy_with(raw_path=base_url.raw_path + b"chat/completions"))


class translate_errors:
    """Turn every SDK error raised inside into a :class:`ProviderError` (the one place).

    A plain context manager rather than a generator one: it is entered on every model call.

    Args:
        provider: The provider's name, for the errors.
    """

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
