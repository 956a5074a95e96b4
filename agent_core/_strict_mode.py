"""Compile a JSON Schema under a provider's strict-mode rules, or say why it cannot be done.

:class:`StrictCompiler` turns a schema into the subset OpenAI's or Anthropic's strict mode accepts
(rules in ``PROVIDERS.md``): objects closed, ``$ref`` targets in ``$defs``, ``allOf`` merged,
``oneOf`` as ``anyOf``, and (OpenAI) optional properties required and nullable. Unsupported
keywords move into the description; whatever would change which values the provider can produce
is noted as ``blocks strict``. The plan it builds says where nulls were forced, to map answers back.
"""

from __future__ import annotations

import json
import re

from pydantic import JsonValue

from agent_core._pattern_classes import explicit_classes
from agent_core._schema_checks import JSON_TYPES
from agent_core._schema_documents import DRAFT_NAMES
from agent_core._schema_merge import ANNOTATIONS, CONTAINERS, draft4_bounds, merge_schemas
from agent_core._schema_transformer import SchemaTransformer
from agent_core._schema_walk import child_path, offline_validator, resolve_local_ref
from agent_core._strict_plans import (
    ArrayPlan,
    JsonDict,
    ObjectPlan,
    Plan,
    StrictRules,
    UnionPlan,
)

__all__ = ["StrictCompiler", "inferred_types"]


_FAMILIES: dict[str, frozenset[str]] = {
    "object": frozenset(
        str.split(
            "properties required additionalProperties patternProperties propertyNames "
            "minProperties maxProperties"
        )
    ),
    "array": frozenset(
        str.split("items minItems maxItems uniqueItems contains minContains maxContains")
    ),
    "string": frozenset(str.split("minLength maxLength pattern format")),
    "number": frozenset(str.split("minimum maximum exclusiveMinimum exclusiveMaximum multipleOf")),
}
_TYPES = frozenset(JSON_TYPES)
_BLOCKING = str.split(
    "not dependencies dependentRequired dependentSchemas unevaluatedProperties "
    "unevaluatedItems prefixItems $dynamicRef $recursiveRef"
)
_NOT_KEYWORDS = {
    4: frozenset(str.split("const contains propertyNames if then else")),
    6: frozenset(str.split("if then else")),
    2019: frozenset({"dependencies"}),
    2020: frozenset({"dependencies"}),
}
"""Words that are keywords in some drafts but not in these: a schema means nothing by them."""
_NO_EFFECT = frozenset(str.split("then else additionalItems $anchor $dynamicAnchor"))
_KNOWN = (
    ANNOTATIONS
    | CONTAINERS
    | frozenset({"type", "anyOf", "allOf", "if", *_BLOCKING})
    | frozenset().union(*_FAMILIES.values())
)
# Lookaround, atomic groups and backreferences: what a strict mode without complex_patterns
# refuses in `pattern`.
_COMPLEX_PATTERN = re.compile(r"\(\?<?[=!]|\(\?>|\\[1-9]|\\k<")

_Described = list[tuple[str, JsonValue]]
"""Keywords moved into a node's description, with their values, in order."""


def inferred_types(schema: JsonDict) -> list[str]:
    """Return the types whose keywords an untyped schema uses, such as ``["object"]``.

    Args:
        schema: A schema object without ``type``.

    Returns:
        The type families (``object``, ``array``, ``string``, ``number``) in that order.
    """
    return [family for family, keys in _FAMILIES.items() if keys & schema.keys()]


