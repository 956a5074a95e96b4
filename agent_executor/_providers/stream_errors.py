"""How a streamed reply fails after its ``200``: an error sent inside the stream, or a cut stream.

Once a stream has started, the HTTP status says nothing more: a server that fails half way
sends an error object in the stream (OpenAI and compatible servers as a ``data:`` line holding
``{"error": {...}}``, Anthropic as an ``error`` event), or simply stops. Both become the
:class:`ProviderError` kinds a non-streamed call would have given: the error object's HTTP-like
``code`` or its ``type`` (``rate_limit_error``, ``overloaded_error``, ``server_error``...) stands
for the status the same failure is answered with before a stream starts.
"""

from __future__ import annotations

import json

from pydantic import JsonValue

from agent_contracts._errors import ProviderError
from agent_executor._providers.error_text import (
    error_body,
    error_kind_for_status,
    error_text,
    refine_error_kind,
)

__all__ = ["stream_error", "unfinished_stream"]

_TYPE_STATUS = (
    ("rate_limit", 429),
    ("overloaded", 529),
    ("authentication", 401),
    ("permission", 403),
    ("not_found", 404),
    ("notfound", 404),
    ("too_large", 413),
    ("invalid_request", 400),
    ("badrequest", 400),
    ("bad_request", 400),
    ("timeout", 408),
    ("server_error", 500),
    ("api_error", 500),
    ("internal", 500),
)
"""Error ``type`` words (lower-cased, in order) and the HTTP status each stands for."""


def stream_error(provider: str, body: JsonValue, message: str | None = None) -> ProviderError:
    """Return the error a server sent inside a stream, typed as it would be before the stream.

    Args:
        provider: The provider's name.
        body: The error object as sent: ``{"error": {...}}``, ``{"type": "error", "error":
            {...}}`` or the inner object itself.
        message: The SDK's message for it, when the SDK read it first.

    Returns:
        The error to raise: ``status`` is ``None`` (the HTTP answer itself was a ``200``), ``kind``
        the one the equivalent HTTP error gives, the body redacted.
    """
    inner = body.get("error") if isinstance(body, dict) else None
    error = inner if isinstance(inner, dict) else body if isinstance(body, dict) else {}
    text = error.get("message")
    if not isinstance(text, str) or not text:
        text = message or (body if isinstance(body, str) and body else "an error in the stream")
    status = _status_of(error)
    kind = "provider_error"
    if status is not None:
        said = f"{text} {json.dumps(body, default=str)}"  # as an HTTP error's body is read
        kind = refine_error_kind(error_kind_for_status(status), status, said)
    return ProviderError(
        error_text(f"error in the stream: {text}"),
        provider=provider,
        kind=kind,
        body=error_body(body),
    )


def unfinished_stream(provider: str, what: str) -> ProviderError:
    """Return the error for a stream that ended before the reply was finished.

    Args:
        provider: The provider's name.
        what: What never came (``a finish_reason``, ``message_stop``...).

    Returns:
        A ``provider_connection_error``: the connection ended the reply, not the model.
    """
    return ProviderError(
        f"the stream ended before the reply was finished (no {what})",
        provider=provider,
        kind="provider_connection_error",
    )


def _status_of(error: dict[str, JsonValue]) -> int | None:
    """Return the HTTP status an in-stream error object stands for, or ``None``."""
    code = error.get("code")
    if isinstance(code, str) and code.isdigit():
        code = int(code)
    if isinstance(code, int) and not isinstance(code, bool) and 400 <= code <= 599:
        return code
    words = " ".join(
        str(value).lower() for value in (error.get("type"), code) if isinstance(value, str)
    )
    return next((status for word, status in _TYPE_STATUS if word in words), None)
