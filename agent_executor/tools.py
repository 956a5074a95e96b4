"""Input tools: ``fs:read``, ``fs:list`` and ``fs:search`` over one workspace directory.

An agent config names the tools it may use (``tools: [fs:read, fs:search]``, or ``fs:*`` for all
of them); :func:`build_input_tools` turns those names into :class:`InputTool` objects, and the run
loop offers each one to the model with :meth:`InputTool.definition` and answers its calls with
:meth:`InputTool.call`. A failed call raises :class:`ToolExecutionError`, which the run loop sends
back to the model as an error tool result.

What the model can see is bounded by the workspace:

* Paths are relative to the workspace root. Absolute paths are refused, and so is any path
  whose fully resolved form (``..`` and every symlink followed) is outside the root.
* ``fs:read`` refuses a symlink that leads outside; ``fs:list`` and ``fs:search`` skip one and
  say how many they skipped. Symlinked directories are listed but never descended into, so a
  link loop cannot make a walk endless.
* Only regular files are opened, non-blocking and without following a final symlink, after the
  file type has been checked: a FIFO, socket or device is refused (``fs:read``) or skipped, and
  never hangs the call. A file with a NUL byte in its first 8 KiB counts as binary: ``fs:read``
  refuses it with its size and ``fs:search`` skips it.
* The tools never write, so the model cannot plant a symlink; the checks guard against what is
  already in the workspace, not against another process racing to change it.

Every output is capped (:class:`FsLimits`) and says so when it was cut, and how to get the rest.

``fs:search`` takes a regular expression in the syntax of the ``regex`` package (a superset of
:mod:`re`) unless ``literal`` is true. Python's :mod:`re` cannot be interrupted, so the search uses
``regex`` with a timeout: one overall deadline (:attr:`FsLimits.search_seconds`) bounds the whole
search, catastrophic backtracking included, and a search stopped by it returns the matches found
so far with a notice.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import stat
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import BinaryIO

import regex
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agent_contracts.config import suggest_key
from agent_contracts.errors import ConfigError, ToolExecutionError
from agent_core.validation import compile_schema
from agent_executor.providers.base import JsonObject, ToolDefinition

__all__ = [
    "KNOWN_TOOLS",
    "FsLimits",
    "FsList",
    "FsRead",
    "FsSearch",
    "InputTool",
    "Workspace",
    "build_input_tools",
]

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
        """Return ``path`` (under the root) as a POSIX path relative to it, ``.`` for the root."""
        return path.relative_to(self.root).as_posix() or "."

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
            raise _refuse(tool, f"no such file or directory: {raw!r}") from exc
        except OSError as exc:
            raise _refuse(tool, f"cannot access {raw!r}: {exc.strerror}") from exc
        return resolved


class InputTool(ABC):
    """A tool the model can call to look something up, in neutral form.

    A subclass passes its ``name``, ``description`` and ``parameters`` (the JSON Schema object of
    its arguments) to this constructor and implements :meth:`execute`; :meth:`call` validates the
    arguments against ``parameters`` first and runs :meth:`execute` in a worker thread.

    Args:
        name: The tool's name, such as ``fs:read``.
        description: What the tool does, for the model.
        parameters: The Draft-7 JSON Schema of the tool's arguments (an object schema).

    Raises:
        InvalidSchemaError: ``parameters`` is not a valid JSON Schema.
    """

    def __init__(self, *, name: str, description: str, parameters: JsonObject) -> None:
        self.name = name
        """The tool's name, such as ``fs:read``."""
        self.description = description
        """What the tool does, for the model."""
        self.parameters = parameters
        """The JSON Schema of the tool's arguments."""
        self._schema = compile_schema(parameters, source=f"tool {name}")

    def definition(self) -> ToolDefinition:
        """Return the neutral :class:`ToolDefinition` a provider offers to the model."""
        return ToolDefinition(
            name=self.name, description=self.description, parameters=self.parameters
        )

    def validate_arguments(self, arguments: JsonValue) -> dict[str, JsonValue]:
        """Check a call's arguments against :attr:`parameters`.

        Args:
            arguments: The parsed arguments of the call (``None`` counts as no arguments).

        Returns:
            The arguments as a JSON object.

        Raises:
            ToolExecutionError: The arguments are not an object or break the schema; ``errors``
                lists every problem.
        """
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            raise ToolExecutionError(
                f"arguments must be a JSON object, not {type(arguments).__name__}", tool=self.name
            )
        issues = self._schema.issues(arguments)
        if issues:
            raise ToolExecutionError("invalid arguments", tool=self.name, errors=issues)
        return arguments

    async def call(self, arguments: JsonValue) -> str:
        """Validate the arguments and run the tool without blocking the event loop.

        Args:
            arguments: The parsed arguments of the model's call.

        Returns:
            The text to send back to the model.

        Raises:
            ToolExecutionError: The arguments are invalid or the tool failed.
        """
        checked = self.validate_arguments(arguments)
        try:
            return await asyncio.to_thread(self.execute, checked)
        except OSError as exc:
            raise ToolExecutionError(exc.strerror or type(exc).__name__, tool=self.name) from exc

    @abstractmethod
    def execute(self, arguments: dict[str, JsonValue]) -> str:
        """Run the tool on already validated arguments; it may block.

        Args:
            arguments: Arguments that satisfy :attr:`parameters`.

        Returns:
            The text to send back to the model.

        Raises:
            ToolExecutionError: The tool cannot do what was asked.
        """


