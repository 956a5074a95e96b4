"""Run an agent on a model served on your own machine (Ollama, llama.cpp's server, vLLM).

    ollama serve & ollama pull qwen3
    python examples/local_model.py ollama:qwen3
    LLAMACPP_BASE_URL=http://127.0.0.1:8080/v1 python examples/local_model.py llamacpp:gemma-3-270m

Any OpenAI-compatible server works with ``compatible:MODEL`` and ``OPENAI_COMPATIBLE_BASE_URL``.
``agentshape probe MODEL`` says what such a server accepts. Needs the ``openai`` extra.
"""

from __future__ import annotations

import sys

from pydantic import BaseModel

from agentshape import Agent


class Triage(BaseModel):
    """A small contract a small model can meet."""

    severity: int
    reason: str


def main(model: str) -> None:
    """Run once on the local model and print the typed result or why it failed."""
    agent = Agent(
        output_type=Triage,
        system_prompt="Rate the bug's severity from 1 (cosmetic) to 5 (data loss) and say why.",
        model=model,
    )
    result = agent.run_sync("Saving a file sometimes writes an empty file.")
    if result.error is not None:
        print("failed:", result.error.type, result.error.message)
        raise SystemExit(1)
    triage: Triage = result.output
    print(f"severity {triage.severity}: {triage.reason} (retries: {result.retries})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "ollama:qwen3")
