"""Merge two JSON Schemas into one that accepts exactly what both accept (``allOf``).

Providers' strict modes do not take ``allOf``, so the dialects merge its branches. The merge is
exact or it fails with a reason; it never guesses. Supported: intersected ``type``, united
``required``, intersected ``enum``, the tighter of two bounds, ``properties`` combined (a property
both sides declare becomes ``allOf`` of the two, merged in turn), ``additionalProperties: false``
on either side honoured by dropping the properties it forbids, ``anyOf`` on both sides
distributed. Annotations keep the first side's value.
"""

from __future__ import annotations

from pydantic import JsonValue

from agent_core._schema_walk import resolve_local_ref

__all__ = ["ANNOTATIONS", "CONTAINERS", "draft4_bounds", "flatten", "merge_schemas"]

JsonDict = dict[str, JsonValue]


ANNOTATIONS = frozenset(
    str.split(
        "title description default examples $comment deprecated readOnly writeOnly "
        "contentMediaType contentEncoding contentSchema discriminator"
    )
)
"""Keywords that describe a value without constraining it."""

CONTAINERS = frozenset(str.split("$defs definitions $schema $id"))
"""Keywords that hold or name schemas without constraining the value."""

_LOWER = frozenset(
    str.split("minimum exclusiveMinimum minLength minItems minProperties minContains")
)
_UPPER = frozenset(
    str.split("maximum exclusiveMaximum maxLength maxItems maxProperties maxContains")
)
_OBJECT = frozenset({"properties", "additionalProperties", "patternProperties"})


def draft4_bounds(schema: JsonDict) -> JsonDict:
    """Return a draft-04 schema with its boolean exclusive bounds in the numeric form.

    ``{"minimum": 5, "exclusiveMinimum": true}`` becomes ``{"exclusiveMinimum": 5}``; a false
    flag is dropped. Merged in that form, two bounds keep their own exclusiveness: a draft-04
    flag merged as it is would apply to whichever ``minimum`` wins.

    Args:
        schema: A schema object read under draft-04.

    Returns:
        A new schema object (the input is not changed).
    """
    out = dict(schema)
    for flag, bound in (("exclusiveMinimum", "minimum"), ("exclusiveMaximum", "maximum")):
        if isinstance(out.get(flag), bool) and out.pop(flag) and bound in out:
            out[flag] = out.pop(bound)
    return out


def merge_schemas(left: JsonDict, right: JsonDict) -> tuple[JsonDict | None, str]:
    """Merge two schemas (neither a ``$ref`` to resolve first) into one accepting both.

    Args:
        left: A schema object; its annotations win.
        right: Another schema object.

    Returns:
        ``(merged, "")``, or ``(None, reason)`` when no exact merge exists.
    """
    out: JsonDict = dict(left)
    for key, theirs in right.items():
        if key in _OBJECT:
            continue
        if key not in out:
            out[key] = theirs
            continue
        ours = out[key]
        if _equal(ours, theirs) or key in ANNOTATIONS or key in CONTAINERS:
            continue
        merged, reason = _merge_keyword(key, ours, theirs)
        if merged is None:
            return None, reason
        out[key] = merged[0]
    objects, reason = _merge_objects(left, right)
    if objects is None:
        return None, reason
    for key in _OBJECT:
        out.pop(key, None)
    out.update(objects)
    allowed = out.get("properties") if out.get("additionalProperties") is False else None
    required = out.get("required")
    if isinstance(allowed, dict) and isinstance(required, list):
        forbidden = [name for name in required if name not in allowed]
        if forbidden:
            return None, f"required {forbidden[0]!r} is forbidden by additionalProperties: false"
    return out, ""


