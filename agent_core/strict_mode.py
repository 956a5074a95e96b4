"""Compile a JSON Schema under a provider's strict-mode rules, or say why it cannot be done.

:class:`StrictCompiler` turns a designer's schema into the subset OpenAI's or Anthropic's strict
mode accepts (rules from the providers' documentation, see ``PROVIDERS.md``): every object closed
with ``additionalProperties: false``, ``$ref`` targets collected in ``$defs``, ``allOf`` merged,
``oneOf`` sent as ``anyOf``, multi-type schemas split into ``anyOf``, and (OpenAI) every property
required, optional ones made nullable. Each keyword a provider does not support moves into the
node's description and is noted. Whatever would change which values the provider can produce
(``not``, ``if``, an object open to undeclared properties, a free-form value...) is noted as
``blocks strict``, and the caller falls back to non-strict.

Alongside the schema the compiler builds a plan: where strict mode forced nulls, so that the
provider's answer can be mapped back to the designer's shape.
"""

from __future__ import annotations

import re

from pydantic import JsonValue

from agent_core.schema_checks import JSON_TYPES
from agent_core.schema_merge import ANNOTATIONS, CONTAINERS, flatten, merge_schemas
from agent_core.schema_walk import (
    child_path,
    offline_validator,
    resolve_local_ref,
)
from agent_core.strict_plans import (
    ArrayPlan,
    CompileNote,
    JsonDict,
    NoteAction,
    ObjectPlan,
    Plan,
    RefPlan,
    StrictRules,
    UnionPlan,
)
from agent_core.strict_values import (
    _describe,
    _Described,
    _finish,
    _json_type,
    _normalize_draft4,
    _nullable,
    _pointer_path,
    _same,
)
from agent_core.validation import schema_draft

__all__ = [
    "ArrayPlan",
    "CompileNote",
    "NoteAction",
    "ObjectPlan",
    "Plan",
    "RefPlan",
    "StrictCompiler",
    "StrictRules",
    "UnionPlan",
    "inferred_types",
]


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_FAMILIES: dict[str, frozenset[str]] = {
    "object": frozenset(
        _words(
            "properties required additionalProperties patternProperties propertyNames "
            "minProperties maxProperties"
        )
    ),
    "array": frozenset(
        _words("items minItems maxItems uniqueItems contains minContains maxContains")
    ),
    "string": frozenset(_words("minLength maxLength pattern format")),
    "number": frozenset(_words("minimum maximum exclusiveMinimum exclusiveMaximum multipleOf")),
}
_TYPES = frozenset(JSON_TYPES)
_BLOCKING = _words(
    "not dependencies dependentRequired dependentSchemas unevaluatedProperties "
    "unevaluatedItems prefixItems $dynamicRef $recursiveRef"
)
_NO_EFFECT = frozenset(_words("then else additionalItems $anchor $dynamicAnchor"))
_KNOWN = (
    ANNOTATIONS
    | CONTAINERS
    | frozenset({"type", "anyOf", "allOf", "if", *_BLOCKING})
    | frozenset().union(*_FAMILIES.values())
)
_COMPLEX_PATTERN = re.compile(r"\(\?<?[=!]|\(\?>|\\[1-9]|\\k<")

_NODE_BUDGET = 20_000


class _TooComplex(Exception):
    """Compiling would take too long: ``allOf``/``anyOf`` merging multiplies the schema."""


def inferred_types(schema: JsonDict) -> list[str]:
    """Return the types whose keywords an untyped schema uses, such as ``["object"]``.

    Args:
        schema: A schema object without ``type``.

    Returns:
        The type families (``object``, ``array``, ``string``, ``number``) in that order.
    """
    return [family for family, keys in _FAMILIES.items() if keys & schema.keys()]


