"""The two config forms an ``AgentConfig`` reads, normalised to its fields.

The blueprint form's keys and the ``kb.agent/1`` file form's nested sections (``llm``,
``context``, ``limits``, ``output``) are mapped to the same fields here, every unknown key is
reported with the nearest known one, and every error is moved back to the key the user wrote.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import get_args

from pydantic_core import InitErrorDetails, PydanticCustomError
from pydantic_core.core_schema import ErrorType

from agent_contracts._mcp import McpServer
from agent_contracts._profiles import ProfileOverride
from agent_contracts._runs import RunOptions
from agent_contracts._suggest import suggest

__all__ = [
    "CONFIG_SCHEMA_ID",
    "field_spellings",
    "normalise",
    "relocated",
    "source_loc",
    "suggest_key",
]

CONFIG_SCHEMA_ID = "kb.agent/1"
"""The ``schema:`` value of the file form that agentshape reads."""

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
    "mcp_servers": (("mcp_servers",), ("mcpServers",)),
    "max_steps": (("max_steps",), ("limits", "maxSteps")),
    "parameters_schema": (("parameters_schema",),),
    "output_schema": (("output_schema",), ("output", "schema")),
    "default_output_schema": (("default_output_schema",),),
    "webhook": (("webhook",),),
    "call_limits": (("call_limits",), ("llm", "limits")),
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
    "validation_mode": ("output", "validationMode"),
    "token_budget": ("limits", "tokenBudget"),
    "timeout_s": ("limits", "timeoutSeconds"),
    "request_timeout_s": ("limits", "requestTimeoutSeconds"),
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
        _place(tree, loc, None)
    for section in _OPTION_SECTIONS:
        tree[section] = dict.fromkeys(RunOptions.model_fields)
    for loc in _PROFILE_SPELLINGS:
        _place(tree, loc, dict.fromkeys(ProfileOverride.model_fields))
    return tree


def _place(tree: _KeyTree, loc: _Loc, leaf: _KeyTree | None) -> None:
    """Put ``leaf`` at ``loc`` in the key tree, making the sections on the way."""
    node = tree
    for key in loc[:-1]:
        child = node.get(str(key))
        if child is None:
            child = node[str(key)] = {}
        node = child
    node[str(loc[-1])] = leaf


_KEY_TREE = _key_tree()
_PYDANTIC_ERROR_TYPES = frozenset(get_args(ErrorType))


def field_spellings(key: str) -> tuple[tuple[str, ...], ...]:
    """Return where a blueprint-form key may be written in a file, the blueprint's spelling first.

    Args:
        key: A top-level key of the blueprint form, such as ``output_schema``.

    Returns:
        Every spelling of the field (``(("output_schema",), ("output", "schema"))``); a key with
        one spelling, or one that is not a field, gives just ``((key,),)``.
    """
    spellings = _SPELLINGS.get(key)
    if spellings is None:
        return ((key,),)
    return tuple(tuple(str(part) for part in loc) for loc in spellings)


def suggest_key(key: str, known: list[str] | tuple[str, ...]) -> str | None:
    """Return the known key nearest to a mistyped one, or ``None`` (see :func:`suggest`).

    Args:
        key: The key that was written.
        known: The keys accepted at that place.

    Returns:
        The nearest known key, or ``None`` when none is near enough.
    """
    return suggest(key, known)


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
    """Return the one spelling of ``field`` that was given, reporting any extra ones."""
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


def normalise(
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

    if origins.get("output_schema") == _FILE_FORM_SCHEMA:
        problems += _file_form_schema_rules(normalised["output_schema"])

    if "id" not in normalised and "name" not in normalised:
        problems.append(_problem("missing_id", (), None, "an agent needs an 'id' or a 'name'"))
        normalised["id"] = normalised["name"] = "?"
    elif "id" not in normalised:
        normalised["id"], origins["id"] = normalised["name"], origins["name"]
    elif "name" not in normalised:
        normalised["name"], origins["name"] = normalised["id"], origins["id"]
    return normalised, origins, problems


_FILE_FORM_SCHEMA: _Loc = ("output", "schema")


def _file_form_schema_rules(schema: object) -> list[InitErrorDetails]:
    """Return the load-time errors of the file form's ``output.schema``.

    Its root must be ``type: object`` with ``properties``: the output is ``submit_result``'s
    arguments.
    """
    if not isinstance(schema, Mapping):
        if not isinstance(schema, bool):
            return []  # not a schema at all: the field's own check says so
        return [
            _problem(
                "output_schema_root",
                _FILE_FORM_SCHEMA,
                schema,
                'must be an object schema with type "object" and properties',
            )
        ]
    problems: list[InitErrorDetails] = []
    if schema.get("type") != "object":
        given = "type" in schema
        problems.append(
            _problem(
                "output_schema_type",
                (*_FILE_FORM_SCHEMA, "type") if given else _FILE_FORM_SCHEMA,
                schema.get("type"),
                'must be "object"'
                + (f", not {schema['type']!r}" if given else " (no type is given)")
                + "; use the output_schema form for another root (it is wrapped for tool calls)",
            )
        )
    if not isinstance(schema.get("properties"), Mapping):
        problems.append(
            _problem(
                "output_schema_properties",
                _FILE_FORM_SCHEMA,
                schema,
                "must have properties: the fields the output has",
            )
        )
    return problems


def source_loc(loc: _Loc, origins: dict[str, _Loc]) -> _Loc:
    """Map the location of an error in the normalised input back to the key the user wrote."""
    for section in ("options", "profile"):
        if len(loc) >= 2 and loc[0] == section and f"{section}.{loc[1]}" in origins:
            return origins[f"{section}.{loc[1]}"] + loc[2:]
    if loc and isinstance(loc[0], str) and loc[0] in origins:
        return origins[loc[0]] + loc[1:]
    return loc


# Lists of entries checked by their own models (``extra="forbid"``): their keys, for suggestions.
_LIST_ENTRY_KEYS: dict[str, tuple[str, ...]] = dict.fromkeys(
    ("mcp_servers", "mcpServers"), tuple(McpServer.model_fields)
)


def _unknown_entry_key(loc: _Loc, value: object, known: tuple[str, ...]) -> InitErrorDetails:
    """An unknown key inside a list entry, with the nearest known key as a suggestion."""
    key, where = str(loc[-1]), _dotted(loc[:-1])
    hint = suggest_key(key, known)
    text = f"unknown key {key!r} at {where}" + (
        f" (did you mean {hint!r}?)" if hint else f" (known keys: {', '.join(sorted(known))})"
    )
    return _problem("unknown_key", loc, value, text)


def relocated(error: Mapping[str, object], loc: _Loc) -> InitErrorDetails:
    """Rebuild one Pydantic error at a new location, keeping its type and message."""
    kind = str(error["type"])
    ctx = error.get("ctx")
    if kind == "extra_forbidden" and len(loc) > 1 and loc[0] in _LIST_ENTRY_KEYS:
        return _unknown_entry_key(loc, error.get("input"), _LIST_ENTRY_KEYS[str(loc[0])])
    if kind in _PYDANTIC_ERROR_TYPES:
        details = InitErrorDetails(type=kind, loc=loc, input=error.get("input"))
        if isinstance(ctx, dict):
            details["ctx"] = ctx
        return details
    return _problem(kind, loc, error.get("input"), str(error["msg"]))