def flatten(
    schema: JsonValue, root: JsonValue, draft: int, depth: int = 0
) -> tuple[JsonDict | None, str, str]:
    """Resolve ``$ref`` and merge ``allOf`` until one plain schema object remains.

    Keywords next to a ``$ref`` count only from draft 2019-09 on; before, only annotations
    are kept.

    Args:
        schema: The schema to flatten.
        root: The document its references resolve in.
        draft: The draft it is read under (4, 6, 7, 2019 or 2020).
        depth: How many references were followed so far.

    Returns:
        ``(flat, "", "")``, or ``(None, keyword, reason)`` when it cannot be done exactly.
    """
    if depth > 32:
        return None, "$ref", "references nest too deeply to merge"
    if schema is True:
        return {}, "", ""
    if not isinstance(schema, dict):
        return None, "allOf", "a branch accepts no value"
    if draft == 4:
        schema = draft4_bounds(schema)
    if "$ref" in schema:
        ref = schema["$ref"]
        resolved = resolve_local_ref(root, ref) if isinstance(ref, str) else None
        if resolved is None:
            return None, "$ref", f"{ref!r} does not resolve within the schema"
        target, keyword, reason = flatten(resolved[0], root, draft, depth + 1)
        if target is None:
            return None, keyword, reason
        rest = {k: v for k, v in schema.items() if k != "$ref" and k not in CONTAINERS}
        if draft <= 7:
            return {**target, **{k: v for k, v in rest.items() if k in ANNOTATIONS}}, "", ""
        merged, reason = merge_schemas(target, rest)
        if merged is None:
            return None, "$ref", f"cannot merge the keywords beside it: {reason}"
        schema = merged
    branches = schema.get("allOf")
    if not isinstance(branches, list):
        return schema, "", ""
    result: JsonDict = {k: v for k, v in schema.items() if k != "allOf"}
    for branch in branches:
        part, keyword, reason = flatten(branch, root, draft, depth + 1)
        if part is None:
            return None, keyword, reason
        combined, reason = merge_schemas(result, part)
        if combined is None:
            return None, "allOf", f"cannot be merged: {reason}"
        result = combined
    if "allOf" in result:
        return flatten(result, root, draft, depth + 1)
    return result, "", ""


def _merge_keyword(
    key: str, ours: JsonValue, theirs: JsonValue
) -> tuple[tuple[JsonValue] | None, str]:
    if key == "type":
        mine = ours if isinstance(ours, list) else [ours]
        other = theirs if isinstance(theirs, list) else [theirs]
        both = [name for name in mine if name in other]
        both += [
            "integer" for a, b in ((mine, other), (other, mine)) if "integer" in a and "number" in b
        ]
        both = list(dict.fromkeys(both))
        if not both:
            return None, "the types do not overlap"
        return (both[0] if len(both) == 1 else both,), ""
    if key == "required" and isinstance(ours, list) and isinstance(theirs, list):
        return ([*ours, *(name for name in theirs if name not in ours)],), ""
    if key == "enum" and isinstance(ours, list) and isinstance(theirs, list):
        common = [value for value in ours if any(_equal(value, other) for other in theirs)]
        return ((common,), "") if common else (None, "the enums share no value")
    if key in _LOWER | _UPPER and _is_number(ours) and _is_number(theirs):
        assert isinstance(ours, int | float) and isinstance(theirs, int | float)
        return (max(ours, theirs) if key in _LOWER else min(ours, theirs),), ""
    if key == "uniqueItems" and isinstance(ours, bool) and isinstance(theirs, bool):
        return (ours or theirs,), ""
    if key == "items" and isinstance(ours, dict | bool) and isinstance(theirs, dict | bool):
        return ({"allOf": [ours, theirs]},), ""
    if key == "allOf" and isinstance(ours, list) and isinstance(theirs, list):
        return ([*ours, *theirs],), ""
    if key == "anyOf" and isinstance(ours, list) and isinstance(theirs, list):
        return ([{"allOf": [mine, other]} for mine in ours for other in theirs],), ""
    return None, f"both set `{key}` differently"


def _merge_objects(left: JsonDict, right: JsonDict) -> tuple[JsonDict | None, str]:
    sides = [side for side in (left, right) if _OBJECT & side.keys()]
    if len(sides) < 2:
        return ({key: value for side in sides for key, value in side.items() if key in _OBJECT}, "")
    if "patternProperties" in left or "patternProperties" in right:
        return None, "patternProperties next to other property keywords"
    raw = [side.get("properties", {}) for side in sides]
    props = [value if isinstance(value, dict) else {} for value in raw]
    extras = [_extra(side) for side in sides]
    if any(isinstance(extra, dict) for extra in extras):
        return None, "a schema-valued additionalProperties"
    allowed: set[str] | None = None
    for index, extra in enumerate(extras):
        if extra is False:
            keys = set(props[index])
            allowed = keys if allowed is None else allowed & keys
    merged: JsonDict = {}
    for name in dict.fromkeys([*props[0], *props[1]]):
        if allowed is not None and name not in allowed:
            continue
        if name in props[0] and name in props[1] and not _equal(props[0][name], props[1][name]):
            merged[name] = {"allOf": [props[0][name], props[1][name]]}
        else:
            merged[name] = props[0][name] if name in props[0] else props[1][name]
    out: JsonDict = {"properties": merged}
    if allowed is not None:
        out["additionalProperties"] = False
    return out, ""


def _extra(side: JsonDict) -> JsonValue:
    value = side.get("additionalProperties", True)
    return True if value == {} else value


def _is_number(value: JsonValue) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _equal(left: JsonValue, right: JsonValue) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(
            _equal(a, b) for a, b in zip(left, right, strict=True)
        )
    if type(left) is not type(right) and not (_is_number(left) and _is_number(right)):
        return False
    return left == right
