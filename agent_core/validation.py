"""Exact JSON Schema validation, with every problem reported as a JSON path and a message.

:func:`compile_schema` turns a schema into a :class:`CompiledSchema` backed by the Rust
``jsonschema_rs`` engine (which passes the whole official draft-07 test suite, optional tests
included). Problems come back as :class:`~agent_contracts.validation.ValidationIssue` values in
python-jsonschema's wording, such as ``$.issues[0].severity: 'critical' is not one of ['low',
'medium', 'high']``.

Drafts: a schema is read under Draft-7 unless its ``$schema`` names draft-04 or draft-06 (read
under that draft's rules) or 2019-09 / 2020-12 (read under those, so a designer's
``prefixItems`` or ``unevaluatedProperties`` is never silently ignored). No ``$schema``, or any
other URI (``http://json-schema.org/schema#``, a custom meta-schema), means Draft-7; draft-03 is
refused. ``CompiledSchema.draft`` is 4, 6, 7, 2019 or 2020.

Formats (``date-time``, ``email``, ``ipv4``, ``regex``...) are asserted unless ``lenient=True``;
``uuid`` is asserted under every draft, not only from 2019-09 on. Unknown formats are ignored.

Order: issues are sorted by the JSON path of the offending value (the root first, then object
keys alphabetically and array items by index), then by the path of the failing keyword in the
schema (so ``additionalProperties`` comes before ``required``); several issues from one keyword
keep the keyword's own order (``required`` lists its names in schema order).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple, cast
from urllib.parse import urlsplit

import jsonschema_rs
from jsonschema_rs import ValidationErrorKind as Kind
from pydantic import BaseModel, JsonValue
from pydantic import ValidationError as PydanticValidationError

from agent_contracts.errors import InvalidSchemaError, OutputValidationError
from agent_contracts.validation import ValidationIssue
from agent_core.refs import RegistryRetriever, reference_error, registry_generation

__all__ = [
    "DRAFT_NAMES",
    "DRAFT_URIS",
    "CompiledSchema",
    "IssueDetail",
    "canonical_json",
    "compile_canonical",
    "compile_schema",
    "format_path",
    "issues_from_pydantic",
    "resolve_pointer",
    "schema_draft",
    "schema_hash",
    "validate_output",
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

_VALIDATORS: dict[int, type[jsonschema_rs.Validator]] = {
    4: jsonschema_rs.Draft4Validator,
    6: jsonschema_rs.Draft6Validator,
    7: jsonschema_rs.Draft7Validator,
    2019: jsonschema_rs.Draft201909Validator,
    2020: jsonschema_rs.Draft202012Validator,
}
_DRAFT_PATHS = {
    "/draft-04/schema": 4,
    "/draft-06/schema": 6,
    "/draft-07/schema": 7,
    "/draft/2019-09/schema": 2019,
    "/draft/2020-12/schema": 2020,
}
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\Z")


def _is_uuid(value: str) -> bool:
    """Whether ``value`` is a UUID in its hyphenated hex form (RFC 4122)."""
    return _UUID.match(value) is not None


# ``uuid`` became a standard format in 2019-09; designers write it in Draft-7 contracts too.
_EXTRA_FORMATS: dict[str, Callable[[str], bool]] = {"uuid": _is_uuid}
_CACHE_SIZE = 1024
_MISSING = object()


def format_path(parts: Sequence[str | int]) -> str:
    """Render a path as JSONPath-like text.

    ``("issues", 0, "severity")`` becomes ``$.issues[0].severity``; a key that is not a plain
    identifier is quoted, as in ``$["a-b"]``.

    Args:
        parts: Object keys (strings) and array indices (integers), outermost first.

    Returns:
        The path, ``$`` for the root.
    """
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENTIFIER.match(part):
            out.append(f".{part}")
        else:
            out.append(f"[{json.dumps(part, ensure_ascii=False)}]")
    return "".join(out)


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


class IssueDetail(NamedTuple):
    """One problem with a value, with its location as path parts and the offending value."""

    parts: tuple[str | int, ...]
    """The path of the offending value: object keys and array indices, outermost first."""
    value: object
    """The offending value itself."""
    issue: ValidationIssue
    """The problem as a path and a message."""


class CompiledSchema:
    """A schema compiled once for exact, fast validation; build it with :func:`compile_schema`.

    Attributes:
        schema: The designer's schema, as first compiled (not copied: treat a schema as
            read-only once it is compiled).
        hash: :func:`schema_hash` of the schema.
        draft: The draft it is read under: 4, 6, 7, 2019 or 2020.
        lenient: True when ``format`` is not asserted.
        source: Where the schema came from, when known.
    """

    __slots__ = (
        "_canonical",
        "_context",
        "_generation",
        "_lock",
        "_map",
        "_subschemas",
        "_uses_registry",
        "_validator",
        "draft",
        "hash",
        "lenient",
        "schema",
        "source",
    )

    def __init__(
        self,
        *,
        schema: JsonValue,
        digest: str,
        draft: int,
        lenient: bool,
        source: str | None,
        validator: jsonschema_rs.Validator,
        canonical: JsonValue | str,
        uses_registry: bool,
        generation: int,
        context: JsonValue = None,
    ) -> None:
        self.schema = schema
        self.hash = digest
        self.draft = draft
        self.lenient = lenient
        self.source = source
        self._validator = validator
        self._canonical = canonical
        self._context = context
        self._uses_registry = uses_registry
        self._generation = generation
        self._map: jsonschema_rs.ValidatorMap | None = None
        self._subschemas: dict[str, CompiledSchema] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return (
            f"CompiledSchema(hash={self.hash[:12]!r}, draft={self.draft}, lenient={self.lenient})"
        )

    @property
    def _document(self) -> JsonValue:
        """The schema as the engine read it (sorted keys), parsed on first use."""
        if isinstance(self._canonical, str):
            self._canonical = json.loads(self._canonical)
        return self._canonical

    @property
    def fresh(self) -> bool:
        """Whether no registered document this schema used has changed since it was compiled."""
        return not self._uses_registry or self._generation == registry_generation()

    def is_valid(self, value: JsonValue) -> bool:
        """Return whether ``value`` satisfies the schema; the fast path, with no messages.

        Args:
            value: A JSON value (dicts, lists, strings, numbers, booleans, ``None``).

        Returns:
            True when valid. A value that is not JSON (a set, an object) is never valid.
        """
        try:
            return self._validator.is_valid(value)
        except (ValueError, TypeError, OverflowError):
            return False

    def issues(self, value: JsonValue) -> list[ValidationIssue]:
        """Return every problem with ``value``, in deterministic order (empty when valid).

        Args:
            value: A JSON value.

        Returns:
            One issue per failed keyword, sorted by the path of the offending value.
        """
        return [detail.issue for detail in self.explain(value)]

    def explain(self, value: JsonValue) -> list[IssueDetail]:
        """Return every problem with ``value`` together with where it is and what is there.

        Args:
            value: A JSON value.

        Returns:
            The same problems as :meth:`issues`, each with the path as parts and the
            offending value.
        """
        if self.is_valid(value):
            return []
        foreign = _non_json(value)
        if foreign:
            return foreign
        found = [
            _detail(error, value, (self._document, self.schema, self._context), self.draft)
            for error in self._validator.iter_errors(value)
        ]
        return [detail for _, detail in sorted(found, key=lambda pair: pair[0])]

    def validate(self, value: JsonValue) -> None:
        """Check ``value`` and raise if it breaks the schema.

        Args:
            value: A JSON value.

        Raises:
            OutputValidationError: With every issue in ``errors`` and ``value`` as
                ``last_output``.
        """
        if self.is_valid(value):
            return
        issues = self.issues(value)
        count = len(issues)
        raise OutputValidationError(
            f"the value does not match the schema ({count} problem{'s' if count != 1 else ''})",
            errors=issues,
            last_output=value,
        )

    def at(self, location: str) -> CompiledSchema:
        """Return a compiled view of one subschema, for validating a part on its own.

        Args:
            location: ``#`` followed by a JSON pointer into this schema (``#/definitions/a``),
                or an absolute URI with fragment into a registered document.

        Returns:
            A ``CompiledSchema`` for that subschema (cached), read in this schema's context so
            its ``$ref`` keywords resolve as they do here.

        Raises:
            SchemaReferenceError: If the location does not exist.
        """
        if location in {"", "#"}:
            return self
        with self._lock:
            found = self._subschemas.get(location)
        if found is not None:
            return found
        if not location.startswith("#"):
            ref_schema: dict[str, JsonValue] = {"$schema": DRAFT_URIS[self.draft], "$ref": location}
            found = compile_schema(ref_schema, lenient=self.lenient, source=self.source)
        else:
            found = self._local(location)
        with self._lock:
            self._subschemas[location] = found
        return found

    def _local(self, location: str) -> CompiledSchema:
        """Compile the subschema at a ``#`` pointer of this document."""
        retriever = RegistryRetriever()
        document = self._document
        if self._map is None:
            named = (
                {**document, "$schema": DRAFT_URIS[self.draft]}
                if isinstance(document, dict)
                else bool(document)
            )
            self._map = jsonschema_rs.validator_map_for(
                named,
                validate_formats=not self.lenient,
                formats=_EXTRA_FORMATS if self.draft < 2019 else None,
                retriever=retriever,
            )
        validator = self._map.get(location)
        original = resolve_pointer(self.schema, location[1:])
        if validator is None or not isinstance(original, dict | bool):
            raise reference_error(
                f"Pointer '{location[1:]}' does not exist", retriever, self.schema, source=None
            )
        return CompiledSchema(
            schema=original,
            digest=schema_hash(original),
            draft=self.draft,
            lenient=self.lenient,
            source=self.source,
            validator=validator,
            canonical=resolve_pointer(document, location[1:]),
            uses_registry=self._uses_registry,
            generation=self._generation,
            context=document,
        )


