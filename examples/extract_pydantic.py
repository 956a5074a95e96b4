"""Extract structured data into a Pydantic class.

python examples/extract_pydantic.py                        # the offline test model
python examples/extract_pydantic.py openai:gpt-4.1-mini    # a real one (OPENAI_API_KEY)
"""

from __future__ import annotations

import sys

from pydantic import BaseModel, Field

from agentshape import Agent


class Invoice(BaseModel):
    """What the agent must return: every field checked before the run completes."""

    vendor: str = Field(min_length=1)
    total_cents: int = Field(ge=0)
    currency: str = Field(pattern="^[A-Z]{3}$")
    items: list[str]


def main(model: str) -> None:
    """Run the extractor once and print the typed result."""
    agent = Agent(
        output_type=Invoice,
        system_prompt="Extract the invoice the text describes. Amounts are in cents.",
        model=model,
    )
    result = agent.run_sync("ACME Corp billed us 1,250.00 EUR for two widgets and a gizmo.")
    invoice: Invoice = result.output  # an Invoice, or RunFailedError saying why not
    print(f"{invoice.vendor}: {invoice.total_cents} {invoice.currency}, {len(invoice.items)} items")
    print(f"status={result.status} retries={result.retries}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "test")
