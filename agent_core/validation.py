r"""Exact JSON Schema validation, with every problem reported as a JSON path and a message.

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

Patterns are ECMA-262, Annex B included: a lone ``]`` or ``}`` (``\[\*]``, ``a}``) is a literal
character, as in python ``re`` and AJV. The engine's meta-schema check refuses that syntax, so a
schema it refuses is compiled again with such patterns respelled (``\]``; see
:mod:`agent_core.ecma_patterns`); ``CompiledSchema.schema``, messages and schema paths keep the
designer's spelling.

Order: issues are sorted by the JSON path of the offending value (the root first, then object
keys alphabetically and array items by index), then by the path of the failing keyword in the
schema (so ``additionalProperties`` comes before ``required``); several issues from one keyword
keep the keyword's own order (``required`` lists its names in schema order).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import cast

import jsonschema_rs
from jsonschema_rs import ValidationErrorKind as Kind
from pydantic import JsonValue

from agent_contracts.errors import InvalidSchemaError
from agent_core.caches import SchemaCache, schema_cache
from agent_core.compiled_schema import CompiledSchema
from agent_core.ecma_patterns import (
    PatternRewrite,
    needs_engine_spelling,
    rewrite_schema_patterns,
)
from agent_core.engine_options import engine_options
from agent_core.error_messages import (
    ErrorContext,
    IssueDetail,
    format_path,
    meta_schema_fault,
)
from agent_core.meta_schema import meta_documents
from agent_core.output_validation import issues_from_pydantic, validate_output
from agent_core.refs import RegistryRetriever, reference_error, registry_generation
from agent_core.schema_documents import (
    DRAFT_NAMES,
    DRAFT_URIS,
    DRAFT_VALIDATORS,
    canonical_json,
    custom_meta_schema,
    node_at,
    resolve_pointer,
    schema_draft,
    schema_hash,
    validation_vocabulary,
)

__all__ = [
    "DRAFT_NAMES",
    "DRAFT_URIS",
    "DRAFT_VALIDATORS",
    "CompiledSchema",
    "IssueDetail",
    "canonical_json",
    "compile_canonical",
    "compile_schema",
    "custom_meta_schema",
    "format_path",
    "issues_from_pydantic",
    "node_at",
    "resolve_pointer",
    "schema_draft",
    "schema_hash",
    "validate_output",
    "validation_vocabulary",
]


# ``uuid`` became a standard format in 2019-09; designers write it in Draft-7 contracts too.
_CACHE_SIZE = 1024


_cache: SchemaCache[tuple[str, bool], CompiledSchema] = schema_cache(
    "agent_core.compiled_schemas", _CACHE_SIZE
)


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
    """Whether ``$schema`` names anything but the draft's own URI.

    Such a URI may be a custom meta-schema registered later, which changes how the schema reads.
    """
    declared = schema.get("$schema") if isinstance(schema, Mapping) else None
    return isinstance(declared, str) and declared != DRAFT_URIS[draft]


def _named_text(schema: Mapping[str, JsonValue] | bool, text: str, draft: int) -> str:
    """Return the schema's canonical ``text`` with ``$schema`` naming ``draft`` exactly.

    Named exactly, the draft's meta-schema is built into the engine, which then never tries to
    fetch one. A registered custom meta-schema is kept: the engine reads it from the registry
    and honours its ``$vocabulary``.
    """
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
    """Compile ``engine_text`` with the engine, turning its failures into agentshape's errors.

    Raises:
        InvalidSchemaError: If the schema breaks its draft's meta-schema (``.path`` names the
            fault in the designer's ``schema``) or cannot be compiled.
        SchemaReferenceError: If a ``$ref`` does not resolve.
    """
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
