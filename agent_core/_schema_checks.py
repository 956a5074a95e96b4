"""Config-time checks of an output schema: the mistakes a designer makes, and what to change.

:func:`check_output_schema` returns :class:`SchemaFinding` values (path, severity, message):
errors make the schema unusable, warnings point at schemas that probably do not work as meant
(a likely typo, a keyword that does not apply to the type). :func:`ensure_output_schema` raises
on errors. The schema-walking helpers the dialects share (:func:`schema_draft`,
:func:`subschemas`, :func:`child_path`) live here too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

import jsonschema_rs
from pydantic import BaseModel, ConfigDict, JsonValue

from agent_contracts._config import suggest_key
from agent_contracts._errors import InvalidSchemaError, SchemaReferenceError
from agent_contracts._suggest import did_you_mean
from agent_core._caches import SchemaCache, schema_cache
from agent_core._error_messages import ErrorContext, meta_schema_fault
from agent_core._json_paths import format_path
from agent_core._json_values import (
    _is_number,
    _is_regex,
    _json_key,
    _matches_any,
    _matches_types,
    _pattern_matchers,
    _types_text,
)
from agent_core._meta_schema import meta_documents, meta_validator
from agent_core._schema_documents import schema_draft, schema_hash
from agent_core._schema_walk import child_path, offline_validator, resolve_local_ref, subschemas

__all__ = [
    "JSON_TYPES",
    "KNOWN_FORMATS",
    "KNOWN_KEYWORDS",
    "SchemaFinding",
    "Severity",
    "check_output_schema",
    "ensure_output_schema",
]

JSON_TYPES = ("array", "boolean", "integer", "null", "number", "object", "string")
"""The seven JSON Schema type names."""


KNOWN_FORMATS = frozenset(
    str.split(
        "date date-time duration email hostname idn-email idn-hostname ipv4 ipv6 iri iri-reference "
        "json-pointer regex relative-json-pointer time uri uri-reference uri-template uuid"
    )
)
"""Formats defined by draft-07 and 2019-09/2020-12; validators do not check others."""


_DRAFT_2019_ONLY = frozenset(
    str.split(
        "$anchor $dynamicAnchor $dynamicRef $recursiveAnchor $recursiveRef $vocabulary "
        "contentSchema dependentRequired dependentSchemas deprecated maxContains minContains "
        "prefixItems unevaluatedItems unevaluatedProperties"
    )
)


KNOWN_KEYWORDS = _DRAFT_2019_ONLY | frozenset(
    str.split(
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
    "string": frozenset(str.split("minLength maxLength pattern contentEncoding contentMediaType")),
    "number": frozenset(str.split("minimum maximum exclusiveMinimum exclusiveMaximum multipleOf")),
    "array": frozenset(
        str.split(
            "items additionalItems prefixItems contains minItems maxItems uniqueItems minContains "
            "maxContains unevaluatedItems"
        )
    ),
    "object": frozenset(
        str.split(
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


Severity = Literal["error", "warning"]
"""How bad a finding is: ``error`` makes the schema unusable, ``warning`` is probably a mistake."""


class SchemaFinding(BaseModel):
    """One problem found in an output schema at config time.

    Renders as ``agents/x.yml: $.properties.age: error: minimum 10 is greater than maximum 5``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    """JSON path of the schema node concerned, ``$`` for the root."""
    severity: Severity
    """``error`` (the schema cannot be used) or ``warning`` (probably a mistake)."""
    message: str
    """What is wrong and what to change."""
    keyword: str | None = None
    """The keyword concerned, when there is one."""
    source: str | None = None
    """Where the schema came from (a file, an agent id), when known."""

    def __str__(self) -> str:
        prefix = f"{self.source}: " if self.source else ""
        return f"{prefix}{self.path}: {self.severity}: {self.message}"


# Keywords other tools emit that JSON Schema ignores, and what to do instead.
# Annotations some generators emit (Pydantic's `discriminator`); harmless, never reported.


_FINDINGS: SchemaCache[str, list[SchemaFinding]] = schema_cache("agent_core.schema_findings", 256)
"""The findings of each schema checked, by hash: a fleet's load checks it and its agent again."""


