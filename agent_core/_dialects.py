"""Compile a designer's JSON Schema into each provider's dialect, and map answers back.

``neutral`` is the schema as written (root wrapped when not an object); the provider enforces
nothing. ``openai`` and ``anthropic`` use the provider's strict mode when the schema can be made
strict without changing what it accepts, and fall back to neutral (the report says why)
otherwise: strict mode never forbids a valid answer. Constraints the :class:`CompileReport` lists
as moved, dropped or changed are enforced only by agentshape's validation.
``allow_narrowing=True`` lets strict mode close open objects and type untyped schemas instead.

OpenAI strict mode requires every property, so an optional field becomes required and nullable
and :meth:`ProviderSchema.unwrap` removes the nulls it forced; that is exact only when the field
rejects null or defaults to null, so an optional field that accepts null blocks strict mode.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Literal

import jsonschema_rs
from pydantic import BaseModel, ConfigDict, JsonValue

from agent_contracts._errors import InvalidSchemaError
from agent_core._schema_documents import schema_draft
from agent_core._schema_walk import (
    offline_validator,
    resolve_local_ref,
    subschemas,
    without_own_id,
)
from agent_core._strict_mode import StrictCompiler, inferred_types
from agent_core._strict_plans import (
    ArrayPlan,
    CompileNote,
    ObjectPlan,
    Plan,
    RefPlan,
    StrictRules,
    UnionPlan,
)

__all__ = [
    "DIALECTS",
    "STRICT_RULES",
    "WRAPPER_PROPERTY",
    "CompileReport",
    "Dialect",
    "ProviderSchema",
    "compile_for_provider",
    "needs_wrapping",
]

JsonDict = dict[str, JsonValue]
"""A JSON object as the compiler handles it."""

Dialect = Literal["neutral", "openai", "anthropic"]
"""Which provider's schema rules a tool is compiled for."""

DIALECTS: tuple[Dialect, ...] = ("neutral", "openai", "anthropic")
"""Every dialect, in a fixed order."""


_UNENFORCED = frozenset({"moved to description", "dropped", "changed"})
_OPENAI_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)
STRICT_RULES: dict[Dialect, StrictRules] = {
    "openai": StrictRules(
        label="OpenAI strict mode",
        all_required=True,
        numeric_bounds=True,
        array_bounds=True,
        formats=_OPENAI_FORMATS,
        recursion=True,
        complex_patterns=True,
        max_properties=5000,
        max_depth=10,
        max_enum_values=1000,
    ),
    "anthropic": StrictRules(
        label="Anthropic strict mode",
        all_required=False,
        numeric_bounds=False,
        array_bounds=False,
        formats=_OPENAI_FORMATS | {"uri"},
        recursion=False,
        complex_patterns=False,
        max_optional=24,
        max_unions=16,
    ),
}
"""The strict rules of each provider dialect that has a strict mode."""


