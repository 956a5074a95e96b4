"""A schema as a document: its draft, canonical text, hash and JSON pointers.

The draft comes from ``$schema``: a standard draft URI names it; a URI registered with
:func:`agent_core._refs.register_schema` is a custom meta-schema, read under the draft its own
``$schema`` names (followed through further custom meta-schemas), with the vocabularies its
``$vocabulary`` lists; any other URI, or none, means draft-07.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from urllib.parse import urlsplit

import jsonschema_rs
from pydantic import JsonValue

from agent_contracts._errors import InvalidSchemaError
from agent_core._refs import lookup_schema

__all__ = [
    "DRAFT_NAMES",
    "DRAFT_URIS",
    "DRAFT_VALIDATORS",
    "canonical_json",
    "custom_meta_schema",
    "node_at",
    "resolve_pointer",
    "schema_draft",
    "schema_hash",
    "validation_vocabulary",
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


_VALIDATION_VOCABULARIES = {
    2019: "https://json-schema.org/draft/2019-09/vocab/validation",
    2020: "https://json-schema.org/draft/2020-12/vocab/validation",
}

_MAX_META_SCHEMA_CHAIN = 16


def _standard_draft(declared: str) -> int | None:
    """Return the draft a standard ``$schema`` URI names, or ``None`` for any other URI."""
    parts = urlsplit(declared.strip())
    if parts.netloc.lower() not in {"json-schema.org", "www.json-schema.org"}:
        return None
    path = parts.path.rstrip("/")
    if path in {"/draft-03/schema", "/draft-02/schema", "/draft-01/schema"}:
        raise InvalidSchemaError(
            f"{declared!r} is not supported; use draft-04, draft-06, draft-07, 2019-09 or 2020-12",
            path='$["$schema"]',
        )
    return _DRAFT_PATHS.get(path)


def _declared(schema: Mapping[str, JsonValue] | bool | JsonValue) -> str | None:
    """Return a schema's ``$schema`` when it is a string."""
    declared = schema.get("$schema") if isinstance(schema, Mapping) else None
    return declared if isinstance(declared, str) else None


def custom_meta_schema(schema: Mapping[str, JsonValue] | bool) -> str | None:
    """Return the ``$schema`` URI of a schema whose meta-schema is a registered custom one.

    Args:
        schema: A JSON Schema.

    Returns:
        The URI when ``$schema`` is not a standard draft URI and names a document registered
        with :func:`agent_core._refs.register_schema`; ``None`` otherwise.

    Raises:
        InvalidSchemaError: If ``$schema`` names draft-03 or older.
    """
    declared = _declared(schema)
    if declared is None or _standard_draft(declared) is not None:
        return None
    return declared if isinstance(lookup_schema(declared.strip()), Mapping) else None


def _meta_chain(
    schema: Mapping[str, JsonValue] | bool,
) -> tuple[int, list[Mapping[str, JsonValue]]]:
    """Return the draft a schema is read under and the custom meta-schemas that led to it."""
    chain: list[Mapping[str, JsonValue]] = []
    current: Mapping[str, JsonValue] | bool = schema
    seen: set[str] = set()
    while len(chain) < _MAX_META_SCHEMA_CHAIN:
        declared = _declared(current)
        if declared is None:
            return 7, chain
        draft = _standard_draft(declared)
        if draft is not None:
            return draft, chain
        meta = lookup_schema(declared.strip())
        if not isinstance(meta, Mapping) or declared in seen:
            return 7, chain
        seen.add(declared)
        chain.append(meta)
        current = meta
    return 7, chain


def schema_draft(schema: Mapping[str, JsonValue] | bool) -> int:
    """Return the draft a schema is read under: 4, 6, 7 (the default), 2019 or 2020.

    Args:
        schema: A JSON Schema.

    Returns:
        The draft named by ``$schema``, through registered custom meta-schemas; 7 when it is
        absent or names neither a known draft nor a registered document.

    Raises:
        InvalidSchemaError: If ``$schema`` (or a custom meta-schema's) names draft-03.
    """
    return _meta_chain(schema)[0]


def validation_vocabulary(schema: Mapping[str, JsonValue] | bool) -> bool:
    """Return whether a schema's validation keywords (``type``, ``minimum``...) apply.

    They apply unless ``$schema`` names a registered 2019-09 or 2020-12 custom meta-schema whose
    ``$vocabulary`` leaves the validation vocabulary out.

    Args:
        schema: A JSON Schema.

    Returns:
        False only for such a custom meta-schema.

    Raises:
        InvalidSchemaError: If ``$schema`` (or a custom meta-schema's) names draft-03.
    """
    draft, chain = _meta_chain(schema)
    if draft < 2019 or not chain:
        return True
    vocabularies = chain[0].get("$vocabulary")
    if not isinstance(vocabularies, Mapping):
        return True
    return _VALIDATION_VOCABULARIES[draft] in vocabularies


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
        The hash as 64 hexadecimal digits.

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
