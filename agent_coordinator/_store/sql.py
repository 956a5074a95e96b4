"""The store's SQL plumbing: transactions, their errors, migrations, row decoding.

:class:`SqlBase` says nothing about runs; a subclass (SQLite, PostgreSQL) only says where a
transaction's connection comes from, which driver errors mean the database cannot be used (503
``StoreUnavailable``, 507 ``StoreFull``), how a write transaction begins, how parameters are
written and how a claim skips rows other runners hold. Every query is written once, with ``?``
parameters.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext, suppress
from typing import ParamSpec, Protocol, TypeVar, cast

from pydantic import JsonValue
from pydantic_core import from_json, to_json

from agent_contracts._errors import ConfigError
from agent_coordinator._errors import StoreFull, StoreUnavailable
from agent_coordinator._store.migrations import MIGRATIONS
from agent_coordinator._store.records import (
    RunInput,
    RunKind,
    RunRecord,
    RunState,
    SessionRecord,
)
from agent_core._json_text import dump_json
from agent_core._odd_keys import NOT_READ, surrogate_json

__all__ = [
    "RUN_COLUMNS",
    "SESSION_COLUMNS",
    "STORE_ONCE_VERSION",
    "TRANSCRIPT_COLUMNS",
    "Cursor",
    "SqlBase",
    "checked_tables",
    "dumps",
    "filters",
    "lean_attempt_events",
    "loads",
    "not_a_store",
    "read_attempt",
    "read_transcript",
    "run_record",
    "session_record",
    "split_transcript",
    "stored_attempt",
    "stored_result",
    "stored_transcript",
]

logger = logging.getLogger(__name__)

_P = ParamSpec("_P")
_T = TypeVar("_T")

STORE_ONCE_VERSION = 8
"""The migration after which a run's result no longer repeats its attempts and transcript."""
_ELSEWHERE = "stored_elsewhere"
"""The key of a stored result naming what it leaves out (the library's ``RunResult`` forbids
keys of its own, so it never has this one)."""
_CONVERT_BATCH = 500
"""Runs one statement of the store-once conversion or of :meth:`SqlBase._complete` names."""

_MAX_PARAMETERS = 2000
"""Parameters one multi-row insert binds at most (SQLite allows 32,766, PostgreSQL 65,535)."""
_FIRST_PAUSE_S = 0.05
"""The first pause before a transaction that failed on a lost connection is tried again."""
_RETRY_LOG_S = 30.0
"""In an outage, seconds between two lines about the calls retried."""

RUN_COLUMNS = (
    "id, seq, session_id, kind, agent_name, status, input, idempotency_key, request_hash, "
    "result, error, lease_owner, lease_expires_at, claims, cancel_requested, created_at, "
    "started_at, finished_at"
)
TRANSCRIPT_COLUMNS = (
    "transcript, (SELECT m.message FROM system_messages m WHERE m.digest = sessions.system_digest)"
)
"""A session's stored transcript and the text of its system message (``NULL`` where the
transcript holds it inline, or has none), in a query of the ``sessions`` table: the two
arguments of :func:`read_transcript`."""
SESSION_COLUMNS = (
    f"id, seq, agent_name, status, {TRANSCRIPT_COLUMNS}, parent_session_id, depth, created_at, "
    "updated_at"
)


class Cursor(Protocol):
    """The part of a DB-API cursor the store uses."""

    @property
    def rowcount(self) -> int:
        """Rows the last statement changed."""

    def execute(self, query: str, params: Sequence[object] = ..., /) -> object:
        """Run one statement."""

    def fetchone(self) -> Sequence[object] | None:
        """Return the next row."""

    def fetchall(self) -> Sequence[Sequence[object]]:
        """Return the remaining rows."""


def dumps(value: object) -> str:
    r"""Return ``value`` as compact JSON text (UTF-8, not ASCII-escaped), for a TEXT column."""
    # Text UTF-8 cannot carry (a lone surrogate such as a model's cut emoji) is written as its
    # escape, so it is stored and read back equal.
    try:
        return to_json(value).decode()
    except ValueError:  # Pydantic refuses a lone surrogate; the library's writer escapes it
        return dump_json(value, compact=True)


def loads(value: object) -> JsonValue:
    """Return a TEXT column's JSON value (``NULL`` gives ``None``)."""
    if value is None:
        return None
    text = str(value)
    try:
        return cast("JsonValue", from_json(text))
    except ValueError:
        read = surrogate_json(text)  # Pydantic refuses an escaped lone surrogate
        if read is NOT_READ:
            raise
        return cast("JsonValue", read)


