"""Arrays the PostgreSQL store sends as one parameter, and their binary encoding.

A run's end sends its rows to PostgreSQL as a few arrays, whatever their number, so the
statement's text is the same for every run (prepared once). psycopg's own list adaptation
inspects every element of every list to choose the array's type; these lists say their type
instead (:class:`TextArray`, :class:`BigintArray`), and the PostgreSQL store encodes them in
PostgreSQL's binary array format in one pass (``array_send``: a header, the one dimension, then
each element's length and bytes).

Nothing here imports psycopg: the SQL both stores share builds these lists.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

__all__ = ["BIGINT", "BIGINT_ARRAY", "TEXT", "TEXT_ARRAY", "BigintArray", "TextArray", "encode"]

TEXT = 25
TEXT_ARRAY = 1009
BIGINT = 20
BIGINT_ARRAY = 1016
"""PostgreSQL's type oids (fixed in its catalog, ``pg_type``)."""

_HEADER = struct.Struct(">iiiii")  # dimensions, has nulls, element type, length, lower bound
_EMPTY = struct.Struct(">iii")  # no dimension: an empty array
_LENGTH = struct.Struct(">i")
_NULL = _LENGTH.pack(-1)
_BIGINT = struct.Struct(">iq")  # an element's length (8) and the number


class TextArray(list[str | None]):
    """Strings PostgreSQL gets as one ``TEXT[]`` parameter (``None`` is ``NULL``)."""


class BigintArray(list[int]):
    """Integers PostgreSQL gets as one ``BIGINT[]`` parameter."""


def encode(items: Sequence[str | None] | Sequence[int], element: int, encoding: str) -> bytes:
    """Return ``items`` in PostgreSQL's binary format of a one-dimensional array.

    Args:
        items: The elements, all strings (or ``None``) for ``TEXT``, all integers for ``BIGINT``.
        element: The elements' type oid, :data:`TEXT` or :data:`BIGINT`.
        encoding: The connection's encoding (Python's name), for strings.

    Returns:
        The parameter's bytes.

    Raises:
        TypeError: An element is not of ``element``'s type.
        OverflowError: An integer does not fit in a ``BIGINT``.
    """
    if not items:
        return _EMPTY.pack(0, 0, element)
    if element == BIGINT:
        numbers = _BIGINT.pack
        try:
            parts = [numbers(8, number) for number in items if type(number) is int]
        except struct.error as error:
            raise OverflowError(f"a BIGINT[] array's element does not fit: {error}") from None
        if len(parts) != len(items):
            raise TypeError("a BIGINT[] array's elements must be integers")
        return _HEADER.pack(1, 0, element, len(items), 1) + b"".join(parts)
    pieces: list[bytes] = []
    add = pieces.append
    length = _LENGTH.pack
    nulls = 0
    for text in items:
        if text is None:
            add(_NULL)
            nulls = 1
        elif type(text) is str:
            data = text.encode(encoding)
            add(length(len(data)))
            add(data)
        else:
            raise TypeError(f"a TEXT[] array's elements must be strings, not {type(text).__name__}")
    return _HEADER.pack(1, nulls, element, len(items), 1) + b"".join(pieces)
