"""The analytics sink: every run's events as JSON lines, and the reader the CLI reviews them with.

A run reports each event to an :class:`AnalyticsSink`. :class:`JsonlAnalytics` appends one JSON
object a line to ``<directory>/events-YYYY-MM-DD.jsonl`` (default directory
``.agentshape/analytics/``), one file per UTC day, the day taken from the event's ``ts`` field
(the time of writing for an event without one). :class:`NullAnalytics` drops events and
:class:`MemoryAnalytics` keeps them in a list.

The sink is generic over Pydantic models, so it does not depend on the exact event classes in
:mod:`agent_contracts.events`. Before a line is written it passes the redaction every writer
uses (:mod:`agent_executor.redaction`): no configured API key, no key-shaped or key-named value
and no authorization header ever reaches the log. The line is serialised by Pydantic and
redacted as JSON text in one screening pass, so the cost stays small however long the output.

Writing never breaks a run: a failure (an unwritable directory, a full disk) is logged as a
warning through :mod:`logging` and counted in :attr:`JsonlAnalytics.dropped`.

:func:`read_events` (from :mod:`agent_executor.analytics_read`) reads the files back, skipping
and counting corrupt or partial lines; a bad line is never fatal.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from agent_executor.analytics_read import EventLines, ReadResult, as_utc, event_file, read_events
from agent_executor.analytics_writer import flush_pending, submit
from agent_executor.redaction import REDACTED, redact, redact_json_lines

__all__ = [
    "DEFAULT_ANALYTICS_DIR",
    "REDACTED",
    "AnalyticsSink",
    "EventLines",
    "JsonlAnalytics",
    "MemoryAnalytics",
    "NullAnalytics",
    "ReadResult",
    "as_utc",
    "event_file",
    "read_events",
    "redact",
]

logger = logging.getLogger(__name__)

DEFAULT_ANALYTICS_DIR = Path(".agentshape/analytics")
"""Where :class:`JsonlAnalytics` writes when given no directory (relative to the working directory
at construction)."""


@runtime_checkable
class AnalyticsSink(Protocol):
    """Where a run reports its events; ``emit`` must never raise."""

    def emit(self, event: BaseModel) -> None:
        """Record one event.

        Args:
            event: The event, a Pydantic model (see :mod:`agent_contracts.events`).
        """


class NullAnalytics:
    """A sink that drops every event."""

    def emit(self, event: BaseModel) -> None:
        """Drop the event."""


class MemoryAnalytics:
    """A sink that keeps events in a list, for tests and for callers who want them in hand.

    The events are kept as given, not redacted: nothing here is written anywhere.
    """

    def __init__(self) -> None:
        self.events: list[BaseModel] = []
        """Every event emitted, in order."""
        self._lock = threading.Lock()

    def emit(self, event: BaseModel) -> None:
        """Append the event to :attr:`events`."""
        with self._lock:
            self.events.append(event)


_Fields = tuple[type[BaseModel], dict[str, object]]
"""An event not built yet: its class and fields (:meth:`JsonlAnalytics.emit_fields`)."""


def _event_day(event: BaseModel) -> date:
    ts = getattr(event, "ts", None)
    if isinstance(ts, datetime):  # a naive time is UTC already; one in UTC needs no conversion
        return as_utc(ts).date() if ts.utcoffset() else ts.date()
    return datetime.now(UTC).date()


_KEPT_ACCEPTED = 2_000
"""Characters of an accepted attempt's ``raw_output`` a JSONL line keeps (the result has it all)."""
_KEPT_REJECTED = 65_536
"""Characters of a rejected attempt's ``raw_output`` a JSONL line keeps, for debugging it."""


def _bounded(event: BaseModel) -> BaseModel:
    """Return the event with a long ``raw_output`` cut, so a line's cost does not grow with it.

    An accepted attempt keeps its first 2,000 characters (the run's result holds the whole
    output), a rejected one its first 64 Ki characters; the cut says how much was left out.
    """
    # ``__dict__``: a missing attribute costs a Pydantic model an exception to say so.
    raw = event.__dict__.get("raw_output")
    if not isinstance(raw, str) or len(raw) <= _KEPT_ACCEPTED:
        return event
    keep = _KEPT_REJECTED if event.__dict__.get("errors") else _KEPT_ACCEPTED
    if len(raw) <= keep:
        return event
    cut = f"{raw[:keep]}... [{len(raw) - keep} more characters not logged]"
    return event.model_copy(update={"raw_output": cut})


