"""Walk a JSON Schema document: subschema positions, JSON paths, same-document ``$ref``.

The schema checks and the provider dialects both need to know where the subschemas of a document
are (the names under ``properties`` are property names, not keywords), to name a node by its JSON
path, and to follow a ``#/json/pointer`` reference without ever touching the network.
"""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import unquote

import jsonschema_rs
from pydantic import JsonValue

from agent_core._json_paths import format_path
from agent_core._schema_documents import DRAFT_VALIDATORS, node_at, schema_draft

__all__ = [
    "child_path",
    "fragment_keys",
    "offline_validator",
    "resolve_local_ref",
    "subschemas",
    "without_own_id",
]


_SCHEMA_MAPS = frozenset(
    str.split("properties patternProperties $defs definitions dependentSchemas")
)
_SCHEMA_SINGLES = frozenset(
    str.split(
        "additionalProperties additionalItems unevaluatedProperties unevaluatedItems contains "
        "propertyNames not if then else contentSchema items"
    )
)
_SCHEMA_LISTS = frozenset(str.split("allOf anyOf oneOf prefixItems items"))


def child_path(path: str, key: str | int) -> str:
    """Return the JSON path of ``key`` under ``path``: ``$.a.b``, ``$.a[0]`` or ``$.a["x-y"]``.

    Args:
        path: The parent's JSON path.
        key: A property name or an array index.
    """
    return path + format_path([key])[1:]


def subschemas(node: JsonValue, path: str = "$") -> Iterator[tuple[str, JsonValue]]:
    """Yield ``(json_path, subschema)`` for every schema position under ``node``, node first.

    Only schema positions are visited: the names in ``properties`` are property names, and the
    values of ``enum``, ``const``, ``default`` and ``examples`` are data.

    Args:
        node: A JSON Schema (an object or a boolean).
        path: The JSON path of ``node``.

    Yields:
        Each schema position with its JSON path, depth first, in document order.
    """
    yield path, node
    if not isinstance(node, dict):
        return
    for key, value in node.items():
        here = child_path(path, key)
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            for name, sub in value.items():
                yield from subschemas(sub, child_path(here, name))
        elif key == "dependencies" and isinstance(value, dict):
            for name, sub in value.items():
                if isinstance(sub, dict | bool):
                    yield from subschemas(sub, child_path(here, name))
        elif key in _SCHEMA_SINGLES and isinstance(value, dict | bool):
            yield from subschemas(value, here)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            for index, sub in enumerate(value):
                yield from subschemas(sub, child_path(here, index))


def without_own_id(ref: str, root_id: JsonValue) -> str:
    """Return ``ref`` as a bare ``#`` fragment when it names the root's own ``$id``.

    Args:
        ref: A ``$ref`` value.
        root_id: The root schema's ``$id`` (anything else than a non-empty string is ignored).

    Returns:
        ``#...`` for ``<root_id>#...``; any other reference unchanged.
    """
    if isinstance(root_id, str) and root_id and ref.startswith(root_id.rstrip("#") + "#"):
        return ref[len(root_id.rstrip("#")) :]
    return ref


def resolve_local_ref(root: JsonValue, ref: str) -> tuple[JsonValue, str] | None:
    """Resolve a same-document ``$ref`` (``#`` or ``#/json/pointer``) against ``root``.

    A reference that starts with the root's own ``$id`` counts as same-document.

    Args:
        root: The schema document.
        ref: The reference.

    Returns:
        ``(target, pointer)``, or ``None`` when the reference leaves the document or points at
        nothing.
    """
    ref = without_own_id(ref, root.get("$id") if isinstance(root, dict) else None)
    if ref == "#":
        return root, ""
    if not ref.startswith("#/"):
        return None
    pointer = ref[1:]
    found = node_at(root, fragment_keys(pointer))
    return None if found is None else (found[0], pointer)


def fragment_keys(pointer: str) -> list[str]:
    """Return the keys of a JSON pointer taken from a URI fragment, outermost first.

    Each token is percent-decoded, then ``~1`` and ``~0`` are unescaped: ``/a%20b/c~1d`` gives
    ``a b`` and ``c/d``.

    Args:
        pointer: The pointer, without the leading ``#``; ``""`` is the whole document.

    Returns:
        The keys (array indices stay digit strings).
    """
    return [unquote(raw).replace("~1", "/").replace("~0", "~") for raw in pointer.split("/")[1:]]


def offline_validator(
    schema: dict[str, JsonValue] | bool, draft: int | None = None
) -> jsonschema_rs.Validator:
    """Return a jsonschema_rs validator for ``schema`` that never fetches a remote document.

    Args:
        schema: A JSON Schema.
        draft: 4, 6, 7, 2019 or 2020; by default the schema's ``$schema`` decides (draft-07
            when absent).

    Returns:
        The compiled validator (draft-04 to draft-07 check formats, later drafts do not).

    Raises:
        ValueError: When ``schema`` cannot be compiled: it is broken, or it has a ``$ref`` that
            does not resolve offline.
    """
    chosen = schema_draft(schema) if draft is None else draft
    validator: jsonschema_rs.Validator = DRAFT_VALIDATORS[chosen](schema, retriever=_refuse)
    return validator


def _refuse(uri: str) -> JsonValue:
    raise ValueError(f"{uri} is not fetched: schemas are resolved offline")
