"""How the strict compiler handles each JSON type: objects, arrays, strings and numbers.

:class:`TypedNodes` is a part of :class:`~agent_core.strict_mode.StrictCompiler`, kept in its own
module; it uses the compiler's rules, notes and node walk.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from pydantic import JsonValue

from agent_core.pattern_classes import explicit_classes
from agent_core.schema_walk import (
    child_path,
)
from agent_core.strict_plans import (
    ArrayPlan,
    JsonDict,
    NoteAction,
    ObjectPlan,
    Plan,
    StrictRules,
)
from agent_core.strict_values import (
    _Described,
    _nullable,
)

__all__ = ["TypedNodes"]

_COMPLEX_PATTERN = re.compile(r"\(\?<?[=!]|\(\?>|\\[1-9]|\\k<")


class TypedNodes:
    """The per-type steps of the strict compiler (mixed into ``StrictCompiler``)."""

    rules: StrictRules
    narrowing: bool
    draft: int

    if TYPE_CHECKING:

        def note(self, path: str, keyword: str, action: NoteAction, detail: str) -> None:
            """Record a note (``StrictCompiler.note``)."""

        def _block(self, path: str, keyword: str, detail: str) -> tuple[JsonDict, Plan]: ...

        def _node(self, schema: JsonValue, path: str) -> tuple[JsonDict, Plan]: ...

        def _move(
            self, schema: JsonDict, path: str, keys: tuple[str, ...], into: _Described
        ) -> None: ...

        def _produces_null(
            self, compiled: JsonValue, unsure: bool, seen: frozenset[str] = ...
        ) -> bool: ...

        def accepts_null(self, schema: JsonValue, seen: frozenset[str] = ...) -> bool:
            """Whether a schema accepts null (``StrictCompiler.accepts_null``)."""

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
