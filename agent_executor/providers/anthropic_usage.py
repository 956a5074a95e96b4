"""Token usage as Anthropic's Messages API reports it, read into the neutral Usage."""

from __future__ import annotations

from pydantic import JsonValue

from agent_contracts.messages import Usage


def _usage(usage: JsonValue) -> Usage:
    """Return token usage; cache writes and reads count as input tokens."""
    if not isinstance(usage, dict):
        return Usage(requests=1)

    def count(key: str) -> int:
        value = usage.get(key)
        return value if isinstance(value, int) else 0

    return Usage(
        input_tokens=count("input_tokens")
        + count("cache_creation_input_tokens")
        + count("cache_read_input_tokens"),
        output_tokens=count("output_tokens"),
        requests=1,
    )
