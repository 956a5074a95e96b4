"""The embedded store: one SQLite file in WAL mode, the default with no configuration.

Writes take SQLite's single write lock up front (``BEGIN IMMEDIATE``), which makes a claim the
one-writer equivalent of PostgreSQL's ``FOR UPDATE SKIP LOCKED``: two runners, in one process or
several, never claim the same run. Readers never wait for the writer (WAL).

From async code (:meth:`SqliteStore.call`) a call runs in place on the event loop's thread, on a
connection of its own that never waits: a SQLite transaction is shorter than handing it to a
worker thread and back. The writes a run makes (its creation, progress, events and end) are
committed in groups: those called while the event loop does its ready work wait for the end of
it, then run in one transaction, each in a savepoint of its own (one that fails is rolled back
alone), and commit at once. A commit writes every page it changed to the WAL, and the runs of a
group share most of theirs (the tables' and indexes' last pages); the figures their ends add to
the day's rollups are summed and written once for the group. A write of a group skips what the
group did for it (the ``BEGIN``, the write lock, the look at the file). When the write lock is
taken (by a worker thread of this process or by another process), a group tries again on the
event loop a moment later, with the writes called meanwhile, and after a second goes to worker
threads; a call made alone does not wait in place but goes to a worker thread at once. A worker
thread waits for the lock as long as ``timeout``. The in-place connection
leaves WAL checkpoints (which write and sync the database file) to a worker thread too, and keeps
the savepoints' undo pages in memory (``temp_store = MEMORY``), so a group writes its WAL pages
and no temporary file.

A file removed or replaced under the running service (its device and inode no longer those it
opened) would take every later write with it: each write transaction (and ``GET /ready``) looks
first, and from then on every transaction answers 503 ``StoreUnavailable`` and the error is
logged once. A full disk answers 507 ``StoreFull``.

A new file is made with ``auto_vacuum = INCREMENTAL``, so the pages a prune frees can be handed
back to the file system (:meth:`SqliteStore.reclaim_space`), and 4 KiB pages.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from datetime import date
from pathlib import Path
from typing import ParamSpec, TypeVar, cast

from agent_contracts._errors import ConfigError
from agent_coordinator._errors import StoreFull, StoreUnavailable
from agent_coordinator._store.base import Cursor, SqlStore
from agent_coordinator._store.rollups import _Figures
from agent_coordinator._store.sql import checked_tables

__all__ = ["DEFAULT_DATABASE", "SqliteStore"]

logger = logging.getLogger(__name__)

_P = ParamSpec("_P")
_T = TypeVar("_T")

DEFAULT_DATABASE = Path(".agentshape/coordinator.db")
"""Where the service keeps its data when given no ``--database``."""

_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
PAGE_SIZE = 4096
"""Bytes a page of a file this store makes holds (an existing file keeps its own)."""
_FIRST_PAUSE_S = 0.0005
"""How long a group that found the write lock taken waits before it tries again (doubled at
each try, up to :data:`_LONGEST_PAUSE_S`)."""
_LONGEST_PAUSE_S = 0.01
_WAIT_IN_PLACE_S = 1.0
"""How long a group waits for the write lock on the event loop before going to worker threads."""
_CHECKPOINT_EVERY = 200
"""In-place write transactions between two checkpoints run in a worker thread."""


_Queued = tuple[
    Callable[..., object], tuple[object, ...], dict[str, object], asyncio.Future[object]
]
"""A write waiting for a group commit: the method, its arguments, and its caller's answer."""
_GROUPED = frozenset(
    {"add_events_many", "create_claimed_run", "create_run", "finish", "record_progress"}
)
"""The store methods a run makes, whose calls from async code commit in groups (each of them
is its transactions and nothing else, so it can be a savepoint of a larger one)."""


def _group_name(method: Callable[..., object]) -> str:
    inner = method.func if isinstance(method, functools.partial) else method
    return getattr(inner, "__name__", "")


def _pass_on(answer: asyncio.Future[object], made: asyncio.Future[object]) -> None:
    """Give ``answer`` the outcome of ``made`` (a write made in a worker thread instead)."""
    if made.cancelled():
        if not answer.done():
            answer.cancel()
        return
    error = made.exception()  # retrieved even when no one waits: asyncio would log it
    if answer.done():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(made.result())


class _WouldWait(Exception):
    """An in-place call would have to wait for the write lock; it goes to a worker thread."""