class StrictCompiler(SchemaTransformer):
    """Compiles one schema under one provider's strict rules, collecting notes.

    Attributes:
        rules: What the provider's strict mode accepts.
        narrowing: Whether open objects may be closed (the provider then produces fewer values).
    """

    def __init__(self, root: dict[str, JsonValue] | bool, rules: StrictRules, narrowing: bool):
        """Prepare to compile ``root``; ``narrowing`` allows closing open objects."""
        super().__init__(root)
        self.rules = rules
        self.narrowing = narrowing

    @property
    def blocked(self) -> bool:
        """Whether anything blocks strict mode."""
        return any(note.action == "blocks strict" for note in self.notes)

    def _plain(self, schema: JsonDict, path: str) -> tuple[JsonDict, Plan]:
        # Draft-04's boolean exclusiveMinimum becomes the numeric form where bounds are sent.
        draft4 = self.draft == 4 and self.rules.numeric_bounds
        schema = draft4_bounds(schema) if draft4 else dict(schema)
        if "oneOf" in schema:
            if "anyOf" in schema:
                return self._block(path, "oneOf", "oneOf next to anyOf")
            self.note(path, "oneOf", "changed", "sent as anyOf; validation checks only one matches")
            schema["anyOf"] = schema.pop("oneOf")
        for key in sorted(_NOT_KEYWORDS.get(self.draft, frozenset()) & schema.keys()):
            del schema[key]
            self.note(path, key, "dropped", f"not a {DRAFT_NAMES[self.draft]} keyword; no effect")
        for key in _BLOCKING:
            if key in schema:
                self._block(path, key, f"{self.rules.label} cannot express `{key}`")
        if "if" in schema and ("then" in schema or "else" in schema):
            self._block(path, "if", f"{self.rules.label} cannot express `if`/`then`/`else`")
        if path != "$" and ("$id" in schema or (self.draft == 4 and "id" in schema)):
            self._block(path, "$id", "an embedded `$id` changes how references resolve")
        if "anyOf" in schema:
            return self._union(schema, path)
        if "enum" in schema or "const" in schema:
            return self._literal(schema, path)
        types = self._types(schema, path)
        if types is None:
            return {}, None
        others = [name for name in types if name != "null"]
        if len(others) <= 1:
            nullable = bool(others) and "null" in types
            return self._typed(schema, others[0] if others else "null", nullable, path)
        described = self._annotations(schema, path)
        branches: list[JsonDict] = []
        plans: list[tuple[JsonDict, Plan]] = []
        for name in others:
            compiled, plan = self._typed(schema, name, False, path, annotate=False)
            branches.append(compiled)
            plans.append((compiled, plan))
        if "null" in types:
            branches.append({"type": "null"})
        out: JsonDict = {"anyOf": list(branches)}
        _finish(schema, out, described)
        return out, UnionPlan(tuple(plans)) if any(plan for _, plan in plans) else None

    def _types(self, schema: JsonDict, path: str) -> list[str] | None:
        declared = schema.get("type")
        if declared is not None:
            names = declared if isinstance(declared, list) else [declared]
            known = [name for name in names if isinstance(name, str) and name in _TYPES]
            if len(known) != len(names) or not known:
                self._block(path, "type", f"{declared!r} is not a JSON type")
                return None
            return known
        inferred = inferred_types(schema)
        if not inferred:
            self._block(path, "type", "no `type` and no constraint: accepts any value")
            return None
        listed = " or ".join(inferred)
        if self.narrowing:
            self.note(path, "type", "narrowed", f"no `type`; only {listed} values are produced")
            return inferred
        self._block(path, "type", f"no `type`: accepts any value, not only {listed}; add `type`")
        return None

    def _typed(
        self, schema: JsonDict, name: str, nullable: bool, path: str, *, annotate: bool = True
    ) -> tuple[JsonDict, Plan]:
        out: JsonDict = {"type": [name, "null"] if nullable else name}
        for key in schema:
            if key not in _KNOWN and key not in _NO_EFFECT and not key.startswith("x-"):
                self.note(path, key, "dropped", "not a JSON Schema keyword; no effect")
        described = self._annotations(schema, path) if annotate else []
        plan: Plan = None
        if name == "object":
            plan = self._object(schema, path, out, described)
        elif name == "array":
            plan = self._array(schema, path, out, described)
        elif name == "string":
            self._string(schema, path, out, described)
        elif name in ("number", "integer"):
            self._number(schema, path, out, described)
        if annotate:
            _finish(schema, out, described)
        else:
            _describe(out, described)
        return out, plan

    def _annotations(self, schema: JsonDict, path: str) -> _Described:
        """Note and return ``default`` and ``examples``, which go into the description."""
        described: _Described = []
        for key in ("default", "examples"):
            if key in schema:
                described.append((key, schema[key]))
                self.note(path, key, "moved to description", f"{self.rules.label} does not take it")
        return described

    def _move(self, schema: JsonDict, path: str, keys: tuple[str, ...], into: _Described) -> None:
        for key in keys:
            if key in schema:
                into.append((key, schema[key]))
                self.note(path, key, "moved to description", f"not supported by {self.rules.label}")

    def _object(self, schema: JsonDict, path: str, out: JsonDict, described: _Described) -> Plan:
        raw = schema.get("properties", {})
        properties = raw if isinstance(raw, dict) else {}
        listed = schema.get("required", [])
        required = [n for n in listed if isinstance(n, str)] if isinstance(listed, list) else []
        self._closure(schema, path, bool(properties))
        for name in required:
            if name not in properties:
                self._block(path, "required", f"required {name!r} is not in `properties`")
        self._move(schema, path, ("minProperties", "maxProperties", "propertyNames"), described)
        compiled: JsonDict = {}
        plans: dict[str, Plan] = {}
        drop: set[str] = set()
        for name, sub in properties.items():
            here = child_path(child_path(path, "properties"), name)
            optional = name not in required
            if sub is False:
                if not optional:
                    self._block(here, "required", "a required property whose schema is false")
                elif self.rules.all_required:
                    compiled[name] = {"type": "null"}
                    drop.add(name)
                continue
            sub_out, sub_plan = self._node(sub, here)
            if optional and self.rules.all_required:
                # A null the provider sends is forced (and dropped) unless the designer's schema
                # and the compiled one both accept null: then it could be meant.
                if not self._produces_null(sub_out, True) or not self.accepts_null(sub):
                    if not self._produces_null(sub_out, False):
                        sub_out = _nullable(sub_out)
                    drop.add(name)
                elif isinstance(sub, dict) and "default" in sub and sub["default"] is None:
                    drop.add(name)
                    self.note(here, "default", "null means absent", "optional, default null")
                else:
                    self._block(
                        here,
                        "required",
                        "optional and nullable without `default: null`, so a forced null could "
                        "not be told from a real one; make it required or give it default null",
                    )
            compiled[name] = sub_out
            if sub_plan is not None:
                plans[name] = sub_plan
        out["properties"] = compiled
        kept = list(compiled) if self.rules.all_required else [n for n in required if n in compiled]
        out["required"] = list[JsonValue](kept)
        out["additionalProperties"] = False
        return ObjectPlan(plans, frozenset(drop)) if plans or drop else None

    def _closure(self, schema: JsonDict, path: str, has_properties: bool) -> None:
        extra = schema.get("additionalProperties", True)
        extra = True if extra == {} else extra
        if isinstance(extra, dict):
            self._block(path, "additionalProperties", "a schema for undeclared properties")
        elif extra is not False:
            if not has_properties:
                self._block(path, "additionalProperties", "a free-form object (no `properties`)")
            elif self.narrowing:
                detail = "undeclared properties are not produced"
                self.note(path, "additionalProperties", "narrowed", detail)
            else:
                detail = "undeclared properties are allowed; set additionalProperties: false"
                self._block(path, "additionalProperties", detail)
        if schema.get("patternProperties"):
            if self.narrowing:
                detail = "pattern-named properties are not produced"
                self.note(path, "patternProperties", "narrowed", detail)
            else:
                detail = f"{self.rules.label} cannot express it"
                self._block(path, "patternProperties", detail)

    def _array(self, schema: JsonDict, path: str, out: JsonDict, described: _Described) -> Plan:
        items = schema.get("items")
        if isinstance(items, list):
            self._block(path, "items", "tuple-style `items`")
            return None
        if items is None or items is True or items == {}:
            self._block(path, "items", "an array of any values; declare `items`")
            return None
        if self.rules.array_bounds:
            out.update({key: schema[key] for key in ("minItems", "maxItems") if key in schema})
        else:
            least = schema.get("minItems")
            if least in (0, 1):
                out["minItems"] = least
            elif isinstance(least, int) and least > 1:
                out["minItems"] = 1
                described.append(("minItems", least))
                detail = f"sent as minItems 1; {self.rules.label} allows only 0 or 1"
                self.note(path, "minItems", "changed", detail)
            self._move(schema, path, ("maxItems",), described)
        self._move(schema, path, ("contains", "minContains", "maxContains"), described)
        if schema.get("uniqueItems") is True:
            self._move(schema, path, ("uniqueItems",), described)
        out["items"], plan = self._node(items, child_path(path, "items"))
        return ArrayPlan(plan) if plan is not None else None

    def _string(self, schema: JsonDict, path: str, out: JsonDict, described: _Described) -> None:
        self._move(schema, path, ("minLength", "maxLength"), described)
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            if self.rules.complex_patterns or not _COMPLEX_PATTERN.search(pattern):
                out["pattern"] = self._explicit(pattern, path)
            else:
                self._move(schema, path, ("pattern",), described)
        name = schema.get("format")
        if isinstance(name, str):
            if name in self.rules.formats:
                out["format"] = name
            else:
                self._move(schema, path, ("format",), described)

    def _explicit(self, pattern: str, path: str) -> str:
        """Return a pattern to send, its class escapes spelled the way ECMA-262 reads them."""
        rewrite = explicit_classes(pattern)
        if rewrite.respelled:
            escapes = " ".join(rewrite.respelled)
            self.note(
                path,
                "pattern",
                "changed",
                f"{escapes} sent as explicit classes ({escapes} are ASCII in ECMA-262), "
                "so a provider with a Unicode regex engine reads the pattern alike",
            )
        if rewrite.kept:
            escapes = " ".join(rewrite.kept)
            self.note(
                path,
                "pattern",
                "changed",
                f"{escapes} sent as written: ECMA-262 reads it with ASCII word characters; a "
                "provider reading it with Unicode ones may produce a value agentshape rejects",
            )
        return rewrite.pattern

    def _number(self, schema: JsonDict, path: str, out: JsonDict, described: _Described) -> None:
        keys = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf")
        if self.rules.numeric_bounds:
            out.update({key: schema[key] for key in keys if key in schema})
            return
        self._move(schema, path, keys, described)
        if self.draft == 4:  # a numeric exclusive bound here was the designer's bound plus a flag
            for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
                if not isinstance(schema.get(flag), bool | None) and bound not in schema:
                    self.note(
                        path, bound, "moved to description", f"not supported by {self.rules.label}"
                    )

    def _union(self, schema: JsonDict, path: str) -> tuple[JsonDict, Plan]:
        branches = schema["anyOf"]
        if not isinstance(branches, list) or not branches:
            return self._block(path, "anyOf", "an empty anyOf")
        rest = {
            k: v for k, v in schema.items() if k != "anyOf" and k not in ANNOTATIONS | CONTAINERS
        }
        rest = draft4_bounds(rest) if self.draft == 4 else rest
        described = self._annotations(schema, path)
        compiled: list[JsonDict] = []
        plans: list[tuple[JsonDict, Plan]] = []
        for index, branch in enumerate(branches):
            here = child_path(child_path(path, "anyOf"), index)
            target: JsonValue = branch
            if rest:
                part = self._flatten(branch, here)
                if part is None:
                    continue
                merged, reason = merge_schemas(part, rest)
                if merged is None:
                    self._block(here, "anyOf", f"cannot merge the keywords around it: {reason}")
                    continue
                if merged != part:  # else the branch already implies them: keep its $ref
                    target = merged
            branch_out, branch_plan = self._node(target, here)
            compiled.append(branch_out)
            plans.append((branch_out, branch_plan))
        clash = self._ambiguous(plans)
        if clash is not None:
            first, second = clash
            return self._block(
                path,
                "anyOf",
                f"branches {first} and {second} can accept the same answer but strip the nulls "
                "strict mode forces differently, so a null could not be told from an absent field",
            )
        out: JsonDict = {"anyOf": list[JsonValue](compiled)}
        _finish(schema, out, described)
        return out, UnionPlan(tuple(plans)) if any(plan for _, plan in plans) else None

    def _ambiguous(self, plans: list[tuple[JsonDict, Plan]]) -> tuple[int, int] | None:
        """Return two branches whose answers may overlap but map back differently, if any."""
        for second in range(1, len(plans)):
            for first in range(second):
                (left, left_plan), (right, right_plan) = plans[first], plans[second]
                if left_plan != right_plan and not self._disjoint(left, right):
                    return first, second
        return None

    def _disjoint(self, left: JsonValue, right: JsonValue) -> bool:
        """Whether no value is accepted by both compiled (strict-subset) schemas, surely."""
        left, right = self._resolved(left), self._resolved(right)
        kinds = self._kinds(left), self._kinds(right)
        if kinds[0] is not None and kinds[1] is not None and not kinds[0] & kinds[1]:
            return True
        if not isinstance(left, dict) or not isinstance(right, dict):
            return False
        needed = [_listed(left.get("required")), _listed(right.get("required"))]
        props = [left.get("properties"), right.get("properties")]
        if not isinstance(props[0], dict) or not isinstance(props[1], dict):
            return False
        for name in needed[0] & needed[1] & props[0].keys() & props[1].keys():
            values = self._values(props[0][name]), self._values(props[1][name])
            if (
                values[0] is not None
                and values[1] is not None
                and not any(_same(a, b) for a in values[0] for b in values[1])
            ):
                return True
        return False

    def _resolved(self, compiled: JsonValue, depth: int = 0) -> JsonValue:
        ref = compiled.get("$ref") if isinstance(compiled, dict) else None
        if isinstance(ref, str) and depth < 32:
            return self._resolved(self.defs.get(ref.removeprefix("#/$defs/")), depth + 1)
        return compiled

    def _kinds(self, compiled: JsonValue) -> set[str] | None:
        """The JSON types a compiled schema can produce (``integer`` counted as ``number``)."""
        compiled = self._resolved(compiled)
        if not isinstance(compiled, dict):
            return None
        branches = compiled.get("anyOf")
        if isinstance(branches, list):
            found: set[str] = set()
            for branch in branches:
                kinds = self._kinds(branch)
                if kinds is None:
                    return None
                found |= kinds
            return found
        values = self._values(compiled)
        if values is not None:
            return {_json_type(value).replace("integer", "number") for value in values}
        declared = compiled.get("type")
        names = declared if isinstance(declared, list) else [declared]
        if not names or not all(isinstance(name, str) for name in names):
            return None
        return {str(name).replace("integer", "number") for name in names}

    def _values(self, compiled: JsonValue) -> list[JsonValue] | None:
        """The values a compiled ``const``/``enum`` (or a union of them) allows, if that is all."""
        compiled = self._resolved(compiled)
        if not isinstance(compiled, dict):
            return None
        if "const" in compiled:
            return [compiled["const"]]
        enum = compiled.get("enum")
        if isinstance(enum, list):
            return list(enum)
        branches = compiled.get("anyOf")
        if isinstance(branches, list):
            found: list[JsonValue] = []
            for branch in branches:
                each = self._values(branch)
                if each is None:
                    if self._kinds(branch) == {"null"}:
                        found.append(None)
                        continue
                    return None
                found += each
            return found
        if compiled.get("type") == "null":
            return [None]
        return None

    def _literal(self, schema: JsonDict, path: str) -> tuple[JsonDict, Plan]:
        enum = schema.get("enum")
        if "enum" in schema and not isinstance(enum, list):
            return self._block(path, "enum", "not a list")
        values: list[JsonValue] = list(enum) if isinstance(enum, list) else [schema["const"]]
        if "enum" in schema and "const" in schema:
            values = [value for value in values if _same(value, schema["const"])]
        rest = {
            k: v for k, v in schema.items() if k not in ("enum", "const") and k not in ANNOTATIONS
        }
        if rest:
            if isinstance(self.root, dict):
                for key in ("$defs", "definitions"):
                    if key in self.root:
                        rest.setdefault(key, self.root[key])
            try:
                check = offline_validator(rest, self.draft)
            except ValueError:
                return self._block(path, "enum", "the keywords beside it cannot be evaluated")
            values = [value for value in values if check.is_valid(value)]
        if not values:
            return self._block(path, "enum", "no value can match")
        if any(isinstance(value, dict | list) for value in values):
            return self._block(path, "enum", "object or array values")
        out: JsonDict = {}
        kinds = list(dict.fromkeys(_json_type(value) for value in values))
        if "integer" in kinds and "number" in kinds:
            kinds.remove("integer")
        non_null = [kind for kind in kinds if kind != "null"]
        if len(non_null) == 1:
            out["type"] = [non_null[0], "null"] if "null" in kinds else non_null[0]
        elif kinds == ["null"]:
            out["type"] = "null"
        if "enum" not in schema:
            out["const"] = values[0]
        else:
            out["enum"] = values
        _finish(schema, out, self._annotations(schema, path))
        return out, None

    def _produces_null(
        self, compiled: JsonValue, unsure: bool, seen: frozenset[str] = frozenset()
    ) -> bool:
        """Whether a compiled (strict-subset) schema accepts null; ``unsure`` when unknown."""
        if not isinstance(compiled, dict) or not compiled:
            return unsure
        ref = compiled.get("$ref")
        if isinstance(ref, str):
            name = ref.removeprefix("#/$defs/")
            if name in seen:
                return unsure
            return self._produces_null(self.defs.get(name), unsure, seen | {name})
        branches = compiled.get("anyOf")
        if isinstance(branches, list):
            return any(self._produces_null(branch, unsure, seen) for branch in branches)
        if "const" in compiled:
            return compiled["const"] is None
        enum = compiled.get("enum")
        if isinstance(enum, list):
            return None in enum
        declared = compiled.get("type")
        return declared == "null" or (isinstance(declared, list) and "null" in declared)

    def accepts_null(self, schema: JsonValue, seen: frozenset[str] = frozenset()) -> bool:
        """Return whether ``schema`` accepts null; True when unsure, the safe answer."""
        if isinstance(schema, bool):
            return schema
        if not isinstance(schema, dict):
            return True
        if isinstance(schema.get("$ref"), str):
            resolved = resolve_local_ref(self.root, str(schema["$ref"]))
            if resolved is None or resolved[1] in seen:
                return True
            if not self.accepts_null(resolved[0], seen | {resolved[1]}):
                return False
            if self.draft <= 7:
                return True
        declared = schema.get("type")
        names = declared if isinstance(declared, list) else [declared]
        if declared is not None and "null" not in names:
            return False
        enum = schema.get("enum")
        if isinstance(enum, list) and None not in enum:
            return False
        if "const" in schema and schema["const"] is not None and self.draft > 4:
            return False
        for key, combine in (("allOf", all), ("anyOf", any), ("oneOf", any)):
            branches = schema.get(key)
            if isinstance(branches, list) and not combine(
                self.accepts_null(branch, seen) for branch in branches
            ):
                return False
        return True