class CompileReport(BaseModel):
    """What one dialect's provider enforces of a schema, and what only agentshape's validation does.

    With ``strict`` false the provider enforces nothing: the schema only guides the model, and
    the notes say what blocked strict mode. With ``strict`` true the provider enforces the schema
    except for the keywords in :meth:`unenforced`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    dialect: Dialect
    """The dialect reported on."""
    strict: bool
    """Whether the provider constrains its output to the compiled schema."""
    wrapped: bool
    """Whether the root travels as ``{"result": <value>}``."""
    notes: tuple[CompileNote, ...] = ()
    """Every keyword not sent as written (strict), or what blocked strict mode (not strict)."""

    def unenforced(self) -> tuple[CompileNote, ...]:
        """Return the notes of constraints a strict provider does not enforce."""
        return tuple(note for note in self.notes if note.action in _UNENFORCED)

    def format(self) -> str:
        """Return the report as text: a headline, then one line per note."""
        if self.strict:
            head = f"{self.dialect}: strict; the provider enforces the schema"
            head += ", except as noted" if self.unenforced() else ""
            if any(note.action == "narrowed" for note in self.notes):
                head += "; it produces only part of what the schema accepts"
        else:
            head = f"{self.dialect}: not strict; only agentshape's validation enforces the schema"
        return "\n".join([head, *(f"  - {note}" for note in self.notes)])

    def __str__(self) -> str:
        return self.format()


@dataclass(frozen=True)
class ProviderSchema:
    """A schema compiled for one dialect, with the way back to the designer's shape.

    Attributes:
        dialect: The dialect compiled for.
        parameters: The JSON Schema to send: an object schema, any ``$defs`` at its root.
        report: What the provider enforces and what it does not.
    """

    dialect: Dialect
    parameters: JsonDict
    report: CompileReport
    plan: Plan = None
    """How to undo forced nulls (``None``: nothing to undo)."""
    def_plans: dict[str, Plan] = field(default_factory=dict)
    """The plan of each ``$defs`` entry."""
    _validators: dict[tuple[int, int], jsonschema_rs.Validator] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def strict(self) -> bool:
        """Whether the provider constrains its output to :attr:`parameters`."""
        return self.report.strict

    @property
    def wrapped(self) -> bool:
        """Whether the root travels as ``{"result": <value>}``."""
        return self.report.wrapped

    def unwrap(self, arguments: JsonValue) -> JsonValue:
        """Map a provider's arguments back to a value for the designer's schema.

        Undoes the root wrapper and the nulls strict mode forced; never raises, never changes
        ``arguments`` (a malformed answer comes back as it is, for validation to judge).

        Args:
            arguments: The parsed tool arguments (or structured output).

        Returns:
            The value to validate against the designer's schema.
        """
        value = arguments
        if self.wrapped and isinstance(value, dict) and list(value) == [WRAPPER_PROPERTY]:
            value = value[WRAPPER_PROPERTY]
        return self._strip(value, self.plan)

    def to_arguments(self, value: JsonValue) -> JsonValue:
        """Return the arguments a provider sends for ``value``: the inverse of :meth:`unwrap`.

        Args:
            value: A value valid for the designer's schema.
        """
        encoded = self._fill(value, self.plan)
        return {WRAPPER_PROPERTY: encoded} if self.wrapped else encoded

    def _strip(self, value: JsonValue, plan: Plan) -> JsonValue:
        if isinstance(plan, RefPlan):
            return self._strip(value, self.def_plans.get(plan.name))
        if isinstance(plan, ObjectPlan) and isinstance(value, dict):
            return self._strip_object(value, plan)
        if isinstance(plan, ArrayPlan) and isinstance(value, list):
            items = [self._strip(item, plan.items) for item in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if isinstance(plan, UnionPlan):
            for index, (_, branch_plan) in enumerate(plan.branches):
                if self._accepts(plan, index, value):
                    return self._strip(value, branch_plan)
            return self._strip(value, self._fitting(value, plan))
        return value

    def _strip_object(self, value: dict[str, JsonValue], plan: ObjectPlan) -> JsonValue:
        """Return ``value`` without its forced nulls: ``value`` itself when it has none."""
        drop = [key for key in plan.drop_null if key in value and value[key] is None]
        changed: dict[str, JsonValue] = {}
        for key, inner in plan.properties.items():
            item = value.get(key)
            if item is not None:
                stripped = self._strip(item, inner)
                if stripped is not item:
                    changed[key] = stripped
        if not drop and not changed:
            return value
        return {key: changed.get(key, item) for key, item in value.items() if key not in drop}

    def _fill(self, value: JsonValue, plan: Plan) -> JsonValue:
        if isinstance(plan, RefPlan):
            return self._fill(value, self.def_plans.get(plan.name))
        if isinstance(plan, ObjectPlan) and isinstance(value, dict):
            filled = {
                key: self._fill(item, plan.properties.get(key)) for key, item in value.items()
            }
            for key in sorted(plan.drop_null - value.keys()):
                filled[key] = None
            return filled
        if isinstance(plan, ArrayPlan) and isinstance(value, list):
            return [self._fill(item, plan.items) for item in value]
        if isinstance(plan, UnionPlan):
            for index, (_, branch_plan) in enumerate(plan.branches):
                candidate = self._fill(value, branch_plan)
                if self._accepts(plan, index, candidate):
                    return candidate
            return self._fill(value, self._fitting(value, plan))
        return value

    def _fitting(self, value: JsonValue, plan: UnionPlan) -> Plan:
        """Return the first branch plan of the value's JSON kind, when no branch accepts it."""
        for _, branch_plan in plan.branches:
            resolved = branch_plan
            while isinstance(resolved, RefPlan):
                resolved = self.def_plans.get(resolved.name)
            if isinstance(resolved, ObjectPlan) and isinstance(value, dict):
                return branch_plan
            if isinstance(resolved, ArrayPlan) and isinstance(value, list):
                return branch_plan
        return None

    def _accepts(self, plan: UnionPlan, index: int, value: JsonValue) -> bool:
        key = (id(plan), index)
        validator = self._validators.get(key)
        if validator is None:
            schema = dict(plan.branches[index][0])
            if "$defs" in self.parameters:
                schema["$defs"] = self.parameters["$defs"]
            validator = offline_validator(schema, 2020)
            self._validators[key] = validator
        return bool(validator.is_valid(value))


