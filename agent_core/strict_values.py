"""Small rewrites and comparisons of schema nodes the strict compiler uses."""

from __future__ import annotations

import json

from pydantic import JsonValue

from agent_core.schema_merge import draft4_bounds
from agent_core.schema_walk import (
    child_path,
    fragment_keys,
)
from agent_core.strict_plans import (
    JsonDict,
)

_Described = list[tuple[str, JsonValue]]


def _pointer_path(pointer: str) -> str:
    path = "$"
    for part in fragment_keys(pointer):
        path = child_path(path, part)
    return path


_normalize_draft4 = draft4_bounds


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
