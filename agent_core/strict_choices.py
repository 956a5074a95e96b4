"""How the strict compiler handles choices: unions, literals, and whether null is accepted.

:class:`ChoiceNodes` is a part of :class:`~agent_core.strict_mode.StrictCompiler`, kept in its
own module; it uses the compiler's document, definitions and node walk.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import JsonValue

from agent_core.schema_merge import ANNOTATIONS, CONTAINERS, draft4_bounds, merge_schemas
from agent_core.schema_walk import (
    child_path,
    offline_validator,
    resolve_local_ref,
)
from agent_core.strict_plans import (
    JsonDict,
    Plan,
    UnionPlan,
)
from agent_core.strict_values import (
    _Described,
    _finish,
    _json_type,
    _same,
)

__all__ = ["ChoiceNodes"]


class ChoiceNodes:
    """The union and literal steps of the strict compiler (mixed into ``StrictCompiler``)."""

    root: dict[str, JsonValue] | bool
    draft: int
    defs: dict[str, JsonDict]

    if TYPE_CHECKING:

        def _annotations(self, schema: JsonDict, path: str) -> _Described: ...

        def _block(self, path: str, keyword: str, detail: str) -> tuple[JsonDict, Plan]: ...

        def _flatten(self, schema: JsonValue, path: str) -> JsonDict | None: ...

        def _node(self, schema: JsonValue, path: str) -> tuple[JsonDict, Plan]: ...

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
        """Return two branches whose answers may overlap but map back differently, if any.

        An answer is mapped back with the plan of the first compiled branch that accepts it.
        That is exact when branches that can accept the same answer have the same plan, or
        when they cannot (different JSON types, or a required property with disjoint values).
        """
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
        if "const" in schema and schema["const"] is not None and self.draft > 4:
            return False
        for key, combine in (("allOf", all), ("anyOf", any), ("oneOf", any)):
            branches = schema.get(key)
            if isinstance(branches, list) and not combine(
                self.accepts_null(branch, seen) for branch in branches
            ):
                return False
        return True


def _listed(names: JsonValue) -> set[str]:
    return {name for name in names if isinstance(name, str)} if isinstance(names, list) else set()
