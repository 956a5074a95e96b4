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
A walk stops after :attr:`FsLimits.walk_entries` entries; a file with more than one hard link is
refused (``fs:read``) or skipped, since a hard link to a file outside cannot be told from it; the
bytes of a file name that are not UTF-8 are shown escaped. The tools stop at the run's timeout
too (:data:`~agent_executor._tools.base.RUN_DEADLINE`): a worker thread outlives a cancelled run.

``fs:search`` takes a regular expression in the syntax of the ``regex`` package (a superset of
:mod:`re`) unless ``literal`` is true. Python's :mod:`re` cannot be interrupted, so the search uses
``regex`` with a timeout: one overall deadline (:attr:`FsLimits.search_seconds`) bounds the whole
search, compiling and the walk and catastrophic backtracking included, and a search stopped by it
returns the matches found so far with a notice. Compiling itself cannot be interrupted and expands
counted repeats, so a pattern is checked first (:attr:`FsLimits.pattern_chars`,
:attr:`FsLimits.pattern_size`): ``a{1000000000}`` is refused before it can take the host's memory.
"""

from __future__ import annotations

from agent_executor._tools.base import InputTool
from agent_executor._tools.files import FsList, FsRead
from agent_executor._tools.registry import KNOWN_TOOLS, build_input_tools
from agent_executor._tools.sandbox import FsLimits, Workspace
from agent_executor._tools.search import FsSearch

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