def _arg(kind: str, description: str, **bounds: int) -> JsonObject:
    schema: JsonObject = {"type": kind, "description": description}
    schema.update(bounds)
    return schema


def _arguments(required: list[str], **properties: JsonObject) -> JsonObject:
    schema: JsonObject = {"type": "object", "properties": dict(properties)}
    if required:
        schema["required"] = list(required)
    schema["additionalProperties"] = False
    return schema


def _int_arg(arguments: dict[str, JsonValue], key: str) -> int | None:
    value = arguments.get(key)
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _str_arg(arguments: dict[str, JsonValue], key: str, default: str) -> str:
    value = arguments.get(key)
    return value if isinstance(value, str) else default


def _capped(requested: int | None, cap: int) -> int:
    return cap if requested is None else min(requested, cap)


@dataclass
class _Skipped:
    """What a walk left out, so the output can say so."""

    outside: int = 0
    special: int = 0
    unreadable: int = 0
    binary: int = 0
    large: int = 0

    def notices(self) -> list[str]:
        parts = [
            (self.outside, "symlink(s) leading outside the workspace or nowhere skipped"),
            (self.special, "special file(s) (FIFO, socket or device) skipped"),
            (self.unreadable, "unreadable file(s) or directory(ies) skipped"),
            (self.binary, "binary file(s) skipped"),
            (self.large, "file(s) over the search size cap skipped"),
        ]
        return [f"[{count} {what}]" for count, what in parts if count]


@dataclass(frozen=True)
class _Entry:
    shown: str
    """Path relative to the workspace root, as the model should write it (the link, if any)."""
    real: Path
    """The resolved path to open."""
    is_dir: bool


def _is_binary(handle: BinaryIO) -> bool:
    """Whether the file's first bytes hold a NUL; the file is left at its start."""
    binary = b"\0" in handle.read(_BINARY_PROBE_BYTES)
    handle.seek(0)
    return binary


def _open_regular(path: Path) -> BinaryIO | None:
    """Open a resolved path for reading if it is a regular file; ``None`` otherwise.

    The open is non-blocking (a FIFO swapped in cannot hang it) and refuses a final symlink.
    """
    fd = os.open(path, _OPEN_FLAGS)
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        return None
    return os.fdopen(fd, "rb")


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

    def _walk(self, start: Path, *, recursive: bool, skipped: _Skipped) -> Iterator[_Entry]:
        """Yield the entries under ``start`` depth-first in name order, inside the workspace only.

        Symlinks are yielded under their own name when their target is inside the workspace, and
        a symlinked directory is never descended into.
        """
        stack = [self._entries(start, skipped)]
        while stack:
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
        for entry in self._walk(path, recursive=recursive, skipped=skipped):
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


