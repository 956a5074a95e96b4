r"""Lone UTF-16 surrogates in JSON values: judged as strings, shown escaped.

JSON may spell half a surrogate pair (``"\ud83d"``); the engine works on UTF-8 and fails on it.
:func:`mask_surrogates` replaces each distinct surrogate with a private-use character found
nowhere in the value or schema: one code point that matches the same ``.``, ``\S`` and ranges and
equals nothing the schema names, so the engine's verdict is unchanged. :meth:`Masked.text` turns
stand-ins in a message back into the escape; :func:`escape_surrogates` escapes a text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from pydantic import JsonValue

__all__ = [
    "Masked",
    "escape_surrogates",
    "has_surrogates",
    "mask_surrogates",
]

_SURROGATE = re.compile("[\ud800-\udfff]")
_PRIVATE_USE = range(0xE000, 0xF900)


def has_surrogates(text: str) -> bool:
    """Return whether ``text`` holds a surrogate code point (U+D800 to U+DFFF).

    Args:
        text: Any string.

    Returns:
        True when the string cannot be encoded as UTF-8 because of a surrogate.
    """
    return not text.isascii() and _SURROGATE.search(text) is not None


def escape_surrogates(text: str) -> str:
    r"""Return ``text`` with each surrogate spelled as its escape (``\ud83d``), safe for UTF-8.

    Args:
        text: Any string, such as a message or a log line about a model's output.

    Returns:
        The same text when it has no surrogate; otherwise each one as six ASCII characters.
    """
    if not has_surrogates(text):
        return text
    return _SURROGATE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def _strings(value: JsonValue, *, keys_only: bool = False) -> Iterator[str]:
    """Yield every string in a JSON value: object keys and (unless ``keys_only``) values."""
    stack: list[object] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if not keys_only:
                yield node
        elif isinstance(node, dict):
            for key, item in node.items():
                if isinstance(key, str):
                    yield key
                stack.append(item)
        elif isinstance(node, list | tuple):
            stack.extend(node)


@dataclass(frozen=True)
class Masked:
    """A value with its surrogates replaced by stand-ins, and the way back.

    Attributes:
        value: The value the engine can read.
        back: Each stand-in character and the surrogate it stands for.
    """

    value: JsonValue
    back: dict[str, str]

    def text(self, text: str) -> str:
        r"""Return an engine message or path part with each stand-in spelled ``\ud83d``.

        Both the stand-in itself and ``repr``'s escape of it (``\ue000``) are replaced.
        """
        for stand_in, surrogate in self.back.items():
            shown = f"\\u{ord(surrogate):04x}"
            text = text.replace(stand_in, shown).replace(f"\\u{ord(stand_in):04x}", shown)
        return text

    def key(self, key: str) -> str:
        """Return an object key of the masked value as it is in the original value."""
        for stand_in, surrogate in self.back.items():
            key = key.replace(stand_in, surrogate)
        return key


def mask_surrogates(
    value: JsonValue, avoid: Iterable[str] = (), *, keys_only: bool = False
) -> Masked | None:
    """Return ``value`` with every surrogate replaced by an unused private-use stand-in.

    Args:
        value: A JSON value (keys and strings are searched).
        avoid: Texts whose characters must not be used as stand-ins (the schema's JSON).
        keys_only: Replace surrogates in object keys only; string values are kept.

    Returns:
        The masked value and the way back, or ``None`` when ``value`` has no surrogate (or there
        are more distinct surrogates than free stand-ins, which cannot happen with fewer than
        2,048 distinct surrogates).
    """
    strings = list(_strings(value, keys_only=keys_only))
    found = sorted({char for text in strings if has_surrogates(text) for char in _surrogates(text)})
    if not found:
        return None
    used = {char for text in [*strings, *avoid] for char in text if ord(char) in _PRIVATE_USE}
    free = (chr(point) for point in _PRIVATE_USE if chr(point) not in used)
    forward: dict[str, str] = {}
    for surrogate in found:
        stand_in = next(free, None)
        if stand_in is None:
            return None
        forward[surrogate] = stand_in
    table = str.maketrans(forward)
    return Masked(_replace(value, table, keys_only), {v: k for k, v in forward.items()})


def _surrogates(text: str) -> list[str]:
    return _SURROGATE.findall(text)


def _replace(value: JsonValue, table: dict[int, str], keys_only: bool = False) -> JsonValue:
    """Return a copy of ``value`` with ``table`` applied to its keys (and strings)."""
    if isinstance(value, str):
        return value.translate(table) if has_surrogates(value) and not keys_only else value
    if isinstance(value, dict):
        return {
            (key.translate(table) if isinstance(key, str) else key): _replace(
                item, table, keys_only
            )
            for key, item in value.items()
        }
    if isinstance(value, list | tuple):
        return [_replace(item, table, keys_only) for item in value]
    return value
