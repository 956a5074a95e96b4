"""An agent's ``llm.limits``: how many calls its model may have in flight and make a minute."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["CallLimits"]


class CallLimits(BaseModel):
    """Limits on the calls to one provider and model, shared by every worker that uses them.

    A field left ``None`` sets no limit. Limits apply to the model a run calls; two agents on
    one model share them (the strictest value wins where they differ).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    concurrency: int | None = Field(default=None, ge=1)
    """Most calls in flight at once."""
    requests_per_minute: int | None = Field(default=None, ge=1)
    """Most calls started in any 60 seconds."""
    tokens_per_minute: int | None = Field(default=None, ge=1)
    """Most tokens (prompt and reply) used by the calls started in any 60 seconds; a call may
    start while the count is below the limit."""

    def any(self) -> bool:
        """Return whether any limit is set."""
        return any(
            value is not None
            for value in (self.concurrency, self.requests_per_minute, self.tokens_per_minute)
        )

    def tightest(self, other: CallLimits) -> CallLimits:
        """Return the stricter of each limit of this and ``other``.

        Args:
            other: Limits from another source (the command line's, another agent's).

        Returns:
            Each field the smaller of the two set values, ``None`` where neither is set.
        """

        def low(left: int | None, right: int | None) -> int | None:
            return right if left is None else left if right is None else min(left, right)

        return CallLimits(
            concurrency=low(self.concurrency, other.concurrency),
            requests_per_minute=low(self.requests_per_minute, other.requests_per_minute),
            tokens_per_minute=low(self.tokens_per_minute, other.tokens_per_minute),
        )
