"""What a provider's error answer says: a malformed request, or a context window overflow.

Malformed requests. OpenAI-compatible servers do not all answer a request they cannot use
with a 4xx: llama.cpp's servers answer a refused message shape or tool choice with a 500
whose body is the request validation's complaint. Retrying such a request cannot help, and
reporting it as a server error hides that the request itself was at fault.
:func:`says_malformed` recognises such a body, and :func:`refuse_retry_when_malformed` (an
``httpx`` response hook) marks the response ``x-should-retry: false``, the header the SDK's
bounded retries obey.

Context overflow. A conversation longer than the model's context window is answered with a
400 (OpenAI's ``context_length_exceeded``, llama.cpp's "exceed context window", Anthropic's
"prompt is too long"); :func:`says_context_overflow` recognises it, so the run fails with
``provider_context_length_exceeded`` instead of a generic bad request.
"""

from __future__ import annotations

import re

import httpx2

__all__ = [
    "refine_error_kind",
    "refuse_retry_when_malformed",
    "refuse_retry_when_malformed_sync",
    "says_context_overflow",
    "says_malformed",
]

_MALFORMED = re.compile(
    r"validation error|input should be|field required|extra inputs are not permitted"
    r"|unprocessable|messages\[\d+\]|\bmessages?\.\d+"
    r"|invalid (?:message|request|tool|role|content|type|value|json|format|argument|param)"
    r"|(?:could not|cannot|unable to|failed to) (?:parse|decode|apply)"
    r"|not supported|unsupported|unknown (?:field|parameter|role|argument)"
    r"|missing (?:field|required|argument)|bad request|chat template|jinja",
    re.IGNORECASE,
)
_OVERFLOW = re.compile(
    r"context_length_exceeded|maximum context length|context (?:window|length|size)"
    r"|prompt is too long|too many tokens|exceeds? (?:the )?(?:available )?context",
    re.IGNORECASE,
)
_SCANNED = 4000
"""How much of an error body is looked at (the complaint comes first)."""


def says_malformed(status: int, text: str) -> bool:
    """Tell whether a 5xx answer says the request, not the server, was at fault.

    Args:
        status: The HTTP status.
        text: The response body (or the SDK's error message).

    Returns:
        ``True`` for a 5xx whose body complains about the request's shape (a validation
        error, an unsupported value, a message it could not parse); ``False`` otherwise.
    """
    return status >= 500 and _MALFORMED.search(text[:_SCANNED]) is not None


async def refuse_retry_when_malformed(response: httpx2.Response) -> None:
    """Mark a 5xx that says the request was malformed as not to be retried.

    An ``httpx`` response event hook: it reads the body of 5xx answers only, and sets
    ``x-should-retry: false`` unless the server already said whether to retry.

    Args:
        response: The response, before the SDK looks at it.
    """
    if _undecided_5xx(response):
        await response.aread()
        _mark_malformed(response)


def refuse_retry_when_malformed_sync(response: httpx2.Response) -> None:
    """The synchronous clients' :func:`refuse_retry_when_malformed`.

    Args:
        response: The response, before the SDK looks at it.
    """
    if _undecided_5xx(response):
        response.read()
        _mark_malformed(response)


def _undecided_5xx(response: httpx2.Response) -> bool:
    """Tell whether ``response`` is a 5xx the server did not say whether to retry."""
    return response.status_code >= 500 and "x-should-retry" not in response.headers


def _mark_malformed(response: httpx2.Response) -> None:
    """Mark a read 5xx answer not to be retried when it blames the request."""
    if says_malformed(response.status_code, response.text):
        response.headers["x-should-retry"] = "false"


def says_context_overflow(status: int, text: str) -> bool:
    """Tell whether an error answer says the conversation does not fit the context window.

    Args:
        status: The HTTP status.
        text: The response body (or the SDK's error message).

    Returns:
        ``True`` for a 4xx or 5xx whose body speaks of the context window or length.
    """
    return status >= 400 and _OVERFLOW.search(text[:_SCANNED]) is not None


def refine_error_kind(kind: str, status: int, text: str) -> str:
    """Return the run error type an HTTP error answer stands for, read from its body.

    Args:
        kind: The type its status alone gives (``error_kind_for_status``).
        status: The HTTP status.
        text: The SDK's message and the response body.

    Returns:
        ``provider_context_length_exceeded`` when the body says the context overflowed,
        ``provider_bad_request`` for a 5xx that blames the request, else ``kind``.
    """
    if kind in ("provider_rate_limited", "provider_authentication_error"):
        return kind
    if says_context_overflow(status, text):
        return "provider_context_length_exceeded"
    if says_malformed(status, text):
        return "provider_bad_request"
    return kind
