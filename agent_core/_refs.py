"""Schemas that a ``$ref`` may name by URI, held in memory: agentshape never fetches a schema.

A remote ``$ref`` resolves only to a document registered with :func:`register_schema`; any other
fails at compile time with :class:`~agent_contracts._errors.SchemaReferenceError`. The registry is
thread-safe, and schemas that used a document are recompiled after it changes. The draft
meta-schemas resolve without registration.
"""

from __future__ import annotations

import copy
import json
import re
import threading
from collections.abc import Mapping
from urllib.parse import urlsplit

from pydantic import JsonValue

from agent_contracts._errors import ConfigError, InvalidSchemaError, SchemaReferenceError

__all__ = [
    "RegistryRetriever",
    "lookup_schema",
    "reference_error",
    "register_schema",
    "registered_schemas",
    "registry_generation",
    "unregister_schema",
]

# The base URI the engine gives a root schema that has no ``$id``; relative references are
# resolved against it, so ``{"$ref": "common.json"}`` asks for ``json-schema:///common.json``.
_DEFAULT_BASE = "json-schema:///"

_lock = threading.Lock()
_schemas: dict[str, JsonValue] = {}
_generation = 0


def _normalize(uri: str) -> str:
    """Return ``uri`` without surrounding space or an empty trailing fragment."""
    if not isinstance(uri, str) or not uri.strip():
        raise ConfigError(f"a schema URI must be a non-empty string, got {uri!r}")
    text = uri.strip()
    if text.endswith("#"):
        text = text[:-1]
    if urlsplit(text).fragment:
        raise ConfigError(
            f"register the whole document, not a fragment: {uri!r} has a fragment "
            "(a $ref may still point into the document with '#/...')"
        )
    return text


def register_schema(uri: str, schema: Mapping[str, JsonValue] | bool) -> None:
    """Make ``schema`` available to every ``$ref`` that names ``uri``, without any network.

    The document is copied, so later changes to ``schema`` have no effect; registering a URI
    again replaces the earlier document. ``uri`` may be absolute (``https://example.com/a.json``)
    or a bare name (``common.json``), which matches a relative ``$ref`` from a schema that has no
    ``$id``.

    Args:
        uri: The URI the document is known by; an empty trailing ``#`` is ignored.
        schema: The JSON Schema document (an object or a boolean).

    Raises:
        ConfigError: If ``uri`` is empty or carries a non-empty fragment.
        InvalidSchemaError: If ``schema`` is not a JSON object or boolean made of JSON values.
    """
    global _generation
    key = _normalize(uri)
    if not isinstance(schema, bool | Mapping):
        raise InvalidSchemaError(
            f"a JSON Schema must be a JSON object or a boolean, got {type(schema).__name__}",
            source=key,
        )
    try:
        stored: JsonValue = json.loads(json.dumps(schema, allow_nan=False))
    except (TypeError, ValueError) as error:
        raise InvalidSchemaError(f"the schema is not JSON: {error}", source=key) from error
    with _lock:
        _schemas[key] = stored
        _generation += 1


def unregister_schema(uri: str) -> None:
    """Forget the document registered under ``uri``; does nothing if there is none.

    Args:
        uri: The URI the document was registered under.

    Raises:
        ConfigError: If ``uri`` is empty or carries a non-empty fragment.
    """
    global _generation
    key = _normalize(uri)
    with _lock:
        if _schemas.pop(key, None) is not None:
            _generation += 1


def registered_schemas() -> dict[str, JsonValue]:
    """Return a copy of every registered document, keyed by URI.

    Returns:
        A new dict; changing it does not change the registry.
    """
    with _lock:
        return copy.deepcopy(_schemas)


def registry_generation() -> int:
    """Return a counter that grows each time the registry changes.

    Returns:
        The current generation; compiled schemas that used the registry compare it to decide
        whether they are stale.
    """
    return _generation


def lookup_schema(uri: str) -> JsonValue | None:
    """Return the document registered under ``uri`` (without fragment), or ``None``.

    A URI under the engine's default base (``json-schema:///name``) also matches a document
    registered as the bare ``name``.

    Args:
        uri: An absolute URI as the validation engine asks for it.

    Returns:
        The registered document (not a copy; do not modify it), or ``None``.
    """
    key = uri[:-1] if uri.endswith("#") else uri
    found = _schemas.get(key)
    if found is None and key.startswith(_DEFAULT_BASE):
        found = _schemas.get(key[len(_DEFAULT_BASE) :])
    return found


class RegistryRetriever:
    """The engine's retriever: serves registered documents and refuses everything else.

    One instance is used per compilation, and remembers which URIs it served and which it
    could not, so the compiler can name a missing reference and notice registry changes.

    Attributes:
        fetched: URIs served from the registry, in order.
        missing: URIs asked for that are not registered, in order.
    """

    def __init__(self) -> None:
        self.fetched: list[str] = []
        self.missing: list[str] = []

    def __call__(self, uri: str) -> JsonValue:
        """Return the registered document for ``uri``.

        Args:
            uri: The absolute URI the engine needs.

        Raises:
            LookupError: If nothing is registered under ``uri`` (the engine reports it, and the
                compiler turns it into a ``SchemaReferenceError``).
        """
        found = lookup_schema(uri)
        if found is None:
            self.missing.append(uri)
            raise LookupError(f"{uri} is not registered")
        self.fetched.append(uri)
        return found


_QUOTED = re.compile(r"'([^']*)'")


def _refs_in(schema: object) -> list[str]:
    """Return every ``$ref`` string in ``schema``, in document order."""
    found: list[str] = []
    stack: list[object] = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str):
                found.append(ref)
            stack.extend(reversed(list(node.values())))
        elif isinstance(node, list):
            stack.extend(reversed(node))
    return found


def _matching_ref(refs: list[str], target: str) -> str | None:
    """Return the first reference that names ``target`` (a URI or a ``#`` pointer)."""
    bare = target[len(_DEFAULT_BASE) :] if target.startswith(_DEFAULT_BASE) else target
    for ref in refs:
        document, _, fragment = ref.partition("#")
        if target.startswith("/") and ref.startswith("#") and fragment == target:
            return ref
        if document and (document in (target, bare) or target.endswith(document)):
            return ref
    return None


def reference_error(
    engine_message: str,
    retriever: RegistryRetriever,
    schema: Mapping[str, JsonValue] | JsonValue,
    *,
    source: str | None = None,
) -> SchemaReferenceError:
    """Build the error for a ``$ref`` that the engine could not resolve.

    Args:
        engine_message: The validation engine's description of the failure.
        retriever: The retriever used for the failed compilation.
        schema: The schema that was being compiled.
        source: Where the schema came from, for the message.

    Returns:
        A ``SchemaReferenceError`` naming the ``$ref`` as written in the schema when it can be
        found, and otherwise the URI or pointer the engine reported.
    """
    prefix = f"{source}: " if source else ""
    refs = _refs_in(schema)
    if retriever.missing:
        uri = retriever.missing[0]
        reference = _matching_ref(refs, uri) or uri
        return SchemaReferenceError(
            f"{prefix}cannot resolve $ref {reference!r}: {uri!r} is not registered "
            "(agentshape never fetches schemas over the network; register the document with "
            "agent_core._refs.register_schema)",
            reference=reference,
        )
    quoted = _QUOTED.findall(engine_message)
    target = quoted[0] if quoted else ""
    reference = (_matching_ref(refs, target) if target else None) or target or engine_message
    return SchemaReferenceError(
        f"{prefix}cannot resolve $ref {reference!r}: {engine_message}",
        reference=reference,
    )
