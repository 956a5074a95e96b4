"""The wire names of a request's tools: the names each provider may send, mapped both ways."""

from __future__ import annotations

import functools

from agent_core._tool_names import ToolNameMap
from agent_executor._providers.base import ModelTurnRequest

__all__ = ["tool_names_for"]


def tool_names_for(turn: ModelTurnRequest) -> ToolNameMap:
    """Return the wire names for every tool a request mentions: offered ones, then history's."""
    names = [tool.name for tool in turn.tools]
    for message in turn.messages:
        if message.tool_calls:
            names.extend([call.name for call in message.tool_calls])
        if message.tool_results:
            names.extend([result.name for result in message.tool_results])
    return _name_map(tuple(dict.fromkeys(names)))


@functools.lru_cache(maxsize=256)
def _name_map(names: tuple[str, ...]) -> ToolNameMap:
    """Return the map for ``names``, made once per set of names (a map never changes)."""
    return ToolNameMap(names)
