"""The workspace the fs tools read: paths confined to one directory, files opened safely."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from pydantic import BaseModel, ConfigDict, Field

from agent_contracts._errors import ConfigError, ToolExecutionError

_BINARY_PROBE_BYTES = 8192
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC


class FsLimits(BaseModel):
    """Caps on what the filesystem tools return; a model's own smaller limits still apply."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    read_bytes: int = Field(default=64 * 1024, ge=1)
    """Most bytes ``fs:read`` returns from one call (64 KiB)."""
    list_entries: int = Field(default=1000, ge=1)
    """Most entries ``fs:list`` returns from one call."""
    search_results: int = Field(default=200, ge=1)
    """Most matching lines ``fs:search`` returns from one call."""
    search_seconds: float = Field(default=5.0, gt=0)
    """Deadline for one ``fs:search`` call, regular expression matching included."""
    search_file_bytes: int = Field(default=8 * 1024 * 1024, ge=1)
    """Files larger than this are skipped by ``fs:search`` (8 MiB)."""
    hit_chars: int = Field(default=400, ge=1)
    """Longest line text shown for one search hit; longer lines end in ``…``."""
    pattern_chars: int = Field(default=1000, ge=1)
    """Longest regular expression ``fs:search`` accepts."""
    pattern_size: int = Field(default=10_000, ge=1)
    """Largest estimated size of a compiled search pattern (counted repeats multiplied): a
    pattern such as ``a{1000000000}`` would take gigabytes just to compile."""
    walk_entries: int = Field(default=100_000, ge=1)
    """Most directory entries one ``fs:list`` or ``fs:search`` call visits."""
    walk_seconds: float = Field(default=5.0, gt=0)
    """Deadline for one ``fs:list`` walk (``fs:search`` has :attr:`search_seconds`)."""


def _refuse(tool: str, message: str) -> ToolExecutionError:
    return ToolExecutionError(message, tool=tool)


class Workspace:
    """The directory the filesystem tools may read, and the path checks that keep them in it.

    Args:
        root: The workspace directory; it is resolved once, here.

    Raises:
        ConfigError: ``root`` does not exist or is not a directory.
    """

    def __init__(self, root: Path) -> None:
        try:
            resolved = Path(root).resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise ConfigError(f"workspace {str(root)!r} does not exist") from exc
        if not resolved.is_dir():
            raise ConfigError(f"workspace {str(root)!r} is not a directory")
        self.root = resolved
        """The resolved workspace directory."""

    def contains(self, path: Path) -> bool:
        """Return whether the already resolved ``path`` is the root or inside it."""
        return path == self.root or path.is_relative_to(self.root)

    def relative(self, path: Path) -> str:
        r"""Return ``path`` (under the root) as a POSIX path relative to it, ``.`` for the root.

        A name's bytes that are not UTF-8 are shown as backslash escapes (``\xff``), so the
        listing is text any model API accepts.
        """
        return _shown(path.relative_to(self.root).as_posix() or ".")

    def resolve(self, raw: str, *, tool: str) -> Path:
        """Resolve a model-given path to an existing path inside the workspace.

        Args:
            raw: The path as the model wrote it, relative to the root (empty means the root).
            tool: The calling tool's name, for the error.

        Returns:
            The fully resolved path (every symlink followed).

        Raises:
            ToolExecutionError: The path is absolute, leads outside the workspace (by ``..`` or a
                symlink), loops, or does not exist.
        """
        if "\0" in raw:
            raise _refuse(tool, f"path {raw!r} contains a NUL character")
        if PurePosixPath(raw).is_absolute() or Path(raw).is_absolute():
            raise _refuse(
                tool, f"absolute path {raw!r} refused: give a path relative to the workspace root"
            )
        try:
            resolved = (self.root / raw).resolve()
        except (OSError, RuntimeError) as exc:
            raise _refuse(tool, f"path {raw!r} is a symlink loop") from exc
        if not self.contains(resolved):
            raise _refuse(tool, f"path {raw!r} leads outside the workspace")
        try:
            os.stat(resolved)
        except FileNotFoundError as exc:
            named = _unshown(raw)  # a name listed with \xNN escapes, given back as listed
            if named != raw:
                return self.resolve(named, tool=tool)
            raise _refuse(tool, f"no such file or directory: {raw!r}") from exc
        except OSError as exc:
            raise _refuse(tool, f"cannot access {raw!r}: {exc.strerror}") from exc
        return resolved


@dataclass
class _Skipped:
    """What a walk left out, so the output can say so."""

    outside: int = 0
    special: int = 0
    unreadable: int = 0
    binary: int = 0
    large: int = 0
    linked: int = 0
    stopped: str = ""
    """Why the walk stopped early (the entry cap or the deadline), or empty."""

    def notices(self) -> list[str]:
        parts = [
            (self.outside, "symlink(s) leading outside the workspace or nowhere skipped"),
            (self.special, "special file(s) (FIFO, socket or device) skipped"),
            (self.unreadable, "unreadable file(s) or directory(ies) skipped"),
            (self.binary, "binary file(s) skipped"),
            (self.large, "file(s) over the search size cap skipped"),
            (self.linked, "file(s) with more than one hard link skipped"),
        ]
        notes = [f"[{count} {what}]" for count, what in parts if count]
        if self.stopped:
            notes.append(f"[{self.stopped}: results are partial; narrow the path]")
        return notes


@dataclass(frozen=True)
class _Entry:
    shown: str
    """Path relative to the workspace root, as the model should write it (the link, if any)."""
    real: Path
    """The resolved path to open."""
    is_dir: bool


def _shown(name: str) -> str:
    r"""Return a file name as UTF-8 text: undecodable bytes become backslash escapes (``\xff``)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        try:
            return os.fsencode(name).decode("utf-8", "backslashreplace")
        except UnicodeEncodeError:
            return name.encode("utf-8", "backslashreplace").decode("utf-8")
    return name


def _unshown(name: str) -> str:
    """Undo :func:`_shown`: the escapes of bytes 0x80 to 0xFF become those bytes again."""
    return re.sub(r"\\x([89a-fA-F][0-9a-fA-F])", lambda m: chr(0xDC00 + int(m[1], 16)), name)


def _is_binary(handle: BinaryIO) -> bool:
    """Whether the file's first bytes hold a NUL; the file is left at its start."""
    binary = b"\0" in handle.read(_BINARY_PROBE_BYTES)
    handle.seek(0)
    return binary


class HardLinkedError(OSError):
    """A file with more than one hard link: its other name may be outside the workspace."""


def _open_regular(path: Path) -> BinaryIO | None:
    """Open a resolved path for reading if it is a regular file; ``None`` otherwise."""
    fd = os.open(path, _OPEN_FLAGS)
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    if info.st_nlink > 1:
        os.close(fd)
        raise HardLinkedError(f"it has {info.st_nlink} hard links")
    return os.fdopen(fd, "rb")
