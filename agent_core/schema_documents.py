"""A schema as a document: its draft, canonical text, hash and JSON pointers."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import urlsplit

import jsonschema_rs
from pydantic import JsonValue

from agent_contracts.errors import InvalidSchemaError

__all__ = [
    "DRAFT_NAMES",
    "DRAFT_URIS",
    "DRAFT_VALIDATORS",
    "canonical_json",
    "node_at",
    "resolve_pointer",
    "schema_draft",
    "schema_hash",
]


DRAFT_URIS: dict[int, str] = {
    4: "http://json-schema.org/draft-04/schema#",
    6: "http://json-schema.org/draft-06/schema#",
    7: "http://json-schema.org/draft-07/schema#",
    2019: "https://json-schema.org/draft/2019-09/schema",
    2020: "https://json-schema.org/draft/2020-12/schema",
}
"""The canonical ``$schema`` URI of each supported draft."""


DRAFT_NAMES: dict[int, str] = {
    4: "draft-04",
    6: "draft-06",
    7: "draft-07",
    2019: "2019-09",
    2020: "2020-12",
}
"""How each supported draft is named in messages."""


DRAFT_VALIDATORS: dict[int, type[jsonschema_rs.Validator]] = {
    4: jsonschema_rs.Draft4Validator,
    6: jsonschema_rs.Draft6Validator,
    7: jsonschema_rs.Draft7Validator,
    2019: jsonschema_rs.Draft201909Validator,
    2020: jsonschema_rs.Draft202012Validator,
}
"""The ``jsonschema_rs`` validator class of each supported draft."""


_DRAFT_PATHS = {
    "/draft-04/schema": 4,
    "/draft-06/schema": 6,
    "/draft-07/schema": 7,
    "/draft/2019-09/schema": 2019,
    "/draft/2020-12/schema": 2020,
}


_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")


def _is_uuid(value: str) -> bool:
    """Whether ``value`` is a UUID in its hyphenated hex form (RFC 4122)."""
    return _UUID.match(value) is not None


_EXTRA_FORMATS: dict[str, Callable[[str], bool]] = {"uuid": _is_uuid}


def schema_draft(schema: Mapping[str, JsonValue] | bool) -> int:
    """Return the draft a schema is read under: 4, 6, 7 (the default), 2019 or 2020.

    Args:
        schema: A JSON Schema.

    Returns:
        The draft named by ``$schema``; 7 when it is absent or not a known draft URI.

    Raises:
        InvalidSchemaError: If ``$schema`` names draft-03, which is not supported.
    """
    if not isinstance(schema, Mapping):
        return 7
    declared = schema.get("$schema")
    if not isinstance(declared, str):
        return 7
    parts = urlsplit(declared.strip())
    if parts.netloc.lower() not in {"json-schema.org", "www.json-schema.org"}:
        return 7
    path = parts.path.rstrip("/")
    if path in {"/draft-03/schema", "/draft-02/schema", "/draft-01/schema"}:
        raise InvalidSchemaError(
            f"{declared!r} is not supported; use draft-04, draft-06, draft-07, 2019-09 or 2020-12",
            path='$["$schema"]',
        )
    return _DRAFT_PATHS.get(path, 7)


def canonical_json(schema: Mapping[str, JsonValue] | bool, *, source: str | None = None) -> str:
    """Return a schema's canonical JSON text: sorted keys, compact separators, UTF-8 kept.

    Args:
        schema: A JSON Schema.
        source: Where the schema came from, used in error messages.

    Returns:
        The text whose SHA-256 is :func:`schema_hash`.

    Raises:
        InvalidSchemaError: If the schema is not a JSON object or boolean made of JSON values.
    """
    if not isinstance(schema, bool | Mapping):
        raise InvalidSchemaError(
            f"a JSON Schema must be a JSON object or a boolean, got {type(schema).__name__}",
            source=source,
        )
    try:
        return json.dumps(
            schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError) as error:
        raise InvalidSchemaError(f"the schema is not JSON: {error}", source=source) from error


def schema_hash(schema: Mapping[str, JsonValue] | bool) -> str:
    """Return the SHA-256 of a schema's canonical JSON (sorted keys, compact separators).

    Two schemas that differ only in key order or whitespace have the same hash.

    Args:
        schema: A JSON Schema.

    Returns:
        The hex digest.

    Raises:
        InvalidSchemaError: If the schema is not a JSON object or boolean made of JSON values.
    """
    return hashlib.sha256(canonical_json(schema).encode("utf-8")).hexdigest()


def resolve_pointer(document: JsonValue, pointer: str) -> JsonValue:
    """Return the node at a JSON pointer (``/definitions/a~1b/0``) inside ``document``.

    Args:
        document: A JSON document.
        pointer: An RFC 6901 pointer; ``""`` is the whole document.

    Returns:
        The node, or ``None`` when the pointer leads nowhere.
    """
    tokens = pointer.split("/")[1:] if pointer else []
    found = node_at(document, [token.replace("~1", "/").replace("~0", "~") for token in tokens])
    return None if found is None else found[0]


def node_at(document: JsonValue, keys: Iterable[str]) -> tuple[JsonValue] | None:
    """Return the node reached by following decoded JSON pointer ``keys`` from ``document``.

    Args:
        document: A JSON document.
        keys: Object keys and array indices (as digit strings), already unescaped.

    Returns:
        ``(node,)``, or ``None`` when a key leads nowhere (so a ``null`` node is told apart).
    """
    node = document
    for key in keys:
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
    return (node,)
