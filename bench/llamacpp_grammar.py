"""What llama.cpp's own schema-to-grammar converter leaves out of a schema: :func:`grammar_notes`.

llama.cpp's servers turn a response schema (``{"type": "json_object", "schema": ...}``) into a
grammar that constrains decoding. The grammar covers types, ``properties``/``required``/
``additionalProperties``, ``enum``/``const``, ``anyOf``/``oneOf``, ``$ref``, arrays with
``items``/``prefixItems`` and ``minItems``/``maxItems``, ``pattern``, string lengths and the
``date``, ``time``, ``date-time`` and ``uuid`` formats. Everything else reaches the model only
as guidance; agentshape's validation still enforces it, and a reply that breaks it is
re-prompted like any other. The notes say which keywords, where.
"""

from __future__ import annotations

from pydantic import JsonValue

from agent_core._gbnf_grammar import GRAMMAR_FORMATS
from agent_core._schema_walk import subschemas

_UNEXPRESSED = (
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "uniqueItems",
    "contains",
    "minContains",
    "maxContains",
    "not",
    "if",
    "then",
    "else",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "patternProperties",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
)
# The grammar reads a node by the first of these it finds; the keywords of later ones beside it
# are not part of the grammar.
_FIRST_READ = ("$ref", "anyOf", "oneOf")
_CONSTRAINTS = frozenset(
    {"properties", "required", "items", "prefixItems", "pattern", "minLength", "maxLength"}
    | {"enum", "const", "minItems", "maxItems", "format", "allOf"}
)


def grammar_notes(schema: JsonValue) -> list[str]:
    """Return what llama.cpp's grammar leaves unenforced in ``schema``, one note a keyword.

    Args:
        schema: The schema sent as the response format.

    Returns:
        Notes such as ``$.properties.score: minimum is not in the grammar``, in document
        order; empty when the grammar expresses the whole schema.
    """
    notes: list[str] = []
    for path, node in subschemas(schema):
        if not isinstance(node, dict):
            continue
        notes.extend(f"{path}: {key} is not in the grammar" for key in _UNEXPRESSED if key in node)
        first = next((key for key in _FIRST_READ if key in node), None)
        if first is not None:
            beside = sorted(_CONSTRAINTS & node.keys())
            if beside:
                verb = "is" if len(beside) == 1 else "are"
                notes.append(
                    f"{path}: {', '.join(beside)} beside {first} {verb} not in the grammar"
                )
        if "oneOf" in node:
            notes.append(f"{path}: oneOf is read as anyOf (more than one branch may match)")
        if "allOf" in node:
            notes.append(f"{path}: of allOf, only the branches' properties are in the grammar")
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt not in GRAMMAR_FORMATS:
            notes.append(f"{path}: format {fmt!r} is not in the grammar")
        if "pattern" in node or (isinstance(fmt, str) and fmt in GRAMMAR_FORMATS):
            lengths = [key for key in ("minLength", "maxLength") if key in node]
            if lengths:
                beside_what = "pattern" if "pattern" in node else "format"
                notes.append(
                    f"{path}: {' and '.join(lengths)} beside {beside_what} not in the grammar"
                )
    return notes