_RUN_FIELDS = frozenset(RunRecord.model_fields)


def run_record(row: Sequence[object], known_input: RunInput | None = None) -> RunRecord:
    """Return a row of :data:`RUN_COLUMNS` as a run.

    Args:
        row: The row.
        known_input: The run's request, when the caller has it (the row's is not read).
    """
    # The row is the store's own writing: the JSON columns are parsed without checking each column's
    # type once more.
    (
        run_id,
        seq,
        session_id,
        kind,
        agent_name,
        status,
        raw_input,
        idempotency_key,
        request_hash,
        result,
        error,
        lease_owner,
        lease_expires_at,
        claims,
        cancel_requested,
        created_at,
        started_at,
        finished_at,
    ) = row
    return RunRecord.model_construct(
        set(_RUN_FIELDS),  # every field is given: Pydantic need not work out which
        id=cast("str", run_id),
        seq=cast("int", seq),
        session_id=cast("str", session_id),
        kind=cast("RunKind", kind),
        agent_name=cast("str", agent_name),
        status=cast("RunState", status),
        input=RunInput.model_validate_json(str(raw_input)) if known_input is None else known_input,
        idempotency_key=cast("str | None", idempotency_key),
        request_hash=cast("str | None", request_hash),
        result=cast("dict[str, JsonValue] | None", loads(result)),
        error=cast("dict[str, JsonValue] | None", loads(error)),
        lease_owner=cast("str | None", lease_owner),
        lease_expires_at=cast("float | None", lease_expires_at),
        claims=cast("int", claims),
        cancel_requested=bool(cancel_requested),
        created_at=cast("float", created_at),
        started_at=cast("float | None", started_at),
        finished_at=cast("float | None", finished_at),
    )


def _same_json(a: JsonValue, b: JsonValue) -> bool:
    # One object is the same JSON: a runner's result shares the values the library parsed.
    return a is b or dumps(a) == dumps(b)


def _parsed(raw: JsonValue) -> JsonValue | None:
    """Return what an attempt's ``raw_output`` parses to as JSON, or ``None`` if it does not."""
    if not isinstance(raw, str):
        return None
    try:
        return loads(raw)
    except ValueError:
        return None


_last_read: list[tuple[str, JsonValue, bool]] = []
"""The last answer of :func:`_reads_as`: its text, its value and whether the one reads as the
other (kept with the value, so its identity cannot pass to another object meanwhile)."""


def _reads_as(raw: JsonValue, value: JsonValue) -> bool:
    """Whether the text ``raw`` reads as JSON exactly ``value`` (dumped, they are one text)."""
    # A run's end asks this twice of one text and one object: its submit_result call's raw
    # arguments are its attempt's raw output, and the runner hands over one parsed object for
    # both. The second answer is the first's, without parsing and dumping the text again.
    if not isinstance(raw, str):
        return _same_json(None, value)
    last = _last_read[0] if _last_read else None
    if last is not None and last[1] is value and last[0] == raw:
        return last[2]
    same = _same_json(_parsed(raw), value)
    _last_read[:] = [(raw, value, same)]
    return same


