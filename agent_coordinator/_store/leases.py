"""Runners' side of the store: claims with a lease, renewals, the one finish, cancel, events.

A claim that finds a run's lease run out records it (event ``claim_expired``); a run whose lease
ran out ``max_claims`` times is not claimed again: it ends ``failed`` with ``lease_exhausted``,
so a run no runner can finish costs at most that many model calls (see
:mod:`~agent_coordinator._store.claims` for the claim log).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import cast

from pydantic import JsonValue

from agent_coordinator._errors import Conflict, NotFound
from agent_coordinator._store.arrays import BigintArray, TextArray
from agent_coordinator._store.claims import DEFAULT_MAX_CLAIMS, EXPIRED_CLAIMS, ClaimLog
from agent_coordinator._store.listener import RUN_ENDED, RUN_QUEUED
from agent_coordinator._store.records import (
    TERMINAL,
    Claim,
    EventRecord,
    Holding,
    LeaseState,
    RequeueReason,
    RunRecord,
    RunState,
)
from agent_coordinator._store.rollups import Rollups
from agent_coordinator._store.sql import (
    RUN_COLUMNS,
    TRANSCRIPT_COLUMNS,
    Cursor,
    dumps,
    lean_attempt_events,
    loads,
    read_transcript,
    run_record,
    split_transcript,
    stored_attempt,
    stored_result,
)
from agent_coordinator._store.turns import TurnLog
from agent_coordinator._store.webhooks import WebhookQueries

__all__ = ["LeaseQueries"]

_ENDED_COLUMNS = RUN_COLUMNS.replace("result, error", "NULL, NULL")
_ENDED_KNOWN_INPUT = _ENDED_COLUMNS.replace("status, input,", "status, NULL,")
"""What a run's end reads back when its runner holds the run's request (its claim read it)."""
_BATCH = 500
"""Run ids one statement names at most (SQLite allows 32,766 parameters)."""
_AFTER = "{after}"
"""Where a write of :meth:`LeaseQueries._finish_in_one_statement` says what it comes after."""
_RUNNING = "status || '' = 'running'"
"""The test that a run found by its id is running, written so that no index serves it.

