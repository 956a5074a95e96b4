"""``fs:read`` and ``fs:list``: read a file, list a directory, inside the workspace."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from pydantic import JsonValue

from agent_contracts._errors import ToolExecutionError
from agent_executor._providers.base import JsonObject
from agent_executor._tools.base import (
    InputTool,
    _arg,
    _arguments,
    _capped,
    _int_arg,
    _str_arg,
    tool_deadline,
)
from agent_executor._tools.sandbox import (
    FsLimits,
    HardLinkedError,
    Workspace,
    _Entry,
    _is_binary,
    _open_regular,
    _refuse,
    _Skipped,
)


class _FsTool(InputTool):
    """An input tool bound to a workspace and caps."""

    def __init__(
        self,
        workspace: Workspace,
        limits: FsLimits,
        *,
        name: str,
        description: str,
        parameters: JsonObject,
    ) -> None:
        super().__init__(name=name, description=description, parameters=parameters)
        self.workspace = workspace
        """The directory this tool may read."""
        self.limits = limits
        """The caps on this tool's output."""

    def _entries(self, directory: Path, skipped: _Skipped) -> Iterator[os.DirEntry[str]]:
        try:
            with os.scandir(directory) as scan:
                entries = sorted(scan, key=lambda entry: entry.name)
        except OSError:
            skipped.unreadable += 1
            return iter(())
        return iter(entries)

    def _walk(
        self, start: Path, *, recursive: bool, skipped: _Skipped, deadline: float
    ) -> Iterator[_Entry]:
        """Yield the entries under ``start`` depth-first in name order, inside the workspace."""
        stack = [self._entries(start, skipped)]
        visited = 0
        while stack:
            visited += 1
            if visited > self.limits.walk_entries:
                skipped.stopped = f"stopped after visiting {self.limits.walk_entries} entries"
                return
            if visited % 64 == 0 and time.monotonic() > deadline:
                skipped.stopped = "stopped at the time limit"
                return
            entry = next(stack[-1], None)
            if entry is None:
                stack.pop()
                continue
            path = Path(entry.path)
            try:
                if entry.is_symlink():
                    real = path.resolve(strict=True)
                    if not self.workspace.contains(real):
                        skipped.outside += 1
                        continue
                    mode = os.stat(real).st_mode
                else:
                    real, mode = path, entry.stat(follow_symlinks=False).st_mode
            except (OSError, RuntimeError):
                skipped.outside += 1  # a broken or looping link
                continue
            shown = self.workspace.relative(path)
            if stat.S_ISDIR(mode):
                yield _Entry(shown + "/", real, is_dir=True)
                if recursive and not entry.is_symlink():
                    stack.append(self._entries(path, skipped))
            elif stat.S_ISREG(mode):
                yield _Entry(shown, real, is_dir=False)
            else:
                skipped.special += 1


