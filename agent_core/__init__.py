"""agentshape's core: JSON Schema to exact Pydantic models, the output tool, prompts, extraction.

Pure logic over ``agent_contracts``; no network.
"""

from __future__ import annotations

__all__: list[str] = []
