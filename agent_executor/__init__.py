"""agentshape's executor: providers, the run loop, input tools, analytics and the CLI."""

from __future__ import annotations

__all__: list[str] = []
