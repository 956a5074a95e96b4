"""Looking things up in a schema for the checks: a $ref's target, definition names, keywords."""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import JsonValue

from agent_contracts.suggest import did_you_mean
from agent_core.schema_walk import subschemas


def _ref_at(schema: JsonValue, path: str) -> str:
    for here, node in subschemas(schema):
        if here == path and isinstance(node, dict) and isinstance(node.get("$ref"), str):
            return str(node["$ref"])
    return ""


def _definition_names(root: JsonValue) -> list[str]:
    names: list[str] = []
    if isinstance(root, dict):
        for container in ("$defs", "definitions"):
            defs = root.get(container)
            if isinstance(defs, dict):
                names.extend(defs)
    return names


def _did_you_mean(word: str, candidates: Mapping[str, object] | frozenset[str] | list[str]) -> str:
    # Keyword typos are only warnings and must not fire on a custom keyword: a strict cutoff.
    return did_you_mean(word, candidates, cutoff=0.75)
