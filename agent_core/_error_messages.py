"""Engine errors rendered as validation issues, in python-jsonschema's wording.

:func:`issue_detail` turns one ``jsonschema_rs`` error into a
:class:`~agent_contracts._validation.ValidationIssue` worded as python-jsonschema would
(``'critical' is not one of ['low', 'medium', 'high']``), with its sort key;
:func:`non_json_issues` reports parts of a value that are not JSON, and :func:`meta_schema_fault`
words a schema's failure against its draft's meta-schema.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

import jsonschema_rs
from jsonschema_rs import ValidationErrorKind as Kind
from pydantic import JsonValue

from agent_contracts._validation import ValidationIssue
from agent_core._ecma_patterns import designer_parts
from agent_core._json_paths import IssueSortKey, _path_key, format_path

__all__ = [
    "ErrorContext",
    "IssueDetail",
    "IssueSortKey",
    "format_path",
    "issue_detail",
    "meta_schema_fault",
    "non_json_issues",
]

_MISSING = object()


class IssueDetail(NamedTuple):
    """One problem with a value, with its location as path parts and the offending value."""

    parts: tuple[str | int, ...]
    """The path of the offending value: object keys and array indices, outermost first."""
    value: object
    """The offending value itself."""
    issue: ValidationIssue
    """The problem as a path and a message."""


_Docs = Sequence[JsonValue]


class ErrorContext(NamedTuple):
    """What rendering an engine error needs to know about the schema it came from."""

    docs: _Docs
    """Documents to look keyword values up in, the canonical schema first, for the messages
    that quote the schema (``type``, ``oneOf``, ``patternProperties``, ``dependencies``...)."""
    draft: int
    """The draft the schema is read under: 4, 6, 7, 2019 or 2020."""
    renamed: Mapping[str, str]
    """Patterns the engine was given in another spelling -> the designer's spelling
    (:attr:`agent_core._ecma_patterns.PatternRewrite.renamed`; empty for most schemas)."""


def _value_at(value: object, parts: Sequence[str | int]) -> object:
    """Return the part of ``value`` at ``parts``, or ``_MISSING``."""
    node = value
    for part in parts:
        if isinstance(node, dict) and isinstance(part, str):
            node = node.get(part, _MISSING)
        elif isinstance(node, list | tuple) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return _MISSING
        if node is _MISSING:
            break
    return node


def _lookup(docs: _Docs, path: Sequence[str | int], check: Callable[[object], bool]) -> object:
    """Return the first node at ``path`` in one of ``docs`` that passes ``check``."""
    for doc in docs:
        found = _value_at(doc, path)
        if found is not _MISSING and check(found):
            return found
    return _MISSING


def _extras(items: Sequence[object]) -> str:
    """Render unexpected items as python-jsonschema does: ``'a', 'b' were``."""
    verb = "was" if len(items) == 1 else "were"
    return f"{', '.join(repr(item) for item in items)} {verb}"


def non_json_issues(value: object) -> list[IssueDetail]:
    """Return a problem for each part of ``value`` that is not JSON (sets, NaN, integer keys).

    Args:
        value: Any Python value offered for validation.

    Returns:
        One ``type`` issue per offending part, sorted by its path; empty when it is all JSON.
    """
    found: list[IssueDetail] = []
    stack: list[tuple[object, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        node, parts = stack.pop()
        message = None
        if isinstance(node, dict):
            for key, child in node.items():
                if isinstance(key, str):
                    stack.append((child, (*parts, key)))
                else:
                    message = f"{key!r} is not a valid property name (JSON keys are strings)"
        elif isinstance(node, list | tuple):
            stack.extend((child, (*parts, index)) for index, child in enumerate(node))
        elif isinstance(node, float) and not math.isfinite(node):
            message = f"{node!r} is not a JSON number"
        elif node is not None and not isinstance(node, str | int | float):
            message = f"{node!r} is not a JSON value"
        if message is not None:
            issue = ValidationIssue(path=format_path(parts), message=message, keyword="type")
            found.append(IssueDetail(parts, node, issue))
    return sorted(found, key=lambda detail: _path_key(detail.parts))


def _ensure_list(node: object) -> list[object]:
    """Return ``node`` as a list (a lone value becomes a one-item list)."""
    return list(node) if isinstance(node, list) else [node]


def issue_detail(
    error: jsonschema_rs.ValidationError, value: JsonValue, context: ErrorContext
) -> tuple[IssueSortKey, IssueDetail]:
    """Turn one engine error into an issue in python-jsonschema's wording, with its sort key.

    Args:
        error: One error from the engine's ``iter_errors``.
        value: The whole value that was validated.
        context: The schema the error came from.

    Returns:
        The key that orders the issue among the others, and the issue with its location and
        offending value. The schema path is the designer's (respelled patterns spelled back).
    """
    parts = tuple(error.instance_path)
    found = _value_at(value, parts)
    instance = error.instance if found is _MISSING else found
    message, keyword, schema_path = _describe(error, instance, context)
    issue = ValidationIssue(
        path=format_path(parts),
        message=message,
        keyword=keyword,
        schema_path=format_path(schema_path),
    )
    return (_path_key(parts), _path_key(schema_path)), IssueDetail(parts, instance, issue)


def _describe(
    error: jsonschema_rs.ValidationError, instance: object, context: ErrorContext
) -> tuple[str, str, list[str | int]]:
    """Return (message, keyword, designer's schema path) for an engine error."""
    kind = error.kind
    where = designer_parts(error.schema_path, context.renamed)
    if isinstance(kind, Kind.PropertyNames):
        inner = kind.error
        message, keyword, inner_where = _describe(inner, inner.instance, context)
        return message, keyword, inner_where
    keyword = kind.name
    last = where[-1] if where else None
    if isinstance(kind, Kind.Required) and last in {"dependencies", "dependentRequired"}:
        owner = _dependency_owner(kind.property, instance, context.docs, where)
        if owner is not None:
            return f"{kind.property!r} is a dependency of {owner!r}", str(last), where
    return _message(kind, instance, context, where) or error.message, keyword, where


def _dependency_owner(
    missing: str, instance: object, docs: _Docs, where: Sequence[str | int]
) -> str | None:
    """Return the property whose dependency list names ``missing``."""
    deps = _lookup(docs, where, lambda node: isinstance(node, dict))
    if not isinstance(deps, dict) or not isinstance(instance, dict):
        return None
    for owner, needed in deps.items():
        if owner in instance and isinstance(needed, list) and missing in needed:
            return str(owner)
    return None


def _message(
    kind: Kind, instance: object, context: ErrorContext, where: list[str | int]
) -> str | None:
    """Return python-jsonschema's message for an error kind, or None to keep the engine's."""
    shown = repr(instance)
    docs, draft = context.docs, context.draft
    match kind:
        case Kind.Type():
            wanted = sorted(kind.types)
            found = _lookup(
                docs, where, lambda node: sorted(map(str, _ensure_list(node))) == wanted
            )
            types = _ensure_list(found) if found is not _MISSING else list(kind.types)
            return f"{shown} is not of type {', '.join(repr(name) for name in types)}"
        case Kind.Required():
            return f"{kind.property!r} is a required property"
        case Kind.Enum():
            return f"{shown} is not one of {kind.options!r}"
        case Kind.Constant():
            return f"{kind.expected_value!r} was expected"
        case Kind.Format():
            return f"{shown} is not a {kind.format!r}"
        case Kind.Pattern():
            return f"{shown} does not match {context.renamed.get(kind.pattern, kind.pattern)!r}"
        case Kind.Minimum():
            return f"{shown} is less than the minimum of {kind.limit!r}"
        case Kind.Maximum():
            return f"{shown} is greater than the maximum of {kind.limit!r}"
        case Kind.ExclusiveMinimum():
            return f"{shown} is less than or equal to the minimum of {kind.limit!r}"
        case Kind.ExclusiveMaximum():
            return f"{shown} is greater than or equal to the maximum of {kind.limit!r}"
        case Kind.MultipleOf():
            return f"{shown} is not a multiple of {kind.multiple_of}"
        case Kind.MinLength() | Kind.MinItems():
            return f"{shown} {'should be non-empty' if kind.limit == 1 else 'is too short'}"
        case Kind.MaxLength() | Kind.MaxItems():
            return f"{shown} {'is expected to be empty' if kind.limit == 0 else 'is too long'}"
        case Kind.MinProperties():
            many = "should be non-empty" if kind.limit == 1 else "does not have enough properties"
            return f"{shown} {many}"
        case Kind.MaxProperties():
            many = "is expected to be empty" if kind.limit == 0 else "has too many properties"
            return f"{shown} {many}"
        case Kind.UniqueItems():
            return f"{shown} has non-unique elements"
        case Kind.AdditionalProperties():
            return _additional_properties(kind.unexpected, docs, where)
        case Kind.AdditionalItems():
            extra = list(instance[kind.limit :]) if isinstance(instance, list | tuple) else []
            return f"Additional items are not allowed ({_extras(extra)} unexpected)"
        case Kind.Contains():
            return _contains(shown, docs, where, draft)
        case Kind.Not():
            return f"{shown} should not be valid under {_not_schema(kind.schema, context, where)!r}"
        case Kind.AnyOf() | Kind.OneOfNotValid():
            return f"{shown} is not valid under any of the given schemas"
        case Kind.OneOfMultipleValid():
            return _one_of_many(shown, kind.context, docs, where)
        case Kind.FalseSchema():
            return f"False schema does not allow {shown}"
        case Kind.UnevaluatedProperties():
            closed = _lookup(docs, where, lambda node: node is False) is False
            names = sorted(kind.unexpected, key=str) if closed else list(kind.unexpected)
            if closed:
                return f"Unevaluated properties are not allowed ({_extras(names)} unexpected)"
            return (
                "Unevaluated properties are not valid under the given schema "
                f"({_extras(names)} unevaluated and invalid)"
            )
        case Kind.UnevaluatedItems():
            items = [_value_at(instance, [index]) for index in kind.unexpected]
            return f"Unevaluated items are not allowed ({_extras(items)} unexpected)"
        case Kind.ContentEncoding():
            return f"{shown} is not compliant with {kind.content_encoding!r} content encoding"
        case Kind.ContentMediaType():
            return f"{shown} is not compliant with {kind.content_media_type!r} media type"
    return None


def _not_schema(engine: object, context: ErrorContext, where: list[str | int]) -> object:
    """Return the ``not`` subschema as the designer wrote it (the engine's may be respelled)."""
    if not context.renamed:
        return engine
    found = _lookup(context.docs, where, lambda node: isinstance(node, dict | bool))
    return engine if found is _MISSING else found


def _additional_properties(unexpected: Sequence[str], docs: _Docs, where: list[str | int]) -> str:
    """Render an ``additionalProperties: false`` failure as python-jsonschema does."""
    names = sorted(unexpected, key=str)
    parent = _lookup(
        docs, where[:-1], lambda node: isinstance(node, dict) and "additionalProperties" in node
    )
    if isinstance(parent, dict) and isinstance(parent.get("patternProperties"), dict):
        verb = "does" if len(names) == 1 else "do"
        joined = ", ".join(repr(name) for name in names)
        patterns = ", ".join(repr(pattern) for pattern in sorted(parent["patternProperties"]))
        return f"{joined} {verb} not match any of the regexes: {patterns}"
    return f"Additional properties are not allowed ({_extras(names)} unexpected)"


def _contains(shown: str, docs: _Docs, where: list[str | int], draft: int) -> str:
    """Render a ``contains`` (or ``minContains``/``maxContains``) failure."""
    last = where[-1] if where else None
    bound = _lookup(docs, where, lambda node: isinstance(node, int))
    if last == "minContains":
        return f"Too few items match the given schema (expected at least {bound})"
    if last == "maxContains":
        return f"Too many items match the given schema (expected at most {bound})"
    if draft < 2019:
        return f"None of {shown} are valid under the given schema"
    return f"{shown} does not contain items matching the given schema"


def _one_of_many(
    shown: str,
    context: list[list[jsonschema_rs.ValidationError]],
    docs: _Docs,
    where: list[str | int],
) -> str:
    """Render a ``oneOf`` that more than one branch satisfied."""
    branches = _lookup(
        docs, where, lambda node: isinstance(node, list) and len(node) == len(context)
    )
    valid = [index for index, errors in enumerate(context) if not errors]
    if not isinstance(branches, list) or len(valid) < 2:
        return f"{shown} is valid under more than one of the given schemas"
    order = [*valid[1:], valid[0]]
    return f"{shown} is valid under each of {', '.join(repr(branches[i]) for i in order)}"


def _best_match(error: jsonschema_rs.ValidationError) -> jsonschema_rs.ValidationError:
    """Descend into ``anyOf``/``oneOf`` failures to the error most likely meant."""
    while isinstance(error.kind, Kind.AnyOf | Kind.OneOfNotValid):
        depth = len(error.instance_path)
        groups = [group for group in error.kind.context if group]
        relevant = [
            group
            for group in groups
            if not all(
                isinstance(each.kind, Kind.Type) and len(each.instance_path) == depth
                for each in group
            )
        ]
        pool = relevant or groups
        if not pool:
            break
        group = max(pool, key=lambda errors: max(len(each.instance_path) for each in errors))
        error = max(group, key=lambda each: len(each.instance_path))
    return error


def meta_schema_fault(
    error: jsonschema_rs.ValidationError, context: ErrorContext
) -> tuple[list[str | int], str]:
    """Locate and word a schema's failure against its draft's meta-schema.

    Args:
        error: The error the engine raised when it checked the schema.
        context: The schema's draft and respelled patterns; ``docs`` are the meta-schema's
            documents, for the faults worded from its text (may be none).

    Returns:
        The path of the fault in the designer's schema, and what is wrong there (a regular
        expression is quoted as the designer wrote it).
    """
    chosen = _best_match(error)
    parts = list(chosen.instance_path)
    if "propertyNames" in chosen.schema_path and isinstance(chosen.instance, str):
        parts.append(chosen.instance)
    kind = chosen.kind
    if isinstance(kind, Kind.Format) and kind.format == "regex":
        written = chosen.instance
        if isinstance(written, str):
            written = context.renamed.get(written, written)
        detail = f"{written!r} is not a valid regular expression"
    else:
        detail = _describe(chosen, chosen.instance, context)[0]
    return designer_parts(parts, context.renamed), detail
