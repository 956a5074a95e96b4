"""What a provider's error answer says: its kind, its wait, its redacted text and body.

Kinds. :func:`error_kind_for_status` maps an HTTP status to a ``ProviderError.kind``;
:func:`retry_after_s` reads how long a rate-limited reply asks to wait; :func:`error_text`,
:func:`error_body` and :func:`connection_message` give an SDK error's message and body with every
secret redacted (a 401 may quote the key), naming a local cause the SDK hides.

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

import errno
import json
import re
from collections.abc import Mapping

import httpx2
from pydantic import JsonValue

from agent_executor._redaction import redact, redact_text

__all__ = [
    "connection_message",
    "error_body",
    "error_kind_for_status",
    "error_text",
    "refine_error_kind",
    "refuse_retry_when_malformed",
    "refuse_retry_when_malformed_sync",
    "retry_after_s",
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


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_DURATION_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """Return the seconds a rate-limited reply asks the caller to wait, when it says.

    Read from ``retry-after-ms``, ``retry-after`` (seconds), else the longest of OpenAI's
    ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens`` (durations such as ``1s``,
    ``6m0s``, ``20ms``).

    Args:
        headers: The reply's headers (case-insensitive, as httpx gives them).

    Returns:
        The seconds (0 or more), or ``None`` when no header says.
    """
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return max(0.0, float(headers.get(name, "")) * scale)
        except ValueError:
            continue
    resets = [
        sum(float(amount) * _DURATION_S[unit] for amount, unit in _DURATION.findall(value))
        for name in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
        if (value := headers.get(name))
    ]
    return max(resets) if resets else None


def error_kind_for_status(status: int) -> str:
    """Return the ``ProviderError.kind`` for an HTTP error status.

    Args:
        status: The HTTP status the provider answered with.

    Returns:
        ``provider_rate_limited`` (429), ``provider_authentication_error`` (401, 403),
        ``provider_bad_request`` (400, 404, 413, 422, 431), ``provider_timeout`` (408),
        ``provider_server_error`` (5xx), else ``provider_error``.
    """
    if status == 429:
        return "provider_rate_limited"
    if status in (401, 403):
        return "provider_authentication_error"
    if status in (400, 404, 413, 422, 431):
        return "provider_bad_request"
    if status == 408:
        return "provider_timeout"
    if status >= 500:
        return "provider_server_error"
    return "provider_error"


def error_body(body: object) -> JsonValue:
    """Return an SDK error's response body as JSON (its text when it is not JSON-shaped), redacted.

    A server may echo the key it refused (a 401's text); every secret is replaced (see
    :mod:`agent_executor._redaction`) before the body reaches a result, a log or the screen.

    Args:
        body: The decoded body an SDK error carries (never headers).
    """
    if body is None or isinstance(body, int | float | bool):
        return body
    if isinstance(body, str):
        return redact_text(body)
    try:
        value: JsonValue = json.loads(json.dumps(body))
    except (TypeError, ValueError):
        return redact_text(str(body))
    return redact(value)


def error_text(error: BaseException | str) -> str:
    """Return an SDK error's message with every secret redacted (a 401 may quote the key).

    Args:
        error: The SDK's exception, or its message.
    """
    return redact_text(error if isinstance(error, str) else str(error))


def connection_message(exc: BaseException) -> str:
    """Return the message of an SDK connection error, naming a local cause the SDK hides.

    Running out of file descriptors makes every new connection fail; the SDK reports only
    "Connection error.", which sends the user looking at the provider. The cause is found in
    the exception chain and said instead.
    """
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, OSError) and cause.errno in (errno.EMFILE, errno.ENFILE):
            return (
                f"{exc}: this process is out of file descriptors ({cause.strerror}), so no "
                "connection could be opened; raise the limit (ulimit -n) or run fewer at once"
            )
        cause = cause.__cause__ or cause.__context__
    return str(exc)