class StrictCompiler:
    """Compiles one schema under one provider's strict rules, collecting notes.

    Attributes:
        notes: Everything not sent as written, in document order, blockers included.
        defs: The compiled ``$defs``, by name.
        def_plans: The map-back plan of each ``$defs`` entry.
    """

    def __init__(self, root: dict[str, JsonValue] | bool, rules: StrictRules, narrowing: bool):
        """Prepare to compile ``root``; ``narrowing`` allows closing open objects."""
        self.root = root
        self.draft = schema_draft(root)
        self.rules = rules
        self.narrowing = narrowing
        self.notes: list[CompileNote] = []
        self.defs: dict[str, JsonDict] = {}
        self.def_plans: dict[str, Plan] = {}
        self._def_names: dict[str, str] = {}
        self._inlining: list[str] = []
        self._budget = _NODE_BUDGET
        self._noted: set[tuple[str, str, str, str]] = set()

    @property
    def blocked(self) -> bool:
        """Whether anything blocks strict mode."""
        return any(note.action == "blocks strict" for note in self.notes)

    def compile_root(self, *, inline_ref: bool) -> tuple[JsonDict, Plan]:
        """Compile the root; ``inline_ref`` expands a root ``$ref`` in place (an object root).

        Returns:
            The compiled root (without ``$defs``; see :attr:`defs`) and its plan.
        """
        root = self.root
        try:
            if inline_ref and isinstance(root, dict) and "$ref" in root:
                return self._ref(root, "$", inline=True)
            return self._node(root, "$")
        except _TooComplex:
            detail = f"compiling it takes more than {_NODE_BUDGET} steps"
            return self._block("$", "allOf", detail)
        except RecursionError:
            return self._block("$", "properties", "the schema nests too deeply to compile")

    def note(self, path: str, keyword: str, action: NoteAction, detail: str) -> None:
        """Record a note once."""
        key = (path, keyword, action, detail)
        if key not in self._noted:
            self._noted.add(key)
            self.notes.append(CompileNote(path=path, keyword=keyword, action=action, detail=detail))

    def _block(self, path: str, keyword: str, detail: str) -> tuple[JsonDict, Plan]:
        self.note(path, keyword, "blocks strict", detail)
        return {}, None

    def _node(self, schema: JsonValue, path: str) -> tuple[JsonDict, Plan]:
        self._budget -= 1
        if self._budget < 0:
            raise _TooComplex
        if schema is True or schema == {}:
            return self._block(path, "type", "the schema accepts any value")
        if schema is False:
            return self._block(path, "type", "the schema accepts no value")
        if not isinstance(schema, dict):
            return self._block(path, "type", "not a schema")
        if "$ref" in schema:
            return self._ref(schema, path)
        if "allOf" in schema:
            merged = self._flatten(schema, path)
            if merged is None:
                return {}, None
            self.note(path, "allOf", "changed", "merged into one schema")
            return self._node(merged, path)
        return self._plain(schema, path)

    def _ref(self, schema: JsonDict, path: str, *, inline: bool = False) -> tuple[JsonDict, Plan]:
        ref = schema["$ref"]
        resolved = resolve_local_ref(self.root, ref) if isinstance(ref, str) else None
        if resolved is None:
            return self._block(path, "$ref", f"{ref!r} does not resolve within the schema")
        target, pointer = resolved
        siblings = {k: v for k, v in schema.items() if k != "$ref" and k not in CONTAINERS}
        if self.draft <= 7:
            for key in sorted(set(siblings) - ANNOTATIONS):
                self.note(path, key, "dropped", "draft-07 ignores keywords next to $ref")
            siblings = {k: v for k, v in siblings.items() if k in ANNOTATIONS}
        if not siblings and not inline:
            name = self._def_name(pointer, target)
            return {"$ref": f"#/$defs/{name}"}, RefPlan(name)
        if pointer in self._inlining:
            return self._block(path, "$ref", "a $ref cycle with keywords next to it")
        if not isinstance(target, dict):
            return self._node(target, path)
        self._inlining.append(pointer)
        try:
            if self.draft <= 7:
                return self._node({**target, **siblings}, _pointer_path(pointer))
            merged, reason = merge_schemas(target, siblings)
            if merged is None:
                return self._block(path, "$ref", f"cannot merge the keywords beside it: {reason}")
            return self._node(merged, _pointer_path(pointer))
        finally:
            self._inlining.pop()

    def _def_name(self, pointer: str, target: JsonValue) -> str:
        if pointer in self._def_names:
            return self._def_names[pointer]
        parts = [part for part in pointer.split("/")[1:] if part]
        if len(parts) == 2 and parts[0] in ("$defs", "definitions"):
            parts = parts[1:]
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", "_".join(parts)) or "Root"
        name, counter = base, 2
        while name in self.defs:
            name, counter = f"{base}_{counter}", counter + 1
        self._def_names[pointer] = name
        self.defs[name] = {}
        self.defs[name], self.def_plans[name] = self._node(target, _pointer_path(pointer))
        return name

    def _flatten(self, schema: JsonValue, path: str) -> JsonDict | None:
        """Resolve ``$ref`` and merge ``allOf`` into one schema object, or note why not."""
        flat, keyword, reason = flatten(schema, self.root, self.draft)
        if flat is None:
            self._block(path, keyword, reason)
        return flat

    def _plain(self, schema: JsonDict, path: str) -> tuple[JsonDict, Plan]:
        # Draft-04's boolean exclusiveMinimum becomes the numeric form where bounds are sent.
        draft4 = self.draft == 4 and self.rules.numeric_bounds
        schema = _normalize_draft4(schema) if draft4 else dict(schema)
        if "oneOf" in schema:
            if "anyOf" in schema:
                return self._block(path, "oneOf", "oneOf next to anyOf")
            self.note(path, "oneOf", "changed", "sent as anyOf; validation checks only one matches")
            schema["anyOf"] = schema.pop("oneOf")
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
                out["pattern"] = pattern
            else:
                self._move(schema, path, ("pattern",), described)
        name = schema.get("format")
        if isinstance(name, str):
            if name in self.rules.formats:
                out["format"] = name
            else:
                self._move(schema, path, ("format",), described)

    def _number(self, schema: JsonDict, path: str, out: JsonDict, described: _Described) -> None:
        keys = ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf")
        if self.rules.numeric_bounds:
            out.update({key: schema[key] for key in keys if key in schema})
        else:
            self._move(schema, path, keys, described)

    def _union(self, schema: JsonDict, path: str) -> tuple[JsonDict, Plan]:
        branches = schema["anyOf"]
        if not isinstance(branches, list) or not branches:
            return self._block(path, "anyOf", "an empty anyOf")
        rest = {
            k: v for k, v in schema.items() if k != "anyOf" and k not in ANNOTATIONS | CONTAINERS
        }
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
        out: JsonDict = {"anyOf": list[JsonValue](compiled)}
        _finish(schema, out, described)
        return out, UnionPlan(tuple(plans)) if any(plan for _, plan in plans) else None

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
        """Whether a compiled (strict-subset) schema accepts null; ``unsure`` when unknown.

        A ``$defs`` entry still being compiled (a recursive reference) is unknown.
        """
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
        if "const" in schema and schema["const"] is not None:
            return False
        for key, combine in (("allOf", all), ("anyOf", any), ("oneOf", any)):
            branches = schema.get(key)
            if isinstance(branches, list) and not combine(
                self.accepts_null(branch, seen) for branch in branches
            ):
                return False
        return True
