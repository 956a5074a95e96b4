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
from agent_core.schema_documents import DRAFT_NAMES, custom_meta_schema, schema_draft
from agent_core.schema_merge import ANNOTATIONS, CONTAINERS, flatten, merge_schemas
from agent_core.schema_walk import (
    resolve_local_ref,
)
from agent_core.strict_choices import ChoiceNodes
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
from agent_core.strict_types import TypedNodes
from agent_core.strict_values import (
    _describe,
    _Described,
    _finish,
    _normalize_draft4,
    _pointer_path,
)

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
_NOT_KEYWORDS = {
    4: frozenset(_words("const contains propertyNames if then else")),
    6: frozenset(_words("if then else")),
    2019: frozenset({"dependencies"}),
    2020: frozenset({"dependencies"}),
}
"""Words that are keywords in some drafts but not in these: a schema means nothing by them."""
_NO_EFFECT = frozenset(_words("then else additionalItems $anchor $dynamicAnchor"))
_KNOWN = (
    ANNOTATIONS
    | CONTAINERS
    | frozenset({"type", "anyOf", "allOf", "if", *_BLOCKING})
    | frozenset().union(*_FAMILIES.values())
)

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


class StrictCompiler(TypedNodes, ChoiceNodes):
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
        if isinstance(root, dict) and custom_meta_schema(root) is not None:
            detail = "a custom meta-schema's vocabularies decide which keywords apply"
            return self._block("$", "$schema", detail)
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
