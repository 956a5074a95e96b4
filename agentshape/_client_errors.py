"""The Python client's errors, and the service's error body turned into the library's errors.

The client's two errors sit beside the library's (``agent_contracts._errors``), under
``AgentshapeError``::

    AgentshapeError
    ├── APIError                an error answer no library error names (status, code, body)
    └── APIConnectionError      no answer: the service could not be reached (names the URL)

The service answers every error with one body (``error``, ``message``, ``status_code``,
``details``, ``suggestion``). Where the library has an error for it, that is raised, chained from
the :class:`APIError` that keeps the status and body::

    SchemaNotFound                      SchemaNotFoundError (the registered names, did-you-mean)
    InvalidSchema                       InvalidSchemaError (the fault's path in the schema)
    SchemaExists, InvalidSchemaName     SchemaRegistryError (the schema's name)
    InputValidationFailed               InputValidationError (every parameter problem)
    ConfigError, InvalidRequest         ConfigError (the caller's mistake, every problem listed)
    anything else                       APIError (SessionNotFound, SessionBusy, Unauthorized...)
"""

from __future__ import annotations

from collections.abc import Sequence

import httpx2
from pydantic import JsonValue

from agent_contracts._errors import (
    AgentshapeError,
    ConfigError,
    InputValidationError,
    InvalidSchemaError,
    SchemaNotFoundError,
    SchemaRegistryError,
)
from agent_contracts._validation import ValidationIssue

__all__ = [
    "APIConnectionError",
    "APIError",
    "api_error",
    "connection_error",
    "ended_early",
    "library_error",
]


class APIError(AgentshapeError):
    """An error answer of the service (``agentshape serve``) that no other error here names.

    The client raises the library's own error where one fits (``SchemaNotFound`` becomes
    ``SchemaNotFoundError``, chained from this); every other answer, such as
    ``SessionNotFound`` or ``SessionBusy``, is this.

    Attributes:
        status: The HTTP status.
        code: The error body's stable ``error`` code, such as ``SessionBusy``.
        url: The request's URL.
        body: The error body as the service sent it (any JSON, or the text of a non-JSON body).
        details: Each problem the body lists, as ``(path, message)``.
        suggestion: The nearest known name, when the service offered one.
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        code: str,
        url: str,
        body: JsonValue = None,
        details: Sequence[tuple[str, str]] = (),
        suggestion: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.url = url
        self.body = body
        self.details = list(details)
        self.suggestion = suggestion

    def format_message(self) -> str:
        """Return ``code (status) from url: message``, one line per problem, a did-you-mean."""
        lines = [f"{self.code} ({self.status}) from {self.url}: {self.message}"]
        lines += [f"  - {path}: {message}" for path, message in self.details]
        if self.suggestion:
            lines.append(f"  did you mean {self.suggestion!r}?")
        return "\n".join(lines)


class APIConnectionError(AgentshapeError):
    """The service could not be reached, or stopped answering: no error body came.

    Attributes:
        url: The request's URL.
    """

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url

    def format_message(self) -> str:
        """Return ``url: message``."""
        return f"{self.url}: {self.message}"


def api_error(response: httpx2.Response) -> APIError:
    """Return an error answer (its body read) as an :class:`APIError`.

    A body that is not the service's error body (a proxy's page, say) is kept as its text,
    and the HTTP status names the error.
    """
    try:
        body: JsonValue = response.json()
    except ValueError:
        body = response.text[:2000]
    fields = body if isinstance(body, dict) else {}
    code = fields.get("error")
    message = fields.get("message")
    raw_details = fields.get("details")
    details = [
        (str(item.get("path", "$")), str(item.get("message", "")))
        for item in (raw_details if isinstance(raw_details, list) else [])
        if isinstance(item, dict)
    ]
    suggestion = fields.get("suggestion")
    return APIError(
        str(message) if message else response.reason_phrase or "the service refused the request",
        status=response.status_code,
        code=str(code) if code else f"HTTP {response.status_code}",
        url=str(response.request.url),
        body=body,
        details=details,
        suggestion=suggestion if isinstance(suggestion, str) else None,
    )


def library_error(
    error: APIError, *, schema_name: str | None = None, known_schemas: Sequence[str] = ()
) -> AgentshapeError:
    """Return the library's error for a service error, or ``error`` itself when none fits.

    Args:
        error: The service's answer.
        schema_name: The schema name the request was about, when it named one.
        known_schemas: The registered schema names (for ``SchemaNotFound``).

    Returns:
        The error to raise (chained from ``error`` by the caller when it is another).
    """
    code = error.code
    if code == "SchemaNotFound":
        return SchemaNotFoundError(
            f"Output schema {schema_name!r} not found" if schema_name else error.message,
            name=schema_name or "",
            known=sorted(known_schemas),
            suggestion=error.suggestion,
        )
    if code == "InvalidSchema":
        path, message = error.details[0] if error.details else ("$", error.message)
        return InvalidSchemaError(message, path=path, source=error.url)
    if code in {"SchemaExists", "InvalidSchemaName"}:
        return SchemaRegistryError(error.message, path=error.url, name=schema_name)
    if code == "InputValidationFailed":
        return InputValidationError(
            error.message, errors=[_issue(path, message) for path, message in error.details]
        )
    if code in {"ConfigError", "InvalidRequest"}:
        problems = "".join(f"\n  - {path}: {message}" for path, message in error.details)
        return ConfigError(f"{error.message}{problems}")
    return error


def _issue(path: str, message: str) -> ValidationIssue:
    return ValidationIssue(path=path, message=message)


def connection_error(request: httpx2.Request, error: httpx2.TransportError) -> APIConnectionError:
    """Return a request that got no (whole) answer as an :class:`APIConnectionError`."""
    if isinstance(error, httpx2.TimeoutException):
        what = "timed out"
    elif isinstance(error, httpx2.ConnectError):
        what = "could not be reached"
    else:
        what = "broke off the connection"
    return APIConnectionError(
        f"the service {what} ({type(error).__name__}: {error})", url=str(request.url)
    )


def ended_early() -> httpx2.RemoteProtocolError:
    """Return the error of a run's event stream closed without its ``end`` (the service stopped)."""
    return httpx2.RemoteProtocolError("the event stream ended before the run did")