class FsSearch(_FsTool):
    """``fs:search``: lines matching a pattern, as ``relpath:lineno: text``.

    The pattern is a regular expression (``regex`` package syntax, a superset of :mod:`re`)
    unless ``literal`` is true; the search stops at :attr:`FsLimits.search_seconds`.

    Args:
        workspace: The directory the tool may read.
        limits: The output caps.
    """

    def __init__(self, workspace: Workspace, limits: FsLimits | None = None) -> None:
        limits = limits or FsLimits()
        super().__init__(
            workspace,
            limits,
            name="fs:search",
            description=(
                "Search text files in the workspace for lines matching a regular expression "
                "(or literal text). Returns 'path:line: text' lines, at most "
                f"{limits.search_results} a call; binary files are skipped."
            ),
            parameters=_arguments(
                ["pattern"],
                pattern=_arg("string", "Regular expression to find in each line.", minLength=1),
                literal=_arg("boolean", "Match the pattern as plain text (default false)."),
                ignore_case=_arg("boolean", "Ignore letter case (default false)."),
                path=_arg("string", "File or directory to search (default '.', everything)."),
                glob=_arg(
                    "string",
                    "Only files matching this glob: '*.py' matches file names; a glob with '/' "
                    "matches the path from the workspace root.",
                    minLength=1,
                ),
                max_results=_arg(
                    "integer", f"Most lines to return (at most {limits.search_results}).", minimum=1
                ),
            ),
        )

    def execute(self, arguments: dict[str, JsonValue]) -> str:
        """Return the matching lines, with notes for what was cut, skipped or timed out.

        Raises:
            ToolExecutionError: The path is refused or missing, or the pattern does not compile.
        """
        pattern = _str_arg(arguments, "pattern", "")
        raw = _str_arg(arguments, "path", ".")
        glob = _str_arg(arguments, "glob", "")
        cap = _capped(_int_arg(arguments, "max_results"), self.limits.search_results)
        flags = regex.IGNORECASE if arguments.get("ignore_case") is True else 0
        source = regex.escape(pattern) if arguments.get("literal") is True else pattern
        try:
            compiled = regex.compile(source, flags)
        except regex.error as exc:
            raise _refuse(
                self.name, f"invalid regular expression: {exc}; pass literal=true to search text"
            ) from exc
        start = self.workspace.resolve(raw, tool=self.name)
        skipped = _Skipped()
        if start.is_dir():
            files: Iterator[_Entry] = (
                entry
                for entry in self._walk(start, recursive=True, skipped=skipped)
                if not entry.is_dir and _glob_matches(glob, entry.shown)
            )
        else:
            files = iter([_Entry(self.workspace.relative(start), start, is_dir=False)])
        deadline = time.monotonic() + self.limits.search_seconds
        hits: list[str] = []
        stopped = ""
        for entry in files:
            stopped = self._search_file(entry, compiled, hits, cap, deadline, skipped)
            if stopped:
                break
        if not hits:
            hits.append(f"no matches for {pattern!r}")
        if stopped == "cap":
            hits.append(f"[truncated after {cap} matches: narrow the pattern, path or glob]")
        elif stopped == "time":
            hits.append(
                f"[search stopped after {self.limits.search_seconds:g} s, results are partial: "
                "simplify the pattern (nested repeats backtrack badly), narrow the path, "
                "or pass literal=true]"
            )
        hits.extend(skipped.notices())
        return "\n".join(hits)

    def _search_file(
        self,
        entry: _Entry,
        compiled: regex.Pattern[str],
        hits: list[str],
        cap: int,
        deadline: float,
        skipped: _Skipped,
    ) -> str:
        """Append ``entry``'s matching lines to ``hits``; return ``cap``/``time`` if it stopped."""
        try:
            handle = _open_regular(entry.real)
        except OSError:
            skipped.unreadable += 1
            return ""
        if handle is None:
            skipped.special += 1
            return ""
        with handle:
            if os.fstat(handle.fileno()).st_size > self.limits.search_file_bytes:
                skipped.large += 1
                return ""
            if _is_binary(handle):
                skipped.binary += 1
                return ""
            for lineno, raw_line in enumerate(handle, start=1):
                line = raw_line.decode("utf-8", errors="replace").rstrip("\r\n")
                left = deadline - time.monotonic()
                if left <= 0:
                    return "time"
                try:
                    found = compiled.search(line, timeout=left)
                except TimeoutError:
                    return "time"
                if found is None:
                    continue
                if len(hits) == cap:
                    return "cap"
                if len(line) > self.limits.hit_chars:
                    line = line[: self.limits.hit_chars] + "…"
                hits.append(f"{entry.shown}:{lineno}: {line}")
        return ""


def _glob_matches(glob: str, shown: str) -> bool:
    if not glob:
        return True
    if "/" in glob:
        return fnmatch.fnmatchcase(shown, glob)
    return fnmatch.fnmatchcase(PurePosixPath(shown).name, glob)


_TOOL_CLASSES: dict[str, type[FsRead | FsList | FsSearch]] = {
    "fs:list": FsList,
    "fs:read": FsRead,
    "fs:search": FsSearch,
}

KNOWN_TOOLS: tuple[str, ...] = tuple(_TOOL_CLASSES)
"""The names :func:`build_input_tools` accepts (``fs:*`` stands for all of them)."""


def _expand(name: str) -> list[str]:
    if name in _TOOL_CLASSES:
        return [name]
    if name.endswith(":*"):
        matching = [known for known in KNOWN_TOOLS if known.startswith(name[:-1])]
        if matching:
            return matching
    hint = suggest_key(name, KNOWN_TOOLS)
    suggestion = f" (did you mean {hint!r}?)" if hint else ""
    raise ConfigError(
        f"unknown input tool {name!r}{suggestion}; known tools: {', '.join(KNOWN_TOOLS)}"
    )


def build_input_tools(
    names: Sequence[str], *, workspace: Path, limits: FsLimits | None = None
) -> list[InputTool]:
    """Build the input tools an agent config names, bound to one workspace.

    Args:
        names: Tool names from :data:`KNOWN_TOOLS`; ``fs:*`` stands for every ``fs:`` tool.
            A name given twice yields one tool; order follows first mention.
        workspace: The directory the tools may read.
        limits: Output caps; the defaults of :class:`FsLimits` when omitted.

    Returns:
        One tool per distinct name.

    Raises:
        ConfigError: A name is unknown (the message suggests the closest known one and lists
            them all), or ``workspace`` is not an existing directory.
    """
    wanted: list[str] = []
    for name in names:
        wanted.extend(known for known in _expand(name) if known not in wanted)
    if not wanted:
        return []
    root = Workspace(workspace)
    return [_TOOL_CLASSES[name](root, limits or FsLimits()) for name in wanted]