def _nullable(schema: JsonDict) -> JsonDict:
    declared = schema.get("type")
    if "$ref" in schema or "const" in schema or (declared is None and "anyOf" not in schema):
        return {"anyOf": [schema, {"type": "null"}]}
    branches = schema.get("anyOf")
    if isinstance(branches, list):
        return {**schema, "anyOf": [*branches, {"type": "null"}]}
    out = dict(schema)
    if isinstance(declared, str) and declared != "null":
        out["type"] = [declared, "null"]
    elif isinstance(declared, list) and "null" not in declared:
        out["type"] = [*declared, "null"]
    enum = out.get("enum")
    if isinstance(enum, list) and None not in enum:
        out["enum"] = [*enum, None]
    return out


def _finish(schema: JsonDict, out: JsonDict, described: _Described) -> None:
    """Copy ``title`` and ``description``, then append what was moved into the description."""
    for key in ("title", "description"):
        if isinstance(schema.get(key), str):
            out[key] = schema[key]
    _describe(out, described)


def _describe(out: JsonDict, described: _Described) -> None:
    if not described:
        return
    parts: list[str] = []
    constraints = {key: value for key, value in described if key not in ("default", "examples")}
    if constraints:
        parts.append(f"Constraints: {_compact(constraints)}.")
    for key, label in (("default", "Default"), ("examples", "Examples")):
        parts.extend(f"{label}: {_compact(value)}." for name, value in described if name == key)
    text = " ".join(parts)
    current = out.get("description")
    out["description"] = f"{current}\n{text}" if isinstance(current, str) and current else text


def _compact(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _json_type(value: JsonValue) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _same(left: JsonValue, right: JsonValue) -> bool:
    return _json_type(left) == _json_type(right) and left == right


def _listed(names: JsonValue) -> set[str]:
    return {name for name in names if isinstance(name, str)} if isinstance(names, list) else set()