_cache: OrderedDict[tuple[str, bool], CompiledSchema] = OrderedDict()
_cache_lock = threading.Lock()


def compile_schema(
    schema: Mapping[str, JsonValue] | bool, *, lenient: bool = False, source: str | None = None
) -> CompiledSchema:
    """Check a schema against its draft's meta-schema and compile it for validation.

    Results are cached by (:func:`schema_hash`, ``lenient``), so compiling the same schema
    again costs one hash. A ``$ref`` outside the schema resolves only through
    :func:`agent_core.refs.register_schema`; nothing is ever fetched from the network.

    Args:
        schema: The JSON Schema (object or boolean).
        lenient: When True, ``format`` is not asserted (it is asserted by default).
        source: Where the schema came from (a file, an agent), used in error messages.

    Returns:
        The compiled schema.

    Raises:
        InvalidSchemaError: If the schema is not JSON, breaks its draft's meta-schema, or has an
            invalid regular expression; ``.path`` is the JSON path of the fault.
        SchemaReferenceError: If a ``$ref`` does not resolve.
    """
    text = canonical_json(schema, source=source)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return compile_canonical(schema, text, digest, lenient=lenient, source=source)


def compile_canonical(
    schema: Mapping[str, JsonValue] | bool,
    text: str,
    digest: str,
    *,
    lenient: bool,
    source: str | None,
) -> CompiledSchema:
    """Like :func:`compile_schema`, when the schema's canonical JSON and hash are known.

    Args:
        schema: The JSON Schema.
        text: Its :func:`canonical_json`.
        digest: Its :func:`schema_hash` (the SHA-256 of ``text``).
        lenient: When True, ``format`` is not asserted.
        source: Where the schema came from, used in error messages.

    Returns:
        The compiled schema.

    Raises:
        InvalidSchemaError: As :func:`compile_schema`.
        SchemaReferenceError: As :func:`compile_schema`.
    """
    key = (digest, lenient)
    with _cache_lock:
        cached = _cache.get(key)
        if cached is not None and cached.fresh:
            _cache.move_to_end(key)
            return cached
    draft = schema_draft(schema)
    engine_text = text
    if isinstance(schema, Mapping):
        declared = schema.get("$schema")
        if isinstance(declared, str) and declared != DRAFT_URIS[draft]:
            # Name the draft exactly, so the engine never tries to fetch a meta-schema.
            engine_text = canonical_json({**schema, "$schema": DRAFT_URIS[draft]})
    generation = registry_generation()
    retriever = RegistryRetriever()
    try:
        validator = _VALIDATORS[draft](
            engine_text,
            validate_formats=not lenient,
            formats=_EXTRA_FORMATS if draft < 2019 else None,
            retriever=retriever,
        )
    except jsonschema_rs.ValidationError as error:
        if isinstance(error.kind, Kind.Referencing):
            raise reference_error(error.message, retriever, schema, source=source) from error
        raise _invalid_schema(error, draft, source) from error
    except ValueError as error:
        if retriever.missing:
            raise reference_error(str(error), retriever, schema, source=source) from error
        raise InvalidSchemaError(
            f"the schema cannot be compiled: {error}", source=source
        ) from error
    compiled = CompiledSchema(
        schema=cast(JsonValue, schema),
        digest=digest,
        draft=draft,
        lenient=lenient,
        source=source,
        validator=validator,
        canonical=engine_text,
        uses_registry=bool(retriever.fetched or retriever.missing),
        generation=generation,
    )
    with _cache_lock:
        _cache[key] = compiled
        _cache.move_to_end(key)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return compiled


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


