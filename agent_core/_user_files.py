"""Files a user names: read only regular ones within a cap; write whole files or nothing.

A FIFO named ``agent.yml`` would hang a plain ``open`` and ``/dev/zero`` would fill memory:
:func:`read_user_file` refuses both with an :class:`OSError` whose ``strerror`` says why.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

__all__ = [
    "MAX_CONFIG_BYTES",
    "MAX_DATA_BYTES",
    "read_user_file",
    "writable_output",
    "write_text_atomically",
]

MAX_CONFIG_BYTES = 16 * 1024 * 1024
"""Largest agent config, schema or single JSON file read (16 MiB)."""
MAX_DATA_BYTES = 1024 * 1024 * 1024
"""Largest tasks or results file read (1 GiB)."""

_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_CHUNK = 1024 * 1024


def _refused(path: Path, reason: str) -> OSError:
    return OSError(errno.EINVAL, reason, os.fspath(path))


def read_user_file(path: Path | str, *, max_bytes: int = MAX_CONFIG_BYTES) -> bytes:
    """Return the bytes of a regular file, refusing special files and files over the cap.

    Args:
        path: The file.
        max_bytes: The most bytes read; a larger file is refused.

    Raises:
        OSError: The file is missing (``FileNotFoundError``), a directory
            (``IsADirectoryError``), unreadable, not a regular file (a FIFO, device or socket),
            or larger than ``max_bytes``; ``strerror`` says which.
    """
    path = Path(path)
    fd = os.open(path, _FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
        if not stat.S_ISREG(mode):
            raise _refused(path, "not a regular file (a FIFO, device or socket), so not read")
        chunks: list[bytes] = []
        size = 0
        while True:  # read to the end, not to st_size: the file may still be growing
            chunk = os.read(fd, _CHUNK)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise _refused(path, f"larger than the {_megabytes(max_bytes)} cap, so not read")
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _megabytes(count: int) -> str:
    return f"{count // (1024 * 1024)} MiB" if count >= 1024 * 1024 else f"{count} bytes"


def writable_output(path: Path | str) -> str | None:
    """Say why ``path`` cannot be an output file, or return ``None`` when it can.

    An output file is a regular file (or does not exist yet) with one name: a device such as
    ``/dev/full``, a FIFO or ``/dev/stdout`` into a pipe would never end or block, and a file with
    more than one hard link may be another input (a tasks file) under a second name.

    Args:
        path: The output file.
    """
    try:
        info = os.stat(path)
    except OSError:  # missing (it is created), or unreachable: opening it says why
        return None
    if stat.S_ISDIR(info.st_mode):
        return "is a directory"
    if not stat.S_ISREG(info.st_mode):
        return "is not a regular file (a device, FIFO or socket)"
    if info.st_nlink > 1:
        return (
            f"has {info.st_nlink} hard links, so it may be another file under a second name; "
            "name a file of its own"
        )
    return None


def write_text_atomically(path: Path | str, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` whole or not at all: a temporary file, then a rename.

    A full disk or an interruption leaves the old file (or none), never a partial one. Text
    UTF-8 cannot encode (a lone surrogate) is written as its backslash escape.

    Args:
        path: The file; its directory is created as needed.
        text: The content.

    Returns:
        The path written.

    Raises:
        OSError: The file cannot be written (the temporary file is removed).
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(
        dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8", errors="backslashreplace") as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target
