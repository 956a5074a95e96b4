"""Non-object roots wrapped as an object for tools, and the neutral dialect's parameters."""

from __future__ import annotations

import copy

from pydantic import JsonValue

from agent_core.dialect_limits import (
    JsonDict,
)
from agent_core.schema_documents import schema_draft
from agent_core.schema_walk import (
    subschemas,
    without_own_id,
)

__all__ = ["WRAPPER_PROPERTY"]


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