def _serialised(event: BaseModel) -> bytes:
    """Return the event as compact JSON (UTF-8).

    Text that is not encodable UTF-8 (a lone surrogate from a model or a file name) cannot be
    written by Pydantic; such an event is written with ASCII escapes instead of being lost.
    """
    try:
        return event.__pydantic_serializer__.to_json(event)
    except ValueError:
        payload = event.model_dump(mode="json")
        return json.dumps(payload, ensure_ascii=True, separators=(",", ":")).encode()


class JsonlAnalytics:
    """A sink that appends each event as one JSON line to a file per UTC day.

    A long ``raw_output`` is cut (an accepted attempt keeps 2,000 characters, the result holds
    it all; a rejected one 64 Ki), so a line costs about the same whatever the output's size.

    Each line is serialised and redacted first, then written with a single ``os.write`` to the
    day's file opened with ``O_APPEND`` (the lines queued together, one after another, in one
    write), so processes and threads can share a file without torn or interleaved lines.
    ``O_APPEND`` makes every write land at the current end of the file. On Linux a ``write`` to a
    regular file on a local filesystem (ext4, xfs, btrfs, tmpfs) holds the inode lock for its whole
    length, so one ``write`` is never interleaved with another, however long the line; the
    ``PIPE_BUF`` (4 KiB) atomicity limit applies to pipes and FIFOs, not to regular files. Looping
    over partial writes would break this, so a short write (a full disk) is not retried: the line
    is ended with a newline if possible, the events whose lines were not written whole are counted
    as dropped, and :func:`read_events` counts the torn line as corrupt (or, unended at the end of
    the file, as partial). NFS does not honour ``O_APPEND`` atomically; keep the directory on a
    local disk.

    A failure to write never raises: the first failure after a success is logged as a warning
    (later ones at debug level, so a read-only directory does not flood the log) and every lost
    event is counted in :attr:`dropped`.

    By default a line is written soon after :meth:`emit` rather than inside it, so a run does
    not spend its own time on its log: while this process's next model call waits for its
    reply, or within 50 ms, in the order emitted (:mod:`agent_executor.analytics_writer`).
    Queued lines are written at interpreter exit, by :meth:`flush`, before :attr:`dropped` is
    read and before :func:`read_events` reads in this process; a hard kill (``SIGKILL``,
    ``os._exit``) loses the last 50 ms. ``defer=False`` writes each line inside :meth:`emit`.

    Args:
        directory: Where the files go; created as needed. Relative paths are taken from the
            working directory at construction.
        defer: Write lines soon after :meth:`emit` (the default) rather than inside it.
    """

    def __init__(
        self, directory: Path | str = DEFAULT_ANALYTICS_DIR, *, defer: bool = True
    ) -> None:
        self.directory = Path(directory).absolute()
        """The directory the day files are written to."""
        self.defer = defer
        """Whether lines are written soon after :meth:`emit` rather than inside it."""
        self._lock = threading.Lock()
        self._dropped = 0
        self._failing = False
        self._open: dict[Path, int] = {}  # the day file's descriptor, kept between events
        self._paths: dict[date, Path] = {}  # the day's file name, made once a day
        weakref.finalize(self, _close_all, self._open)

    @property
    def dropped(self) -> int:
        """How many events could not be written (queued ones are written first: :meth:`flush`)."""
        if self.defer:
            flush_pending()
        return self._dropped

    def flush(self, timeout: float = 10.0) -> bool:
        """Write every event queued so far (by any deferring sink of the process).

        Returns whether that was done within ``timeout`` seconds (another thread may be writing
        to a slow disk; a warning is logged if not); never raises.

        Args:
            timeout: Seconds to wait at most for a write another thread has under way.
        """
        return flush_pending(timeout)

    def emit(self, event: BaseModel) -> None:
        """Append the event, redacted, as one line to its UTC day's file; never raises.

        With ``defer`` (the default) the line is written soon after, see :meth:`flush`.
        """
        if self.defer:
            submit(self._write, event)
        else:
            self._write((event,))

    def emit_fields(self, kind: type[BaseModel], fields: dict[str, object]) -> None:
        """Append the event ``kind.model_validate(fields)`` as :meth:`emit` would; never raises.

        With ``defer`` the event is built when its line is written (off the run's path), its
        ``ts`` the time of this call. Fields that do not make a ``kind`` are counted in
        :attr:`dropped` and logged, as an event that cannot be serialised is.

        Args:
            kind: The event's class (an event of :mod:`agent_contracts.events`, or any model
                with an aware ``ts`` field or none).
            fields: Its fields; the sink keeps the dict (the caller makes a new one each time).
        """
        if "ts" not in fields and "ts" in kind.__pydantic_fields__:
            fields["ts"] = time.time()  # an aware UTC datetime once the event is built
        if self.defer:
            submit(self._write, (kind, fields))
        else:
            self._write(((kind, fields),))

    def _write(self, events: Sequence[BaseModel | _Fields]) -> None:
        """Append ``events``' lines, those of one day with one write."""
        days: dict[Path, list[bytes]] = {}
        for item in events:
            try:
                event = item if isinstance(item, BaseModel) else item[0].model_validate(item[1])
                line = _serialised(_bounded(event)) + b"\n"
            except Exception as exc:  # a model's own validator may raise anything: one line lost
                kind = type(item) if isinstance(item, BaseModel) else item[0]
                self._drop(f"cannot serialise {kind.__name__}: {exc}")
                continue
            day = _event_day(event)
            path = self._paths.get(day)
            if path is None:
                self._paths = {day: event_file(self.directory, day)}  # one day at a time
                path = self._paths[day]
            days.setdefault(path, []).append(line)
        for path, lines in days.items():  # redacted together: a pass per 64 KiB of lines
            try:
                data = b"".join(redact_json_lines(part) for part in _parts(lines))
            except Exception as exc:  # a bug of ours: the lines are lost, counted, never raised
                self._drop(f"cannot redact: {exc}", len(lines))
                continue
            try:
                self._append(path, data)
            except _ShortWrite as exc:
                self._drop(str(exc), exc.lost)
            except OSError as exc:
                self._drop(f"cannot write {path}: {exc.strerror or exc}", len(lines))

    def _append(self, path: Path, data: bytes) -> None:
        # The day file stays open (opening costs more than writing); it is opened again for a
        # new day, after a failed write, and once deleted (no links left: made anew).
        with self._lock:
            fd = self._open.get(path)
            if fd is None or os.fstat(fd).st_nlink == 0:
                _close_all(self._open)
                path.parent.mkdir(parents=True, exist_ok=True)
                flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC
                fd = os.open(path, flags, 0o600)
                self._open[path] = fd
            try:
                written = os.write(fd, data)
                if written != len(data):
                    with contextlib.suppress(OSError):
                        os.write(fd, b"\n")  # end the torn line so the next one stays whole
                    lost = data.count(b"\n", written)  # lines not written whole
                    raise _ShortWrite(f"short write: {written} of {len(data)} bytes", lost)
            except OSError:
                _close_all(self._open)
                raise
            self._failing = False

    def _drop(self, reason: str, events: int = 1) -> None:
        with self._lock:
            self._dropped += events
            first = not self._failing
            self._failing = True
        level = logging.WARNING if first else logging.DEBUG
        what = "analytics event" if events == 1 else f"{events} analytics events"
        logger.log(level, "%s dropped (%d so far): %s", what, self._dropped, reason)


_PART = 65_536
"""Bytes of lines redacted in one pass at most (a large backlog is not copied whole)."""


def _parts(lines: list[bytes]) -> Iterator[bytes]:
    """Yield ``lines`` joined in parts of about :data:`_PART` bytes (a line is never split)."""
    start, size = 0, 0
    for end, line in enumerate(lines, 1):
        size += len(line)
        if size >= _PART:
            yield b"".join(lines[start:end])
            start, size = end, 0
    if start < len(lines):
        yield b"".join(lines[start:])


class _ShortWrite(OSError):
    """A write that wrote part of its lines (a full disk); ``lost`` lines were not written whole."""

    def __init__(self, message: str, lost: int) -> None:
        super().__init__(message)
        self.lost = lost


def _close_all(kept: dict[Path, int]) -> None:
    for fd in kept.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    kept.clear()
