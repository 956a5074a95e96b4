"""The PostgreSQL store's adaptation: the arrays of :mod:`~agent_coordinator._store.arrays`, binary.

:func:`adapters` is psycopg's default adaptation plus a binary dumper for each array type of
:mod:`~agent_coordinator._store.arrays`; the store's connections are made with it
(``context=``), so a query's ``%b`` of such a list is one pass over its elements.
"""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.adapt import AdaptersMap, Dumper
from psycopg.pq import Format

from agent_coordinator._store.arrays import (
    BIGINT,
    BIGINT_ARRAY,
    TEXT,
    TEXT_ARRAY,
    BigintArray,
    TextArray,
    encode,
)

__all__ = ["adapters"]


class _ArrayDumper(Dumper):
    format = Format.BINARY
    element = 0

    def __init__(self, cls: type, context: Any = None) -> None:
        super().__init__(cls, context)
        found = self.connection.info.encoding if self.connection is not None else "utf-8"
        # As psycopg's own string dumpers: a SQL_ASCII database gets UTF-8.
        self._encoding = "utf-8" if found == "ascii" else found

    def dump(self, obj: Any) -> bytes:
        return encode(obj, self.element, self._encoding)


class _TextArrayDumper(_ArrayDumper):
    oid = TEXT_ARRAY
    element = TEXT


class _BigintArrayDumper(_ArrayDumper):
    oid = BIGINT_ARRAY
    element = BIGINT


def adapters() -> AdaptersMap:
    """Return psycopg's default adaptation with the store's arrays' binary dumpers added."""
    made = AdaptersMap(psycopg.adapters)
    made.register_dumper(TextArray, _TextArrayDumper)
    made.register_dumper(BigintArray, _BigintArrayDumper)
    return made
