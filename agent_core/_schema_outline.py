"""A JSON Schema as a short TypeScript-like outline for a model to read: :func:`schema_outline`.

The outline keeps what a model acts on, at a fraction of the schema's tokens::

    {
      summary: string  // minLength 50
      score: integer  // 0 <= x <= 100
      tags?: ("bug" | "style")[]  // minItems 1
    }

A reference back into a definition still being written is named (``Node``), so a recursive
schema ends. The outline is guidance only: validation still judges every reply.
"""

from __future__ import annotations

import json

from pydantic import JsonValue

from agent_core._schema_walk import resolve_local_ref

__all__ = ["schema_outline"]

_INDENT = "  "
# Keywords said in a comment, in this order, each as ``keyword value`` unless drawn below.
_SAID = (
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "multipleOf",
)


def schema_outline(schema: JsonValue) -> str:
    """Return ``schema`` as a compact TypeScript-like outline (see the module docstring).

    Args:
        schema: A JSON Schema (an object or a boolean).

    Returns:
        The outline, several lines for an object with properties, else one line.
    """
    return _Outliner(schema).node(schema, 0, ())


class _Outliner:
    def __init__(self, root: JsonValue) -> None:
        self.root = root

    def node(self, schema: JsonValue, depth: int, open_refs: tuple[str, ...]) -> str:
        """Return the type of ``schema``; its constraints are said by :meth:`notes`."""
        if schema is True or schema == {}:
            return "any"
        if schema is False:
            return "never"
        if not isinstance(schema, dict):
            return "any"
        ref = schema.get("$ref")
        if isinstance(ref, str):
            resolved = resolve_local_ref(self.root, ref)
            if resolved is None:
                return "any"
            if ref in open_refs:
                return ref.rsplit("/", 1)[-1] or "any"
            return self.node(resolved[0], depth, (*open_refs, ref))
        if "const" in schema:
            return _literal(schema["const"])
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return " | ".join(_literal(value) for value in enum)
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                return " | ".join(self.member(option, depth, open_refs) for option in options)
        all_of = schema.get("allOf")
        if isinstance(all_of, list) and all_of and not _declares_type(schema):
            return " & ".join(self.member(part, depth, open_refs) for part in all_of)
        types = _types(schema)
        return " | ".join(self.typed(schema, kind, depth, open_refs) for kind in types)

    def member(self, schema: JsonValue, depth: int, open_refs: tuple[str, ...]) -> str:
        """Return a union or intersection member, bracketed where it is itself a union."""
        text = self.node(schema, depth, open_refs)
        notes = self.notes(schema)
        if notes:
            text = f"{text} /* {notes} */"
        union = " | " in text or " & " in text
        return f"({text})" if union and not text.startswith(("{", "[")) else text

    def typed(
        self, schema: dict[str, JsonValue], kind: str, depth: int, open_refs: tuple[str, ...]
    ) -> str:
        if kind == "object":
            return self.object(schema, depth, open_refs)
        if kind == "array":
            return self.array(schema, depth, open_refs)
        return kind

    def array(self, schema: dict[str, JsonValue], depth: int, open_refs: tuple[str, ...]) -> str:
        prefix = schema.get("prefixItems")
        if isinstance(prefix, list) and prefix:
            members = [self.member(item, depth, open_refs) for item in prefix]
            if schema.get("items") is not False:
                members.append(f"...{self.member(schema.get('items', True), depth, open_refs)}[]")
            return f"[{', '.join(members)}]"
        item = self.member(schema.get("items", True), depth, open_refs)
        return f"({item})[]" if " " in item and not item.startswith(("{", "(")) else f"{item}[]"

    def object(self, schema: dict[str, JsonValue], depth: int, open_refs: tuple[str, ...]) -> str:
        properties = schema.get("properties")
        extra = schema.get("additionalProperties", True)
        if not isinstance(properties, dict) or not properties:
            if isinstance(extra, dict):
                return f"{{ [key: string]: {self.member(extra, depth, open_refs)} }}"
            return "{}" if extra is False else "object"
        required = schema.get("required")
        needed = set(required) if isinstance(required, list) else set()
        pad = _INDENT * (depth + 1)
        lines = ["{"]
        for name, child in properties.items():
            mark = "" if name in needed else "?"
            key = name if name.isidentifier() else json.dumps(name, ensure_ascii=False)
            line = f"{pad}{key}{mark}: {self.node(child, depth + 1, open_refs)}"
            notes = self.notes(child)
            lines.append(f"{line}  // {notes}" if notes else line)
        if isinstance(extra, dict):
            lines.append(f"{pad}[key: string]: {self.member(extra, depth + 1, open_refs)}")
        lines.append(f"{_INDENT * depth}}}")
        return "\n".join(lines)

    def notes(self, schema: JsonValue) -> str:
        """Return the constraints and description of ``schema`` as one comment's text."""
        if not isinstance(schema, dict):
            return ""
        said: list[str] = []
        bounds = _bounds(schema)
        if bounds:
            said.append(bounds)
        for key in _SAID:
            if key in schema:
                value = schema[key]
                if key == "uniqueItems" and value is not True:
                    continue
                said.append(key if value is True else f"{key} {_literal(value)}")
        description = schema.get("description")
        if isinstance(description, str) and description.strip():
            said.append(" ".join(description.split()))
        return "; ".join(said)


def _types(schema: dict[str, JsonValue]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list) and declared:
        return [str(kind) for kind in declared]
    if "properties" in schema or "additionalProperties" in schema:
        return ["object"]
    if "items" in schema or "prefixItems" in schema:
        return ["array"]
    return ["any"]


def _declares_type(schema: dict[str, JsonValue]) -> bool:
    return any(key in schema for key in ("type", "properties", "items"))


def _bounds(schema: dict[str, JsonValue]) -> str:
    low = schema.get("minimum")
    low_open = schema.get("exclusiveMinimum")
    high = schema.get("maximum")
    high_open = schema.get("exclusiveMaximum")
    left = ""
    if isinstance(low_open, int | float) and not isinstance(low_open, bool):
        left = f"{_literal(low_open)} < "
    elif isinstance(low, int | float) and not isinstance(low, bool):
        left = f"{_literal(low)} <= "
    right = ""
    if isinstance(high_open, int | float) and not isinstance(high_open, bool):
        right = f" < {_literal(high_open)}"
    elif isinstance(high, int | float) and not isinstance(high, bool):
        right = f" <= {_literal(high)}"
    return f"{left}x{right}" if left or right else ""


def _literal(value: JsonValue) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))
