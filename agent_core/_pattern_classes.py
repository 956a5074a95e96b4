r"""ECMA-262 character-class escapes spelled out, for regex engines that read them otherwise.

ECMA-262 reads ``\d``, ``\w`` and ``\b`` as ASCII; a provider enforcing a strict schema with
another engine may read them as Unicode and produce a value agentshape rejects.
:func:`explicit_classes` respells ``\d \D \w \W \s \S`` as explicit classes where that is exact,
and lists what it could not respell so the compile report can say so.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["ClassRewrite", "explicit_classes"]

# ECMA-262 WhiteSpace and LineTerminator, as literal characters (every engine reads them alike).
_SPACES = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"

_INSIDE = {"d": "0-9", "w": "A-Za-z0-9_", "s": _SPACES}
"""What each positive escape means, as the body of a character class."""


class ClassRewrite(NamedTuple):
    r"""A pattern with its class escapes spelled out.

    Attributes:
        pattern: The respelled pattern (the same language under ECMA-262).
        respelled: The escapes replaced, such as ``("\d", "\w")``, each once, in order.
        kept: The escapes left as written because no exact class exists (``\b``...).
    """

    pattern: str
    respelled: tuple[str, ...]
    kept: tuple[str, ...]


def _escape_length(pattern: str, index: int) -> int:
    """Return the length of the escape starting with the backslash at ``index``."""
    following = pattern[index + 1 : index + 2]
    if following == "u" and pattern[index + 2 : index + 3] == "{":
        end = pattern.find("}", index)
        return end - index + 1 if end != -1 else 2
    if following in ("u", "x", "c"):
        width = {"u": 4, "x": 2, "c": 1}[following]
        return 2 + width
    if following in ("p", "P") and pattern[index + 2 : index + 3] == "{":
        end = pattern.find("}", index)
        return end - index + 1 if end != -1 else 2
    return 2


def _in_range(pattern: str, index: int, length: int, out: list[str]) -> bool:
    """Whether the class escape at ``index`` touches a ``-`` that could make a range."""
    after = pattern[index + length : index + length + 2]
    before = out[-1] if out else ""
    return (after.startswith("-") and after != "-]") or (
        before.endswith("-") and before not in ("[-", "[^-") and len(before) == 1
    )


def explicit_classes(pattern: str) -> ClassRewrite:
    r"""Return ``pattern`` with ``\d \D \w \W \s \S`` spelled as explicit classes.

    Args:
        pattern: An ECMA-262 pattern (no ``u`` flag).

    Returns:
        The respelled pattern, the escapes replaced and the escapes kept as written. When the
        pattern has none of these escapes it comes back unchanged with both lists empty.
    """
    out: list[str] = []
    respelled: list[str] = []
    kept: list[str] = []
    in_class = False
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            length = _escape_length(pattern, index)
            escape = pattern[index : index + length]
            letter = escape[1]
            if length == 2 and letter.lower() in _INSIDE:
                body = _INSIDE[letter.lower()]
                if not in_class:
                    out.append(f"[{body}]" if letter.islower() else f"[^{body}]")
                    respelled.append(escape)
                elif letter.islower() and not _in_range(pattern, index, length, out):
                    out.append(body)
                    respelled.append(escape)
                else:  # a negated escape, or one beside a "-", has no exact class body
                    out.append(escape)
                    kept.append(escape)
            else:
                if length == 2 and letter in "bB" and not in_class:
                    kept.append(escape)
                out.append(escape)
            index += length
            continue
        if in_class:
            in_class = char != "]"  # ECMA-262: "]" always closes ("[]" matches nothing)
        elif char == "[":
            in_class = True
            if pattern[index + 1 : index + 2] == "^":
                out.append("[^")
                index += 2
                continue
        out.append(char)
        index += 1
    return ClassRewrite("".join(out), tuple(dict.fromkeys(respelled)), tuple(dict.fromkeys(kept)))