def needs_wrapping(schema: JsonValue, *, allow_narrowing: bool = False) -> bool:
    """Return whether a schema's root must travel as ``{"result": <value>}`` in tool calls.

    Tool arguments are always a JSON object, so only a root of ``type: object`` (directly or
    through a root ``$ref``) without a root ``anyOf``/``oneOf`` is sent as it is. With
    ``allow_narrowing`` an untyped root that uses only object keywords counts as an object.

    Args:
        schema: The designer's JSON Schema.
        allow_narrowing: Whether an untyped object-like root may be narrowed to an object.

    Returns:
        ``True`` when the root must travel wrapped as ``{"result": <value>}``.
    """
    target: JsonValue = schema
    seen: set[str] = set()
    while isinstance(target, dict) and isinstance(target.get("$ref"), str):
        ref = str(target["$ref"])
        resolved = resolve_local_ref(schema, ref)
        if resolved is None or ref in seen:
            return True
        seen.add(ref)
        target = resolved[0]
    if not isinstance(target, dict) or "anyOf" in target or "oneOf" in target:
        return True
    declared = target.get("type")
    if declared == "object" or declared == ["object"]:
        return False
    return not (declared is None and allow_narrowing and inferred_types(target) == ["object"])


def compile_for_provider(
    schema: JsonValue, dialect: Dialect, *, allow_narrowing: bool = False
) -> ProviderSchema:
    """Compile a designer's JSON Schema for one provider dialect.

    Args:
        schema: The designer's JSON Schema (an object or a boolean).
        dialect: ``neutral``, ``openai`` or ``anthropic``.
        allow_narrowing: Let strict mode close open objects and type untyped schemas, so that
            the provider produces a subset of the valid values (each narrowing is reported).

    Returns:
        The compiled schema, its report and the way back.

    Raises:
        InvalidSchemaError: When ``schema`` is neither a JSON object nor a boolean, or
            ``dialect`` is not a dialect.
    """
    if not isinstance(schema, dict | bool):
        kind = type(schema).__name__
        raise InvalidSchemaError(f"a JSON Schema is an object or a boolean, not {kind}")
    if dialect not in DIALECTS:
        raise InvalidSchemaError(f"unknown dialect {dialect!r}; use one of {', '.join(DIALECTS)}")
    wrapped = needs_wrapping(schema, allow_narrowing=allow_narrowing)
    notes: tuple[CompileNote, ...] = ()
    if wrapped:
        detail = f'the root is not an object; the provider sees {{"{WRAPPER_PROPERTY}": <value>}}'
        notes = (CompileNote(path="$", keyword="type", action="wrapped", detail=detail),)
    neutral = _neutral_parameters(schema, wrapped)
    if dialect == "neutral":
        report = CompileReport(dialect=dialect, strict=False, wrapped=wrapped, notes=notes)
        return ProviderSchema(dialect, neutral, report)
    compiler = StrictCompiler(schema, STRICT_RULES[dialect], allow_narrowing)
    body, plan = compiler.compile_root(inline_ref=not wrapped)
    if wrapped:
        parameters = _wrap(body)
    else:
        parameters = body
        if not compiler.blocked and body.get("type") != "object":
            compiler.note("$", "type", "blocks strict", "the root does not compile to an object")
    if compiler.defs:
        parameters["$defs"] = dict(compiler.defs)
    _check_limits(compiler, parameters)
    if compiler.blocked:
        blockers = tuple(note for note in compiler.notes if note.action == "blocks strict")
        report = CompileReport(
            dialect=dialect, strict=False, wrapped=wrapped, notes=notes + blockers
        )
        return ProviderSchema(dialect, neutral, report)
    all_notes = notes + tuple(compiler.notes)
    report = CompileReport(dialect=dialect, strict=True, wrapped=wrapped, notes=all_notes)
    return ProviderSchema(dialect, parameters, report, plan, dict(compiler.def_plans))


WRAPPER_PROPERTY = "result"
"""The property a non-object root is wrapped in: ``{"result": <value>}``."""


def _wrap(body: JsonValue) -> JsonDict:
    return {
        "type": "object",
        "properties": {WRAPPER_PROPERTY: body},
        "required": [WRAPPER_PROPERTY],
        "additionalProperties": False,
    }


