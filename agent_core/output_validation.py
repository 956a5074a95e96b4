"""Judging a value against a contract: :func:`validate_output` and Pydantic's errors as issues."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from pydantic import BaseModel, JsonValue
from pydantic import ValidationError as PydanticValidationError

from agent_contracts.validation import ValidationIssue
from agent_core.error_messages import (
    format_path,
)

if TYPE_CHECKING:
    from agent_core.validation import CompiledSchema

__all__ = ["issues_from_pydantic", "validate_output"]


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
            other Pydantic model class (validated by Pydantic, issues from
            :func:`issues_from_pydantic`).
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
            contract.model_validate(value)
        except PydanticValidationError as error:
            return issues_from_pydantic(error)
        return []
    from agent_core.validation import compile_schema  # it imports this module

    return compile_schema(contract, lenient=lenient).issues(value)


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
