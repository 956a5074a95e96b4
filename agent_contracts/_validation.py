"""One validation problem: where it is and what is wrong."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

__all__ = ["ValidationIssue"]


class ValidationIssue(BaseModel):
    """One problem found when a value is validated against a schema.

    Renders as ``$.issues[0].severity: 'critical' is not one of ['low', 'medium', 'high']``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    """JSON path of the offending value, ``$`` for the root."""
    message: str
    """What is wrong, in words a person can act on."""
    keyword: str | None = None
    """The schema keyword that failed (``enum``, ``required``...), when known."""
    schema_path: str | None = None
    """JSON path of the failing keyword inside the schema, when known."""

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"