# --- rendering engine errors ------------------------------------------------------------------

_SortKey = tuple[tuple[int, int | str], ...]
_Docs = Sequence[JsonValue]


def _path_key(parts: Sequence[str | int]) -> _SortKey:
    """Return a sort key for a path: indices numerically, keys alphabetically."""
    return tuple((0, part) if isinstance(part, int) else (1, part) for part in parts)


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


def resolve_pointer(document: JsonValue, pointer: str) -> JsonValue:
    """Return the node at a JSON pointer (``/definitions/a~1b/0``) inside ``document``.

    Args:
        document: A JSON document.
        pointer: An RFC 6901 pointer; ``""`` is the whole document.

    Returns:
        The node, or ``None`` when the pointer leads nowhere.
    """
    node = document
    for token in pointer.split("/")[1:] if pointer else []:
        key = token.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and key in node:
            node = node[key]
        elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
            node = node[int(key)]
        else:
            return None
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


def _non_json(value: object) -> list[IssueDetail]:
    """Return problems for the parts of ``value`` that are not JSON (sets, NaN, integer keys)."""
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


def _detail(
    error: jsonschema_rs.ValidationError, value: JsonValue, docs: _Docs, draft: int
) -> tuple[tuple[_SortKey, _SortKey], IssueDetail]:
    """Turn one engine error into an issue in python-jsonschema's wording, with its sort key."""
    parts = tuple(error.instance_path)
    found = _value_at(value, parts)
    instance = error.instance if found is _MISSING else found
    message, keyword, schema_path = _describe(error, instance, docs, draft)
    issue = ValidationIssue(
        path=format_path(parts),
        message=message,
        keyword=keyword,
        schema_path=format_path(schema_path),
    )
    return (_path_key(parts), _path_key(schema_path)), IssueDetail(parts, instance, issue)


