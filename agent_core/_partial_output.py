"""Partial outputs: what a JSON value being written already says, and never more.

:class:`PartialJson` reads the value a prefix of JSON text already holds: finished members and
strings, but no number, literal or key until it is finished, so each value read is a prefix of
the final one. The text is re-read only when it has grown by an eighth (or at the end).
:func:`partial_model` gives a Pydantic contract's partial class: every field optional, members
that still break it dropped rather than failing.
"""

from __future__ import annotations

import functools
import types
import typing
from collections.abc import Sequence
from typing import Annotated, Optional, Union, get_args, get_origin

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError, create_model

__all__ = ["PartialJson", "partial_model", "partial_value"]

_NUMBER_TAIL = frozenset("0123456789.eE+-")
_MIN_STEP = 16
"""Fewest new characters before the text is read again (an eighth of it when that is more)."""
_FENCE = "```"
_LIST: typing.Any = list
_OPTIONAL: typing.Any = Optional
_DICT: typing.Any = dict


class PartialJson:
    """The JSON value a text being written holds so far.

    Args:
        text_reply: The text is a reply that may open with a Markdown code fence (prompted
            mode) rather than JSON alone; text before the fence's JSON is skipped.
    """

    def __init__(self, *, text_reply: bool = False) -> None:
        self._pieces: list[str] = []
        self._length = 0
        self._read_at = 0
        self._text_reply = text_reply
        self.value: JsonValue = None
        """The last value read (``None`` until the text holds one)."""
        self.seen = False
        """Whether any value has been read yet."""

    def feed(self, piece: str, *, final: bool = False) -> bool:
        """Add a piece of the text; return whether the value read from it changed.

        Args:
            piece: The next piece of the text.
            final: This is the last piece.

        Returns:
            ``True`` when :attr:`value` is new.
        """
        if piece:
            self._pieces.append(piece)
            self._length += len(piece)
        if not final and self._length - self._read_at < max(_MIN_STEP, self._read_at // 8):
            return False
        self._read_at = self._length
        text = "".join(self._pieces)
        self._pieces = [text]
        found, value = _read(text, text_reply=self._text_reply, final=final)
        if not found or (self.seen and value == self.value):
            return False
        self.value, self.seen = value, True
        return True


def _read(text: str, *, text_reply: bool, final: bool) -> tuple[bool, JsonValue]:
    """Return whether ``text`` holds a value so far, and the value."""
    body = _json_part(text) if text_reply else text.lstrip()
    if body is None or not body or body[0] not in '{["':
        return False, None
    if not final:
        cut = len(body)
        while cut and body[cut - 1] in _NUMBER_TAIL:
            cut -= 1
        body = body[:cut]  # a number (or a string's digits) that may go on is left out
    try:
        value: JsonValue = pydantic_core.from_json(body, allow_partial="trailing-strings")
    except ValueError:
        return False, None
    return True, value


def _json_part(text: str) -> str | None:
    """Return the JSON a prompted reply is writing: after an opening fence, else the text."""
    stripped = text.lstrip()
    if stripped[:1] in ("{", "["):
        return stripped
    start = text.find(_FENCE)
    if start < 0:
        return None
    line_end = text.find("\n", start)
    if line_end < 0:
        return None
    body = text[line_end + 1 :]
    end = body.find(_FENCE)
    return (body if end < 0 else body[:end]).lstrip()


def partial_value(model: type[BaseModel], value: JsonValue) -> BaseModel | None:
    """Return ``value`` as an instance of ``model``'s partial class, or ``None``.

    Members the partial class refuses (a half-written enum string, a string too short so far)
    are left out, the deepest at fault first, until it takes the rest.

    Args:
        model: The contract's Pydantic class.
        value: A partial JSON value (from :class:`PartialJson`).

    Returns:
        The partial instance, or ``None`` when nothing of ``value`` fits.
    """
    partial = partial_model(model)
    data = value
    for _ in range(8):
        try:
            return partial.model_validate(data)
        except ValidationError as exc:
            pruned = _without(data, [error["loc"] for error in exc.errors()])
            if pruned == data:
                return None
            data = pruned
    return None


def _without(value: JsonValue, locations: list[tuple[int | str, ...]]) -> JsonValue:
    """Return ``value`` without the members at ``locations`` (a copy; ``value`` is kept)."""
    for location in sorted(locations, key=len, reverse=True):
        value, whole = _drop(value, location)
        if whole:
            return None
    return value


def _drop(value: JsonValue, location: tuple[int | str, ...]) -> tuple[JsonValue, bool]:
    """Return ``value`` without the member at ``location``, or ``(value, True)`` to drop it all."""
    if not location:
        return value, True
    head, rest = location[0], location[1:]
    if isinstance(value, dict) and isinstance(head, str) and head in value:
        copy = dict(value)
        inner, whole = _drop(copy[head], rest)
        if whole:
            del copy[head]
        else:
            copy[head] = inner
        return copy, False
    if isinstance(value, list) and isinstance(head, int) and 0 <= head < len(value):
        items = list(value)
        inner, whole = _drop(items[head], rest)
        if whole:
            del items[head:]  # the items after it are newer still, and order must hold
        else:
            items[head] = inner
        return items, False
    return value, True


@functools.cache
def partial_model(model: type[BaseModel]) -> type[BaseModel]:
    """Return the partial class of a Pydantic class: the same fields, all optional.

    Nested Pydantic classes (in lists, dicts, unions, ``Optional``) are partial too; field
    constraints, validators and defaults are left out (the final output is checked whole).
    The class is made once per ``model``.

    Args:
        model: The contract's Pydantic class.

    Returns:
        A class named ``Partial<Name>`` whose fields all default to ``None``.
    """
    fields: dict[str, typing.Any] = {}
    for name, info in model.model_fields.items():
        annotation = _partial_type(info.annotation)
        optional = _OPTIONAL[annotation]
        fields[name] = (optional, Field(default=None, alias=info.alias))
    config = ConfigDict(extra="ignore", populate_by_name=True, defer_build=False)
    partial: type[BaseModel] = create_model(
        f"Partial{model.__name__}", __config__=config, __module__=model.__module__, **fields
    )
    return partial


def _partial_type(annotation: typing.Any) -> typing.Any:
    """Return ``annotation`` with every Pydantic class in it replaced by its partial class."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return partial_model(annotation)
    origin = get_origin(annotation)
    if origin is Annotated:
        return _partial_type(get_args(annotation)[0])  # constraints wait for the final check
    if origin in (Union, types.UnionType):
        parts = tuple(_partial_type(arg) for arg in get_args(annotation))
        return Union[parts]  # noqa: UP007 (built from a tuple)
    if origin in (list, set, frozenset, tuple, Sequence):
        args = get_args(annotation)
        if origin is tuple and (len(args) != 2 or args[1] is not Ellipsis):
            return list[typing.Any]  # a fixed tuple's items differ: checked when whole
        return _LIST[_partial_type(args[0])] if args else list[typing.Any]
    if origin is dict:
        args = get_args(annotation)
        return _DICT[str, _partial_type(args[1])] if len(args) == 2 else dict[str, typing.Any]
    return annotation
