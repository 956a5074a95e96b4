"""Read-only queries for overviews: sessions with their latest run, filtered and paged.

These serve the dashboard's sessions list and analytics (``/reports/...``). They read the same
tables as :class:`~agent_coordinator._store.runs.RunQueries` and never write. A session's row
leaves its transcript out (it can be large); its latest run is found through the runs' index by
session, in the same query, so a page of sessions is one round trip and a few index lookups
however many sessions there are. Nothing here reads the whole store on a view: a total reads
at most :data:`COUNT_CAP` sessions and is said to be "at least" beyond, and the error types are
the ones :class:`~agent_coordinator._store.rollups.Rollups` kept as runs ended.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from agent_coordinator._store.base import SqlStore
from agent_coordinator._store.records import RunRecord
from agent_coordinator._store.sql import RUN_COLUMNS, Cursor, run_record

__all__ = [
    "COUNT_CAP",
    "SessionCount",
    "SessionFilter",
    "SessionRow",
    "changed_sessions",
    "count_sessions",
    "error_types",
    "retry_limits",
    "session_rows",
]

COUNT_CAP = 10_000
"""Sessions a total reads at most; beyond, it says "at least this many" (a list's total is read
on every view, and counting a hundred thousand rows costs ten times counting ten thousand)."""

_SESSION = "s.seq, s.id, s.agent_name, s.status, s.parent_session_id, s.depth, s.created_at, " + (
    "s.updated_at"
)
_RUN = ", ".join(f"r.{name.strip()}" for name in RUN_COLUMNS.split(","))
_LATEST = (
    "FROM sessions s LEFT JOIN runs r ON r.seq = "
    "(SELECT MAX(x.seq) FROM runs x WHERE x.session_id = s.id)"
)


@dataclass(frozen=True)
class SessionFilter:
    """Which sessions to list; every field left ``None`` matches all."""

    status: str | None = None
    agent_name: str | None = None
    error_type: str | None = None
    """The ``type`` of the latest run's error (``output_schema_validation_failed``...)."""
    since: float | None = None
    """Created at or after (epoch seconds)."""
    until: float | None = None
    """Created before (epoch seconds)."""


@dataclass(frozen=True)
class SessionCount:
    """How many sessions match a filter, counted up to a cap."""

    total: int
    """The count, or the cap when more match."""
    exact: bool
    """``False`` when more sessions match than :attr:`total`."""


@dataclass(frozen=True)
class SessionRow:
    """A session without its transcript, with its latest run."""

    seq: int
    id: str
    agent_name: str
    status: str
    parent_session_id: str | None
    depth: int
    created_at: float
    updated_at: float
    latest: RunRecord | None


def _where(store: SqlStore, wanted: SessionFilter, after: int | None) -> tuple[str, list[object]]:
    clauses: list[str] = []
    params: list[object] = []
    for clause, value in (
        ("s.seq < ?", after),
        ("s.status = ?", wanted.status),
        ("s.agent_name = ?", wanted.agent_name),
        (f"{store.error_type} = ?", wanted.error_type),
        ("s.created_at >= ?", wanted.since),
        ("s.created_at < ?", wanted.until),
    ):
        if value is not None:
            clauses.append(clause)
            params.append(value)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params


def _row(row: tuple[object, ...] | list[object]) -> SessionRow:
    head, run = row[:8], row[8:]
    return SessionRow(
        seq=int(str(head[0])),
        id=str(head[1]),
        agent_name=str(head[2]),
        status=str(head[3]),
        parent_session_id=None if head[4] is None else str(head[4]),
        depth=int(str(head[5])),
        created_at=float(str(head[6])),
        updated_at=float(str(head[7])),
        latest=None if run[0] is None else run_record(run),
    )


def _rows(store: SqlStore, cursor: Cursor, rows: Sequence[Sequence[object]]) -> list[SessionRow]:
    """Return rows read as sessions with their latest runs (results without the transcript)."""
    found = [_row(tuple(row)) for row in rows]
    latest = [row.latest for row in found if row.latest is not None]
    store._complete(cursor, latest, transcripts=False)
    return found


