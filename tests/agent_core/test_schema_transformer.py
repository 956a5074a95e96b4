"""The walk under the strict compiler: ``$ref`` into ``$defs``, ``allOf`` merged, notes."""

from __future__ import annotations

from pydantic import JsonValue

from agent_core._schema_transformer import SchemaTransformer
from agent_core._strict_plans import JsonDict, Plan, RefPlan


class _Copy(SchemaTransformer):
    """A transformer whose plain nodes are sent as written, their properties walked."""

    def _plain(self, schema: JsonDict, path: str) -> tuple[JsonDict, Plan]:
        out = dict(schema)
        properties = schema.get("properties")
        if isinstance(properties, dict):
            out["properties"] = {
                name: self._node(sub, f"{path}.properties.{name}")[0]
                for name, sub in properties.items()
            }
        return out, None


def _walk(schema: dict[str, JsonValue]) -> tuple[_Copy, tuple[JsonDict, Plan]]:
    walker = _Copy(schema)
    return walker, walker.compile_root(inline_ref=False)


def test_a_ref_becomes_a_named_def_compiled_once_even_when_recursive() -> None:
    node: dict[str, JsonValue] = {
        "type": "object",
        "properties": {"child": {"$ref": "#/definitions/node"}},
    }
    schema: dict[str, JsonValue] = {"$ref": "#/definitions/node", "definitions": {"node": node}}
    walker, result = _walk(schema)
    assert result == ({"$ref": "#/$defs/node"}, RefPlan("node"))
    assert walker.defs == {
        "node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}
    }
    assert walker.notes == []


def test_all_of_is_merged_into_one_node_and_noted() -> None:
    walker, result = _walk({"allOf": [{"type": "string"}, {"maxLength": 3}]})
    assert result == ({"type": "string", "maxLength": 3}, None)
    assert [str(note) for note in walker.notes] == ["$: allOf changed (merged into one schema)"]


def test_what_no_dialect_can_send_blocks_with_its_path() -> None:
    walker, _ = _walk({"type": "object", "properties": {"any": True, "ref": {"$ref": "#/nowhere"}}})
    assert [str(note) for note in walker.notes] == [
        "$.properties.any: type blocks strict (the schema accepts any value)",
        "$.properties.ref: $ref blocks strict ('#/nowhere' does not resolve within the schema)",
    ]
