"""What the store keeps up to date as runs end, so the overviews never read every run.

:class:`Rollups` is written to in the transaction that ends a run (:meth:`LeaseQueries.finish
<agent_coordinator._store.leases.LeaseQueries.finish>`, a cancel), so it is never behind the runs:

- every error type a run has ended with (the sessions list's filter choices);
- per agent and UTC day, what ``agentshape analytics``'s review counts of the runs that ended:
  runs, completed, failed by type, first-try valid, rescued, retries and their reasons, tokens,
  runs whose model calls went through a provider batch, and run and model-call latency as
  histograms (buckets about 2 % wide, the longest kept exact);
  the keyed counts (failures, reasons, buckets) also for all days together, so a review of the
  whole store reads a row per bucket, not one per bucket and day.

A run's figures are the review's own arithmetic (its :class:`~agent_executor._review.Tally` over
that run's stored events: at a run's end, the events as the library emitted them, which its runner
holds), so :meth:`Rollups.rollup_review` (what ``GET /reports/analytics`` returns) gives the CLI's
numbers over the same events, except that latency percentiles are read from the histograms, and
that a window starts at a UTC midnight. Runs still open are added when the review is read (their
events only: a few runs). A store from before the rollups is filled from its stored events when
migrated (:meth:`Rollups._backfill`).
"""

from __future__ import annotations

import functools
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from typing import TypeVar

from pydantic import JsonValue

from agent_contracts._events import AnalyticsEvent
from agent_coordinator._event_log import NOT_ANALYTICS_TYPES, is_analytics
from agent_coordinator._store.arrays import BigintArray, TextArray
from agent_coordinator._store.sql import Cursor, SqlBase, loads
from agent_executor._review import (
    ALL_AGENTS,
    AgentReview,
    DayTrend,
    LatencyStats,
    Review,
    Tally,
    TokenTotals,
)

__all__ = ["ROLLUPS_VERSION", "Rollups"]

_K = TypeVar("_K")

ROLLUPS_VERSION = 6
"""The migration that creates the rollup tables; the store fills them right after it."""

_RATIO = 2 ** (1 / 32)
"""One latency bucket's upper edge over its lower edge (about 2.2 %)."""
_BATCH = 500
"""Runs whose events one statement reads."""
_ROWS_PER_INSERT = 100
"""Keyed-count rows one statement upserts (500 parameters)."""
_ALL_DAYS = ""
"""The ``day`` of ``rollup_counts`` rows that count every day (before any date, so ``day >= ?``
leaves them out)."""
_KINDS = ("failure", "reason", "run_ms", "turn_ms", "sent")
"""What ``rollup_counts`` keeps counts of: failures by type, retry reasons, latency buckets,
and runs by how their model calls were sent (``batch``: through a provider batch; the live
runs are the others)."""
_KEYED = {
    "failure": "failures",
    "reason": "reasons",
    "run_ms": "run_ms",
    "turn_ms": "turn_ms",
    "sent": "sent",
}
"""The :class:`_Figures` counter each kind of ``rollup_counts`` row counts."""
_UNNAMED = "\x00"
"""The agent name :meth:`Rollups._roll_up_statements` gives runs whose events name none (no agent
is named so)."""
_COLUMNS = (
    "runs",
    "completed",
    "attempted",
    "first_ok",
    "rescued",
    "retries",
    "incomplete",
    "input_tokens",
    "output_tokens",
    "events",
    "unrecognised",
)


def _bucket(ms: float) -> str:
    """The histogram bucket of a duration (``"z"`` for none; else ``floor(log_ratio ms)``)."""
    return "z" if ms <= 0 else str(math.floor(math.log(ms, _RATIO)))


def _value(bucket: str) -> float:
    """The duration a bucket stands for: its geometric middle."""
    return 0.0 if bucket == "z" else float(_RATIO ** (int(bucket) + 0.5))