class FsRead(_FsTool):
    """``fs:read``: the text of one file, by lines, capped at :attr:`FsLimits.read_bytes`.

    Args:
        workspace: The directory the tool may read.
        limits: The output caps.
    """

    def __init__(self, workspace: Workspace, limits: FsLimits | None = None) -> None:
        limits = limits or FsLimits()
        super().__init__(
            workspace,
            limits,
            name="fs:read",
            description=(
                "Read a text file in the workspace. Returns its lines as they are, at most "
                f"{limits.read_bytes} bytes a call; a note at the end says where to continue."
            ),
            parameters=_arguments(
                ["path"],
                path=_arg("string", "File path relative to the workspace root.", minLength=1),
                offset=_arg("integer", "First line to return, 1-based (default 1).", minimum=1),
                limit=_arg("integer", "Most lines to return (default: as many as fit).", minimum=1),
                max_bytes=_arg(
                    "integer", f"Most bytes to return (at most {limits.read_bytes}).", minimum=1
                ),
            ),
        )

    def execute(self, arguments: dict[str, JsonValue]) -> str:
        """Return the requested lines of the file, with a note when more remain.

        Raises:
            ToolExecutionError: The path is refused or missing, is not a regular file, is binary,
                or ``offset`` is past its end.
        """
        raw = _str_arg(arguments, "path", "")
        offset = _int_arg(arguments, "offset") or 1
        limit = _int_arg(arguments, "limit")
        budget = _capped(_int_arg(arguments, "max_bytes"), self.limits.read_bytes)
        path = self.workspace.resolve(raw, tool=self.name)
        if path.is_dir():
            raise _refuse(self.name, f"{raw!r} is a directory: use fs:list")
        try:
            handle = _open_regular(path)
        except HardLinkedError as exc:
            raise _refuse(
                self.name,
                f"{raw!r} is refused: {exc}, so it may be a file outside the workspace",
            ) from exc
        except OSError as exc:
            raise _refuse(self.name, f"cannot open {raw!r}: {exc.strerror}") from exc
        if handle is None:
            raise _refuse(
                self.name, f"{raw!r} is not a regular file (a FIFO, socket or device): refused"
            )
        with handle:
            size = os.fstat(handle.fileno()).st_size
            if _is_binary(handle):
                raise _refuse(
                    self.name, f"{raw!r} is a binary file ({size} bytes): only text can be read"
                )
            return self._read_lines(handle, raw, offset=offset, limit=limit, budget=budget)

    def _read_lines(
        self, handle: BinaryIO, raw: str, *, offset: int, limit: int | None, budget: int
    ) -> str:
        done = 0  # lines consumed so far
        partial = False  # inside a line longer than one chunk, or a last line without newline
        while done < offset - 1:
            piece = handle.readline(64 * 1024)
            if piece:
                partial = not piece.endswith(b"\n")
                done += 0 if partial else 1
            elif partial:
                partial, done = False, done + 1
            else:
                raise self._past_end(raw, offset, done)
        out = bytearray()
        notice = ""
        while True:
            if limit is not None and done - (offset - 1) >= limit:
                if handle.read(1):
                    notice = f"[more lines follow: call fs:read with offset={done + 1}]"
                break
            remaining = budget - len(out)
            line = handle.readline(remaining + 1)
            if not line:
                break
            if len(line) > remaining:
                if out:
                    notice = (
                        f"[truncated at the {budget}-byte cap after line {done}: "
                        f"call fs:read with offset={done + 1} to continue]"
                    )
                else:
                    out += line[:remaining]
                    notice = (
                        f"[truncated: line {done + 1} is longer than the {budget}-byte cap; "
                        "only its start is shown]"
                    )
                break
            out += line
            done += 1
        text = out.decode("utf-8", errors="replace")
        if not text and not notice:
            if offset > 1:
                raise self._past_end(raw, offset, done)
            return "(empty file)"
        if notice:
            text += ("" if text.endswith("\n") or not text else "\n") + notice
        return text

    def _past_end(self, raw: str, offset: int, lines: int) -> ToolExecutionError:
        return _refuse(self.name, f"offset {offset} is past the end of {raw!r} ({lines} lines)")


class FsList(_FsTool):
    """``fs:list``: the entries of a directory, sorted, directories ending in ``/``.

    Args:
        workspace: The directory the tool may read.
        limits: The output caps.
    """

    def __init__(self, workspace: Workspace, limits: FsLimits | None = None) -> None:
        limits = limits or FsLimits()
        super().__init__(
            workspace,
            limits,
            name="fs:list",
            description=(
                "List a directory in the workspace: one path per line relative to the workspace "
                "root, directories ending in '/', sorted by name, at most "
                f"{limits.list_entries} entries a call."
            ),
            parameters=_arguments(
                [],
                path=_arg("string", "Directory relative to the workspace root (default '.')."),
                recursive=_arg("boolean", "Also list everything below it (default false)."),
                max_entries=_arg(
                    "integer", f"Most entries to return (at most {limits.list_entries}).", minimum=1
                ),
            ),
        )

    def execute(self, arguments: dict[str, JsonValue]) -> str:
        """Return the listing, one entry a line, with notes for what was cut or skipped.

        Raises:
            ToolExecutionError: The path is refused, missing, or not a directory.
        """
        raw = _str_arg(arguments, "path", ".")
        recursive = arguments.get("recursive") is True
        cap = _capped(_int_arg(arguments, "max_entries"), self.limits.list_entries)
        path = self.workspace.resolve(raw, tool=self.name)
        if not path.is_dir():
            raise _refuse(self.name, f"{raw!r} is not a directory: use fs:read")
        skipped = _Skipped()
        lines: list[str] = []
        truncated = False
        deadline = tool_deadline(self.limits.walk_seconds)
        for entry in self._walk(path, recursive=recursive, skipped=skipped, deadline=deadline):
            if len(lines) == cap:
                truncated = True
                break
            lines.append(entry.shown)
        if not lines:
            lines.append("(empty directory)")
        if truncated:
            lines.append(
                f"[truncated after {cap} entries: list a subdirectory or use fs:search to narrow]"
            )
        lines.extend(skipped.notices())
        return "\n".join(lines)
