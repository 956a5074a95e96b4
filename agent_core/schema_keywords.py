"""What the drafts call keywords, types and formats, as the schema checks know them."""

from __future__ import annotations

__all__ = ["JSON_TYPES", "KNOWN_FORMATS", "KNOWN_KEYWORDS"]


JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
"""The seven JSON Schema type names."""


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


KNOWN_FORMATS = frozenset(
    _words(
        "date date-time duration email hostname idn-email idn-hostname ipv4 ipv6 iri iri-reference "
        "json-pointer regex relative-json-pointer time uri uri-reference uri-template uuid"
    )
)
"""Formats defined by draft-07 and 2019-09/2020-12; validators do not check others."""


_DRAFT_2019_ONLY = frozenset(
    _words(
        "$anchor $dynamicAnchor $dynamicRef $recursiveAnchor $recursiveRef $vocabulary "
        "contentSchema dependentRequired dependentSchemas deprecated maxContains minContains "
        "prefixItems unevaluatedItems unevaluatedProperties"
    )
)


KNOWN_KEYWORDS = _DRAFT_2019_ONLY | frozenset(
    _words(
        "$comment $defs $id $ref $schema additionalItems additionalProperties allOf anyOf const "
        "contains contentEncoding contentMediaType default definitions dependencies description "
        "else enum examples exclusiveMaximum exclusiveMinimum format id if items maxItems "
        "maxLength maxProperties maximum minItems minLength minProperties minimum multipleOf "
        "not oneOf pattern patternProperties properties propertyNames readOnly required then "
        "title type uniqueItems writeOnly"
    )
)
"""Every keyword of JSON Schema drafts 4 to 2020-12."""


_FOREIGN_KEYWORDS = {
    "nullable": 'OpenAPI\'s `nullable` is not JSON Schema; add "null" to `type` instead',
    "optional": "JSON Schema has no `optional`; leave the name out of the parent's `required`",
    "example": "`example` is OpenAPI; JSON Schema uses `examples` (a list)",
}


_QUIET_KEYWORDS = frozenset({"discriminator"})


_TYPE_SUGGESTIONS = {
    "bool": "boolean",
    "dict": "object",
    "double": "number",
    "float": "number",
    "int": "integer",
    "list": "array",
    "map": "object",
    "none": "null",
    "str": "string",
    "text": "string",
}


_TYPE_KEYWORDS: dict[str, frozenset[str]] = {
    "string": frozenset(_words("minLength maxLength pattern contentEncoding contentMediaType")),
    "number": frozenset(_words("minimum maximum exclusiveMinimum exclusiveMaximum multipleOf")),
    "array": frozenset(
        _words(
            "items additionalItems prefixItems contains minItems maxItems uniqueItems minContains "
            "maxContains unevaluatedItems"
        )
    ),
    "object": frozenset(
        _words(
            "properties patternProperties additionalProperties required minProperties "
            "maxProperties propertyNames dependencies dependentRequired dependentSchemas "
            "unevaluatedProperties"
        )
    ),
}


_BOUND_PAIRS = (
    ("minimum", "maximum", False),
    ("exclusiveMinimum", "maximum", True),
    ("minimum", "exclusiveMaximum", True),
    ("exclusiveMinimum", "exclusiveMaximum", True),
    ("minLength", "maxLength", False),
    ("minItems", "maxItems", False),
    ("minProperties", "maxProperties", False),
    ("minContains", "maxContains", False),
)