@dataclass
class _Figures:
    """What runs add to one agent's day (or, summed, to a review)."""

    counts: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    reasons: Counter[str] = field(default_factory=Counter)
    run_ms: Counter[str] = field(default_factory=Counter)
    turn_ms: Counter[str] = field(default_factory=Counter)
    sent: Counter[str] = field(default_factory=Counter)
    run_max: float | None = None
    turn_max: float | None = None

    def keyed(self, kind: str) -> Counter[str]:
        """The keyed counts stored under ``kind`` in ``rollup_counts``."""
        counts: Counter[str] = getattr(self, _KEYED[kind])
        return counts

    def add(self, other: _Figures) -> None:
        for mine, theirs in (
            (self.counts, other.counts),
            (self.failures, other.failures),
            (self.reasons, other.reasons),
            (self.run_ms, other.run_ms),
            (self.turn_ms, other.turn_ms),
            (self.sent, other.sent),
        ):
            mine.update(theirs)
        self.run_max = _larger(self.run_max, other.run_max)
        self.turn_max = _larger(self.turn_max, other.turn_max)


def _larger(one: float | None, other: float | None) -> float | None:
    return other if one is None else one if other is None else max(one, other)


def _tally(events: Iterable[dict[str, JsonValue]]) -> tuple[Tally, int]:
    """Count a run's stored events as the review does; return them and how many are unknown."""
    tally = Tally()
    unrecognised = sum(not tally.add_data(data) for data in events)
    return tally, unrecognised


def _logged_tally(
    logged: Sequence[tuple[str, dict[str, JsonValue]]], analytics: Sequence[AnalyticsEvent] | None
) -> tuple[Tally, int]:
    """Count a run's events as :func:`_tally` does, from what its runner holds.

    Args:
        logged: Every event stored for the run, in order (type and data).
        analytics: The analytics events among them as the library emitted them, counted as they
            are (the others are the unknown ones); ``None``: ``logged`` is counted.
    """
    if analytics is None:
        return _tally(data for kind, data in logged if is_analytics(kind, data))
    tally = Tally()
    for event in analytics:
        tally.add(event)
    kept = sum(is_analytics(kind, data) for kind, data in logged)
    return tally, kept - len(analytics)


def _run_figures(
    tally: Tally, unrecognised: int, agent_name: str, ended: float
) -> Iterator[tuple[str, date, _Figures]]:
    """What one run's counted events add, per agent: ``(agent, day, figures)``.

    Args:
        tally: The run's analytics events, counted (nothing is added to it after).
        unrecognised: How many of its other stored events are not a known event.
        agent_name: The run's agent (named when its events name none).
        ended: When it ended (the day of an agent whose runs name no day).
    """
    agents, _ = tally.totals()
    for agent_id, totals in sorted(agents.items()):
        figures = _Figures()
        figures.counts.update(
            {
                "runs": totals.runs,
                "completed": totals.completed,
                "attempted": totals.attempted,
                "first_ok": totals.first_ok,
                "rescued": totals.rescued,
                "retries": totals.retries,
                "incomplete": totals.incomplete,
                "input_tokens": totals.input_tokens,
                "output_tokens": totals.output_tokens,
                "events": tally.events,
                "unrecognised": unrecognised,
            }
        )
        figures.failures.update(totals.failures)
        figures.reasons.update(totals.retry_reasons)
        figures.sent["batch"] = totals.batched
        if totals.run_ms:
            figures.run_max = max(totals.run_ms)
            figures.run_ms[_bucket(figures.run_max)] += 1
        for ms in totals.turn_ms:
            figures.turn_ms[_bucket(ms)] += 1
            figures.turn_max = _larger(figures.turn_max, ms)
        day = min(totals.days) if totals.days else _day(ended)
        yield agent_id, day, figures
    if not agents and (tally.events or unrecognised):
        figures = _Figures()
        figures.counts.update({"events": tally.events, "unrecognised": unrecognised})
        yield agent_name, _day(ended), figures


