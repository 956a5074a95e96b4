"""What a config-time schema check finds: a SchemaFinding, an error or a warning at a path."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

__all__ = ["SchemaFinding", "Severity"]


Severity = Literal["error", "warning"]
"""How bad a finding is: ``error`` makes the schema unusable, ``warning`` is probably a mistake."""


class SchemaFinding(BaseModel):
    """One problem found in an output schema at config time.

    Renders as ``agents/x.yml: $.properties.age: error: minimum 10 is greater than maximum 5``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    """JSON path of the schema node concerned, ``$`` for the root."""
    severity: Severity
    """``error`` (the schema cannot be used) or ``warning`` (probably a mistake)."""
    message: str
    """What is wrong and what to change."""
    keyword: str | None = None
    """The keyword concerned, when there is one."""
    source: str | None = None
    """Where the schema came from (a file, an agent id), when known."""

    def __str__(self) -> str:
        prefix = f"{self.source}: " if self.source else ""
        return f"{prefix}{self.path}: {self.severity}: {self.message}"
