"""An agent's configuration: one model that reads both config forms the design uses.

The blueprint form (snake_case keys at the top level)::

    name: code-analyzer
    system_prompt: You analyse code.
    output_schema: {type: object, ...}
    default_output_schema_options: {max_retries: 3}

and the ``kb.agent/1`` file form (nested sections, camelCase keys)::

    schema: kb.agent/1
    id: researcher
    llm: {model: openai:gpt-4o-mini, tiers: [openai:gpt-4o], temperature: 0, maxTokens: 2048}
    context: {static: {system: You research code.}}
    tools: [fs:read, fs:search]
    limits: {maxSteps: 12, tokenBudget: 50000, timeoutSeconds: 120}
    output:
      schema: {type: object, ...}
      mode: tool
      maxRetries: 2
      extractJson: true
      strictJsonOnly: false
      lenientFormats: false

Both normalise to the same typed fields of ``AgentConfig``. Each field may be given by one
spelling only: ``output.schema`` and ``output_schema`` together are an error, as are
``context.static.system`` and ``system_prompt``. Unknown keys at any depth are errors that name
the path and suggest the nearest known key. Every problem is reported at once, at the location
(``loc``) of the key the user wrote, so a loader can point at the line.

The model is pure data: schemas are kept as given and meta-validated by ``agent_core``.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    ModelWrapValidatorHandler,
    ValidationError,
    field_serializer,
    model_validator,
)
from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_core.core_schema import ErrorType

from agent_contracts.profiles import ProfileOverride
from agent_contracts.runs import JsonSchema, RunOptions

__all__ = ["CONFIG_SCHEMA_ID", "AgentConfig", "AgentType", "suggest_key"]

CONFIG_SCHEMA_ID = "kb.agent/1"
"""The ``schema:`` value of the file form that agentshape reads."""

AgentType = Literal["autonomous", "procedural"]
"""The blueprint ``type``: an autonomous agent runs a model loop; a procedural one is code."""

_Loc = tuple[str | int, ...]

# Every spelling of every normalised field; the first is the blueprint form's.
_SPELLINGS: dict[str, tuple[_Loc, ...]] = {
    "id": (("id",),),
    "name": (("name",),),
    "description": (("description",),),
    "type": (("type",),),
    "model": (("model",), ("llm", "model")),
    "model_tiers": (("model_tiers",), ("llm", "tiers")),
    "temperature": (("temperature",), ("llm", "temperature")),
    "max_tokens": (("max_tokens",), ("llm", "maxTokens")),
    "system_prompt": (("system_prompt",), ("context", "static", "system")),
    "tools": (("tools",),),
    "max_steps": (("max_steps",), ("limits", "maxSteps")),
    "parameters_schema": (("parameters_schema",),),
    "output_schema": (("output_schema",), ("output", "schema")),
    "default_output_schema": (("default_output_schema",),),
}

# Sections holding a whole ``RunOptions`` mapping.
_OPTION_SECTIONS = ("options", "default_output_schema_options")

# File-form spellings of single options.
_OPTION_SPELLINGS: dict[str, _Loc] = {
    "max_retries": ("output", "maxRetries"),
    "extract_json": ("output", "extractJson"),
    "strict_json_only": ("output", "strictJsonOnly"),
    "output_mode": ("output", "mode"),
    "lenient_formats": ("output", "lenientFormats"),
    "token_budget": ("limits", "tokenBudget"),
    "timeout_s": ("limits", "timeoutSeconds"),
}

# Where provider-profile overrides may be written (blueprint form, then file form).
_PROFILE_SPELLINGS: tuple[_Loc, ...] = (("profile",), ("llm", "profile"))

_KeyTree = dict[str, "_KeyTree | None"]


def _key_tree() -> _KeyTree:
    """Build the tree of accepted keys: a leaf is ``None``, a section a nested tree."""
    tree: _KeyTree = {"schema": None}
    locs = [loc for spellings in _SPELLINGS.values() for loc in spellings]
    locs += list(_OPTION_SPELLINGS.values())
    for loc in locs:
        node = tree
        for key in loc[:-1]:
            child = node.get(str(key))
            if child is None:
                child = node[str(key)] = {}
            node = child
        node[str(loc[-1])] = None
    for section in _OPTION_SECTIONS:
        tree[section] = dict.fromkeys(RunOptions.model_fields)
    for loc in _PROFILE_SPELLINGS:
        node = tree
        for key in loc[:-1]:
            child = node.get(str(key))
            if child is None:
                child = node[str(key)] = {}
            node = child
        node[str(loc[-1])] = dict.fromkeys(ProfileOverride.model_fields)
    return tree


_KEY_TREE = _key_tree()
_PYDANTIC_ERROR_TYPES = frozenset(get_args(ErrorType))


def suggest_key(key: str, known: list[str] | tuple[str, ...]) -> str | None:
    """Return the known key nearest to a mistyped one, or ``None`` when none is close.

    Keys that differ only in case, ``_`` or ``-`` match first (``maxSteps`` for ``max_steps``);
    otherwise ``difflib`` picks the closest spelling.

    Args:
        key: The key that was written.
        known: The keys accepted at that place.

    Returns:
        The suggestion, or ``None``.
    """

    def squash(text: str) -> str:
        return text.lower().replace("_", "").replace("-", "")

    for candidate in known:
        if squash(candidate) == squash(key):
            return candidate
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    return close[0] if close else None


def _dotted(loc: _Loc) -> str:
    """Render a location as ``$``, ``$.output`` or ``$.tools[1]``."""
    path = "$"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _problem(kind: str, loc: _Loc, value: object, message: str) -> InitErrorDetails:
    """Build one error for ``ValidationError.from_exception_data``."""
    return InitErrorDetails(
        type=PydanticCustomError(kind, "{message}", {"message": message}), loc=loc, input=value
    )


def _walk(
    mapping: Mapping[object, object],
    tree: _KeyTree,
    loc: _Loc,
    leaves: dict[_Loc, object],
    problems: list[InitErrorDetails],
) -> None:
    """Collect the leaf values under ``mapping`` and report keys the tree does not know."""
    for key, value in mapping.items():
        if not isinstance(key, str):
            problems.append(
                _problem("key_type", loc, key, f"key {key!r} at {_dotted(loc)} is not a string")
            )
            continue
        here = (*loc, key)
        if key not in tree:
            known = sorted(tree)
            hint = suggest_key(key, known)
            if hint is not None:
                text = f"unknown key {key!r} at {_dotted(loc)} (did you mean {hint!r}?)"
            elif len(known) <= 8:
                text = f"unknown key {key!r} at {_dotted(loc)} (known keys: {', '.join(known)})"
            else:
                text = f"unknown key {key!r} at {_dotted(loc)}"
            problems.append(_problem("unknown_key", here, value, text))
            continue
        subtree = tree[key]
        if isinstance(value, RunOptions):
            value = value.model_dump(exclude_unset=True)
        if subtree is None:
            leaves[here] = value
        elif isinstance(value, Mapping):
            _walk(value, subtree, here, leaves, problems)
        elif value is not None:
            problems.append(
                _problem(
                    "section_type",
                    here,
                    value,
                    f"{_dotted(here)} must be a mapping of keys, not {type(value).__name__}",
                )
            )


def _pick(
    field: str,
    spellings: tuple[_Loc, ...] | list[_Loc],
    leaves: dict[_Loc, object],
    problems: list[InitErrorDetails],
) -> tuple[_Loc, object] | None:
    """Return the one spelling of ``field`` that was given, reporting any extra ones.

    A key whose value is ``null`` (``key:`` with nothing after it in YAML) counts as not given.
    """
    given = [loc for loc in spellings if leaves.get(loc) is not None]
    for extra in given[1:]:
        problems.append(
            _problem(
                "conflicting_keys",
                extra,
                leaves[extra],
                f"{_dotted(given[0])} and {_dotted(extra)} both set {field}; give only one",
            )
        )
    return (given[0], leaves[given[0]]) if given else None


def _normalise(
    data: Mapping[object, object],
) -> tuple[dict[str, object], dict[str, _Loc], list[InitErrorDetails]]:
    """Turn either config form into the normalised field names.

    Returns:
        The normalised input, where each normalised field came from (``options.<name>`` for a
        single option), and the problems found on the way.
    """
    leaves: dict[_Loc, object] = {}
    problems: list[InitErrorDetails] = []
    _walk(data, _KEY_TREE, (), leaves, problems)

    marker = leaves.get(("schema",))
    if marker is not None and marker != CONFIG_SCHEMA_ID:
        problems.append(
            _problem(
                "config_schema",
                ("schema",),
                marker,
                f"unsupported config schema {marker!r}; agentshape reads {CONFIG_SCHEMA_ID!r}",
            )
        )

    normalised: dict[str, object] = {}
    origins: dict[str, _Loc] = {}
    for field, spellings in _SPELLINGS.items():
        picked = _pick(field, spellings, leaves, problems)
        if picked is not None:
            origins[field], normalised[field] = picked

    sections = [name for name in _OPTION_SECTIONS if isinstance(data.get(name), Mapping)]
    for extra in sections[1:]:
        problems.append(
            _problem(
                "conflicting_keys",
                (extra,),
                data[extra],
                f"$.{sections[0]} and $.{extra} both set the agent's options; give only one",
            )
        )
    options: dict[str, object] = {}
    for option in RunOptions.model_fields:
        option_spellings: list[_Loc] = [(section, option) for section in _OPTION_SECTIONS]
        if option in _OPTION_SPELLINGS:
            option_spellings.append(_OPTION_SPELLINGS[option])
        picked = _pick(f"options.{option}", option_spellings, leaves, problems)
        if picked is not None:
            origins[f"options.{option}"], options[option] = picked
    if options:
        normalised["options"] = options
    profile: dict[str, object] = {}
    for key in ProfileOverride.model_fields:
        spelled = [(*loc, key) for loc in _PROFILE_SPELLINGS]
        picked = _pick(f"profile.{key}", spelled, leaves, problems)
        if picked is not None:
            origins[f"profile.{key}"], profile[key] = picked
    if profile:
        normalised["profile"] = profile

    if "output_schema" in normalised and "default_output_schema" in normalised:
        problems.append(
            _problem(
                "conflicting_keys",
                origins["default_output_schema"],
                normalised["default_output_schema"],
                "an agent has a fixed output_schema or a default_output_schema that callers "
                "may replace, not both",
            )
        )

    if "id" not in normalised and "name" not in normalised:
        problems.append(_problem("missing_id", (), None, "an agent needs an 'id' or a 'name'"))
        normalised["id"] = normalised["name"] = "?"
    elif "id" not in normalised:
        normalised["id"], origins["id"] = normalised["name"], origins["name"]
    elif "name" not in normalised:
        normalised["name"], origins["name"] = normalised["id"], origins["id"]
    return normalised, origins, problems


def _source_loc(loc: _Loc, origins: dict[str, _Loc]) -> _Loc:
    """Map the location of an error in the normalised input back to the key the user wrote."""
    for section in ("options", "profile"):
        if len(loc) >= 2 and loc[0] == section and f"{section}.{loc[1]}" in origins:
            return origins[f"{section}.{loc[1]}"] + loc[2:]
    if loc and isinstance(loc[0], str) and loc[0] in origins:
        return origins[loc[0]] + loc[1:]
    return loc


def _relocated(error: Mapping[str, object], loc: _Loc) -> InitErrorDetails:
    """Rebuild one Pydantic error at a new location, keeping its type and message."""
    kind = str(error["type"])
    ctx = error.get("ctx")
    if kind in _PYDANTIC_ERROR_TYPES:
        details = InitErrorDetails(type=kind, loc=loc, input=error.get("input"))
        if isinstance(ctx, dict):
            details["ctx"] = ctx
        return details
    return _problem(kind, loc, error.get("input"), str(error["msg"]))


class AgentConfig(BaseModel):
    """An agent, normalised from the blueprint form or the ``kb.agent/1`` file form.

    Construct it with ``AgentConfig.model_validate(mapping)`` (or ``agent_core.loading`` for a
    YAML file). ``model_dump()`` gives the blueprint form, which loads back to an equal config.

    Raises:
        pydantic.ValidationError: On ``model_validate``: every unknown key (with a suggestion),
            every conflicting pair of spellings, and every wrong value, each at the location of
            the key as written.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, protected_namespaces=())

    id: str = Field(default="", min_length=1)
    """Stable identifier of the agent; defaults to ``name`` (one of the two is required)."""
    name: str = Field(default="", min_length=1)
    """Display name; defaults to ``id``."""
    description: str = ""
    """What the agent does, for people and for parent agents choosing it."""
    type: AgentType = "autonomous"
    """The blueprint ``type``; agentshape runs autonomous agents."""
    model: str | None = None
    """The model to run, such as ``openai:gpt-4o-mini``; ``None`` leaves it to the executor."""
    model_tiers: list[str] = Field(default_factory=list)
    """Larger models to escalate to, in order, when every attempt on ``model`` fails."""
    temperature: float | None = Field(default=None, ge=0)
    """Sampling temperature; ``None`` uses the provider's default."""
    max_tokens: int | None = Field(default=None, ge=1)
    """Most output tokens per model call; ``None`` uses the provider's default."""
    system_prompt: str = ""
    """The agent's own instructions (``context.static.system`` in the file form)."""
    tools: list[str] = Field(default_factory=list)
    """Names of the input tools the agent may call, such as ``fs:read``."""
    max_steps: int | None = Field(default=None, ge=1)
    """Most model turns in one run (``limits.maxSteps``); ``None`` uses the executor's default."""
    parameters_schema: JsonSchema | None = None
    """JSON Schema for the run's ``parameters`` (the input contract)."""
    output_schema: JsonSchema | None = None
    """The agent's fixed output contract (``output.schema``); callers cannot replace it."""
    default_output_schema: JsonSchema | None = None
    """An output contract used when the caller gives none; a caller's schema replaces it."""
    options: RunOptions = Field(default_factory=RunOptions)
    """The agent's option layer; fields it does not set fall through to environment defaults."""
    profile: ProfileOverride = Field(default_factory=ProfileOverride)
    """Provider-profile fields to override (``llm.profile``), such as ``strict_tools: false``
    for a server that rejects strict tools; unset fields keep the provider's own."""

    @model_validator(mode="wrap")
    @classmethod
    def _from_either_form(
        cls, data: object, handler: ModelWrapValidatorHandler[AgentConfig]
    ) -> AgentConfig:
        """Normalise either form, then report every problem at the key the user wrote."""
        if not isinstance(data, Mapping):
            return handler(data)
        normalised, origins, problems = _normalise(data)
        config: AgentConfig | None = None
        try:
            config = handler(normalised)
        except ValidationError as exc:
            seen: set[tuple[_Loc, str]] = set()
            for error in exc.errors():
                loc = _source_loc(tuple(error["loc"]), origins)
                if (loc, error["msg"]) not in seen:
                    seen.add((loc, error["msg"]))
                    problems.append(_relocated(error, loc))
        if problems or config is None:
            raise ValidationError.from_exception_data(cls.__name__, problems)
        return config

    @field_serializer("profile")
    def _dump_set_profile(self, profile: ProfileOverride) -> dict[str, JsonValue]:
        """Dump only the profile fields the agent overrides."""
        dumped: dict[str, JsonValue] = profile.model_dump(mode="json", exclude_none=True)
        return dumped

    @field_serializer("options")
    def _dump_set_options(self, options: RunOptions) -> dict[str, JsonValue]:
        """Dump only the options the agent set, so it stays a layer after a round trip."""
        dumped: dict[str, JsonValue] = options.model_dump(mode="json", exclude_unset=True)
        return dumped
