"""The Anthropic SDK's clients as the provider uses them; the one place its errors are translated.

Asynchronous clients are pooled one per running event loop and settings (:data:`CLIENTS`, see
:class:`~agent_executor.providers.clients.LoopClients`); synchronous ones, for ``run_sync``'s
blocking calls, one per settings and process (:data:`SYNC_CLIENTS`), their attempts bounded by
the run's deadline (:func:`~agent_executor.providers.blocking.deadline_hooks`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic

from agent_contracts.errors import ProviderError
from agent_executor.providers.blocking import deadline_hooks
from agent_executor.providers.clients import LoopClients, SyncClients, ssl_context
from agent_executor.providers.error_text import (
    connection_message,
    error_body,
    error_kind_for_status,
    error_text,
    refine_error_kind,
    retry_after_s,
)

__all__ = [
    "CLIENTS",
    "SYNC_CLIENTS",
    "DeadlineTimeout",
    "async_client",
    "sync_client",
    "translate_errors",
]

CLIENTS: LoopClients[anthropic.AsyncAnthropic] = LoopClients()
"""The process's pooled asynchronous Anthropic clients, one per running event loop and settings."""

SYNC_CLIENTS: SyncClients[anthropic.Anthropic] = SyncClients(lambda client: client.close())
"""The process's synchronous Anthropic clients, one per settings, closed at exit."""


def async_client(**settings: Any) -> anthropic.AsyncAnthropic:
    """Return a new asynchronous SDK client with ``settings`` (key, URL, retries, timeout...).

    Args:
        **settings: The SDK client's keyword arguments.

    Returns:
        The client.

    Raises:
        anthropic.AnthropicError: The settings are unusable.
        ValueError: The SDK refused a setting.
    """
    http = anthropic.DefaultAsyncHttpxClient(verify=ssl_context())
    return anthropic.AsyncAnthropic(http_client=http, **settings)


def sync_client(**settings: Any) -> anthropic.Anthropic:
    """Return a new synchronous SDK client whose attempts keep within a blocking call's deadline.

    Args:
        **settings: The SDK client's keyword arguments.

    Returns:
        The client.

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
