"""Every error the service answers with, in one small tree, and how library errors map onto it.

::

    ServiceError                    one HTTP status and one stable ``error`` code each
    ├── NotFound                    404: RunNotFound, SessionNotFound, AgentNotFound,
    │                               SchemaNotFound, BatchNotFound
    ├── Conflict                    409: SessionBusy, RunNotCancellable, IdempotencyConflict,
    │                               ResultNotReady, SchemaExists, AgentExists, AgentBusy,
    │                               AgentFileChanged
    ├── BadRequest                  400: InvalidSchema, ConfigError, BatchNotSupported
    ├── Unprocessable               422: InvalidRequest, InputValidationFailed
    ├── PayloadTooLarge             413: PayloadTooLarge, SchemaTextTooLarge
    ├── Unauthorized                401
    ├── Forbidden                   403: CrossSiteRequest
    ├── MisdirectedRequest          421: HostNotAllowed
    ├── StoreUnavailable            503: the database cannot be reached, or its file is gone
    └── StoreFull                   507: the database's disk is full

The library's own errors (``SchemaNotFoundError``, ``InvalidSchemaError``, ``ConfigError``...) are
turned into these by :func:`from_library` in one place; the app's one exception handler renders
every ``ServiceError`` as :class:`ErrorBody`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agent_contracts._errors import (
    AgentshapeError,
    ConfigError,
    InvalidSchemaError,
    SchemaError,
    SchemaNotFoundError,
    SchemaRegistryError,
)

__all__ = [
    "BadRequest",
    "Conflict",
    "ErrorBody",
    "ErrorDetail",
    "Forbidden",
    "MisdirectedRequest",
    "NotFound",
    "PayloadTooLarge",
    "ServiceError",
    "StoreFull",
    "StoreUnavailable",
    "Unauthorized",
    "Unprocessable",
    "from_library",
]


class ErrorDetail(BaseModel):
    """One problem behind an error: where it is and what is wrong."""

    model_config = ConfigDict(extra="forbid")

    path: str = "$"
    """JSON path of the problem (in the request body, the schema, or the parameters)."""
    message: str
    """What is wrong."""
    keyword: str | None = None
    """The schema keyword concerned, when there is one."""


class ErrorBody(BaseModel):
    """The one shape of every error answer of every endpoint."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "error": "SchemaNotFound",
                    "message": "Output schema 'nonexistent-schema' not found",
                    "status_code": 404,
                    "details": [],
                }
            ]
        },
    )

    error: str
    """A stable code: ``SchemaNotFound``, ``InvalidSchema``, ``RunNotFound``..."""
    message: str
    """What went wrong, for a person."""
    status_code: int
    """The HTTP status, repeated in the body."""
    details: list[ErrorDetail] = Field(default_factory=list)
    """Every problem, when there are several (schema faults, parameter problems)."""
    suggestion: JsonValue = None
    """A did-you-mean, when a name was close to a known one."""


class ServiceError(Exception):
    """Base of the errors the API answers with.

    Args:
        code: The stable ``error`` code.
        message: What went wrong.
        details: Every problem, when there are several.
        suggestion: The nearest known name, when one is close.
    """

    status_code = 500

    def __init__(
        self,
        code: str,
        message: str,
        *,
        details: Sequence[ErrorDetail] = (),
        suggestion: str | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = list(details)
        self.suggestion = suggestion

    def body(self) -> ErrorBody:
        """Return the error as the API's one error body."""
        return ErrorBody(
            error=self.code,
            message=self.message,
            status_code=self.status_code,
            details=self.details,
            suggestion=self.suggestion,
        )


class NotFound(ServiceError):
    """A run, session, agent or schema that does not exist (404)."""

    status_code = 404


class Conflict(ServiceError):
    """A request that does not fit the resource's state (409)."""

    status_code = 409


class BadRequest(ServiceError):
    """A request the service cannot use: an invalid schema, a contract override (400)."""

    status_code = 400


class Unprocessable(ServiceError):
    """A well-formed request whose values are wrong: bad fields, bad parameters (422)."""

    status_code = 422


class PayloadTooLarge(ServiceError):
    """A request body, prompt or schema past the service's limits (413)."""

    status_code = 413


class Unauthorized(ServiceError):
    """A missing or wrong bearer token (401)."""

    status_code = 401


class Forbidden(ServiceError):
    """A request the service refuses whoever sends it: a web page's cross-site change (403)."""

    status_code = 403


class MisdirectedRequest(ServiceError):
    """A request for a ``Host`` name the service does not answer to (421)."""

    status_code = 421


class StoreUnavailable(ServiceError):
    """The database cannot be used now: unreachable, or not the one the service opened (503).

    Args:
        message: Why, for a person (the driver's reason, or the file that is gone).
        retryable: Nothing of the failed transaction was committed and the cause (a lost
            connection) may be gone on a second try; :meth:`SqlBase.call` tries again.
    """

    status_code = 503

    def __init__(self, message: str, *, retryable: bool = False) -> None:
        super().__init__("StoreUnavailable", message)
        self.retryable = retryable


class StoreFull(ServiceError):
    """The disk holding the database is full: nothing was written (507).

    Args:
        message: The database and the driver's message.
    """

    status_code = 507

    def __init__(self, message: str) -> None:
        super().__init__("StoreFull", message)


def from_library(error: AgentshapeError) -> ServiceError:
    """Map a library error onto the service's tree.

    Args:
        error: An error the library raised while checking or preparing a request.

    Returns:
        ``SchemaNotFound`` (404), ``InvalidSchema`` (400, with the fault's path), ``SchemaExists``
        (409) or ``InvalidSchemaName`` (422) for registry errors, else ``ConfigError`` (400).
    """
    if isinstance(error, SchemaNotFoundError):
        return NotFound(
            "SchemaNotFound",
            f"Output schema {error.name!r} not found",
            suggestion=error.suggestion,
        )
    if isinstance(error, InvalidSchemaError):
        return BadRequest(
            "InvalidSchema",
            f"the schema is not a valid JSON Schema: {error.message}",
            details=[ErrorDetail(path=error.path, message=error.message)],
        )
    if isinstance(error, SchemaError):
        return BadRequest(
            "InvalidSchema", error.format_message(), details=[ErrorDetail(message=error.message)]
        )
    if isinstance(error, SchemaRegistryError):
        if "already registered" in error.message:
            return Conflict("SchemaExists", error.message)
        if "not a valid schema name" in error.message:
            return Unprocessable("InvalidSchemaName", error.message)
        return ServiceError("RegistryUnavailable", error.message)
    if isinstance(error, ConfigError):
        return BadRequest("ConfigError", error.format_message())
    return BadRequest(type(error).__name__.removesuffix("Error") or "Error", error.format_message())
