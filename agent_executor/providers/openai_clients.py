"""The OpenAI SDK's clients as the provider uses them, and the one place its errors are translated.

Asynchronous clients are pooled one per running event loop and settings (:data:`CLIENTS`, see
:class:`~agent_executor.providers.clients.LoopClients`); synchronous ones, for ``run_sync``'s
blocking calls, one per settings and process (:data:`SYNC_CLIENTS`), their attempts bounded by
the run's deadline (:func:`~agent_executor.providers.blocking.deadline_hooks`). Both send through
the SDK's default HTTP client settings, with malformed-request 5xx answers not retried
(:mod:`agent_executor.providers.error_text`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import openai

from agent_contracts.errors import ProviderError
from agent_executor.analytics_writer import mark_request, mark_request_async
from agent_executor.providers.base import (
    connection_message,
    error_body,
    error_kind_for_status,
    error_text,
)
from agent_executor.providers.blocking import SyncClients, deadline_hooks
from agent_executor.providers.clients import LoopClients, ssl_context
from agent_executor.providers.error_text import (
    refine_error_kind,
    refuse_retry_when_malformed,
    refuse_retry_when_malformed_sync,
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
            event_hooks={
                "request": [mark_request_async],
                "response": [refuse_retry_when_malformed],
            },
        ),
    )


def sync_client(api_key: str, base_url: str, max_retries: int, timeout_s: float) -> openai.OpenAI:
    """Return a new synchronous SDK client whose attempts keep within a blocking call's deadline.

    Raises:
        openai.OpenAIError: The key is unusable.
    """
    hooks = deadline_hooks(lambda request: openai.APITimeoutError(request=request))
    hooks["response"].insert(0, refuse_retry_when_malformed_sync)
    hooks["request"].insert(0, mark_request)  # before the deadline's hook: it wraps this trace
    return openai.OpenAI(
        api_key=api_key,
        base_url=base_url,
        max_retries=max_retries,
        timeout=timeout_s,
        http_client=openai.DefaultHttpxClient(verify=ssl_context(), event_hooks=hooks),
    )


@contextmanager
def translate_errors(provider: str) -> Iterator[None]:
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
        if type(exc) is openai.APIError:  # an error object sent inside a stream
            raise stream_error(provider, {"error": error_body(exc.body)}, exc.message) from exc
        code = getattr(exc, "status_code", None)
        raise ProviderError(
            error_text(exc),
            provider=provider,
            kind="provider_error",
            status=code if isinstance(code, int) else None,
            body=error_body(getattr(exc, "body", None)),
        ) from exc