@functools.cache
def _day_upsert(greatest: str, gate: str | None = None) -> str:
    """The statement adding a run's figures to its agent's day (``greatest``: see Rollups).

    With a ``gate`` (an SQL condition) the row is added only where the condition holds.
    """
    # Written once: every run's end runs it.
    names = ", ".join(_COLUMNS)
    marks = ", ".join("?" * len(_COLUMNS))
    values = (
        f"VALUES (?, ?, {marks}, ?, ?)"
        if gate is None
        else f"SELECT ?, ?, {marks}, CAST(? AS DOUBLE PRECISION), CAST(? AS DOUBLE PRECISION) "
        f"WHERE {gate}"
    )
    return (
        f"INSERT INTO rollups (agent_id, day, {names}, run_ms_max, turn_ms_max) {values} "
        "ON CONFLICT (agent_id, day) DO UPDATE SET "
        + ", ".join(f"{name} = rollups.{name} + excluded.{name}" for name in _COLUMNS)
        + f", run_ms_max = {greatest}(COALESCE(rollups.run_ms_max, 0), "
        "COALESCE(excluded.run_ms_max, 0)), "
        f"turn_ms_max = {greatest}(COALESCE(rollups.turn_ms_max, 0), "
        "COALESCE(excluded.turn_ms_max, 0))"
    )


_COUNTS_UPSERT = (
    "INSERT INTO rollup_counts (agent_id, day, kind, name, total) {rows} "
    "ON CONFLICT (agent_id, day, kind, name) "
    "DO UPDATE SET total = rollup_counts.total + excluded.total"
)


@functools.lru_cache(maxsize=_ROWS_PER_INSERT)
def _counts_upsert(rows: int) -> str:
    """The statement adding ``rows`` keyed counts (``VALUES``) to ``rollup_counts``."""
    return _COUNTS_UPSERT.format(rows="VALUES " + ", ".join(["(?, ?, ?, ?, ?)"] * rows))


def _day(when: float) -> date:
    return datetime.fromtimestamp(when, UTC).date()


def _percentile(histogram: Counter[str], rank: float) -> float:
    """The value at a (fractional) rank of the durations a histogram counts."""
    seen = 0
    for bucket in sorted(histogram, key=lambda b: -math.inf if b == "z" else int(b)):
        seen += histogram[bucket]
        if seen > rank:
            return _value(bucket)
    return 0.0


def _latency(histogram: Counter[str], longest: float | None) -> LatencyStats:
    count = sum(histogram.values())
    if not count or longest is None:
        return LatencyStats()

    def at(fraction: float) -> float:
        position = (count - 1) * fraction
        low, high = math.floor(position), math.ceil(position)
        below, above = _percentile(histogram, low), _percentile(histogram, high)
        return min(longest, below + (above - below) * (position - low))

    return LatencyStats(count=count, p50_ms=at(0.50), p95_ms=at(0.95), max_ms=longest)


def _ranked(counts: Counter[str]) -> dict[str, int]:
    return dict(sorted(((k, v) for k, v in counts.items() if v), key=lambda i: (-i[1], i[0])))


def _agent_review(agent_id: str, figures: _Figures, days: dict[date, Counter[str]]) -> AgentReview:
    counts = figures.counts
    runs, completed, attempted = counts["runs"], counts["completed"], counts["attempted"]
    return AgentReview(
        agent_id=agent_id,
        runs=runs,
        completed=completed,
        failed=runs - completed,
        incomplete=counts["incomplete"],
        success_rate=completed / runs if runs else None,
        attempted=attempted,
        first_try_valid=counts["first_ok"],
        first_try_valid_rate=counts["first_ok"] / attempted if attempted else None,
        rescued=counts["rescued"],
        retries=counts["retries"],
        retry_reasons=_ranked(figures.reasons),
        failures_by_type=_ranked(figures.failures),
        output_tool_not_called=figures.failures["output_tool_not_called"],
        tokens=TokenTotals(
            input=counts["input_tokens"],
            output=counts["output_tokens"],
            total=counts["input_tokens"] + counts["output_tokens"],
        ),
        run_latency=_latency(figures.run_ms, figures.run_max),
        model_latency=_latency(figures.turn_ms, figures.turn_max),
        batched=figures.sent["batch"],
        days=[
            DayTrend(
                day=day,
                runs=day_counts["runs"],
                completed=day_counts["completed"],
                failed=day_counts["runs"] - day_counts["completed"],
                incomplete=day_counts["incomplete"],
            )
            for day, day_counts in sorted(days.items())
            if day_counts["runs"] or day_counts["incomplete"]
        ],
    )