def session_rows(
    store: SqlStore, wanted: SessionFilter, *, limit: int, after: int | None = None
) -> list[SessionRow]:
    """Return sessions with their latest run, newest first, older than seq ``after``."""
    where, params = _where(store, wanted, after)
    with store._tx(write=False) as cursor:
        rows = store._exec(
            cursor,
            f"SELECT {_SESSION}, {_RUN} {_LATEST}{where} ORDER BY s.seq DESC LIMIT ?",
            (*params, limit),
        ).fetchall()
        return _rows(store, cursor, rows)


def count_sessions(store: SqlStore, wanted: SessionFilter, *, cap: int = COUNT_CAP) -> SessionCount:
    """Count the sessions that match ``wanted``, up to ``cap``.

    The count reads at most ``cap + 1`` sessions (newest first) that match the filters a
    session's own columns answer from an index; of those, a filter on the latest run's error
    type keeps the ones it matches. Past ``cap`` sessions read, the count is a lower bound.

    Args:
        store: The store.
        wanted: The filter.
        cap: Read no more sessions than this; more give ``exact=False``.

    Returns:
        The count, and whether it is exact.
    """
    own = SessionFilter(
        status=wanted.status, agent_name=wanted.agent_name, since=wanted.since, until=wanted.until
    )
    where, params = _where(store, own, None)
    newest = f"SELECT s.id FROM sessions s{where} ORDER BY s.seq DESC LIMIT ?"
    if wanted.error_type is None:
        query, params = f"SELECT COUNT(*), COUNT(*) FROM ({newest}) AS newest", [*params, cap + 1]
    else:
        query = (
            f"SELECT COUNT(*), COALESCE(SUM(CASE WHEN {store.error_type} = ? THEN 1 ELSE 0 END), "
            f"0) FROM ({newest}) AS newest LEFT JOIN runs r ON r.seq = "
            "(SELECT MAX(x.seq) FROM runs x WHERE x.session_id = newest.id)"
        )
        params = [wanted.error_type, *params, cap + 1]
    with store._tx(write=False) as cursor:
        row = store._exec(cursor, query, params).fetchone()
    read, matched = (int(str(row[0])), int(str(row[1]))) if row is not None else (0, 0)
    return SessionCount(total=min(matched, cap), exact=read <= cap)


def error_types(store: SqlStore) -> list[str]:
    """Return every error type a run has ended with, sorted."""
    with store._tx(write=False) as cursor:
        rows = store._exec(cursor, "SELECT type FROM error_types ORDER BY type").fetchall()
    return [str(row[0]) for row in rows]


def changed_sessions(store: SqlStore, since: float, *, limit: int = 200) -> list[SessionRow]:
    """Return sessions updated after ``since`` (epoch seconds), least recently updated first."""
    with store._tx(write=False) as cursor:
        rows = store._exec(
            cursor,
            f"SELECT {_SESSION}, {_RUN} {_LATEST} WHERE s.updated_at > ? "
            "ORDER BY s.updated_at LIMIT ?",
            (since, limit),
        ).fetchall()
        return _rows(store, cursor, rows)


def retry_limits(store: SqlStore, run_ids: list[str]) -> dict[str, int]:
    """Return the ``max_retries`` each run started with (from its ``run_started`` event)."""
    if not run_ids:
        return {}
    marks = ", ".join("?" for _ in run_ids)
    with store._tx(write=False) as cursor:
        rows = store._exec(
            cursor,
            f"SELECT run_id, data FROM events WHERE type = 'run_started' AND run_id IN ({marks})",
            run_ids,
        ).fetchall()
    found: dict[str, int] = {}
    for run_id, data in rows:
        value = json.loads(str(data)).get("max_retries")
        if isinstance(value, int):
            found[str(run_id)] = value
    return found