def stored_attempt(attempt: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """Return an attempt as the ``attempts`` table keeps it: its raw output, not its parse."""
    # parsed is kept only where it is not exactly what raw_output reads as JSON (dug out of prose,
    # or nothing parsed); read_attempt puts it back.
    parsed = attempt.get("parsed")
    if parsed is None or not _reads_as(attempt.get("raw_output"), parsed):
        return attempt
    return {key: value for key, value in attempt.items() if key != "parsed"}


def read_attempt(data: JsonValue) -> dict[str, JsonValue]:
    """Return an ``attempts`` row's data as the library's ``Attempt`` JSON."""
    attempt = cast("dict[str, JsonValue]", data)
    if "parsed" not in attempt:
        attempt["parsed"] = _parsed(attempt.get("raw_output"))
    return attempt


def _calls(message: JsonValue) -> list[dict[str, JsonValue]]:
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    return [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []


def stored_transcript(transcript: Sequence[JsonValue]) -> str:
    """Return a session's transcript as the ``sessions`` table keeps it (JSON text)."""
    # A tool call's arguments are left out where they are exactly what its raw_arguments read as
    # JSON; read_transcript puts them back.
    kept: list[JsonValue] = []
    for message in transcript:
        calls = _calls(message)
        if isinstance(message, dict) and calls:
            lean: list[JsonValue] = []
            for call in calls:
                arguments = call.get("arguments")
                if arguments is not None and _reads_as(call.get("raw_arguments"), arguments):
                    call = {key: value for key, value in call.items() if key != "arguments"}
                lean.append(call)
            message = {**message, "tool_calls": lean}
        kept.append(message)
    return dumps(kept)


def split_transcript(transcript: Sequence[JsonValue]) -> tuple[str, tuple[str, str] | None]:
    """Return a session's transcript as the store keeps it: its system message apart.

    Every session of an agent begins with the same system message, so the ``system_messages``
    table keeps each distinct one once, under a digest of its text, and the session's row names
    that digest (``sessions.system_digest``) in place of the message.

    Args:
        transcript: The library's messages (JSON).

    Returns:
        The ``sessions.transcript`` text (the messages after a first ``system`` message, as
        :func:`stored_transcript` writes them) and that message as ``(digest, text)``, or the
        whole transcript's text and ``None`` when it does not begin with a system message.
    """
    first = transcript[0] if transcript else None
    if not isinstance(first, dict) or first.get("role") != "system":
        return stored_transcript(transcript), None
    text = dumps(first)
    return stored_transcript(transcript[1:]), (_digest(text), text)


@functools.lru_cache(maxsize=256)
def _digest(text: str) -> str:
    """The digest naming a system message's text (each agent's is hashed once, not per run)."""
    # 128 bits of SHA-256: no two distinct texts a deployment holds share them.
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def read_transcript(value: object, system: object = None) -> list[JsonValue]:
    """Return a session's stored transcript as the library's messages (JSON).

    Args:
        value: The ``sessions.transcript`` column.
        system: The text of the session's system message kept apart (the second of
            :data:`TRANSCRIPT_COLUMNS`), or ``None`` where the transcript holds its own.

    Returns:
        The messages, the system message first where it was kept apart.
    """
    transcript = loads(value)
    if not isinstance(transcript, list):
        return []
    if system is not None:
        transcript.insert(0, loads(system))
    for message in transcript:
        for call in _calls(message):
            if "arguments" not in call:
                call["arguments"] = _parsed(call.get("raw_arguments"))
    return transcript


def stored_result(
    result: dict[str, JsonValue],
    attempts: Sequence[dict[str, JsonValue]],
    transcript: Sequence[JsonValue],
    error: JsonValue = None,
) -> dict[str, JsonValue]:
    """Return a run's result as the ``runs`` table keeps it: without what is stored elsewhere."""
    # Attempts live in the attempts table and the transcript with the session, so each is written
    # once: the result keeps their count or length instead, drops result_data where it is the last
    # attempt's parsed and error where it is the run's error column; SqlBase._complete puts them
    # back.
    kept = dict(result)
    elsewhere: list[JsonValue] = []
    if attempts and kept.get("attempts") == list(attempts):
        kept["attempts"] = len(attempts)
        data = kept.get("result_data")
        if data is not None and _same_json(attempts[-1].get("parsed"), data):
            del kept["result_data"]
            elsewhere.append("result_data")
    if kept.get("transcript") == list(transcript):
        kept["transcript"] = len(transcript)
    if error is not None and kept.get("error") == error:
        del kept["error"]
        elsewhere.append("error")
    if elsewhere:
        kept[_ELSEWHERE] = elsewhere
    return kept


def lean_attempt_events(
    events: Sequence[tuple[str, dict[str, JsonValue]]], attempts: Sequence[dict[str, JsonValue]]
) -> list[tuple[str, dict[str, JsonValue]]]:
    """Return events to store, their ``attempt`` events without the raw output attempts hold.

    The ``attempts`` table keeps each attempt's raw output once; the analytics sink cuts a long
    one, which is then kept. :meth:`SqlBase._read_events` puts an equal one back.
    """
    raws = {number: attempt.get("raw_output") for number, attempt in enumerate(attempts, 1)}
    kept: list[tuple[str, dict[str, JsonValue]]] = []
    for kind, data in events:
        raw = raws.get(cast("int", data.get("number"))) if kind == "attempt" else None
        if isinstance(raw, str) and raw and data.get("raw_output") == raw:
            data = {key: value for key, value in data.items() if key != "raw_output"}
        kept.append((kind, data))
    return kept


def session_record(row: Sequence[object]) -> SessionRecord:
    """Return a row of :data:`SESSION_COLUMNS` as a session (built as :func:`run_record` is)."""
    (
        session_id,
        seq,
        agent_name,
        status,
        transcript,
        system,
        parent_session_id,
        depth,
        created_at,
        updated_at,
    ) = row
    return SessionRecord.model_construct(
        id=cast("str", session_id),
        seq=cast("int", seq),
        agent_name=cast("str", agent_name),
        status=cast("RunState", status),
        transcript=read_transcript(transcript, system),
        parent_session_id=cast("str | None", parent_session_id),
        depth=cast("int", depth),
        created_at=cast("float", created_at),
        updated_at=cast("float", updated_at),
    )


class SqlBase(ABC):
    """A SQL database the store talks to."""

    # Subclasses set url, serial, error_type, skip_locked, begin_write and placeholder, and define
    # _checkout (how a transaction gets a connection) and _unusable (which driver errors mean the
    # database cannot be used).

    url: str
    """Where the data is, for people (a file path or a ``postgresql://`` URL without password)."""
    _retries_logged_at: float | None = None
    """When the last retry was logged (``time.monotonic``), in an outage; ``None`` outside one."""
    _retries_not_logged = 0
    """Retries since that line, not logged each."""
    serial: str
    """The column type of an auto-numbered 64-bit primary key."""
    error_type: str
    """The SQL expression for the ``type`` of the JSON in a run's ``error`` column (``r.error``)."""
    list_tables: str
    """A query of the names of the database's tables and views where the store makes its own
    (not an extension's)."""
    list_migration_columns: str
    """A query of the names of the columns of ``schema_migrations`` there."""
    skip_locked: str = ""
    """What a claim's row selection ends with so concurrent runners skip each other's rows."""
    lock_rows: str = ""
    """What a selection ends with to lock its rows until the transaction ends (SQLite's write
    transactions already hold the only write lock)."""
    hold_system_messages: str | None = None
    """A statement that keeps other transactions from storing a system message until this one
    ends, and waits for those storing one now (``None``: SQLite's one writer does already)."""
    begin_write: str = "BEGIN"
    """The statement that starts a write transaction."""
    begin_read: str = "BEGIN"
    """The statement that starts a read-only transaction."""
    placeholder: str = "?"
    """How the driver writes a query parameter."""
    integrity_errors: tuple[type[Exception], ...] = ()
    """The driver's unique-constraint violation exceptions."""
    serialize_writes: bool = False
    """Queue this process's write transactions behind one lock (SQLite has one writer anyway, and
    its busy handler sleeps far longer than a lock hand-over takes)."""
    thread_call_s: float = 30.0
    """Seconds a :meth:`call_in_thread` may take before it answers ``StoreUnavailable``."""
    retry_s: float = 3.0
    """Seconds :meth:`call` goes on trying a transaction that failed on a lost connection."""
    wakes_runners: bool = False
    """Whether :meth:`listen` hands over runs queued and ended in other processes (PostgreSQL);
    without it, runners and waiting requests in other processes only see them by polling."""
    one_statement_writes: bool = False
    """Whether a write of several tables may be one statement of data-modifying ``WITH``
    clauses, committed on its own (PostgreSQL): a run's creation and its usual end are then
    one round trip each instead of a transaction of several statements."""

    def __init__(self) -> None:
        self._write_lock = threading.Lock()

    # -- connections and transactions ---------------------------------------------------------

    @abstractmethod
    def _checkout(self, *, write: bool) -> AbstractContextManager[object]:
        """Lend the calling thread a connection for one transaction."""

    @abstractmethod
    def _cursor(self, connection: object) -> Cursor:
        """Return a cursor of ``connection``."""

    @abstractmethod
    def _lock_migrations(self, cursor: Cursor) -> None:
        """Keep two processes from migrating at once, inside the migration's transaction."""

    @abstractmethod
    def _unusable(
        self, error: Exception, connection: object, *, committing: bool
    ) -> StoreUnavailable | StoreFull | None:
        """Say what a driver's error means for the service, or ``None`` for an ordinary error."""

    @abstractmethod
    def close(self) -> None:
        """Close every connection this store opened."""

    def listen(self, channel: str, subscriber: Callable[[str], object]) -> Callable[[], None]:
        """Call ``subscriber`` on the running event loop when any process notifies ``channel``."""
        # Here nothing is ever notified (see wakes_runners).
        return _nothing

    def _notify(self, cursor: Cursor, channel: str, payload: str) -> None:
        """Notify ``channel`` with ``payload`` when the transaction of ``cursor`` commits."""
        # Here nothing: no other process could be told (see wakes_runners).
        return None

    def _q(self, query: str) -> str:
        return query if self.placeholder == "?" else query.replace("?", self.placeholder)

    async def call(self, method: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Call one of this store's (blocking) methods from async code.

        The event loop never waits on the database meanwhile (see :meth:`_call_once`).

        Args:
            method: A method of this store, such as ``store.get_run``.
            *args: Its positional arguments.
            **kwargs: Its keyword arguments.

        Returns:
            What the method returns.

        Raises:
            StoreUnavailable: The database could not be used, after the retries a transaction
                that failed on a lost connection before any commit gets.
            Exception: Whatever else the method raises.
        """
        return await self._retrying(lambda: self._call_once(method, *args, **kwargs))

    async def call_in_thread(
        self, function: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> _T:
        """Call blocking code reading this store in a worker thread, retried as :meth:`call` is.

        For reads with work of their own to do (a page put together from several reads), which
        would hold up the event loop. ``function`` is called again from the start when a
        transaction of it failed on a lost connection before any commit, so it must not write
        in more than one transaction.

        Args:
            function: The code to call.
            *args: Its positional arguments.
            **kwargs: Its keyword arguments.

        Returns:
            What ``function`` returns.

        Raises:
            StoreUnavailable: The database could not be used, after the retries, or the call
                took more than :attr:`thread_call_s` (a database that stopped answering holds
                its statement open; the thread is left to end when it answers).
            Exception: Whatever else ``function`` raises.
        """
        return await self._retrying(lambda: self._in_thread(function, *args, **kwargs))

    async def _in_thread(
        self, function: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> _T:
        running = asyncio.ensure_future(asyncio.to_thread(function, *args, **kwargs))
        try:
            done, _ = await asyncio.wait((running,), timeout=self.thread_call_s)
        finally:
            if not running.done():
                running.cancel()  # its answer is dropped; the thread cannot be stopped
        if not done:
            raise StoreUnavailable(
                f"the database at {self.url} did not answer within {self.thread_call_s:g} s"
            )
        return running.result()

    async def _retrying(self, attempt: Callable[[], Awaitable[_T]]) -> _T:
        """Await ``attempt()`` until it does not fail on a lost connection before any commit.

        With doubling pauses, for up to :attr:`retry_s` seconds.
        """
        deadline = time.monotonic() + self.retry_s
        pause = _FIRST_PAUSE_S
        while True:
            try:
                done = await attempt()
            except StoreUnavailable as error:
                if not error.retryable or time.monotonic() + pause > deadline:
                    raise
                self._log_retry(error, pause)
            else:
                if self._retries_logged_at is not None:  # the first call to succeed after it
                    self._retries_logged_at = None
                    self._retries_not_logged = 0
                    logger.warning("the database at %s answers again", self.url)
                return done
            await asyncio.sleep(pause)
            pause *= 2

    def _log_retry(self, error: StoreUnavailable, pause: float) -> None:
        """Log a call's retry: the first of an outage, then one line every :data:`_RETRY_LOG_S`.

        Every call waiting out an outage retries; a line for each would flood the log.
        """
        now = time.monotonic()
        logged = self._retries_logged_at
        if logged is not None and now - logged < _RETRY_LOG_S:
            self._retries_not_logged += 1
            return
        since = self._retries_not_logged
        more = f" ({since} more tries since the last line)" if since else ""
        logger.warning("%s; trying again in %.2f s%s", error.message, pause, more)
        self._retries_logged_at = now
        self._retries_not_logged = 0

    async def _call_once(
        self, method: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> _T:
        """Make one try of :meth:`call` without the event loop waiting: in a worker thread."""
        return await asyncio.to_thread(method, *args, **kwargs)

    def _holding_writes(self) -> AbstractContextManager[object]:
        """Hold this process's write lock (when writes are serialized) for one transaction."""
        return self._write_lock if self.serialize_writes else nullcontext()

    def _begin(self, cursor: Cursor, *, write: bool) -> None:
        cursor.execute(self.begin_write if write else self.begin_read)

    def _commit(self, cursor: Cursor) -> None:
        cursor.execute("COMMIT")

    def _rollback(self, cursor: Cursor) -> None:
        cursor.execute("ROLLBACK")

    def _pipeline(self, connection: object) -> AbstractContextManager[object]:
        """Send a transaction's statements without waiting for each answer, where the driver can.

        Only a read of a statement's rows waits, for every statement sent before it.
        """
        return nullcontext()

    def _tx(self, *, write: bool = True, pipelined: bool = False) -> AbstractContextManager[Cursor]:
        """Lend a cursor in a transaction, committed when the block ends, rolled back on error.

        Args:
            write: Whether the transaction writes (``begin_write``; else ``begin_read``).
            pipelined: Whether its statements may be sent without waiting for each answer.
        """
        return self._transaction(write=write, pipelined=pipelined)

    @contextmanager
    def _transaction(self, *, write: bool, pipelined: bool) -> Iterator[Cursor]:
        with self._checkout(write=write) as connection:
            committing = False
            try:
                cursor = self._cursor(connection)
                with self._holding_writes() if write else nullcontext(), ExitStack() as sent:
                    if pipelined:
                        sent.enter_context(self._pipeline(connection))
                    self._begin(cursor, write=write)
                    try:
                        yield cursor
                        committing = True
                        self._commit(cursor)
                        # A pipeline's answers: a statement that failed, skipping the COMMIT,
                        # raises here.
                        sent.close()
                    except BaseException:
                        with suppress(Exception):
                            sent.close()  # the answers sent so far, before the ROLLBACK
                        with suppress(Exception):
                            self._rollback(cursor)
                        raise
            except Exception as error:
                unusable = self._unusable(error, connection, committing=committing)
                if unusable is None:
                    raise
                raise unusable from error

    @contextmanager
    def _statement(self, *, applied_if_lost: bool) -> Iterator[Cursor]:
        """Lend a cursor for one statement that is its own transaction (no ``BEGIN``).

        For :attr:`one_statement_writes` stores only, whose connections commit each statement.

        Args:
            applied_if_lost: Whether a statement whose connection was lost before its answer
                may have been applied, so it must not be sent again (``StoreUnavailable`` not
                retryable); ``False`` where sending it again is safe (it then fails as a
                duplicate, which its caller recognises).
        """
        with self._checkout(write=True) as connection:
            try:
                yield self._cursor(connection)
            except Exception as error:
                unusable = self._unusable(error, connection, committing=applied_if_lost)
                if unusable is None:
                    raise
                raise unusable from error

    def _exec(self, cursor: Cursor, query: str, params: Sequence[object] = ()) -> Cursor:
        cursor.execute(self._q(query), tuple(params))
        return cursor

    def _insert_rows(
        self, cursor: Cursor, into: str, rows: Sequence[Sequence[object]], then: str = ""
    ) -> None:
        """Insert rows with as few statements as the parameter limit allows.

        Args:
            cursor: The transaction's cursor.
            into: The table and its columns, as ``INSERT INTO`` names them.
            rows: The rows, each with a value for every column.
            then: What each statement ends with (an ``ON CONFLICT`` clause).
        """
        # One multi-row INSERT is one statement and one round trip, where a row each is one per row.
        if not rows:
            return
        width = len(rows[0])
        mark = f"({', '.join('?' * width)})"
        per = max(1, _MAX_PARAMETERS // width)
        for start in range(0, len(rows), per):
            chunk = rows[start : start + per]
            self._exec(
                cursor,
                f"INSERT INTO {into} VALUES {', '.join([mark] * len(chunk))}{then}",
                [value for row in chunk for value in row],
            )

    def ready(self) -> None:
        """Check that the database answers (``GET /ready``) with one small read."""
        # Tried a second time at once after a connection lost before, which says nothing about the
        # database now.
        for last in (False, True):
            try:
                with self._tx(write=False) as cursor:
                    self._exec(cursor, "SELECT 1").fetchone()
            except StoreUnavailable as error:
                if last or not error.retryable:
                    raise
            else:
                return

    def _after_migration(self, cursor: Cursor, version: int) -> None:
        """Fill what a migration created from the data already stored (in its transaction)."""
        if version == STORE_ONCE_VERSION:
            self._store_once(cursor)

    def _store_once(self, cursor: Cursor) -> None:
        """Keep each thing once: the stored rows rewritten as the store now writes them."""
        # Rows are read a batch at a time in seq order; a copy that differs from what the attempts
        # table or the session holds is kept where it is.
        after = 0
        while True:
            rows = self._exec(
                cursor,
                "SELECT r.seq, r.id, r.result, s.transcript, r.error FROM runs r "
                "JOIN sessions s ON s.id = r.session_id "
                "WHERE r.seq > ? AND r.result IS NOT NULL ORDER BY r.seq LIMIT ?",
                (after, _CONVERT_BATCH),
            ).fetchall()
            if not rows:
                break
            after = int(str(rows[-1][0]))
            for _, run_id, raw, session_transcript, run_error in rows:
                result = loads(raw)
                messages = read_transcript(session_transcript)
                if not isinstance(result, dict):
                    continue
                attempts = [
                    (int(str(row[0])), read_attempt(loads(row[1])))
                    for row in self._exec(
                        cursor,
                        "SELECT number, data FROM attempts WHERE run_id = ? ORDER BY number",
                        (run_id,),
                    ).fetchall()
                ]
                for number, attempt in attempts:
                    lean = stored_attempt(attempt)
                    if lean is not attempt:
                        self._exec(
                            cursor,
                            "UPDATE attempts SET data = ? WHERE run_id = ? AND number = ?",
                            (dumps(lean), run_id, number),
                        )
                transcript = result.get("transcript")
                prefix = messages[: len(transcript)] if isinstance(transcript, list) else messages
                whole = [attempt for _, attempt in attempts]
                self._lean_attempt_events(cursor, str(run_id), whole)
                kept = stored_result(result, whole, prefix, loads(run_error))
                if kept != result:
                    self._exec(
                        cursor, "UPDATE runs SET result = ? WHERE id = ?", (dumps(kept), run_id)
                    )
        after = 0
        while True:
            rows = self._exec(
                cursor,
                "SELECT seq, id, transcript FROM sessions WHERE seq > ? ORDER BY seq LIMIT ?",
                (after, _CONVERT_BATCH),
            ).fetchall()
            if not rows:
                return
            after = int(str(rows[-1][0]))
            for _, session_id, text in rows:
                rewritten = stored_transcript(read_transcript(text))
                if rewritten != text:
                    self._exec(
                        cursor,
                        "UPDATE sessions SET transcript = ? WHERE id = ?",
                        (rewritten, session_id),
                    )

    def _lean_attempt_events(
        self, cursor: Cursor, run_id: str, attempts: Sequence[dict[str, JsonValue]]
    ) -> None:
        """Leave out of a run's stored ``attempt`` events the raw output its attempt rows hold."""
        # The analytics sink cuts a long raw_output, which is then kept; _read_events puts an equal
        # one back.
        raws = {number: attempt.get("raw_output") for number, attempt in enumerate(attempts, 1)}
        rows = self._exec(
            cursor,
            "SELECT id, data FROM events WHERE run_id = ? AND type = 'attempt'",
            (run_id,),
        ).fetchall()
        for event_id, data in rows:
            event = loads(data)
            if not isinstance(event, dict):
                continue
            raw = raws.get(cast("int", event.get("number")))
            if isinstance(raw, str) and raw and event.get("raw_output") == raw:
                del event["raw_output"]
                self._exec(
                    cursor, "UPDATE events SET data = ? WHERE id = ?", (dumps(event), event_id)
                )

    def _read_events(self, cursor: Cursor, run_id: str, events: list[JsonValue]) -> None:
        """Put back into a run's ``attempt`` events (in place) the raw output they left out."""
        lean = [
            event
            for event in events
            if isinstance(event, dict)
            and event.get("event") == "attempt"
            and "raw_output" not in event
        ]
        if not lean:
            return
        raws = {
            int(str(number)): read_attempt(loads(data)).get("raw_output")
            for number, data in self._exec(
                cursor, "SELECT number, data FROM attempts WHERE run_id = ?", (run_id,)
            ).fetchall()
        }
        for event in lean:
            assert isinstance(event, dict)
            event["raw_output"] = raws.get(cast("int", event.get("number")), "")

    def _complete(self, cursor: Cursor, runs: Sequence[RunRecord], *, transcripts: bool) -> None:
        """Put back into ended runs' results what :func:`stored_result` left out."""
        counted = [run for run in runs if isinstance((run.result or {}).get("attempts"), int)]
        attempts: dict[str, list[dict[str, JsonValue]]] = {run.id: [] for run in counted}
        for start in range(0, len(counted), _CONVERT_BATCH):
            chunk = [run.id for run in counted[start : start + _CONVERT_BATCH]]
            for run_id, data in self._exec(
                cursor,
                f"SELECT run_id, data FROM attempts WHERE run_id IN ({', '.join('?' * len(chunk))})"
                " ORDER BY run_id, number",
                chunk,
            ).fetchall():
                attempts[str(run_id)].append(read_attempt(loads(data)))
        sessions: dict[str, list[JsonValue]] = {}
        for run in runs:
            result = run.result
            if result is None:
                continue
            elsewhere = result.pop(_ELSEWHERE, [])
            if isinstance(elsewhere, list) and "error" in elsewhere:
                result["error"] = cast("JsonValue", run.error)
            if run.id in attempts:
                whole = attempts[run.id]
                result["attempts"] = cast("list[JsonValue]", whole)
                if isinstance(elsewhere, list) and "result_data" in elsewhere:
                    result["result_data"] = whole[-1].get("parsed") if whole else None
            length = result.get("transcript")
            if not isinstance(length, int):
                continue
            if not transcripts:
                del result["transcript"]
                continue
            if run.session_id not in sessions:
                row = self._exec(
                    cursor,
                    f"SELECT {TRANSCRIPT_COLUMNS} FROM sessions WHERE id = ?",
                    (run.session_id,),
                ).fetchone()
                sessions[run.session_id] = read_transcript(*row) if row is not None else []
            result["transcript"] = sessions[run.session_id][:length]

    def migrate(self, *, apply: bool = True) -> int:
        """Create or upgrade the tables, applying every migration not yet recorded.

        Args:
            apply: ``False`` changes nothing: it checks that the tables are this version's
                (a database with none yet gives 0).

        Returns:
            The version the tables are at.

        Raises:
            ConfigError: The database holds tables but not the store's (another program's
                database), or, with ``apply=False``, its tables are not up to date.
        """
        latest = MIGRATIONS[-1][0]
        with self._tx(write=apply) as cursor:
            tables = checked_tables(
                self.url,
                lambda query: self._exec(cursor, query).fetchall(),
                self.list_tables,
                self.list_migration_columns,
            )
            if not apply:
                current = 0
                if tables:
                    row = self._exec(
                        cursor, "SELECT MAX(version) FROM schema_migrations"
                    ).fetchone()
                    current = int(str(row[0])) if row is not None and row[0] is not None else 0
                if tables and current < latest:
                    raise ConfigError(
                        f"the store at {self.url} is at version {current} of its tables, not "
                        f"{latest}: this command changes nothing, so it does not upgrade it "
                        "(any other command does, serve and db prune without --dry-run too)"
                    )
                return current
            self._lock_migrations(cursor)
            self._exec(
                cursor,
                "CREATE TABLE IF NOT EXISTS schema_migrations "
                "(version INTEGER PRIMARY KEY, applied_at DOUBLE PRECISION NOT NULL)",
            )
            row = self._exec(cursor, "SELECT MAX(version) FROM schema_migrations").fetchone()
            current = int(str(row[0])) if row is not None and row[0] is not None else 0
            for version, statements in MIGRATIONS:
                if version <= current:
                    continue
                for statement in statements:
                    self._exec(
                        cursor, statement.format(serial=self.serial, error_type=self.error_type)
                    )
                self._after_migration(cursor, version)
                self._exec(
                    cursor,
                    "INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)",
                    (version, time.time()),
                )
                current = version
        return current


def checked_tables(
    where: str,
    rows: Callable[[str], Sequence[Sequence[object]]],
    list_tables: str,
    list_migration_columns: str,
) -> set[str]:
    """Return the tables of a database the store may use; raise if it is another program's.

    A database is the store's when it holds no table, or a ``schema_migrations`` of the
    store's own making (with its ``applied_at``: Rails, Ecto, golang-migrate and dbmate name
    theirs the same).

    Args:
        where: The database, for the message.
        rows: Runs a query, returns its rows.
        list_tables: The dialect's query of the table names.
        list_migration_columns: The dialect's query of ``schema_migrations``' columns.

    Raises:
        ConfigError: The database holds tables and not the store's.
    """
    tables = {str(row[0]) for row in rows(list_tables)}
    if not tables:
        return tables
    ours = "schema_migrations" in tables and "applied_at" in {
        str(row[0]) for row in rows(list_migration_columns)
    }
    if not ours:
        raise not_a_store(where, tables)
    return tables


def not_a_store(where: str, tables: Iterable[str]) -> ConfigError:
    """The error for a database that holds other tables than a store's, none of its own."""
    names = sorted(tables)
    shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    return ConfigError(
        f"the database at {where} is not an agentshape store: it holds other tables ({shown}) "
        "and none of the store's; name a new file or an empty database, so nothing of another "
        "program's is changed"
    )


def _nothing() -> None:
    """Stop a subscription that never gets anything."""


def filters(*, after: int | None = None, **equal: str | None) -> tuple[str, list[object]]:
    """Return a ``WHERE`` clause (or nothing) and its parameters: ``seq < after``, columns equal."""
    clauses: list[str] = []
    params: list[object] = []
    if after is not None:
        clauses.append("seq < ?")
        params.append(after)
    for column, value in equal.items():
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    return (" WHERE " + " AND ".join(clauses) if clauses else ""), params