class Rollups(SqlBase):
    """The overviews' figures, updated in the transaction that ends a run."""

    greatest: str = "MAX"
    """The SQL function of the larger of two values (``MAX`` in SQLite, ``GREATEST``)."""

    def _note_error(self, cursor: Cursor, error: dict[str, JsonValue] | None) -> None:
        """Add an ended run's error type to the filter choices (once each)."""
        kind = error.get("type") if error is not None else None
        if isinstance(kind, str):
            self._exec(
                cursor, "INSERT INTO error_types (type) VALUES (?) ON CONFLICT DO NOTHING", (kind,)
            )

    def _run_events(
        self, cursor: Cursor, run_ids: list[str]
    ) -> dict[str, list[dict[str, JsonValue]]]:
        """The analytics events of runs (stream and service events left out), oldest first."""
        found: dict[str, list[dict[str, JsonValue]]] = {run_id: [] for run_id in run_ids}
        if not run_ids:
            return found
        skipped = sorted(NOT_ANALYTICS_TYPES)
        rows = self._exec(
            cursor,
            f"SELECT run_id, type, data FROM events WHERE run_id IN "
            f"({', '.join('?' * len(run_ids))}) "
            f"AND type NOT IN ({', '.join('?' * len(skipped))}) ORDER BY id",
            (*run_ids, *skipped),
        ).fetchall()
        for run_id, kind, data in rows:
            value = loads(data)
            if isinstance(value, dict) and is_analytics(str(kind), value):
                found[str(run_id)].append(value)
        return found

    def _roll_up(
        self,
        cursor: Cursor,
        run_id: str,
        agent_name: str,
        ended: float,
        logged: Sequence[tuple[str, dict[str, JsonValue]]] | None = None,
        analytics: Sequence[AnalyticsEvent] | None = None,
    ) -> None:
        """Add an ended run's figures to its agent's day (inside the transaction that ends it).

        Args:
            cursor: The transaction's cursor.
            run_id: The run.
            agent_name: Its agent.
            ended: When it ended.
            logged: Every event stored for the run, in order (type and data); read from the
                store when ``None``.
            analytics: The analytics events among ``logged``, in order, as the library emitted
                them (:attr:`~agent_coordinator._store.records.Holding.analytics`); counted as
                they are instead of read back from ``logged``, whose other events are the
                unknown ones. ``None``: ``logged`` is counted.
        """
        counted = (
            _tally(self._run_events(cursor, [run_id])[run_id])
            if logged is None
            else _logged_tally(logged, analytics)
        )
        for agent, day, figures in _run_figures(*counted, agent_name, ended):
            self._add_figures(cursor, agent, day, figures)

    def _roll_up_statements(
        self,
        ended: float,
        logged: Sequence[tuple[str, dict[str, JsonValue]]],
        gate: str,
        analytics: Sequence[AnalyticsEvent] | None = None,
    ) -> list[tuple[str, list[object]]] | None:
        """Return what :meth:`_roll_up` writes for a run whose events are ``logged``, unsent.

        Args:
            ended: When the run ended.
            logged: Every event stored for the run, in order, as stored (type and data).
            gate: An SQL condition each statement writes only under (a caller sends them
                within one statement of its own, to PostgreSQL: they bind arrays).
            analytics: The analytics events among ``logged`` as the library emitted them
                (counted as they are); ``None``: ``logged`` is counted.

        Returns:
            Each statement (an ``INSERT``) and its parameters; ``None`` when the figures need
            the run's agent name, which no event names (then :meth:`_roll_up` writes them).
        """
        found = list(_run_figures(*_logged_tally(logged, analytics), _UNNAMED, ended))
        if any(agent == _UNNAMED for agent, _, _ in found):
            return None
        return [
            statement
            for agent, day, figures in found
            for statement in self._figure_statements(agent, day, figures, gate)
        ]

    def _add_figures(self, cursor: Cursor, agent: str, day: date, figures: _Figures) -> None:
        for query, params in self._figure_statements(agent, day, figures):
            self._exec(cursor, query, params)

    def _figure_statements(
        self, agent: str, day: date, figures: _Figures, gate: str | None = None
    ) -> list[tuple[str, list[object]]]:
        """The statements adding figures to an agent's day (only where ``gate`` holds, if any)."""
        statements: list[tuple[str, list[object]]] = [
            (
                _day_upsert(self.greatest, gate),
                [
                    agent,
                    day.isoformat(),
                    *(figures.counts[name] for name in _COLUMNS),
                    figures.run_max,
                    figures.turn_max,
                ],
            )
        ]
        # The keyed counts go to the day and to every day together (ALL_DAYS), which a review
        # of the whole store reads: a row per bucket, however many days there are. One
        # statement (one round trip), its rows in one order in every transaction, so two runs
        # ending at once never wait on each other's rows crosswise (PostgreSQL would end one
        # of them as a deadlock).
        counted = [
            (kind, key, count)
            for kind in _KINDS
            if (counts := figures.keyed(kind))
            for key, count in sorted(counts.items())
            if count
        ]
        rows = [
            (agent, day_key, *each) for day_key in (day.isoformat(), _ALL_DAYS) for each in counted
        ]
        if gate is not None and rows:
            # PostgreSQL's arrays, sent binary (psycopg's %b, see _store/arrays.py): five
            # parameters however many rows, so the statement's text (and the one it is part
            # of) is the same for every run, prepared once.
            columns = list(zip(*rows, strict=True))
            statements.append(
                (
                    _COUNTS_UPSERT.format(
                        rows="SELECT * FROM unnest(CAST(%b AS TEXT[]), CAST(%b AS TEXT[]), "
                        "CAST(%b AS TEXT[]), CAST(%b AS TEXT[]), CAST(%b AS BIGINT[])) "
                        f"WHERE {gate}"
                    ),
                    [
                        *(TextArray(column) for column in columns[:4]),
                        BigintArray(columns[4]),
                    ],
                )
            )
            return statements
        for start in range(0, len(rows), _ROWS_PER_INSERT):
            chunk = rows[start : start + _ROWS_PER_INSERT]
            statements.append((_counts_upsert(len(chunk)), [v for row in chunk for v in row]))
        return statements

    def _after_migration(self, cursor: Cursor, version: int) -> None:
        super()._after_migration(cursor, version)
        if version == ROLLUPS_VERSION:
            self._backfill(cursor)

    def _backfill(self, cursor: Cursor) -> None:
        """Fill the rollups from the events of every run that has ended, a batch at a time."""
        totals: dict[tuple[str, date], _Figures] = {}
        after = ""
        while True:
            rows = self._exec(
                cursor,
                "SELECT id, agent_name, COALESCE(finished_at, created_at) FROM runs "
                "WHERE status IN ('completed', 'failed', 'cancelled') AND id > ? "
                "ORDER BY id LIMIT ?",
                (after, _BATCH),
            ).fetchall()
            if not rows:
                break
            ended = {str(row[0]): (str(row[1]), float(str(row[2]))) for row in rows}
            for run_id, events in self._run_events(cursor, list(ended)).items():
                for agent, day, figures in _run_figures(*_tally(events), *ended[run_id]):
                    _figures_of(totals, (agent, day)).add(figures)
            after = str(rows[-1][0])
        for (agent, day), figures in totals.items():
            self._add_figures(cursor, agent, day, figures)

    def rollup_review(
        self, *, source: str, since: date | None = None, agent: str | None = None
    ) -> Review:
        """Return the analytics review of the runs this store holds, from the rollups.

        Args:
            source: What the review names as its source.
            since: Count only runs of this UTC day and later.
            agent: Count only this agent's runs.

        Returns:
            The review: the rollups of ended runs plus the runs still open.
        """
        where, params = ["1 = 1"], list[object]()
        if since is not None:
            where.append("day >= ?")
            params.append(since.isoformat())
        if agent is not None:
            where.append("agent_id = ?")
            params.append(agent)
        clause = " AND ".join(where)
        days: dict[tuple[str, date], Counter[str]] = {}
        agents: dict[str, _Figures] = {}
        with self._tx(write=False) as cursor:
            for row in self._exec(
                cursor,
                f"SELECT agent_id, day, {', '.join(_COLUMNS)}, run_ms_max, turn_ms_max "
                f"FROM rollups WHERE {clause}",
                params,
            ).fetchall():
                counts = Counter(dict(zip(_COLUMNS, (int(str(v)) for v in row[2:13]), strict=True)))
                days[(str(row[0]), date.fromisoformat(str(row[1])))] = counts
                figures = _figures_of(agents, str(row[0]))
                figures.counts.update(counts)
                figures.run_max = _larger(figures.run_max, _float(row[13]))
                figures.turn_max = _larger(figures.turn_max, _float(row[14]))
            # Summed by the database: a row per agent and bucket, however many days there are;
            # without a window, the rows that count every day already are those sums.
            days_clause = clause if since is not None else clause + " AND day = ?"
            for agent_id, kind, name, total in self._exec(
                cursor,
                "SELECT agent_id, kind, name, SUM(total) FROM rollup_counts "
                f"WHERE {days_clause} GROUP BY agent_id, kind, name",
                params if since is not None else [*params, _ALL_DAYS],
            ).fetchall():
                figures = _figures_of(agents, str(agent_id))
                figures.keyed(str(kind))[str(name)] += int(str(total))
            open_runs = {
                str(row[0]): str(row[1])
                for row in self._exec(
                    cursor, "SELECT id, agent_name FROM runs WHERE status IN ('queued', 'running')"
                ).fetchall()
            }
            now = datetime.now(UTC).timestamp()
            listed = list(open_runs)
            for start in range(0, len(listed), _BATCH):
                found = self._run_events(cursor, listed[start : start + _BATCH])
                for run_id, events in found.items():
                    counted = _run_figures(*_tally(events), open_runs[run_id], now)
                    for agent_id, day, figures in counted:
                        if (since is None or day >= since) and agent in (None, agent_id):
                            _figures_of(agents, agent_id).add(figures)
                            days.setdefault((agent_id, day), Counter()).update(figures.counts)
        return _review(agents, days, source=source, since=since, agent=agent)


