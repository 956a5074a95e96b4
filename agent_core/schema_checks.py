"""Config-time checks of an output schema: the mistakes a designer makes, and what to change.

:func:`check_output_schema` walks a JSON Schema and returns :class:`SchemaFinding` values, each
with the JSON path of the problem, a severity and a message that says what to change:

* errors make the schema unusable: it fails its draft's meta-schema, an ``enum`` is empty, a
  minimum exceeds its maximum, a ``$ref`` points nowhere (or to the network), a ``pattern`` is not
  a regular expression, a ``type`` is not a JSON type, ``required`` names a property that a closed
  object can never have;
* warnings point at schemas that work, but probably not as meant: an unknown keyword that looks
  like a typo (``requried``, with a did-you-mean), a keyword that does not apply to the declared
  type, keywords next to ``$ref`` that draft-07 ignores, a root that is not an object and will be
  wrapped for tool calling.

:func:`ensure_output_schema` is the raising variant used when an agent config is loaded.

The module also exposes the small schema-walking vocabulary the provider dialects share:
:func:`schema_draft`, :func:`subschemas` and :func:`child_path`.
"""

from __future__ import annotations

from pydantic import JsonValue

from agent_contracts.errors import InvalidSchemaError, SchemaReferenceError
from agent_core.caches import SchemaCache, schema_cache
from agent_core.schema_checker import _Checker
from agent_core.schema_documents import schema_hash
from agent_core.schema_findings import SchemaFinding, Severity
from agent_core.schema_keywords import (
    JSON_TYPES,
    KNOWN_FORMATS,
    KNOWN_KEYWORDS,
)
from agent_core.schema_lookup import _ref_at
from agent_core.schema_walk import subschemas

__all__ = [
    "JSON_TYPES",
    "KNOWN_FORMATS",
    "KNOWN_KEYWORDS",
    "SchemaFinding",
    "Severity",
    "check_output_schema",
    "ensure_output_schema",
]


# Keywords other tools emit that JSON Schema ignores, and what to do instead.
# Annotations some generators emit (Pydantic's `discriminator`); harmless, never reported.


_FINDINGS: SchemaCache[str, list[SchemaFinding]] = schema_cache("agent_core.schema_findings", 256)
"""The findings of each schema checked, by hash: a fleet's load checks it and its agent again."""


def check_output_schema(schema: JsonValue, *, source: str | None = None) -> list[SchemaFinding]:
    """Check an output schema the way an agent config is checked when it is loaded.

    The findings are kept by the schema's hash, so checking the same schema again costs a hash.

    Args:
        schema: The designer's JSON Schema.
        source: Where it came from (a file, an agent id), copied into every finding.

    Returns:
        Every finding, in document order; meta-schema errors come last, ordered by path.
    """
    if not isinstance(schema, dict | bool):
        kind = type(schema).__name__
        return [
            SchemaFinding(
                path="$",
                severity="error",
                message=f"an output schema must be a JSON object or a boolean, not {kind}",
                source=source,
            )
        ]
    try:
        key: str | None = schema_hash(schema)
    except (InvalidSchemaError, RecursionError):
        key = None  # not JSON data: the checker says what is wrong, every time
    findings = _FINDINGS.get(key) if key is not None else None
    if findings is None:
        checker = _Checker(schema, None)
        checker.check_root()
        for path, node in subschemas(schema):
            if isinstance(node, dict):
                checker.check_node(path, node)
        checker.add_meta_errors()
        findings = checker.findings
        if key is not None:
            _FINDINGS.put(key, findings)
    return [finding.model_copy(update={"source": source}) for finding in findings]


def ensure_output_schema(schema: JsonValue, *, source: str | None = None) -> list[SchemaFinding]:
    """Check an output schema and raise when it cannot be used.

    Args:
        schema: The designer's JSON Schema.
        source: Where it came from (a file, an agent id).

    Returns:
        The warnings, which do not stop the schema from being used.

    Raises:
        SchemaReferenceError: When every error is a ``$ref`` that does not resolve.
        InvalidSchemaError: When there is any other error; the message lists every error and
            ``path`` is the first one's.
    """
    findings = check_output_schema(schema, source=source)
    errors = [finding for finding in findings if finding.severity == "error"]
    if not errors:
        return findings
    lines = "\n".join(f"  - {finding.path}: {finding.message}" for finding in errors)
    where = f"{source}: " if source else ""
    noun = "error" if len(errors) == 1 else "errors"
    message = f"{where}output schema has {len(errors)} {noun}:\n{lines}"
    if all(finding.keyword == "$ref" for finding in errors):
        reference = _ref_at(schema, errors[0].path)
        raise SchemaReferenceError(message, reference=reference)
    raise InvalidSchemaError(message.removeprefix(where), path=errors[0].path, source=source)