def check_output_schema(schema: JsonValue, *, source: str | None = None) -> list[SchemaFinding]:
    """Check an output schema the way an agent config is checked when it is loaded.

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


MAX_LISTED = 10_000
"""Most values an ``enum`` (or names a ``required``) may list; building models past it is slow."""
_TOO_MANY = "`{}` lists {:,} {}; at most 10,000 are supported (split the schema, or use a {})"
_HINTED = 20  # missing required names given a did-you-mean (each costs a scan of properties)

META_SCHEMA_FAULT = "(fails the draft's meta-schema)"
"""Ends the message of a finding that is a meta-schema fault rather than a rule of the checks."""


class _Checker:
    """Collects findings for one schema document."""

    def __init__(self, root: dict[str, JsonValue] | bool, source: str | None) -> None:
        self.root = root
        self.source = source
        self.draft = schema_draft(root)
        self.findings: list[SchemaFinding] = []
        # "path.keyword" locations a custom finding already explains (meta errors are skipped).
        self.covered: set[str] = set()

    def add(self, path: str, severity: Severity, message: str, keyword: str | None = None) -> None:
        self.findings.append(
            SchemaFinding(
                path=path, severity=severity, message=message, keyword=keyword, source=self.source
            )
        )
        if keyword is not None:
            self.covered.add(child_path(path, keyword))

    def check_root(self) -> None:
        root = self.root
        if root is False:
            self.add("$", "error", "the schema `false` accepts no value; describe the output")
            return
        if root is True or root == {}:
            self.add("$", "warning", "the schema accepts any value; add `type` and `properties`")
            return
        assert isinstance(root, dict)
        target: JsonValue = root
        if "$ref" in root and isinstance(root["$ref"], str):
            resolved = resolve_local_ref(root, root["$ref"])
            target = resolved[0] if resolved else root
        if not isinstance(target, dict):
            return
        if target.get("type") != "object":
            self.add(
                "$",
                "warning",
                "the root is not `type: object`; for tool calling it is wrapped as "
                '{"result": <value>} and unwrapped before validation. Set `type: object` '
                "if the output is an object",
                "type",
            )
        elif (
            not target.get("properties")
            and not target.get("patternProperties")
            and target.get("additionalProperties") is not False
        ):
            self.add(
                "$",
                "warning",
                "the root object declares no `properties`, so any object is accepted; "
                "list the fields the output must have",
                "properties",
            )

    def check_node(self, path: str, node: dict[str, JsonValue]) -> None:
        self._keywords(path, node)
        self._ref(path, node)
        types = self._types(path, node)
        self._literals(path, node, types)
        self._bounds(path, node)
        self._required(path, node)
        self._applicability(path, node, types)
        self._patterns(path, node)
        self._format(path, node)
        self._conditionals(path, node)
        self._default(path, node)

    def _keywords(self, path: str, node: dict[str, JsonValue]) -> None:
        for key in node:
            if key.startswith("x-") or key in _QUIET_KEYWORDS:
                continue
            if key in _FOREIGN_KEYWORDS:
                self.add(path, "warning", _FOREIGN_KEYWORDS[key], key)
            elif key not in KNOWN_KEYWORDS:
                hint = _did_you_mean(key, KNOWN_KEYWORDS)
                self.add(
                    path,
                    "warning",
                    f"unknown keyword `{key}` is ignored by validation{hint}",
                    key,
                )
            elif self.draft <= 7 and key in _DRAFT_2019_ONLY:
                self.add(
                    path,
                    "warning",
                    f"`{key}` is a draft 2019-09/2020-12 keyword that draft-0{self.draft} "
                    'ignores; set "$schema" to draft 2020-12 or use a draft-07 keyword',
                    key,
                )

    def _ref(self, path: str, node: dict[str, JsonValue]) -> None:
        ref = node.get("$ref")
        if not isinstance(ref, str):
            return
        if resolve_local_ref(self.root, ref) is None:
            if ref.startswith("#"):
                names = _definition_names(self.root)
                wanted = ref.rsplit("/", 1)[-1]
                hint = _did_you_mean(wanted, names)
                self.add(
                    path,
                    "error",
                    f"`$ref` {ref!r} points to nothing in this schema{hint}",
                    "$ref",
                )
            else:
                self.add(
                    path,
                    "error",
                    f"`$ref` {ref!r} is not in this document and is never fetched from the "
                    "network; copy the definition into `$defs` and refer to it with '#/$defs/...'",
                    "$ref",
                )
        if self.draft <= 7:
            ignored = sorted(
                key
                for key in node
                if key in KNOWN_KEYWORDS
                and key not in {"$ref", "$comment", "title", "description", "default", "examples"}
                and key not in {"$defs", "definitions", "$id", "$schema"}
            )
            if ignored:
                listed = ", ".join(f"`{key}`" for key in ignored)
                self.add(
                    path,
                    "warning",
                    f"draft-07 ignores keywords next to `$ref` ({listed}); move them and the "
                    "`$ref` into an `allOf`",
                    "$ref",
                )

    def _types(self, path: str, node: dict[str, JsonValue]) -> list[str] | None:
        declared = node.get("type")
        if declared is None:
            return None
        names = declared if isinstance(declared, list) else [declared]
        good: list[str] = []
        for name in names:
            if not isinstance(name, str):
                continue
            if name in JSON_TYPES:
                good.append(name)
                continue
            suggestion = _TYPE_SUGGESTIONS.get(name.lower()) or suggest_key(
                name.lower(), JSON_TYPES
            )
            if name.lower() == "any":
                hint = "; leave `type` out to accept any value"
            elif suggestion:
                hint = f" (did you mean {suggestion!r}?)"
            else:
                hint = f"; use one of {', '.join(JSON_TYPES)}"
            self.add(path, "error", f"unknown type {name!r}{hint}", "type")
        return good

    def _literals(self, path: str, node: dict[str, JsonValue], types: list[str] | None) -> None:
        enum = node.get("enum")
        if isinstance(enum, list):
            if not enum:
                self.add(
                    path, "error", "`enum` is empty, so no value can match; list the values", "enum"
                )
            if len(enum) > MAX_LISTED:
                too_many = _TOO_MANY.format("enum", len(enum), "values", "`pattern` or `type`")
                return self.add(path, "error", too_many, "enum")
            seen: set[object] = set()
            for value in enum:
                key = _json_key(value)
                if key in seen:
                    self.add(path, "warning", f"`enum` lists {value!r} twice", "enum")
                seen.add(key)
            if types and enum:
                misfits = [value for value in enum if not _matches_types(value, types)]
                if len(misfits) == len(enum):
                    self.add(
                        path,
                        "error",
                        f"no `enum` value is of type {_types_text(types)}, so nothing can match; "
                        "fix `type` or the values",
                        "enum",
                    )
                elif misfits:
                    listed = ", ".join(repr(value) for value in misfits[:10])
                    listed += f" (and {len(misfits) - 10:,} more)" if len(misfits) > 10 else ""
                    verb = "values {} are" if len(misfits) > 1 else "value {} is"
                    self.add(
                        path,
                        "warning",
                        f"`enum` {verb.format(listed)} not of type {_types_text(types)} and can "
                        "never match; remove it or widen `type`",
                        "enum",
                    )
        if "const" in node and types and not _matches_types(node["const"], types):
            self.add(
                path,
                "error",
                f"`const` {node['const']!r} is not of type {_types_text(types)}, so nothing can "
                "match",
                "const",
            )

    def _bounds(self, path: str, node: dict[str, JsonValue]) -> None:
        for low_key, high_key, strict in _BOUND_PAIRS:
            low, high = node.get(low_key), node.get(high_key)
            if not (_is_number(low) and _is_number(high)):
                continue
            assert isinstance(low, int | float) and isinstance(high, int | float)
            if low > high or (strict and low == high):
                relation = "is not less than" if strict and low == high else "is greater than"
                self.add(
                    path,
                    "error",
                    f"`{low_key}` {low} {relation} `{high_key}` {high}, so nothing can match; "
                    "swap or fix the bounds",
                    low_key,
                )

    def _required(self, path: str, node: dict[str, JsonValue]) -> None:
        required, properties = node.get("required"), node.get("properties")
        if not isinstance(required, list) or not isinstance(properties, dict):
            return
        if len(required) > MAX_LISTED:
            message = _TOO_MANY.format("required", len(required), "names", "`minProperties`")
            return self.add(path, "error", message, "required")
        closed = node.get("additionalProperties") is False
        patterns = node.get("patternProperties")
        matchers = _pattern_matchers(patterns) if isinstance(patterns, dict) and closed else []
        missing = 0
        for name in required:
            if not isinstance(name, str) or name in properties:
                continue
            missing += 1
            hint = _did_you_mean(name, properties) if missing <= _HINTED else ""
            if closed and not _matches_any(name, matchers):
                self.add(
                    path,
                    "error",
                    f"required property {name!r} is not in `properties` and "
                    "`additionalProperties` is false, so no value can match" + hint,
                    "required",
                )
            else:
                self.add(
                    path,
                    "warning",
                    f"required property {name!r} is not in `properties`, so any value is "
                    "accepted for it; declare it" + hint,
                    "required",
                )

    def _applicability(
        self, path: str, node: dict[str, JsonValue], types: list[str] | None
    ) -> None:
        if not types:
            return
        effective = set(types)
        if "integer" in effective:
            effective.add("number")
        for family, keywords in _TYPE_KEYWORDS.items():
            if family in effective:
                continue
            for key in sorted(keywords & node.keys()):
                self.add(
                    path,
                    "warning",
                    f"`{key}` applies only to {family} values but this schema's type is "
                    f"{_types_text(types)}, so it has no effect",
                    key,
                )

    def _patterns(self, path: str, node: dict[str, JsonValue]) -> None:
        pattern = node.get("pattern")
        if isinstance(pattern, str) and not _is_regex(pattern):
            self.add(
                path,
                "error",
                f"`pattern` {pattern!r} is not a valid regular expression (ECMA-262)",
                "pattern",
            )
        patterns = node.get("patternProperties")
        if isinstance(patterns, dict):
            for key in patterns:
                if not _is_regex(key):
                    self.add(
                        path,
                        "error",
                        f"`patternProperties` key {key!r} is not a valid regular expression",
                        "patternProperties",
                    )

    def _format(self, path: str, node: dict[str, JsonValue]) -> None:
        name = node.get("format")
        if isinstance(name, str) and name not in KNOWN_FORMATS:
            hint = _did_you_mean(name, KNOWN_FORMATS)
            self.add(
                path,
                "warning",
                f"unknown format {name!r} is not checked by validation{hint}",
                "format",
            )

    def _conditionals(self, path: str, node: dict[str, JsonValue]) -> None:
        if "if" in node and "then" not in node and "else" not in node:
            self.add(path, "warning", "`if` without `then` or `else` has no effect", "if")
        for key in ("then", "else"):
            if key in node and "if" not in node:
                self.add(path, "warning", f"`{key}` without `if` is ignored", key)

    def _default(self, path: str, node: dict[str, JsonValue]) -> None:
        if "default" not in node or "$ref" in node:
            return
        rest: dict[str, JsonValue] = {
            key: value
            for key, value in node.items()
            if key not in {"default", "examples", "$id", "$schema"}
        }
        if isinstance(self.root, dict):
            for container in ("$defs", "definitions"):
                if container in self.root:
                    rest.setdefault(container, self.root[container])
        try:
            valid = offline_validator(rest, self.draft).is_valid(node["default"])
        except (ValueError, TypeError, jsonschema_rs.ReferencingError):
            return
        if not valid:
            self.add(
                path,
                "warning",
                f"`default` {node['default']!r} does not match its own schema",
                "default",
            )

    def add_meta_errors(self) -> None:
        # The meta-schema of the draft the engine reads the schema under (``schema_draft``),
        # so a schema is never compiled under one draft and checked against another's.
        context = ErrorContext(meta_documents(self.draft), self.draft, {})
        errors = meta_validator(self.draft).iter_errors(self.root)
        faults = [meta_schema_fault(error, context) for error in errors]
        faults.sort(key=lambda fault: [str(part) for part in fault[0]])
        for parts, detail in faults:
            full = format_path(parts)
            if any(
                full == place or full.startswith((place + ".", place + "["))
                for place in self.covered
            ):
                continue
            keyword = parts[-1] if parts and isinstance(parts[-1], str) else None
            path = format_path(parts[:-1] if keyword is not None else parts)
            self.add(path, "error", f"{detail} {META_SCHEMA_FAULT}", keyword)


def _ref_at(schema: JsonValue, path: str) -> str:
    for here, node in subschemas(schema):
        if here == path and isinstance(node, dict) and isinstance(node.get("$ref"), str):
            return str(node["$ref"])
    return ""


def _definition_names(root: JsonValue) -> list[str]:
    names: list[str] = []
    if isinstance(root, dict):
        for container in ("$defs", "definitions"):
            defs = root.get(container)
            if isinstance(defs, dict):
                names.extend(defs)
    return names


def _did_you_mean(word: str, candidates: Mapping[str, object] | frozenset[str] | list[str]) -> str:
    # Keyword typos are only warnings and must not fire on a custom keyword: a strict cutoff.
    return did_you_mean(word, candidates, cutoff=0.75)
