"""Judging a value against a contract: :func:`validate_output` and Pydantic's errors as issues."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import TypeVar

from pydantic import BaseModel, JsonValue
from pydantic import ValidationError as PydanticValidationError
from pydantic_core import InitErrorDetails, PydanticCustomError

from agent_contracts._validation import ValidationIssue
from agent_core._compiled_schema import CompiledSchema, compile_schema
from agent_core._error_messages import (
    format_path,
)
from agent_core._surrogates import escape_surrogates, mask_surrogates

__all__ = ["issues_from_pydantic", "json_form", "validate_as_json", "validate_output"]

_M = TypeVar("_M", bound=BaseModel)


def validate_output(
    value: JsonValue,
    contract: Mapping[str, JsonValue] | bool | type[BaseModel],
    *,
    lenient: bool = False,
) -> list[ValidationIssue]:
    """Return every problem with ``value`` under ``contract``, in deterministic order.

    Args:
        value: The output to judge (parsed JSON).
        contract: A JSON Schema, a model from ``model_from_schema`` (its schema is used), or any
            other Pydantic model class (validated by Pydantic as the JSON text of ``value``,
            see :func:`validate_as_json`; issues from :func:`issues_from_pydantic`).
        lenient: When True, ``format`` is not asserted (JSON Schema contracts only).

    Returns:
        The issues; an empty list when ``value`` is valid.

    Raises:
        InvalidSchemaError: If ``contract`` is not a usable schema.
        SchemaReferenceError: If a ``$ref`` in it does not resolve.
    """
    if isinstance(contract, type) and issubclass(contract, BaseModel):
        compiled_for: Callable[[bool], CompiledSchema] | None = getattr(
            contract, "agentshape_compiled", None
        )
        if compiled_for is not None:
            return compiled_for(lenient).issues(value)
        try:
            validate_as_json(contract, value)
        except PydanticValidationError as error:
            return issues_from_pydantic(error)
        return []
    return compile_schema(contract, lenient=lenient).issues(value)


def validate_as_json(model: type[_M], value: JsonValue) -> _M:
    """Validate ``value`` as Pydantic validates the JSON text of it (``model_validate_json``).

    A model's answer is JSON, so a Pydantic class judges it in JSON mode, even under
    ``ConfigDict(strict=True)``: an ISO string is a ``datetime``, an array a ``tuple`` or a
    ``set``, a string or number a ``Decimal``, a value an ``Enum`` member. A value that is not
    JSON (a Python object given directly) is validated as it is.

    Args:
        model: A Pydantic model class.
        value: The parsed output.

    Returns:
        The validated instance.

    Raises:
        pydantic.ValidationError: When Pydantic refuses the value; a lone UTF-16 surrogate,
            which Pydantic cannot read from JSON text, is reported as such.
    """
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return model.model_validate(value)
    try:
        return model.model_validate_json(text)
    except PydanticValidationError as error:
        if not any(item["type"] == "json_invalid" for item in error.errors()):
            raise
        masked = mask_surrogates(value)
        if masked is None:
            raise
        shown = ", ".join(masked.text(stand_in) for stand_in in masked.back)
        raise PydanticValidationError.from_exception_data(
            model.__name__,
            [
                InitErrorDetails(
                    type=PydanticCustomError(
                        "json_invalid",
                        "{message}",
                        {
                            "message": f"a lone UTF-16 surrogate ({shown}) is not text Pydantic "
                            "reads from JSON; send whole characters"
                        },
                    ),
                    loc=(),
                    input=escape_surrogates(text),
                )
            ],
        ) from error


def json_form(model: type[BaseModel], value: JsonValue) -> JsonValue:
    """Return the JSON form of ``value`` validated by ``model`` (as :func:`validate_as_json`).

    A run's ``result_data`` is this form, so it shows what the output holds (``3``, not the
    ``"3"`` a lax model accepted).

    Args:
        model: A Pydantic model class.
        value: A value the model accepts.

    Returns:
        ``model_dump(mode="json", by_alias=True)`` of the validated instance.

    Raises:
        pydantic.ValidationError: When the model refuses the value.
    """
    dumped: JsonValue = validate_as_json(model, value).model_dump(mode="json", by_alias=True)
    return dumped


def issues_from_pydantic(error: PydanticValidationError) -> list[ValidationIssue]:
    """Translate Pydantic's errors into validation issues with JSON paths.

    A missing field becomes ``$: 'name' is a required property`` and a forbidden extra field
    ``$: Additional properties are not allowed ('name' was unexpected)``, as JSON Schema would
    say; other errors keep Pydantic's message. Errors raised by agentshape's own models keep
    their exact JSON Schema path and message.

    Args:
        error: A Pydantic ``ValidationError``.

    Returns:
        One issue per Pydantic error, in Pydantic's order.
    """
    issues: list[ValidationIssue] = []
    for item in error.errors(include_url=False):
        loc = [part for part in item["loc"] if isinstance(part, int | str)]
        ctx = item.get("ctx") or {}
        path, message = format_path(loc), item["msg"]
        keyword: str | None = item["type"]
        schema_path: str | None = None
        if keyword == "json_schema":
            keyword, schema_path = ctx.get("keyword"), ctx.get("schema_path")
        elif keyword in {"missing", "extra_forbidden"} and loc and isinstance(loc[-1], str):
            path = format_path(loc[:-1])
            if keyword == "missing":
                message, keyword = f"{loc[-1]!r} is a required property", "required"
            else:
                extra = f"({loc[-1]!r} was unexpected)"
                message, keyword = (
                    f"Additional properties are not allowed {extra}",
                    "additionalProperties",
                )
        issues.append(
            ValidationIssue(path=path, message=message, keyword=keyword, schema_path=schema_path)
        )
    return issues
