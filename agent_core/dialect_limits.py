"""The limits a provider's strict mode puts on a schema: size, nesting, unions, recursion."""

from __future__ import annotations

from pydantic import JsonValue

from agent_core.schema_walk import (
    subschemas,
)
from agent_core.strict_mode import (
    StrictCompiler,
)

__all__ = ["JsonDict"]


JsonDict = dict[str, JsonValue]


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