With ``status = 'running'`` PostgreSQL could walk ``runs_status`` through every running run,
reading each row, instead of the id's unique index: its statistics see few running runs or
none (a run runs briefly; a new store has none analyzed), which the plan it keeps for a
prepared statement (made without the parameters' values) took for the narrower lookup.
"""
_CANCELLED_WHILE_RUNNING = dumps(
    {"type": "cancelled", "message": "the run was cancelled while it ran; what it produced is kept"}
)
"""The error column of a run asked to cancel while it ran, as it ends."""


class LeaseQueries(ClaimLog, WebhookQueries, Rollups, TurnLog):
    """Claims, leases, recorded turns, a run's end (webhook, day's rollup), cancel, events."""

    def claim(
        self, owner: str, lease_s: float, max_claims: int = DEFAULT_MAX_CLAIMS
    ) -> Claim | None:
        """Hand the oldest waiting run (or one whose runner's lease ran out) to ``owner``."""
        # A run whose lease ran out max_claims times is ended failed (lease_exhausted) here instead
        # of being handed over once more.
        now = time.time()
        with self._tx() as cursor:
            # Waiting runs first, then runs whose runner's lease ran out; separate statements,
            # so each one walks the (status, seq) index instead of scanning every run.
            # A batch's runs are claimed with their batch (store/batches.py), never one by one.
            subquery = (
                "SELECT id FROM runs WHERE status = 'queued' AND batch_id IS NULL "
                "ORDER BY seq LIMIT 1"
            )
            subquery += self.skip_locked
            claim = self._take(cursor, subquery, (), owner, lease_s, now)
            if claim is not None:
                return claim
            for _ in range(_BATCH):  # bounded: each exhausted run found leaves 'running'
                row = self._exec(
                    cursor,
                    f"SELECT id, lease_owner, claims, ({EXPIRED_CLAIMS}) FROM runs "
                    "WHERE status = 'running' AND lease_expires_at < ? AND batch_id IS NULL "
                    f"ORDER BY seq LIMIT 1{self.skip_locked}",
                    (now,),
                ).fetchone()
                if row is None:
                    return None
                run_id, expired = str(row[0]), int(str(row[3])) + 1  # this one ran out too
                ran_out: dict[str, JsonValue] = {"runner": str(row[1]), "claim": int(str(row[2]))}
                self._insert_events(cursor, run_id, [("claim_expired", ran_out)], now)
                if expired < max_claims:
                    subquery = "SELECT id FROM runs WHERE id = ?"
                    return self._take(cursor, subquery, (run_id,), owner, lease_s, now)
                self._exhaust(cursor, run_id, expired, now)
        return None

    def _exhaust(self, cursor: Cursor, run_id: str, expired: int, now: float) -> None:
        """End a run whose lease ran out ``expired`` times ``failed``, without running it."""
        message = (
            f"the run's lease ran out {expired} times without a runner finishing it (each "
            "claim's end is in claim_history); it is not run again"
        )
        error: dict[str, JsonValue] = {"type": "lease_exhausted", "message": message}
        row = self._exec(
            cursor,
            "UPDATE runs SET status = 'failed', error = ?, finished_at = ?, lease_owner = NULL, "
            f"lease_expires_at = NULL WHERE id = ? RETURNING {RUN_COLUMNS}",
            (dumps(error), now, run_id),
        ).fetchone()
        assert row is not None
        run = run_record(row)
        self._drop_turns(cursor, run_id)
        self._exec(
            cursor,
            "UPDATE sessions SET status = 'failed', updated_at = ? WHERE id = ?",
            (now, run.session_id),
        )
        self._insert_events(cursor, run_id, [("run_failed", {"error": error})], now)
        self._note_error(cursor, error)
        self._roll_up(cursor, run_id, run.agent_name, now)
        self._enqueue_webhook(cursor, run, now)
        self._notify(cursor, RUN_ENDED, run_id)

    def claim_run(self, run_id: str, owner: str, lease_s: float) -> Claim | None:
        """Hand one particular waiting run to ``owner`` (a parent running its child itself)."""
        now = time.time()
        with self._tx() as cursor:
            subquery = f"SELECT id FROM runs WHERE id = ? AND status = 'queued'{self.skip_locked}"
            return self._take(cursor, subquery, (run_id,), owner, lease_s, now)

    def _take(
        self,
        cursor: Cursor,
        subquery: str,
        params: Sequence[object],
        owner: str,
        lease_s: float,
        now: float,
    ) -> Claim | None:
        # Each write returns what the claim hands over, so a claim is three statements.
        row = self._exec(
            cursor,
            "UPDATE runs SET status = 'running', lease_owner = ?, lease_expires_at = ?, "
            "claims = claims + 1, started_at = COALESCE(started_at, ?) "
            f"WHERE id = ({subquery}) RETURNING {RUN_COLUMNS}",
            (owner, now + lease_s, now, *params),
        ).fetchone()
        if row is None:
            return None
        run = run_record(row)
        found = self._exec(
            cursor,
            "UPDATE sessions SET status = 'running', updated_at = ? WHERE id = ? "
            f"RETURNING {TRANSCRIPT_COLUMNS}",
            (now, run.session_id),
        ).fetchone()
        transcript = read_transcript(*found) if found is not None else []
        claimed: list[tuple[str, dict[str, JsonValue]]] = [
            ("run_claimed", {"runner": owner, "claim": run.claims})
        ]
        self._insert_events(cursor, run.id, claimed, now)
        # A run's first claim has no turns recorded yet: only a holder records them.
        progress = self._read_turns(cursor, run.id) if run.claims > 1 else None
        return Claim(run=run, transcript=transcript, progress=progress, events=claimed)

    def record_progress(self, run_id: str, owner: str, progress: dict[str, JsonValue]) -> bool:
        """Keep the turns a run ``owner`` holds has finished, for a runner taking it over."""
        # Only what progress adds to the turns recorded before is written, so each turn's write is
        # that turn's size.
        with self._tx() as cursor:
            # Locked (on PostgreSQL) so a claim or finish racing the record waits for it.
            row = self._exec(
                cursor,
                f"SELECT id FROM runs WHERE id = ? AND lease_owner = ? AND {_RUNNING}"
                f"{self.lock_rows}",
                (run_id, owner),
            ).fetchone()
            if row is None:
                return False
            self._append_turns(cursor, run_id, progress)
        return True

    def renew(self, run_id: str, owner: str, lease_s: float) -> LeaseState:
        """Extend ``owner``'s lease on a run and say whether it was asked to cancel."""
        with self._tx() as cursor:
            row = self._exec(
                cursor,
                "UPDATE runs SET lease_expires_at = ? WHERE id = ? AND lease_owner = ? "
                f"AND {_RUNNING} RETURNING cancel_requested",
                (time.time() + lease_s, run_id, owner),
            ).fetchone()
        if row is None:
            return LeaseState(held=False)
        return LeaseState(held=True, cancel_requested=bool(row[0]))

    def renew_many(
        self, run_ids: Sequence[str], owner: str, lease_s: float
    ) -> dict[str, LeaseState]:
        """Extend ``owner``'s leases on several runs in one transaction (a runner's tick)."""
        states = {run_id: LeaseState(held=False) for run_id in run_ids}
        expires = time.time() + lease_s
        with self._tx() as cursor:
            for start in range(0, len(run_ids), _BATCH):
                chunk = list(run_ids[start : start + _BATCH])
                marks = ", ".join("?" * len(chunk))
                rows = self._exec(
                    cursor,
                    f"UPDATE runs SET lease_expires_at = ? WHERE id IN ({marks}) "
                    f"AND lease_owner = ? AND {_RUNNING} RETURNING id, cancel_requested",
                    (expires, *chunk, owner),
                ).fetchall()
                for row in rows:
                    states[str(row[0])] = LeaseState(held=True, cancel_requested=bool(row[1]))
        return states

    def finish(
        self,
        run_id: str,
        owner: str,
        *,
        status: RunState,
        result: dict[str, JsonValue] | None,
        error: dict[str, JsonValue] | None,
        attempts: Sequence[dict[str, JsonValue]] = (),
        events: Sequence[tuple[str, dict[str, JsonValue]]] = (),
        transcript: Sequence[JsonValue] | None = None,
        holding: Holding | None = None,
    ) -> RunRecord | None:
        """End a run ``owner`` still holds, with its attempts, last events and transcript.

        A run asked to cancel while it ran ends cancelled whatever ``status`` says, keeping what
        it produced.

        Args:
            run_id: The run.
            owner: The runner that holds it.
            status: How it ended.
            result: The library's ``RunResult`` as JSON, if it ended with one.
            error: Why it failed or was cancelled.
            attempts: Its attempts (the library's ``Attempt`` as JSON).
            events: Its events not stored yet.
            transcript: The session's transcript after the run.
            holding: What ``owner`` knows the store holds for the run (then the end reads none
                of it back); ``None`` reads it.

        Returns:
            The ended run, or ``None`` when ``owner`` no longer holds it (nothing is written).
        """
        now = time.time()
        kept = transcript if transcript else ()
        # The stored result leaves out an error the error column holds, unless the run ends
        # cancelled (decided by the statement below): then the column holds the cancel's.
        stored = None if result is None else dumps(stored_result(result, attempts, kept))
        lean = stored
        if result is not None and error is not None:
            lean = dumps(stored_result(result, attempts, kept, error))
        if self.one_statement_writes and holding is not None and holding.events is not None:
            done = self._finish_in_one_statement(
                run_id,
                owner,
                status,
                (result, lean),
                error,
                attempts,
                events,
                transcript,
                holding,
                now,
            )
            if done is not None:
                return done
        known = None if holding is None else holding.input
        returned = _ENDED_COLUMNS if known is None else _ENDED_KNOWN_INPUT
        with self._tx(pipelined=True) as cursor:
            # One statement reads the cancel flag and writes the end, so a cancel accepted
            # before it is never lost to a finish racing it.
            row = self._exec(
                cursor,
                "UPDATE runs SET status = CASE WHEN cancel_requested = 1 THEN 'cancelled' "
                "ELSE ? END, result = CASE WHEN cancel_requested = 1 THEN ? ELSE ? END, "
                "error = CASE WHEN cancel_requested = 1 THEN ? ELSE ? END, "
                "finished_at = ?, lease_owner = NULL, lease_expires_at = NULL "
                "WHERE id = ? AND lease_owner = ? "
                # result and error are the values just written: not read back and parsed again
                f"AND {_RUNNING} RETURNING {returned}",
                (
                    status,
                    stored,
                    lean,
                    _CANCELLED_WHILE_RUNNING,
                    None if error is None else dumps(error),
                    now,
                    run_id,
                    owner,
                ),
            ).fetchone()
            if row is None:
                return None
            ended = run_record(row, known)
            if ended.status == "cancelled":  # the stored error is the cancel's
                error = cast("dict[str, JsonValue]", loads(_CANCELLED_WHILE_RUNNING))
                if status != "cancelled":
                    events = [*events, ("run_cancelled", {})]
            ended.result, ended.error = result, error
            status = ended.status
            split = split_transcript(transcript) if transcript else None
            if split is not None and split[1] is not None:
                # Stored by every end that names it (nothing is written where it is already): a
                # deletion removes the messages no session names any more (retention.py). Its
                # table is locked before any row another end may hold (the day's rollups), as
                # the one-statement end locks it as it starts: a deletion waiting for one end
                # while another waits behind the deletion would close a circle PostgreSQL only
                # breaks after its deadlock_timeout.
                self._exec(
                    cursor,
                    "INSERT INTO system_messages (digest, message) VALUES (?, ?) "
                    "ON CONFLICT (digest) DO NOTHING",
                    split[1],
                )
            self._enqueue_webhook(cursor, ended, now)
            if holding is None or holding.turns:
                self._drop_turns(cursor, run_id)
            self._notify(cursor, RUN_ENDED, run_id)
            # Only a run's end writes its attempts, once: an upsert instead of a deletion first.
            self._insert_rows(
                cursor,
                "attempts (run_id, number, data)",
                [
                    (run_id, number, dumps(stored_attempt(attempt)))
                    for number, attempt in enumerate(attempts, start=1)
                ],
                " ON CONFLICT (run_id, number) DO UPDATE SET data = excluded.data",
            )
            added = lean_attempt_events(events, attempts)
            self._insert_events(cursor, run_id, added, now)
            if holding is None or holding.attempt_events:
                self._lean_attempt_events(cursor, run_id, attempts)
            self._note_error(cursor, error)
            # The runner's copy of the run's events spares reading them back (what the store
            # leaves out of an attempt event, its raw output, is not counted by the review).
            logged = analytics = None
            if holding is not None and holding.events is not None:
                logged = [*holding.events, *added]
                analytics = holding.analytics
            self._roll_up(cursor, run_id, ended.agent_name, now, logged, analytics)
            self._end_session(cursor, ended, status, transcript, split, holding, now)
        return ended

    def _finish_in_one_statement(
        self,
        run_id: str,
        owner: str,
        status: RunState,
        result: tuple[dict[str, JsonValue] | None, str | None],
        error: dict[str, JsonValue] | None,
        attempts: Sequence[dict[str, JsonValue]],
        events: Sequence[tuple[str, dict[str, JsonValue]]],
        transcript: Sequence[JsonValue] | None,
        holding: Holding,
        now: float,
    ) -> RunRecord | None:
        """End a run as :meth:`finish` does, in one statement of data-modifying ``WITH`` clauses.

        For :attr:`~agent_coordinator._store.sql.SqlBase.one_statement_writes` stores, and only
        the usual end: ``owner`` holds the run, nobody asked to cancel it, it has no webhook,
        its new transcript continues the one its claim read (which the session still holds),
        and ``holding`` knows every event stored for it. The run's update is the first clause
        and every other write is made only if it was, so otherwise nothing is written and
        ``None`` says :meth:`finish` must end the run its own way.

        Args:
            run_id: The run.
            owner: The runner that holds it.
            status: How it ended.
            result: Its result, and that result as the ``runs`` table keeps it.
            error: Why it failed.
            attempts: Its attempts.
            events: Its events not stored yet.
            transcript: The session's transcript after the run.
            holding: What ``owner`` knows the store holds for the run.
            now: When it ended.

        Returns:
            The ended run (its result and error as given), or ``None``.
        """
        assert holding.events is not None
        gate = _AFTER  # each write's condition, written in when the writes are put together
        query = (
            "WITH ended AS (UPDATE runs SET status = ?, result = ?, error = ?, finished_at = ?, "
            "lease_owner = NULL, lease_expires_at = NULL WHERE id = ? AND lease_owner = ? "
            f"AND {_RUNNING} AND cancel_requested = 0 "
            # A run with a webhook (a key of its stored input: no text of a JSON string
            # spells it unescaped) is ended by finish, which writes the delivery.
            """AND strpos(input, '"webhook":') = 0"""
        )
        params: list[object] = [
            status,
            result[1],
            None if error is None else dumps(error),
            now,
            run_id,
            owner,
        ]
        ends_session: list[str] = []
        session_params: list[object] = [status, now]
        system: tuple[str, str] | None = None
        if transcript:
            claimed = holding.transcript
            if list(transcript[: len(claimed)]) != claimed:
                return None  # earlier runs' transcripts may change: finish keeps them
            text, system = split_transcript(transcript)
            was, was_system = split_transcript(claimed)
            query += (
                " AND EXISTS (SELECT 1 FROM sessions s WHERE s.id = runs.session_id "
                "AND s.transcript = ? AND COALESCE(s.system_digest, '') = ?)"
            )
            params += [was, "" if was_system is None else was_system[0]]
            ends_session = ["transcript = ?", "system_digest = ?"]
            session_params += [text, None if system is None else system[0]]
        query += f" RETURNING {_ENDED_COLUMNS})"
        writes: list[tuple[str, list[object]]] = []
        if holding.turns:
            writes.append(
                (f"DELETE FROM run_turns WHERE run_id IN (SELECT id FROM ended) AND {gate}", [])
            )
        # Rows go as arrays: a few parameters however many rows, so the statement's text is the
        # same for every run of a shape, prepared once (and psycopg converts it once). Arrays
        # are sent binary (psycopg's %b, see _store/arrays.py): as text, each element is
        # escaped, JSON and all.
        if attempts:
            writes.append(
                (
                    "INSERT INTO attempts (run_id, number, data) SELECT ?, v.* FROM "
                    "unnest(CAST(%b AS BIGINT[]), CAST(%b AS TEXT[])) AS v "
                    f"WHERE {gate} ON CONFLICT (run_id, number) DO UPDATE SET data = excluded.data",
                    [
                        run_id,
                        BigintArray(range(1, len(attempts) + 1)),
                        TextArray([dumps(stored_attempt(attempt)) for attempt in attempts]),
                    ],
                )
            )
        added = lean_attempt_events(events, attempts)
        if added:
            # unnest gives the rows in the order listed, so their ids are in that order too.
            writes.append(
                (
                    "INSERT INTO events (run_id, type, data, created_at) SELECT ?, v.*, "
                    "CAST(? AS DOUBLE PRECISION) FROM unnest(CAST(%b AS TEXT[]), "
                    f"CAST(%b AS TEXT[])) AS v WHERE {gate}",
                    [
                        run_id,
                        now,
                        TextArray([kind for kind, _ in added]),
                        TextArray([dumps(d) for _, d in added]),
                    ],
                )
            )
        if holding.attempt_events:
            # The attempt events a flush stored whole while the run went on (they are among
            # holding.events, as dumped then) lose the raw output their attempt rows now hold.
            stored = [(kind, data) for kind, data in holding.events if kind == "attempt"]
            leaned = [
                (dumps(whole), dumps(lean))
                for (_, whole), (_, lean) in zip(
                    stored, lean_attempt_events(stored, attempts), strict=True
                )
                if lean is not whole
            ]
            if leaned:
                wholes, leans = (TextArray(texts) for texts in zip(*leaned, strict=True))
                writes.append(
                    (
                        "UPDATE events SET data = v.lean FROM unnest(CAST(%b AS TEXT[]), "
                        "CAST(%b AS TEXT[])) AS v (whole, lean) WHERE events.run_id = ? "
                        f"AND events.type = 'attempt' AND events.data = v.whole AND {gate}",
                        [wholes, leans, run_id],
                    )
                )
        kind = error.get("type") if error is not None else None
        if isinstance(kind, str):
            writes.append(
                (
                    f"INSERT INTO error_types (type) SELECT ? WHERE {gate} ON CONFLICT DO NOTHING",
                    [kind],
                )
            )
        logged = [*holding.events, *added]
        figures = self._roll_up_statements(now, logged, gate, holding.analytics)
        if figures is None:
            return None
        writes += figures
        if system is not None:
            writes.append(
                (
                    f"INSERT INTO system_messages (digest, message) SELECT ?, ? WHERE {gate} "
                    "ON CONFLICT (digest) DO NOTHING",
                    list(system),
                )
            )
        writes.append(
            (
                "UPDATE sessions SET "
                + ", ".join(["status = ?", "updated_at = ?", *ends_session])
                + f" WHERE id IN (SELECT session_id FROM ended) AND {gate}",
                session_params,
            )
        )
        # Each write waits for the one before it (it counts its rows first), so the rows a
        # statement locks are locked in finish's order, whichever way a run ends: otherwise
        # PostgreSQL runs the clauses in an order of its own, and two runs ending at once, one
        # each way, could each wait on the other's rollups (a deadlock).
        for number, (write, values) in enumerate(writes):
            after = "EXISTS (SELECT 1 FROM ended)"
            if number:
                after += f" AND (SELECT COUNT(*) FROM w{number - 1}) >= 0"
            query += f", w{number} AS ({write.replace(_AFTER, after)} RETURNING 1)"
            params += values
        query += " SELECT ended.*, pg_notify(?, ?) FROM ended"
        params += [RUN_ENDED, run_id]
        # Its connection lost before the answer, the statement may have been applied (as a
        # COMMIT may): the caller's retry then finds the run ended, as after a lost COMMIT.
        with self._statement(applied_if_lost=True) as cursor:
            row = self._exec(cursor, query, params).fetchone()
        if row is None:
            return None
        ended = run_record(row[:-1])
        ended.result, ended.error = result[0], error
        return ended

    def _end_session(
        self,
        cursor: Cursor,
        ended: RunRecord,
        status: RunState,
        transcript: Sequence[JsonValue] | None,
        split: tuple[str, tuple[str, str] | None] | None,
        holding: Holding | None,
        now: float,
    ) -> None:
        """Write the session's status and, when the run has one, its transcript.

        ``split`` is :func:`~agent_coordinator._store.sql.split_transcript` of the transcript,
        whose system message the end has stored already.
        """
        session_id = ended.session_id
        if not transcript or split is None:
            self._exec(
                cursor,
                "UPDATE sessions SET status = ?, updated_at = ? WHERE id = ?",
                (status, now, session_id),
            )
            return
        text, system = split
        digest = None if system is None else system[0]
        claimed = None if holding is None else holding.transcript
        # A transcript continuing the one the claim read, in a session that still holds that
        # (compared whole, in the statement), changes no earlier run's transcript.
        continues = claimed is not None and list(transcript[: len(claimed)]) == claimed
        if continues:
            was, was_system = split_transcript(claimed or [])
            if self._exec(
                cursor,
                "UPDATE sessions SET status = ?, transcript = ?, system_digest = ?, "
                "updated_at = ? WHERE id = ? AND transcript = ? "
                "AND COALESCE(system_digest, '') = ? RETURNING id",
                (
                    status,
                    text,
                    digest,
                    now,
                    session_id,
                    was,
                    "" if was_system is None else was_system[0],
                ),
            ).fetchone():
                return
        self._keep_earlier_transcripts(cursor, session_id, ended.id, transcript)
        self._exec(
            cursor,
            "UPDATE sessions SET status = ?, transcript = ?, system_digest = ?, updated_at = ? "
            "WHERE id = ?",
            (status, text, digest, now, session_id),
        )

    def _keep_earlier_transcripts(
        self, cursor: Cursor, session_id: str, run_id: str, transcript: Sequence[JsonValue]
    ) -> None:
        """Give the session's earlier runs their transcripts back where the new one differs."""
        # An earlier run's result keeps only how many of the session's messages are its transcript;
        # a transcript that does not begin with the session's would change them, so those runs get
        # their own copy first.
        row = self._exec(
            cursor, f"SELECT {TRANSCRIPT_COLUMNS} FROM sessions WHERE id = ?", (session_id,)
        ).fetchone()
        old = read_transcript(*row) if row is not None else []
        if list(transcript[: len(old)]) == old:
            return
        rows = self._exec(
            cursor,
            f"SELECT {RUN_COLUMNS} FROM runs WHERE session_id = ? AND id <> ? "
            "AND result IS NOT NULL",
            (session_id, run_id),
        ).fetchall()
        for found in rows:
            run = run_record(found)
            length = (run.result or {}).get("transcript")
            if isinstance(length, int) and run.result is not None:
                run.result["transcript"] = old[:length]
                self._exec(
                    cursor,
                    "UPDATE runs SET result = ? WHERE id = ?",
                    (dumps(run.result), run.id),
                )

    def release(self, run_id: str, owner: str, *, reason: RequeueReason = "shutdown") -> bool:
        """Put a run ``owner`` holds back in the queue.

        Args:
            run_id: The run.
            owner: The runner that holds it.
            reason: ``shutdown`` (the runner stops) or ``no_free_slot`` (a run handed to the
                runner found its worker slots taken); the claim log tells them apart.

        Returns:
            Whether the run was put back (``False``: ``owner`` no longer held it).
        """
        now = time.time()
        with self._tx() as cursor:
            row = self._exec(
                cursor,
                "UPDATE runs SET status = 'queued', lease_owner = NULL, lease_expires_at = NULL "
                f"WHERE id = ? AND lease_owner = ? AND {_RUNNING} RETURNING session_id",
                (run_id, owner),
            ).fetchone()
            if row is None:
                return False
            self._exec(
                cursor,
                "UPDATE sessions SET status = 'queued', updated_at = ? WHERE id = ?",
                (now, str(row[0])),
            )
            self._insert_events(cursor, run_id, [("run_requeued", {"reason": reason})], now)
            self._notify(cursor, RUN_QUEUED, run_id)
        return True

    def request_cancel(self, run_id: str) -> RunRecord:
        """Cancel a queued run at once, or ask the runner of a running one to stop it."""
        now = time.time()
        error = dumps({"type": "cancelled", "message": "the run was cancelled before it started"})
        with self._tx() as cursor:
            row = self._exec(
                cursor, "SELECT status, session_id, agent_name FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            if row is None:
                raise NotFound("RunNotFound", f"no run {run_id!r}")
            status, session_id, agent_name = str(row[0]), str(row[1]), str(row[2])
            if status in TERMINAL:
                raise Conflict("RunNotCancellable", f"run {run_id!r} has already {status}")
            # Each write names the state it expects: a runner may claim or end the run meanwhile.
            if (
                status == "queued"
                and self._exec(
                    cursor,
                    "UPDATE runs SET status = 'cancelled', error = ?, finished_at = ? "
                    "WHERE id = ? AND status = 'queued' RETURNING id",
                    (error, now, run_id),
                ).fetchone()
            ):
                self._exec(
                    cursor,
                    "UPDATE sessions SET status = 'cancelled', updated_at = ? WHERE id = ?",
                    (now, session_id),
                )
                self._insert_events(cursor, run_id, [("run_cancelled", {})], now)
                self._drop_turns(cursor, run_id)  # a run put back in the queue may have some
                self._note_error(cursor, {"type": "cancelled"})
                self._roll_up(cursor, run_id, agent_name, now)
                self._notify(cursor, RUN_ENDED, run_id)
            else:
                self._exec(
                    cursor,
                    f"UPDATE runs SET cancel_requested = 1 WHERE id = ? AND {_RUNNING}",
                    (run_id,),
                )
            found = self._exec(
                cursor, f"SELECT {RUN_COLUMNS} FROM runs WHERE id = ?", (run_id,)
            ).fetchone()
            assert found is not None
            run = run_record(found)
            self._complete(cursor, [run], transcripts=True)
            if status == "queued" and run.status == "cancelled":  # cancelled here, not by a runner
                self._enqueue_webhook(cursor, run, now)
        if run.status in TERMINAL and run.status != "cancelled":  # it ended in the meantime
            raise Conflict("RunNotCancellable", f"run {run_id!r} has already {run.status}")
        return run

    def cancel_requests(self, run_ids: Sequence[str]) -> set[str]:
        """Return which of these runs someone asked to cancel (a runner's short poll)."""
        asked: set[str] = set()
        with self._tx(write=False) as cursor:
            for start in range(0, len(run_ids), _BATCH):
                chunk = list(run_ids[start : start + _BATCH])
                marks = ", ".join("?" * len(chunk))
                rows = self._exec(
                    cursor,
                    f"SELECT id FROM runs WHERE id IN ({marks}) AND cancel_requested = 1",
                    chunk,
                ).fetchall()
                asked.update(str(row[0]) for row in rows)
        return asked

    def _insert_events(
        self,
        cursor: Cursor,
        run_id: str,
        events: Sequence[tuple[str, dict[str, JsonValue]]],
        now: float,
    ) -> None:
        self._insert_rows(
            cursor,
            "events (run_id, type, data, created_at)",
            [(run_id, kind, dumps(data), now) for kind, data in events],
        )

    def add_events(self, run_id: str, events: Sequence[tuple[str, dict[str, JsonValue]]]) -> None:
        """Append events to a run's log."""
        if events:
            with self._tx() as cursor:
                self._insert_events(cursor, run_id, events, time.time())

    def add_events_many(
        self, events: Mapping[str, Sequence[tuple[str, dict[str, JsonValue]]]]
    ) -> None:
        """Append the events of several runs (by run id) in one transaction."""
        if any(events.values()):
            now = time.time()
            with self._tx() as cursor:
                for run_id, kept in events.items():
                    self._insert_events(cursor, run_id, kept, now)

    def events_after(self, run_id: str, after: int = 0, limit: int = 500) -> list[EventRecord]:
        """Return a run's events with an id above ``after``, oldest first."""
        with self._tx(write=False) as cursor:
            rows = self._exec(
                cursor,
                "SELECT id, run_id, type, data, created_at FROM events "
                "WHERE run_id = ? AND id > ? ORDER BY id LIMIT ?",
                (run_id, after, limit),
            ).fetchall()
            data = [loads(row[3]) for row in rows]
            self._read_events(cursor, run_id, data)
        return [
            EventRecord(
                id=int(str(row[0])),
                run_id=str(row[1]),
                type=str(row[2]),
                data=cast("dict[str, JsonValue]", value),
                created_at=float(str(row[4])),
            )
            for row, value in zip(rows, data, strict=True)
        ]
