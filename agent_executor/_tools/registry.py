"""The input tools an agent config may name, and :func:`build_input_tools`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agent_contracts._config import suggest_key
from agent_contracts._errors import ConfigError
from agent_executor._tools.base import InputTool
from agent_executor._tools.files import FsList, FsRead
from agent_executor._tools.sandbox import FsLimits, Workspace
from agent_executor._tools.search import FsSearch

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