def _figures_of(table: dict[_K, _Figures], key: _K) -> _Figures:
    """Return ``table[key]``, made first if missing (``setdefault`` would make one per call)."""
    found = table.get(key)
    if found is None:
        found = table[key] = _Figures()
    return found


def _float(value: object) -> float | None:
    return None if value is None else float(str(value))


def _review(
    agents: dict[str, _Figures],
    days: dict[tuple[str, date], Counter[str]],
    *,
    source: str,
    since: date | None,
    agent: str | None,
) -> Review:
    everyone = _Figures()
    for figures in agents.values():
        everyone.add(figures)
    per_agent: dict[str, dict[date, Counter[str]]] = {}
    every_day: dict[date, Counter[str]] = {}
    for (agent_id, day), counts in days.items():
        per_agent.setdefault(agent_id, {})[day] = counts
        every_day.setdefault(day, Counter()).update(counts)
    return Review(
        source=source,
        since=None if since is None else datetime.combine(since, datetime.min.time(), UTC),
        agent=agent,
        events=everyone.counts["events"],
        unrecognised_events=everyone.counts["unrecognised"],
        # An agent whose only events are ones the review does not know (a run cancelled
        # before it started) is not listed, as the CLI lists only agents of known events.
        agents=[
            _agent_review(name, agents[name], per_agent.get(name, {}))
            for name in sorted(agents)
            if any(count for key, count in agents[name].counts.items() if key != "unrecognised")
        ],
        overall=_agent_review(ALL_AGENTS, everyone, every_day),
    )
