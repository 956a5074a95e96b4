"""The walk a strict-mode dialect compiler is built on, one schema node at a time.

:class:`SchemaTransformer` visits a designer's schema from the root: it follows same-document
``$ref`` into named ``$defs`` (each target compiled once, so recursion terminates), merges
``allOf`` into one node, bounds the work, and records notes. What one plain node becomes is the
subclass's :meth:`SchemaTransformer._plain`, as in pydantic-ai's ``JsonSchemaTransformer``.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod

from pydantic import JsonValue

from agent_core._schema_documents import custom_meta_schema, schema_draft
from agent_core._schema_merge import ANNOTATIONS, CONTAINERS, flatten, merge_schemas
from agent_core._schema_walk import child_path, fragment_keys, resolve_local_ref
from agent_core._strict_plans import CompileNote, JsonDict, NoteAction, Plan, RefPlan

__all__ = ["SchemaTransformer"]

# allOf/anyOf merging can multiply a schema; past this many nodes the walk gives up.
_NODE_BUDGET = 20_000


class _TooComplex(Exception):
    """Compiling would take too long: ``allOf``/``anyOf`` merging multiplies the schema."""


def _pointer_path(pointer: str) -> str:
    """The JSON path of a same-document JSON pointer: ``/$defs/a`` gives ``$.$defs.a``."""
    path = "$"
    for part in fragment_keys(pointer):
        path = child_path(path, part)
    return path


class SchemaTransformer(ABC):
    """Walks one schema document, turning each node into what a dialect sends, with notes.

    Attributes:
        root: The designer's schema.
        draft: The draft it is read under.
        notes: Everything not sent as written, in document order, blockers included.
        defs: The compiled ``$defs``, by name.
        def_plans: The map-back plan of each ``$defs`` entry.
    """

    def __init__(self, root: dict[str, JsonValue] | bool) -> None:
        """Prepare to walk ``root``."""
        self.root = root
        self.draft = schema_draft(root)
        self.notes: list[CompileNote] = []
        self.defs: dict[str, JsonDict] = {}
        self.def_plans: dict[str, Plan] = {}
        self._def_names: dict[str, str] = {}
        self._inlining: list[str] = []
        self._budget = _NODE_BUDGET
        self._noted: set[tuple[str, str, str, str]] = set()

    @abstractmethod
    def _plain(self, schema: JsonDict, path: str) -> tuple[JsonDict, Plan]:
        """Compile a schema object with no ``$ref`` and no ``allOf``; the dialect's own rules."""

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
