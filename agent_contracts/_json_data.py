"""JSON values that are checked once: :data:`JsonData`, :data:`JsonObjectData`, :data:`PARSED_JSON`.

A value the run loop has just read with a JSON parser is JSON by construction, so a model built
with ``Model.model_validate(fields, context=PARSED_JSON)`` takes its :data:`JsonData` fields as
they are, without Pydantic's walk over every node and without a copy. Without that context the
full ``JsonValue`` check runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Annotated

from pydantic import JsonValue, ValidationInfo, ValidatorFunctionWrapHandler, WrapValidator

__all__ = ["PARSED_JSON", "JsonData", "JsonObjectData"]

_PARSED = "agentshape_parsed_json"

PARSED_JSON: Mapping[str, object] = MappingProxyType({_PARSED: True})
"""The validation context saying: every :data:`JsonData` value here came from a JSON parser."""


def _checked_once(
    value: object, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
) -> object:
    return value if _parsed(info.context) else handler(value)


def _parsed(context: object) -> bool:
    """Tell whether a validation context is :data:`PARSED_JSON` (or a mapping that says so)."""
    if context is PARSED_JSON:  # the usual case, without an ABC check
        return True
    return isinstance(context, Mapping) and context.get(_PARSED) is True


JsonData = Annotated[JsonValue, WrapValidator(_checked_once)]
"""A JSON value; checked like ``JsonValue`` unless the model is validated with
:data:`PARSED_JSON` as its context (the value then comes from a JSON parser)."""


def _object_checked_once(
    value: object, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
) -> object:
    if type(value) is dict and _parsed(info.context):  # one look at the whole object
        return value
    return handler(value)  # the full check (a parsed object is a dict: anything else fails)


JsonObjectData = Annotated[dict[str, JsonValue], WrapValidator(_object_checked_once)]
"""A JSON object; checked like ``dict[str, JsonValue]`` unless the model is validated with
:data:`PARSED_JSON` as its context (a ``dict`` is then taken as it is, with one check for the
whole object rather than one for each of its members: a parser's objects have string keys)."""
