"""Python names for JSON keys: usable field names, escaped keys and class names."""

from __future__ import annotations

import keyword
import re
import unicodedata

from agent_core.schema_classes import (
    SchemaModel,
    SchemaRootModel,
)

_RESERVED = frozenset(dir(SchemaModel)) | frozenset(dir(SchemaRootModel)) | {"Config"}


_NON_WORD = re.compile(r"\W")


_ALPHANUMERIC_RUNS = re.compile(r"[0-9A-Za-z]+")


def _usable(key: str) -> bool:
    """Whether a property name can be a field name as it is."""
    return (
        key.isidentifier()
        and not keyword.iskeyword(key)
        and not key.startswith("_")
        and key not in _RESERVED
        and unicodedata.normalize("NFKC", key) == key
    )


def _field_names(keys: list[str]) -> dict[str, str]:
    """Map each property name to a unique, safe field name (itself whenever possible)."""
    names = {key: key for key in keys if _usable(key)}
    taken = set(names.values())
    for key in keys:
        if key in names:
            continue
        base = _NON_WORD.sub("_", unicodedata.normalize("NFKC", key))
        if not base or base[0].isdigit() or base[0] == "_":
            base = f"f_{base}"
        candidate = base
        while not _usable(candidate) or candidate in taken:
            candidate += "_"
        names[key] = candidate
        taken.add(candidate)
    return names


def _pascal(text: str) -> str:
    """Return ``text`` as a PascalCase identifier fragment (``line-items`` -> ``LineItems``)."""
    words = _ALPHANUMERIC_RUNS.findall(text)
    joined = "".join(word[:1].upper() + word[1:] for word in words)
    return joined if joined and not joined[0].isdigit() else f"N{joined}"


def _escape(key: str) -> str:
    """Escape a key for use in a JSON pointer."""
    return key.replace("~", "~0").replace("/", "~1")