class SqliteStore(SqlStore):
    """Runs and sessions in one SQLite file.

    Args:
        path: The file; it and its directory are created when missing (not when ``read_only``).
        timeout: Seconds a write waits for another process's lock.
        read_only: Read the file through read-only connections, writing nothing to it (a dry
            run's store: its writes fail).

    Raises:
        ConfigError: When its first connection is made: the file is not a SQLite database, or
            holds other tables than a store's and none of its own (it is left as it was).
    """

    serial = "INTEGER PRIMARY KEY AUTOINCREMENT"
    error_type = "json_extract(r.error, '$.type')"
    list_tables = (
        "SELECT name FROM sqlite_master "
        "WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite/_%' ESCAPE '/'"
    )
    list_migration_columns = "SELECT name FROM pragma_table_info('schema_migrations')"
    begin_write = "BEGIN IMMEDIATE"
    serialize_writes = True
    integrity_errors = (sqlite3.IntegrityError,)

    def __init__(
        self, path: str | Path = DEFAULT_DATABASE, *, timeout: float = 30.0, read_only: bool = False
    ) -> None:
        super().__init__()
        self.path = Path(path).absolute()
        self.url = str(self.path)
        self.timeout = timeout
        self.read_only = read_only
        if not read_only:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        self._writes_in_place = 0
        self._checkpoints: set[asyncio.Future[None]] = set()
        self._identity: tuple[int, int] | None = None
        """The file's device and inode, from the first connection on."""
        self._lost: str | None = None
        """Why the file can no longer be used, once it was found removed or replaced."""

    async def call(self, method: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> _T:
        """Call a store method in place, or in a worker thread when it would wait for a lock.

        A run's writes (:data:`_GROUPED`) are made in the next group commit, once the event loop
        has done its ready work (see the module's description).

        Args:
            method: A method of this store, such as ``store.get_run``.
            *args: Its positional arguments.
            **kwargs: Its keyword arguments.

        Returns:
            What the method returns.

        Raises:
            Exception: Whatever the method raises.
        """
        if _group_name(method) in _GROUPED and not getattr(self._local, "in_place", False):
            return cast("_T", await self._grouped(method, args, kwargs))
        if not getattr(self._local, "in_place", False):
            self._local.in_place = True
            try:
                return method(*args, **kwargs)
            except _WouldWait:
                pass  # nothing was written: the transaction never began
            except sqlite3.OperationalError as error:
                if error.sqlite_errorcode not in _BUSY_CODES:
                    raise
                # busy: rolled back by the transaction's exit, so the call can be made again
            finally:
                self._local.in_place = False
                self._checkpoint_now_and_then()
        return await asyncio.to_thread(method, *args, **kwargs)

    def _grouped(
        self, method: Callable[..., object], args: tuple[object, ...], kwargs: dict[str, object]
    ) -> asyncio.Future[object]:
        """Queue a write for the group that commits once the event loop's ready work is done.

        Each thread (so each event loop) has a group of its own: its writes are answered on it.
        """
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[object] = loop.create_future()
        pending: tuple[asyncio.AbstractEventLoop, list[_Queued]] | None = getattr(
            self._local, "group", None
        )
        if pending is None or pending[0] is not loop or not pending[1]:
            # (One left by a loop that closed before its group ran is dropped: no one waits.)
            pending = self._local.group = (loop, [])
            loop.call_soon(self._commit_group)
        pending[1].append((method, args, kwargs, answer))
        return answer

    def _commit_group(self) -> None:
        """Make this thread's queued writes in one transaction, each in a savepoint of its own.

        A write that fails rolls back its savepoint only; the rest commit together, then each
        caller gets its answer (the write of a caller that gave up meanwhile is made all the
        same, as one made in place would have been). Where the write lock is taken, the group
        is tried again a moment later (:meth:`_again_later`). A failure SQLite answers by
        rolling the whole transaction back (a full disk, an I/O error) fails the writes made
        before it with that error; those after it are made each on its own, in worker threads.
        """
        pending: tuple[asyncio.AbstractEventLoop, list[_Queued]] | None = getattr(
            self._local, "group", None
        )
        if pending is None:  # made by close() meanwhile
            return
        loop, group = pending
        self._local.group = None
        if self._lost is not None:
            self._each_in_thread(group)
            return
        if not self._write_lock.acquire(blocking=False):
            self._again_later(loop, group)
            return
        outcomes: list[tuple[asyncio.Future[object], object, BaseException | None]] = []
        rest: list[_Queued] = []
        busy = False
        self._local.in_place = True
        try:
            connection = self._connection()
            try:
                self._check_file()
                connection.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError as error:
                if error.sqlite_errorcode & 0xFF not in _BUSY_CODES:
                    raise
                busy = True  # another process writes
            else:
                self._local.waiting = None
                outcomes, rest = self._make_group(connection, group)
                self._writes_in_place += len(outcomes)
        except Exception as error:
            outcomes = [(answer, None, error) for _, _, _, answer in group]
        finally:
            self._local.in_place = False
            self._write_lock.release()
        if busy:
            self._again_later(loop, group)
            return
        for answer, value, failure in outcomes:
            if answer.done():
                continue
            if failure is None:
                answer.set_result(value)
            else:
                answer.set_exception(failure)
        self._each_in_thread(rest)
        try:
            self._checkpoint_now_and_then()
        except RuntimeError:  # the loop's executor is shut down: the service is stopping
            logger.warning("WAL checkpoint of %s not started", self.path, exc_info=True)

    def _again_later(self, loop: asyncio.AbstractEventLoop, group: list[_Queued]) -> None:
        """Try a group whose write lock is taken again soon, with the writes queued meanwhile.

        The lock is held for a transaction (another process's group, a worker thread's write),
        a millisecond or so: the group waits on the event loop, twice as long at each try, and
        goes to worker threads (which wait as long as ``timeout``) only after
        :data:`_WAIT_IN_PLACE_S`.
        """
        now = time.monotonic()
        since, pause = getattr(self._local, "waiting", None) or (now, _FIRST_PAUSE_S)
        if now - since > _WAIT_IN_PLACE_S:
            self._local.waiting = None
            self._each_in_thread(group)
            return
        self._local.waiting = (since, min(pause * 2, _LONGEST_PAUSE_S))
        self._local.group = (loop, group)
        loop.call_later(pause, self._commit_group)

    def _make_group(
        self, connection: sqlite3.Connection, group: list[_Queued]
    ) -> tuple[list[tuple[asyncio.Future[object], object, BaseException | None]], list[_Queued]]:
        """Make ``group``'s writes in the transaction begun on ``connection``, then commit it.

        Returns:
            Each write's answer future with its value or error, and the writes not made (after
            one whose failure ended the transaction).
        """
        outcomes: list[tuple[asyncio.Future[object], object, BaseException | None]] = []
        released: list[tuple[str, date, _Figures]] = []
        self._local.grouped = True
        self._local.figures = ([], released)
        try:
            for index, (method, args, kwargs, answer) in enumerate(group):
                try:
                    outcomes.append((answer, method(*args, **kwargs), None))
                except Exception as error:
                    if connection.in_transaction:  # only its savepoint was rolled back
                        outcomes.append((answer, None, error))
                        continue
                    # SQLite rolled the whole transaction back: what the group wrote is gone.
                    made = [(made, None, error) for made, _, _ in outcomes]
                    return [*made, (answer, None, error)], group[index + 1 :]
        finally:
            self._local.grouped = False
            self._local.figures = None
        try:
            self._add_held_figures(connection, released)
            connection.execute("COMMIT")
        except Exception as error:
            with suppress(Exception):
                connection.execute("ROLLBACK")
            failed = self._unusable(error, connection, committing=True) or error
            return [(answer, None, failed) for answer, _, _ in outcomes], []
        return outcomes, []

    def _each_in_thread(self, group: list[_Queued]) -> None:
        """Make each queued write on its own in a worker thread (which waits for the lock)."""
        for method, args, kwargs, answer in group:
            made = asyncio.ensure_future(asyncio.to_thread(method, *args, **kwargs))
            made.add_done_callback(functools.partial(_pass_on, answer))

    def _add_figures(self, cursor: Cursor, agent: str, day: date, figures: _Figures) -> None:
        """Add a run's figures to its agent's day; in a group, once for the whole group.

        The runs of a group mostly end on one agent's day: their figures are summed and written
        by :meth:`_add_held_figures` as the group commits, one upsert of the day's row and one
        of its keyed counts instead of those of each run. A write's figures count once its
        savepoint is released (:meth:`_savepoint`); a rolled-back write's are dropped.
        """
        held: tuple[list[tuple[str, date, _Figures]], list[tuple[str, date, _Figures]]] | None
        held = getattr(self._local, "figures", None)
        if held is None:
            super()._add_figures(cursor, agent, day, figures)
        else:
            held[0].append((agent, day, figures))

    def _add_held_figures(
        self, connection: sqlite3.Connection, released: list[tuple[str, date, _Figures]]
    ) -> None:
        """Write the figures a group's writes added, summed per agent and day."""
        if not released:
            return
        summed: dict[tuple[str, date], _Figures] = {}
        for agent, day, figures in released:
            kept = summed.setdefault((agent, day), figures)
            if kept is not figures:
                kept.add(figures)
        cursor = connection.cursor()
        for (agent, day), figures in sorted(summed.items()):
            super()._add_figures(cursor, agent, day, figures)

    def _tx(self, *, write: bool = True, pipelined: bool = False) -> AbstractContextManager[Cursor]:
        if getattr(self._local, "grouped", False):
            return self._savepoint()
        return super()._tx(write=write, pipelined=pipelined)

    @contextmanager
    def _savepoint(self) -> Iterator[Cursor]:
        """Lend a cursor for one write of a group: a savepoint of the group's transaction.

        The group began the transaction, holds the write lock and looked at the file; a write
        that fails is rolled back alone. The figures it adds (:meth:`_add_figures`) count once
        its savepoint is released.
        """
        connection: sqlite3.Connection = self._local.in_place_connection
        written, released = self._local.figures
        committing = False
        try:
            cursor = connection.cursor()
            cursor.execute("SAVEPOINT one")
            try:
                yield cursor
                committing = True
                cursor.execute("RELEASE one")
            except BaseException:
                written.clear()
                with suppress(Exception):
                    cursor.execute("ROLLBACK TO one")
                    cursor.execute("RELEASE one")
                raise
            released.extend(written)
            written.clear()
        except Exception as error:
            unusable = self._unusable(error, connection, committing=committing)
            if unusable is None:
                raise
            raise unusable from error

    def _checkpoint_now_and_then(self) -> None:
        if self._writes_in_place < _CHECKPOINT_EVERY:
            return
        self._writes_in_place = 0
        done = asyncio.get_running_loop().run_in_executor(None, self._checkpoint)
        self._checkpoints.add(done)
        done.add_done_callback(self._checkpointed)

    def _checkpointed(self, done: asyncio.Future[None]) -> None:
        self._checkpoints.discard(done)
        if not done.cancelled() and done.exception() is not None:
            logger.warning("WAL checkpoint of %s failed", self.path, exc_info=done.exception())

    def _checkpoint(self) -> None:
        cursor = self._cursor(self._connection())
        cursor.execute("PRAGMA wal_checkpoint(PASSIVE)")
        cursor.fetchone()

    def _connection(self) -> sqlite3.Connection:
        """Return the calling thread's connection (a second one for in-place calls)."""
        slot = "in_place_connection" if getattr(self._local, "in_place", False) else "connection"
        connection: sqlite3.Connection | None = getattr(self._local, slot, None)
        if connection is None:
            # Connecting to a missing file would make a new, empty one: look first.
            self._check_file()
            connection = self._connect(wait=slot == "connection")
            if self._identity is None:
                self._identity = self._file_identity()
            setattr(self._local, slot, connection)
            with self._lock:
                self._connections.append(connection)
        return connection

    @contextmanager
    def _checkout(self, *, write: bool) -> Iterator[object]:
        if self._lost is not None:
            raise StoreUnavailable(self._lost)
        connection = self._connection()
        if write:
            self._check_file()
        yield connection

    def _file_identity(self) -> tuple[int, int] | None:
        try:
            found = os.stat(self.path)
        except FileNotFoundError:
            return None
        return found.st_dev, found.st_ino

    def _check_file(self) -> None:
        """Raise (and log once) when the database file is no longer the one first opened."""
        if self._lost is None and self._identity is not None:
            identity = self._file_identity()
            if identity != self._identity:
                how = "removed" if identity is None else "replaced by another file"
                with self._lock:  # logged once, by whichever thread sees it first
                    if self._lost is None:
                        self._lost = (
                            f"the database file {self.path} was {how} while the service ran; "
                            "nothing more is written to it: restore the file or restart the "
                            "service"
                        )
                        logger.error("%s", self._lost)
        if self._lost is not None:
            raise StoreUnavailable(self._lost)

    def ready(self) -> None:
        """Check that the database file is the one opened and answers (``GET /ready``).

        Raises:
            StoreUnavailable: It was removed or replaced, or cannot be read.
        """
        self._check_file()
        super().ready()

    def _unusable(
        self, error: Exception, connection: object, *, committing: bool
    ) -> StoreUnavailable | StoreFull | None:
        code = getattr(error, "sqlite_errorcode", None)
        if (
            isinstance(error, sqlite3.Error)
            and code is not None
            and code & 0xFF == sqlite3.SQLITE_FULL
        ):
            return StoreFull(f"the disk holding the database {self.path} is full: {error}")
        return None

    def close(self) -> None:
        """Make the writes still queued for this thread's group, then close every connection.

        A group that waits for the write lock (another process holds it) waits on its event
        loop; if the loop ended meanwhile, its writes (a run's end among them) are made here,
        each waiting for the lock as long as ``timeout``, as they would have been.
        """
        pending: tuple[asyncio.AbstractEventLoop, list[_Queued]] | None = getattr(
            self._local, "group", None
        )
        self._local.group = None
        for method, args, kwargs, _ in pending[1] if pending is not None else ():
            try:
                method(*args, **kwargs)
            except Exception:
                logger.exception("a write queued when %s was closed failed", self.path)
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            with suppress(Exception):
                connection.close()
        self._local = threading.local()

    def _holding_writes(self) -> AbstractContextManager[object]:
        if getattr(self._local, "in_place", False):
            return self._write_lock_now()
        return super()._holding_writes()

    @contextmanager
    def _write_lock_now(self) -> Iterator[None]:
        if not self._write_lock.acquire(blocking=False):
            raise _WouldWait
        try:
            self._writes_in_place += 1
            yield
        finally:
            self._write_lock.release()

    def _connect(self, *, wait: bool = True) -> sqlite3.Connection:
        timeout = self.timeout if wait else 0.0
        new = not self.path.exists() or self.path.stat().st_size == 0
        if self.read_only:
            return self._connect_read_only(timeout)
        connection = sqlite3.connect(
            self.path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        if not new:
            # Before anything is written (WAL mode is written into the file): another program's
            # file is left as it is.
            try:
                checked_tables(
                    self.url,
                    lambda query: connection.execute(query).fetchall(),
                    self.list_tables,
                    self.list_migration_columns,
                )
            except sqlite3.DatabaseError as error:
                connection.close()
                if getattr(error, "sqlite_errorname", "") != "SQLITE_NOTADB":
                    raise
                raise ConfigError(
                    f"{self.path} is not a SQLite database: name a new file for the store"
                ) from None
            except ConfigError:
                connection.close()
                raise
        if new:
            # Only a new file takes it (before its first table); an existing one keeps its mode
            # until a VACUUM (see the README), and asking there writes (failing on a full disk).
            # A commit writes whole pages to the WAL, and its cost follows those bytes: small
            # pages make a run's two commits cheaper. A session's row fits two to a 4 KiB page
            # because its system message is kept apart, once (sql.split_transcript). (Set
            # first: auto_vacuum fixes the page size.)
            connection.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            connection.execute("PRAGMA auto_vacuum = INCREMENTAL")
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        if not wait:  # the in-place connection, which makes the group commits
            connection.execute("PRAGMA wal_autocheckpoint = 0")
            # A savepoint keeps the pages its write changes in a sub-journal, to undo the write
            # alone; past 64 KiB SQLite spills it to a temporary file, which a group's writes
            # would open, write and delete again: in memory, a group writes only its WAL pages.
            connection.execute("PRAGMA temp_store = MEMORY")
        return connection

    def _connect_read_only(self, timeout: float) -> sqlite3.Connection:
        """Connect without writing to the file: no journal mode set, no missing file made."""
        try:
            connection = sqlite3.connect(
                f"{self.path.as_uri()}?mode=ro",
                uri=True,
                timeout=timeout,
                isolation_level=None,
                check_same_thread=False,
            )
            connection.execute(self.list_tables).fetchall()
        except sqlite3.DatabaseError as error:
            if getattr(error, "sqlite_errorname", "") == "SQLITE_NOTADB":
                raise ConfigError(f"{self.path} is not a SQLite database") from None
            raise ConfigError(f"{self.path} cannot be read: {error}") from None
        connection.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        return connection

    def reclaim_space(self) -> None:
        """Return the pages deleted rows left free to the file system (``incremental_vacuum``).

        The file shrinks only where it was made with ``auto_vacuum = INCREMENTAL`` (every file
        this store creates); an older file keeps its free pages for new rows.
        """
        with self._checkout(write=True) as connection, self._holding_writes():
            assert isinstance(connection, sqlite3.Connection)
            # executescript steps the pragma to its end; a cursor's execute frees one page.
            connection.executescript("PRAGMA incremental_vacuum")

    def _lock_migrations(self, cursor: Cursor) -> None:
        """Nothing to do: ``BEGIN IMMEDIATE`` already holds the only write lock."""

    def _cursor(self, connection: object) -> Cursor:
        assert isinstance(connection, sqlite3.Connection)
        return connection.cursor()
