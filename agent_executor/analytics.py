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

:func:`read_events` reads the files back, skipping and counting corrupt or partial lines; a bad
line is never fatal.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import stat
import threading
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import BinaryIO, Protocol, runtime_checkable

from pydantic import BaseModel, JsonValue

from agent_executor.redaction import REDACTED, redact, redact_json_bytes

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

_FILE_PREFIX = "events-"
_FILE_SUFFIX = ".jsonl"


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


def as_utc(moment: datetime) -> datetime:
    """Return ``moment`` as an aware time in UTC; a naive time is taken to be UTC already.

    Args:
        moment: An aware or naive time.

    Returns:
        The same instant, with ``tzinfo=UTC``.
    """
    return moment.astimezone(UTC) if moment.tzinfo else moment.replace(tzinfo=UTC)


def _event_day(event: BaseModel) -> date:
    ts = getattr(event, "ts", None)
    if isinstance(ts, datetime):
        return as_utc(ts).date()
    return datetime.now(UTC).date()


def event_file(directory: Path, day: date) -> Path:
    """Return the file that holds the events of one UTC day: ``events-YYYY-MM-DD.jsonl``."""
    return directory / f"{_FILE_PREFIX}{day.isoformat()}{_FILE_SUFFIX}"


_KEPT_ACCEPTED = 2_000
"""Characters of an accepted attempt's ``raw_output`` a JSONL line keeps (the result has it all)."""
_KEPT_REJECTED = 65_536
"""Characters of a rejected attempt's ``raw_output`` a JSONL line keeps, for debugging it."""


def _bounded(event: BaseModel) -> BaseModel:
    """Return the event with a long ``raw_output`` cut, so a line's cost does not grow with it.

    An accepted attempt keeps its first 2,000 characters (the run's result holds the whole
    output), a rejected one its first 64 Ki characters; the cut says how much was left out.
    """
    raw = getattr(event, "raw_output", None)
    if not isinstance(raw, str) or len(raw) <= _KEPT_ACCEPTED:
        return event
    keep = _KEPT_REJECTED if getattr(event, "errors", None) else _KEPT_ACCEPTED
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
    day's file opened with ``O_APPEND``, so processes and threads can share a file without torn
    or interleaved lines. ``O_APPEND`` makes every write land at the current end of the file. On
    Linux a ``write`` to a regular file on a local filesystem (ext4, xfs, btrfs, tmpfs) holds
    the inode lock for its whole length, so one ``write`` is never interleaved with another,
    however long the line; the ``PIPE_BUF`` (4 KiB) atomicity limit applies to pipes and FIFOs,
    not to regular files. Looping over partial writes would break this, so a short write (a full
    disk) is not retried: the line is ended with a newline if possible, the event is counted as
    dropped, and :func:`read_events` counts the torn line as corrupt. NFS does not honour
    ``O_APPEND`` atomically; keep the directory on a local disk.

    A failure to write never raises: the first failure after a success is logged as a warning
    (later ones at debug level, so a read-only directory does not flood the log) and every lost
    event is counted in :attr:`dropped`.

    Args:
        directory: Where the files go; created as needed. Relative paths are taken from the
            working directory at construction.
    """

    def __init__(self, directory: Path | str = DEFAULT_ANALYTICS_DIR) -> None:
        self.directory = Path(directory).absolute()
        """The directory the day files are written to."""
        self._lock = threading.Lock()
        self._dropped = 0
        self._failing = False
        self._open: dict[Path, int] = {}  # the day file's descriptor, kept between events
        weakref.finalize(self, _close_all, self._open)

    @property
    def dropped(self) -> int:
        """How many events could not be written."""
        return self._dropped

    def emit(self, event: BaseModel) -> None:
        """Append the event, redacted, as one line to its UTC day's file; never raises."""
        try:
            line = redact_json_bytes(_serialised(_bounded(event))) + b"\n"
        except (TypeError, ValueError, RecursionError) as exc:  # incl. PydanticSerializationError
            self._drop(f"cannot serialise {type(event).__name__}: {exc}")
            return
        path = event_file(self.directory, _event_day(event))
        try:
            self._append(path, line)
        except OSError as exc:
            self._drop(f"cannot write {path}: {exc.strerror or exc}")

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
                    raise OSError(f"short write: {written} of {len(data)} bytes")
            except OSError:
                _close_all(self._open)
                raise
            self._failing = False

    def _drop(self, reason: str) -> None:
        with self._lock:
            self._dropped += 1
            first = not self._failing
            self._failing = True
        level = logging.WARNING if first else logging.DEBUG
        logger.log(level, "analytics event dropped (%d so far): %s", self._dropped, reason)


def _close_all(kept: dict[Path, int]) -> None:
    for fd in kept.values():
        with contextlib.suppress(OSError):
            os.close(fd)
    kept.clear()