def _describe(
    error: jsonschema_rs.ValidationError, instance: object, docs: _Docs, draft: int
) -> tuple[str, str, list[str | int]]:
    """Return (message, keyword, schema path) for an engine error."""
    kind = error.kind
    where = list(error.schema_path)
    if isinstance(kind, Kind.PropertyNames):
        inner = kind.error
        message, keyword, _ = _describe(inner, inner.instance, docs, draft)
        return message, keyword, list(inner.schema_path)
    keyword = kind.name
    last = where[-1] if where else None
    if isinstance(kind, Kind.Required) and last in {"dependencies", "dependentRequired"}:
        owner = _dependency_owner(kind.property, instance, docs, where)
        if owner is not None:
            return f"{kind.property!r} is a dependency of {owner!r}", str(last), where
    return _message(kind, instance, docs, where, draft) or error.message, keyword, where


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
    kind: Kind, instance: object, docs: _Docs, where: list[str | int], draft: int
) -> str | None:
    """Return python-jsonschema's message for an error kind, or None to keep the engine's."""
    shown = repr(instance)
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
            return f"{shown} does not match {kind.pattern!r}"
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
            return f"{shown} should not be valid under {kind.schema!r}"
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
    """Descend into ``anyOf``/``oneOf`` failures to the error most likely meant.

    Branches that fail only because the value is of another type are passed over when another
    branch got further; among the rest, the deepest error wins.
    """
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


def _invalid_schema(
    error: jsonschema_rs.ValidationError, draft: int, source: str | None
) -> InvalidSchemaError:
    """Turn the engine's meta-schema failure into an ``InvalidSchemaError`` with a path."""
    chosen = _best_match(error)
    parts = list(chosen.instance_path)
    if "propertyNames" in chosen.schema_path and isinstance(chosen.instance, str):
        parts.append(chosen.instance)
    kind = chosen.kind
    if isinstance(kind, Kind.Format) and kind.format == "regex":
        detail = f"{chosen.instance!r} is not a valid regular expression"
    else:
        detail = _describe(chosen, chosen.instance, (), draft)[0]
    return InvalidSchemaError(
        f"{detail} (checked against the {DRAFT_NAMES[draft]} meta-schema)",
        path=format_path(parts),
        source=source,
    )
