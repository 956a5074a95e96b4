"""``fs:search``: search the workspace's files for a pattern, within bounds."""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Iterator
from pathlib import PurePosixPath

import regex
from pydantic import JsonValue

from agent_executor._tools.base import _arg, _arguments, _capped, _int_arg, _str_arg, tool_deadline
from agent_executor._tools.files import _FsTool
from agent_executor._tools.patterns import pattern_problem
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
        own = time.monotonic() + self.limits.search_seconds
        deadline = tool_deadline(self.limits.search_seconds)
        raw = _str_arg(arguments, "path", ".")
        glob = _str_arg(arguments, "glob", "")
        cap = _capped(_int_arg(arguments, "max_results"), self.limits.search_results)
        flags = regex.IGNORECASE if arguments.get("ignore_case") is True else 0
        source = regex.escape(pattern) if arguments.get("literal") is True else pattern
        problem = pattern_problem(
            source, max_chars=self.limits.pattern_chars, max_size=self.limits.pattern_size
        )
        if problem:
            raise _refuse(self.name, f"pattern refused: {problem}")
        try:
            compiled = regex.compile(source, flags)
        except regex.error as exc:
            raise _refuse(
                self.name, f"invalid regular expression: {exc}; pass literal=true to search text"
            ) from exc
        start = self.workspace.resolve(raw, tool=self.name)
        skipped = _Skipped()
        if start.is_dir():
            files: Iterator[_Entry] = self._walk(
                start, recursive=True, skipped=skipped, deadline=deadline
            )
        else:
            files = iter([_Entry(self.workspace.relative(start), start, is_dir=False)])
        hits: list[str] = []
        stopped = "time" if time.monotonic() > deadline else ""  # compiling counts too
        for entry in [] if stopped else files:
            if entry.is_dir or not _glob_matches(glob, entry.shown):
                continue
            stopped = self._search_file(entry, compiled, hits, cap, deadline, skipped)
            if stopped:
                break
        if not hits:
            hits.append(f"no matches for {pattern!r}")
        if stopped == "cap":
            hits.append(f"[truncated after {cap} matches: narrow the pattern, path or glob]")
        elif stopped == "time":
            when = (
                "at the run's timeout"
                if deadline < own
                else f"after {self.limits.search_seconds:g} s"
            )
            hits.append(
                f"[search stopped {when}, results are partial: "
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
        except HardLinkedError:
            skipped.linked += 1
            return ""
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