@dataclass(frozen=True)
class ReadResult:
    """The events :func:`read_events` recovered, and what it had to skip.

    Iterating it yields the events.
    """

    events: list[dict[str, JsonValue]] = field(default_factory=list)
    """Each whole line that parsed to a JSON object, in file order (files by day)."""
    corrupt: int = 0
    """Lines skipped because they were not a JSON object (torn, glued or garbled)."""
    partial: int = 0
    """Last lines skipped because they had no newline yet (being written, or cut off)."""
    files: list[Path] = field(default_factory=list)
    """The files read."""
    unreadable: list[Path] = field(default_factory=list)
    """Files that could not be opened or read, and were skipped."""

    def __iter__(self) -> Iterator[dict[str, JsonValue]]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)


def _file_day(path: Path) -> date | None:
    stem = path.name.removeprefix(_FILE_PREFIX).removesuffix(_FILE_SUFFIX)
    try:
        return date.fromisoformat(stem)
    except ValueError:
        return None


def _event_time(event: dict[str, JsonValue]) -> datetime | None:
    ts = event.get("ts")
    if not isinstance(ts, str):
        return None
    try:
        parsed = datetime.fromisoformat(ts)
    except ValueError:
        return None
    # Not converted (a far-past offset time cannot be): comparing aware times is exact anyway.
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _json_object(raw: bytes) -> dict[str, JsonValue] | None:
    """Return the JSON object a line holds, or ``None`` when it holds anything else."""
    try:
        event = json.loads(raw)
    except (ValueError, RecursionError):  # UnicodeDecodeError, a huge integer, deep nesting
        return None
    return event if isinstance(event, dict) else None


def _at_or_after(event: dict[str, JsonValue], since: datetime) -> bool:
    """Whether the event has a readable ``ts`` at or after ``since`` (an aware time)."""
    when = _event_time(event)
    return when is not None and when >= since


def _open_log(path: Path) -> BinaryIO:
    """Open a log file for reading without blocking; a FIFO or device is refused (``OSError``)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return os.fdopen(fd, "rb")


class EventLines:
    """The whole lines of analytics files, read one at a time, with counts of what was skipped.

    Iterating reads the files in day order and yields each complete, non-blank line as bytes; a
    last line without its newline is counted in :attr:`partial`, an unreadable file is logged
    and listed in :attr:`unreadable`. Nothing is kept but the counts, so a log of any size is
    read in constant memory. The consumer decides what a line holds and counts the lines it
    cannot use in :attr:`corrupt`.

    Args:
        source: A directory (every ``events-*.jsonl`` in it, oldest day first) or one file.
        since: Day files before this time's UTC day are not read (an aware time, or ``None``).
    """

    def __init__(self, source: Path | str, *, since: datetime | None = None) -> None:
        source = Path(source)
        if source.is_dir():
            files = sorted(source.glob(f"{_FILE_PREFIX}*{_FILE_SUFFIX}"))
            if since is not None:
                first = as_utc(since).date()
                files = [f for f in files if (_file_day(f) or first) >= first]
        else:
            files = [source] if source.exists() else []
        self.files: list[Path] = files
        """The files to read."""
        self.unreadable: list[Path] = []
        """Files that could not be opened or read, and were skipped."""
        self.partial = 0
        """Last lines skipped because they had no newline yet (being written, or cut off)."""
        self.corrupt = 0
        """Lines the consumer could not use (not a JSON object: torn, glued or garbled)."""

    def __iter__(self) -> Iterator[bytes]:
        for path in self.files:
            try:
                with _open_log(path) as handle:
                    for raw in handle:
                        if not raw.endswith(b"\n"):
                            self.partial += 1
                        elif raw.strip():
                            yield raw
            except OSError as exc:
                logger.warning("cannot read analytics file %s: %s", path, exc.strerror or exc)
                self.unreadable.append(path)


def read_events(source: Path | str, *, since: datetime | None = None) -> ReadResult:
    """Read analytics events back from a directory of day files or from one file.

    Corrupt lines, a last line without its newline, and unreadable files are skipped and counted;
    none of them raises. A source that does not exist gives an empty result with no files. (To
    read a large log without holding it, iterate :class:`EventLines` instead.)

    Args:
        source: A directory (every ``events-*.jsonl`` in it, oldest day first) or one file.
        since: Keep only events whose ``ts`` is at or after this time (naive means UTC); events
            without a readable ``ts`` are left out, and day files before its UTC day are not read.

    Returns:
        The events as dicts, with counts of what was skipped.
    """
    since_utc = None if since is None else as_utc(since)
    lines = EventLines(source, since=since_utc)
    events: list[dict[str, JsonValue]] = []
    for raw in lines:
        event = _json_object(raw)
        if event is None:
            lines.corrupt += 1
        elif since_utc is None or _at_or_after(event, since_utc):
            events.append(event)
    return ReadResult(
        events=events,
        corrupt=lines.corrupt,
        partial=lines.partial,
        files=lines.files,
        unreadable=lines.unreadable,
    )
