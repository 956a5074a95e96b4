"""One policy for every schema-derived cache: bounded, least recently used, thread-safe.

Each cache is a :class:`SchemaCache` registered by name with :func:`schema_cache`;
:func:`clear_caches` empties all of them. An LRU cache smaller than the set of schemas used in
turn misses every time, so whoever loads a known number of schemas (``load_fleet``) calls
:func:`reserve_caches` first.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["SchemaCache", "cache_sizes", "clear_caches", "reserve_caches", "schema_cache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SchemaCache(Generic[K, V]):
    """A bounded, thread-safe LRU cache of values derived from schemas.

    Args:
        name: The cache's name in :func:`cache_sizes`.
        size: Most entries kept (at least 1).
    """

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.size = max(1, size)
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """Return the value kept for ``key`` (marking it recently used), or ``None``."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` for ``key``, dropping the least recently used entries past ``size``."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)


_registry: dict[str, SchemaCache[object, object]] = {}
_registry_lock = threading.Lock()


def schema_cache(name: str, size: int) -> SchemaCache[K, V]:
    """Return a new cache registered under ``name`` (so :func:`clear_caches` empties it).

    Args:
        name: A unique name, such as ``agent_core.models``.
        size: Most entries kept.
    """
    cache: SchemaCache[K, V] = SchemaCache(name, size)
    with _registry_lock:
        _registry[name] = cache  # type: ignore[assignment]
    return cache


def reserve_caches(entries: int) -> None:
    """Let every registered cache hold at least ``entries`` entries (sizes never shrink).

    Args:
        entries: How many schemas are about to be used in turn (a fleet's agents).
    """
    with _registry_lock:
        caches = list(_registry.values())
    for cache in caches:
        with cache._lock:
            cache.size = max(cache.size, entries)


def clear_caches() -> None:
    """Empty every registered schema-derived cache; raises nothing.

    Later calls build afresh; what was already handed out keeps working.
    """
    with _registry_lock:
        caches = list(_registry.values())
    for cache in caches:
        cache.clear()


def cache_sizes() -> dict[str, int]:
    """Return how many entries each registered cache holds, by name."""
    with _registry_lock:
        caches = list(_registry.values())
    return {cache.name: len(cache) for cache in caches}
