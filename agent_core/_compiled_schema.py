r"""Exact JSON Schema validation: a schema compiled once, every problem a JSON path and a message.

:func:`compile_schema` turns a schema into a :class:`CompiledSchema` backed by the Rust
``jsonschema_rs`` engine; problems are :class:`~agent_contracts._validation.ValidationIssue`
values in python-jsonschema's wording. The draft is Draft-7 unless ``$schema`` names draft-04,
draft-06, 2019-09 or 2020-12; draft-03 is refused. Formats are asserted unless ``lenient=True``.
Patterns are ECMA-262 with Annex B: a schema the engine refuses for a lone ``]`` or ``}`` is
compiled again with such patterns respelled, while messages keep the designer's spelling.
Issues are sorted by the path of the offending value, then by the failing keyword's path.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from typing import cast

import jsonschema_rs
from jsonschema_rs import ValidationErrorKind as Kind
from pydantic import JsonValue

from agent_contracts._errors import InvalidSchemaError, OutputValidationError
from agent_contracts._validation import ValidationIssue
from agent_core._caches import SchemaCache, schema_cache
from agent_core._ecma_patterns import PatternRewrite, needs_engine_spelling, rewrite_schema_patterns
from agent_core._engine_options import engine_options
from agent_core._error_messages import (
    _MISSING,
    ErrorContext,
    IssueDetail,
    IssueSortKey,
    _value_at,
    format_path,
    issue_detail,
    meta_schema_fault,
    non_json_issues,
)
from agent_core._json_paths import _path_key
from agent_core._meta_schema import meta_documents
from agent_core._refs import RegistryRetriever, reference_error, registry_generation
from agent_core._schema_documents import (
    DRAFT_NAMES,
    DRAFT_URIS,
    DRAFT_VALIDATORS,
    canonical_json,
    custom_meta_schema,
    resolve_pointer,
    schema_draft,
    schema_hash,
)
from agent_core._surrogates import Masked, escape_surrogates, mask_surrogates

__all__ = ["CompiledSchema", "compile_canonical", "compile_schema"]


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
        "_rewrite",
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
        rewrite: PatternRewrite | None = None,
    ) -> None:
        self.schema = schema
        self.hash = digest
        self.draft = draft
        self.lenient = lenient
        self.source = source
        self._validator = validator
        self._canonical = canonical
        self._context = context
        self._rewrite = rewrite
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
        """The designer's schema in canonical form (sorted keys), parsed on first use."""
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
            masked = self._masked(value)
            if masked is None:
                return False
        try:
            return self._validator.is_valid(masked.value)
        except (ValueError, TypeError, OverflowError):
            return False

    def _masked(self, value: JsonValue) -> Masked | None:
        """Return ``value`` with its lone surrogates masked for the engine, if it has any."""
        return mask_surrogates(value, [json.dumps(self.schema, ensure_ascii=False)])

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
        foreign = non_json_issues(value)
        if foreign:
            return foreign
        context = ErrorContext(
            (self._document, self.schema, self._context),
            self.draft,
            self._rewrite.renamed if self._rewrite is not None else {},
        )
        masked: Masked | None = None
        try:
            errors = list(self._validator.iter_errors(value))
        except (ValueError, TypeError, OverflowError):
            masked = self._masked(value)
            if masked is None:
                raise
            errors = list(self._validator.iter_errors(masked.value))
        if masked is None:
            found = [issue_detail(error, value, context) for error in errors]
        else:
            found = [
                _unmasked_detail(issue_detail(error, masked.value, context), masked, value)
                for error in errors
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
            engine = self._rewrite.schema if self._rewrite is not None else document
            named = (
                {**engine, "$schema": _engine_meta_schema(document, self.draft)}
                if isinstance(engine, dict)
                else bool(engine)
            )
            self._map = jsonschema_rs.validator_map_for(
                named, retriever=retriever, **engine_options(self.draft, lenient=self.lenient)
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
            rewrite=self._rewrite,
        )


def _engine_meta_schema(document: JsonValue, draft: int) -> str:
    """Return the ``$schema`` for the engine: the (already named) document's own, or the draft's."""
    declared = document.get("$schema") if isinstance(document, dict) else None
    return declared if isinstance(declared, str) else DRAFT_URIS[draft]


def _unmasked_detail(
    found: tuple[IssueSortKey, IssueDetail], masked: Masked, value: JsonValue
) -> tuple[IssueSortKey, IssueDetail]:
    """Return an issue found on a surrogate-masked value as an issue of the original ``value``."""
    (_, schema_key), detail = found
    parts = tuple(masked.key(part) if isinstance(part, str) else part for part in detail.parts)
    original = _value_at(value, parts)
    issue = detail.issue.model_copy(
        update={
            "path": format_path(parts),
            "message": escape_surrogates(masked.text(detail.issue.message)),
        }
    )
    offending = detail.value if original is _MISSING else original
    return (_path_key(parts), schema_key), IssueDetail(parts, offending, issue)


_CACHE_SIZE = 1024


_cache: SchemaCache[tuple[str, bool], CompiledSchema] = schema_cache(
    "agent_core.compiled_schemas", _CACHE_SIZE
)


def compile_schema(
    schema: Mapping[str, JsonValue] | bool, *, lenient: bool = False, source: str | None = None
) -> CompiledSchema:
    """Check a schema against its draft's meta-schema and compile it for validation.

    Results are cached. A ``$ref`` outside the schema resolves only through
    :func:`agent_core._refs.register_schema`; nothing is ever fetched from the network.

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
    cached = _cache.get(key)
    if cached is not None and cached.fresh:
        return cached
    draft = schema_draft(schema)
    named = _named_text(schema, text, draft)
    generation = registry_generation()
    rewrite: PatternRewrite | None = None
    try:
        if needs_engine_spelling(schema):  # \d, \w or \s beside a lookaround or backreference
            raise InvalidSchemaError("patterns to respell")
        validator, retriever = _engine_validator(
            schema, named, draft, lenient=lenient, source=source, renamed={}
        )
    except InvalidSchemaError:
        # Perhaps only ECMA-262 Annex B pattern syntax (a lone "]") that the engine refuses.
        rewrite = rewrite_schema_patterns(schema)
        if rewrite is None:
            raise
        respelled = cast(Mapping[str, JsonValue], rewrite.schema)
        validator, retriever = _engine_validator(
            schema,
            _named_text(respelled, canonical_json(respelled), draft),
            draft,
            lenient=lenient,
            source=source,
            renamed=rewrite.renamed,
        )
    compiled = CompiledSchema(
        schema=cast(JsonValue, schema),
        digest=digest,
        draft=draft,
        lenient=lenient,
        source=source,
        validator=validator,
        canonical=named,
        uses_registry=bool(retriever.fetched or retriever.missing) or _other_meta(schema, draft),
        generation=generation,
        rewrite=rewrite,
    )
    _cache.put(key, compiled)
    return compiled


def _other_meta(schema: Mapping[str, JsonValue] | bool, draft: int) -> bool:
    """Whether ``$schema`` names anything but the draft's own URI."""
    declared = schema.get("$schema") if isinstance(schema, Mapping) else None
    return isinstance(declared, str) and declared != DRAFT_URIS[draft]


def _named_text(schema: Mapping[str, JsonValue] | bool, text: str, draft: int) -> str:
    """Return the schema's canonical ``text`` with ``$schema`` naming ``draft`` exactly."""
    if isinstance(schema, Mapping) and custom_meta_schema(schema) is None:
        declared = schema.get("$schema")
        if isinstance(declared, str) and declared != DRAFT_URIS[draft]:
            return canonical_json({**schema, "$schema": DRAFT_URIS[draft]})
    return text


def _engine_validator(
    schema: Mapping[str, JsonValue] | bool,
    engine_text: str,
    draft: int,
    *,
    lenient: bool,
    source: str | None,
    renamed: Mapping[str, str],
) -> tuple[jsonschema_rs.Validator, RegistryRetriever]:
    """Compile ``engine_text`` with the engine, turning its failures into agentshape's errors."""
    retriever = RegistryRetriever()
    try:
        validator = DRAFT_VALIDATORS[draft](
            engine_text, retriever=retriever, **engine_options(draft, lenient=lenient)
        )
    except jsonschema_rs.ValidationError as error:
        if isinstance(error.kind, Kind.Referencing):
            raise reference_error(error.message, retriever, schema, source=source) from error
        context = ErrorContext(meta_documents(draft), draft, renamed)
        parts, detail = meta_schema_fault(error, context)
        raise InvalidSchemaError(
            f"{detail} (checked against the {DRAFT_NAMES[draft]} meta-schema)",
            path=format_path(parts),
            source=source,
        ) from error
    except ValueError as error:
        if retriever.missing:
            raise reference_error(str(error), retriever, schema, source=source) from error
        raise InvalidSchemaError(
            f"the schema cannot be compiled: {error}", source=source
        ) from error
    return validator, retriever