def _neutral_parameters(schema: dict[str, JsonValue] | bool, wrapped: bool) -> JsonDict:
    """The schema as written; wrapped, its definitions hoisted and references rewritten."""
    body: JsonValue = copy.deepcopy(schema)
    containers: JsonDict = {}
    if isinstance(body, dict):
        root_id = body.pop("$id", None)
        if schema_draft(body) == 4 and isinstance(body.get("id"), str):
            root_id = body.pop("id")
        body.pop("$schema", None)
        for _, node in subschemas(body):
            if isinstance(node, dict) and isinstance(node.get("$ref"), str):
                node["$ref"] = _rebase(str(node["$ref"]), root_id, wrapped)
        if wrapped:
            for key in ("$defs", "definitions"):
                if key in body:
                    containers[key] = body.pop(key)
    if not wrapped:
        assert isinstance(body, dict)
        return body
    return {**_wrap(body), **containers}


def _rebase(ref: str, root_id: JsonValue, wrapped: bool) -> str:
    ref = without_own_id(ref, root_id)
    if not wrapped or not ref.startswith("#"):
        return ref
    pointer = ref[1:]
    if pointer.startswith(("/$defs/", "/definitions/")):
        return ref
    return f"#/properties/{WRAPPER_PROPERTY}{pointer}"


def _check_limits(compiler: StrictCompiler, parameters: JsonDict) -> None:
    """Note ``blocks strict`` when the final ``parameters`` break a provider's size limit."""
    rules = compiler.rules
    nodes = [node for _, node in subschemas(parameters) if isinstance(node, dict)]
    objects = [node["properties"] for node in nodes if isinstance(node.get("properties"), dict)]
    counts: list[tuple[int | None, int, str, str]] = [
        (
            rules.max_properties,
            sum(len(p) for p in objects if isinstance(p, dict)),
            "properties",
            "properties",
        ),
        (
            rules.max_enum_values,
            sum(len(enum) for n in nodes if isinstance(enum := n.get("enum"), list)),
            "enum",
            "enum values",
        ),
        (
            rules.max_depth,
            _object_depth(parameters, parameters, frozenset(), {}),
            "properties",
            "levels of object nesting",
        ),
        (rules.max_optional, _optional_count(nodes), "required", "optional properties"),
        (
            rules.max_unions,
            sum(1 for n in nodes if _is_union(n)),
            "anyOf",
            "union-typed values",
        ),
    ]
    for limit, count, keyword, what in counts:
        if limit is not None and count > limit:
            compiler.note(
                "$", keyword, "blocks strict", f"{count} {what}; {rules.label} allows {limit}"
            )
    if not rules.recursion and _is_recursive(parameters):
        compiler.note(
            "$", "$ref", "blocks strict", f"{rules.label} cannot express a recursive schema"
        )


def _is_union(node: JsonDict) -> bool:
    declared = node.get("type")
    return "anyOf" in node or (isinstance(declared, list) and len(declared) > 1)


def _optional_count(nodes: list[JsonDict]) -> int:
    total = 0
    for node in nodes:
        properties, required = node.get("properties"), node.get("required", [])
        if isinstance(properties, dict) and isinstance(required, list):
            listed = {name for name in required if isinstance(name, str)}  # a set: linear
            total += len([name for name in properties if name not in listed])
    return total


def _is_recursive(parameters: JsonDict) -> bool:
    raw = parameters.get("$defs")
    defs = raw if isinstance(raw, dict) else {}
    graph: dict[str, list[str]] = {}
    for name, body in defs.items():
        graph[name] = [
            str(sub["$ref"]).removeprefix("#/$defs/")
            for _, sub in subschemas(body)
            if isinstance(sub, dict) and isinstance(sub.get("$ref"), str)
        ]
    state: dict[str, int] = {}

    def cyclic(name: str) -> bool:
        if state.get(name) == 1:
            return True
        if state.get(name) == 2:
            return False
        state[name] = 1
        if any(cyclic(child) for child in graph.get(name, [])):
            return True
        state[name] = 2
        return False

    return any(cyclic(name) for name in graph)


def _object_depth(
    node: JsonValue, parameters: JsonDict, visiting: frozenset[str], memo: dict[str, int]
) -> int:
    if not isinstance(node, dict):
        return 0
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.removeprefix("#/$defs/")
        if name in visiting:
            return 0
        if name not in memo:
            defs = parameters.get("$defs")
            target = defs.get(name) if isinstance(defs, dict) else None
            memo[name] = _object_depth(target, parameters, visiting | {name}, memo)
        return memo[name]
    children: list[JsonValue] = []
    properties = node.get("properties")
    if isinstance(properties, dict):
        children.extend(properties.values())
    if "items" in node:
        children.append(node["items"])
    branches = node.get("anyOf")
    if isinstance(branches, list):
        children.extend(branches)
    deepest = max((_object_depth(c, parameters, visiting, memo) for c in children), default=0)
    return deepest + (1 if isinstance(properties, dict) else 0)
