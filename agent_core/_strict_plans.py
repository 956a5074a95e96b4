"""What strict compilation produces besides the schema: notes, and plans to map answers back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, JsonValue

__all__ = [
    "ArrayPlan",
    "CompileNote",
    "JsonDict",
    "NoteAction",
    "ObjectPlan",
    "Plan",
    "RefPlan",
    "StrictRules",
    "UnionPlan",
]


JsonDict = dict[str, JsonValue]


NoteAction = Literal[
    "moved to description",
    "dropped",
    "changed",
    "narrowed",
    "null means absent",
    "wrapped",
    "blocks strict",
]
"""What a dialect did with a keyword (see :class:`CompileNote`)."""


class CompileNote(BaseModel):
    """One keyword a dialect did not send to the provider exactly as the designer wrote it.

    Renders as ``$.properties.summary: minLength moved to description (not supported by OpenAI
    strict mode)``. Actions:

    * ``moved to description``: the provider does not enforce the keyword; the model reads it.
    * ``dropped``: the provider neither enforces nor sees it.
    * ``changed``: sent in another form: ``oneOf`` as ``anyOf``, ``minItems`` 3 as 1 (both
      weaker), ``allOf`` merged (exact).
    * ``narrowed``: the provider produces fewer values than the schema accepts (opt-in only).
    * ``null means absent``: an optional field with default null; a null from the provider is
      dropped.
    * ``wrapped``: the root travels as ``{"result": <value>}``.
    * ``blocks strict``: why the dialect fell back to non-strict.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: str
    """JSON path of the node in the designer's schema, ``$`` for the root."""
    keyword: str
    """The keyword concerned."""
    action: NoteAction
    """What happened to it."""
    detail: str
    """Why, in words."""

    def __str__(self) -> str:
        return f"{self.path}: {self.keyword} {self.action} ({self.detail})"


@dataclass(frozen=True)
class ObjectPlan:
    """Map back an object: drop nulls in ``drop_null`` fields, recurse into ``properties``."""

    properties: dict[str, Plan]
    drop_null: frozenset[str]


@dataclass(frozen=True)
class ArrayPlan:
    """Map back every item of an array."""

    items: Plan


@dataclass(frozen=True)
class UnionPlan:
    """Map back through the ``anyOf`` branch (compiled schema, plan) the value matches."""

    branches: tuple[tuple[JsonDict, Plan], ...]


@dataclass(frozen=True)
class RefPlan:
    """Map back through the plan of the named ``$defs`` entry."""

    name: str


Plan = ObjectPlan | ArrayPlan | UnionPlan | RefPlan | None
"""How to map a provider's answer back; ``None`` means "as it is"."""


@dataclass(frozen=True)
class StrictRules:
    """What one provider's strict mode accepts."""

    label: str
    """The mode's name in notes, such as ``OpenAI strict mode``."""
    all_required: bool
    """Every property must be required (optional ones become nullable)."""
    numeric_bounds: bool
    """``minimum``, ``maximum``, ``exclusive*`` and ``multipleOf`` are enforced."""
    array_bounds: bool
    """``minItems``/``maxItems`` are enforced; otherwise only ``minItems`` 0 or 1."""
    formats: frozenset[str]
    """String formats enforced."""
    recursion: bool
    """Recursive ``$ref`` is allowed."""
    complex_patterns: bool
    """Lookaround and backreferences in ``pattern`` are allowed."""
    max_properties: int | None = None
    """Most properties in one schema."""
    max_depth: int | None = None
    """Deepest object nesting."""
    max_enum_values: int | None = None
    """Most enum values in one schema."""
    max_optional: int | None = None
    """Most optional properties."""
    max_unions: int | None = None
    """Most union-typed values (``anyOf`` or a type list)."""
