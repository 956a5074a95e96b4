"""Tool names providers accept (``^[a-zA-Z0-9_-]{1,64}$``): one spelling, one map.

:func:`provider_tool_name` spells one name (``fs:read`` becomes ``fs_read``); :class:`ToolNameMap`
names a whole tool set without collisions and maps a provider's names back. It is the one map:
the provider adapters use it on the wire, ``agentshape show`` to say what a tool is sent as.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator

from agent_contracts._errors import ConfigError

__all__ = ["ToolNameMap", "provider_tool_name"]

_VALID_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_MAX_NAME = 64


def provider_tool_name(name: str) -> str:
    """Spell a tool name the way providers accept it: ``^[a-zA-Z0-9_-]{1,64}$``.

    A valid name is returned unchanged; otherwise every other character becomes ``_`` (so
    ``fs:read`` becomes ``fs_read``), and a name longer than 64 characters is cut and given a
    hash suffix. Two names can still collide (``fs:read`` and ``fs_read``): use
    :class:`ToolNameMap` for a whole tool set.

    Args:
        name: The tool's own name.

    Returns:
        The provider-safe name.

    Raises:
        ConfigError: When ``name`` is empty.
    """
    if not name:
        raise ConfigError("a tool name must not be empty")
    if _VALID_NAME.match(name):
        return name
    safe = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    return safe if len(safe) <= _MAX_NAME else _hashed(safe, name)


class ToolNameMap:
    """Provider-safe names for a set of tools: collision-free, reversible, order-independent.

    Names already valid keep themselves; each other name, taken in sorted order, gets
    :func:`provider_tool_name`, or that spelling with the first free numeric suffix (``_2``,
    ``_3``...) when it is taken. So ``fs:read`` beside ``fs_read`` travels as ``fs_read_2``.

    Example:
        >>> names = ToolNameMap(["fs:read", "fs_read", "submit_result"])
        >>> names.provider_name("fs:read")
        'fs_read_2'
        >>> names.original_name("fs_read_2")
        'fs:read'

    Args:
        names: The tools' own names (duplicates count once).

    Raises:
        ConfigError: A name is empty.
    """

    def __init__(self, names: Iterable[str]) -> None:
        unique = list(dict.fromkeys(names))
        self._forward: dict[str, str] = {}
        self._backward: dict[str, str] = {}
        for name in unique:
            if name and _VALID_NAME.match(name):
                self._claim(name, name)
        for name in sorted(name for name in unique if name not in self._forward):
            base = provider_tool_name(name)
            candidate, number = base, 1
            while candidate in self._backward:
                number += 1
                suffix = f"_{number}"
                candidate = base[: _MAX_NAME - len(suffix)] + suffix
            self._claim(name, candidate)
        self._order = unique

    def _claim(self, name: str, provider_name: str) -> None:
        self._forward[name] = provider_name
        self._backward[provider_name] = name

    def provider_name(self, name: str) -> str:
        """Return the provider-safe name of a tool in the map.

        Raises:
            ConfigError: When ``name`` is not in the map.
        """
        try:
            return self._forward[name]
        except KeyError:
            raise ConfigError(f"tool {name!r} is not in the tool name map") from None

    def original_name(self, provider_name: str) -> str | None:
        """Return the tool a provider-side name stands for, or ``None`` for an unknown name."""
        return self._backward.get(provider_name)

    def to_wire(self, name: str) -> str:
        """Return the name to send for a tool (a name not in the map is sent as it is)."""
        return self._forward.get(name, name)

    def from_wire(self, alias: str) -> str:
        """Return the tool a provider's name stands for (an unknown name is kept as it is)."""
        return self._backward.get(alias, alias)

    def items(self) -> list[tuple[str, str]]:
        """Return ``(name, provider_name)`` pairs in the order the names were given."""
        return [(name, self._forward[name]) for name in self._order]

    def __contains__(self, name: object) -> bool:
        return name in self._forward

    def __iter__(self) -> Iterator[str]:
        return iter(self._order)

    def __len__(self) -> int:
        return len(self._order)


def _hashed(safe: str, original: str) -> str:
    digest = hashlib.sha256(original.encode("utf-8")).hexdigest()[:8]
    return f"{safe[: _MAX_NAME - 9]}_{digest}"
