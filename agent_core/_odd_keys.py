r"""Lone UTF-16 surrogates where Pydantic refuses them: object keys and JSON text.

A key such as ``"\ud83d"`` is a valid JSON key that Pydantic cannot hold. The model classes of
:mod:`agent_core._schema_model` take these slow paths only when Pydantic refuses: build from a
copy with stand-in keys and put the keys back, dump in Python, read such JSON with ``json``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import cast

from pydantic import BaseModel, JsonValue, RootModel

from agent_core._surrogates import Masked, mask_surrogates

__all__ = ["NOT_READ", "build_with_odd_keys", "dumped", "surrogate_json"]


NOT_READ = object()
"""What :func:`surrogate_json` returns for text it does not read."""
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def surrogate_json(json_data: str | bytes | bytearray) -> object:
    """Return the value of JSON text that holds a surrogate escape, or ``NOT_READ``."""
    raw = json_data.encode("utf-8", "surrogatepass") if isinstance(json_data, str) else json_data
    if _SURROGATE_ESCAPE.search(raw) is None:
        return NOT_READ
    try:
        return json.loads(json_data, parse_constant=_refuse_constant)
    except ValueError:
        return NOT_READ


def build_with_odd_keys(data: object, handler: Callable[[object], object]) -> object:
    r"""Build a model from data whose object keys hold lone surrogates (``"\ud83d"``).

    Pydantic refuses such a key, a valid JSON key: the model is built from a copy whose keys
    carry stand-ins, and the keys are then put back in the models and plain values it holds.

    Raises:
        pydantic.ValidationError: As Pydantic raises it, when masking the keys does not help.
    """
    masked = mask_surrogates(cast(JsonValue, data), keys_only=True)
    if masked is None:
        return handler(data)
    return _restore_keys(handler(masked.value), masked)


def _restore_keys(node: object, masked: Masked) -> object:
    """Return ``node`` (a model or a JSON value) with the masked keys put back, in place."""
    if isinstance(node, BaseModel):
        extra = node.__pydantic_extra__
        if extra:
            restored = {masked.key(key): _restore_keys(item, masked) for key, item in extra.items()}
            extra.clear()
            extra.update(restored)
            names = {masked.key(name) for name in node.__pydantic_fields_set__}
            node.__pydantic_fields_set__.clear()
            node.__pydantic_fields_set__.update(names)
        for name in type(node).model_fields:
            if name in node.__dict__:
                node.__dict__[name] = _restore_keys(node.__dict__[name], masked)
        return node
    if isinstance(node, dict):
        return {
            (masked.key(key) if isinstance(key, str) else key): _restore_keys(item, masked)
            for key, item in node.items()
        }
    if isinstance(node, list):
        return [_restore_keys(item, masked) for item in node]
    return node


def dumped(node: object) -> object:
    """Return a model tree as JSON data, in Python (for keys Pydantic's serializer refuses)."""
    if isinstance(node, RootModel):
        return dumped(node.root)
    if isinstance(node, BaseModel):
        out: dict[str, object] = {}
        for name, info in type(node).model_fields.items():
            if name in node.model_fields_set:
                out[info.alias or name] = dumped(getattr(node, name))
        for key, item in (node.__pydantic_extra__ or {}).items():
            out[key] = dumped(item)
        return out
    if isinstance(node, dict):
        return {key: dumped(item) for key, item in node.items()}
    if isinstance(node, list | tuple):
        return [dumped(item) for item in node]
    return node
