"""The checks ``load_fleet`` runs on one agent file, and how a problem finds its line.

Each check adds :class:`~agent_contracts.errors.ConfigFileError` problems that name the file, the
line and the field; the line comes from the file's YAML node tree.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

import yaml
from pydantic import JsonValue

from agent_contracts.config import AgentConfig, suggest_key
from agent_contracts.errors import (
    ConfigFileError,
    InvalidSchemaError,
    SchemaReferenceError,
)
from agent_core.compiled_schema import compile_schema
from agent_core.loading import AgentDocument, dotted_field, line_of
from agent_core.schema_checks import check_output_schema
from agent_core.schema_model import model_from_schema
from agent_core.schema_walk import subschemas

_Loc = tuple[str | int, ...]
_FILE_FORM_KEYS = ("schema", "llm", "context", "limits", "output")
_MERGE = "tag:yaml.org,2002:merge"
_PATH_PART = re.compile(r'\.([A-Za-z_][A-Za-z0-9_]*)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]')

# Where each schema field may be written, file form first (the loader allows only one).
_SCHEMA_FIELDS: tuple[tuple[str, tuple[_Loc, ...]], ...] = (
    ("output_schema", (("output", "schema"), ("output_schema",))),
    ("default_output_schema", (("default_output_schema",),)),
    ("parameters_schema", (("parameters_schema",),)),
)
_SYSTEM_PROMPT: tuple[_Loc, ...] = (("context", "static", "system"), ("system_prompt",))
_ID: tuple[_Loc, ...] = (("id",), ("name",))


class _Agent:
    """One loaded config, its file, and the YAML node tree for pointing at lines."""

    __slots__ = ("config", "path", "source", "tree")

    def __init__(self, config: AgentConfig, path: Path, tree: yaml.Node | None) -> None:
        self.config = config
        self.path = path
        self.source = os.fspath(path)
        self.tree = tree

    def spelling(self, spellings: Sequence[_Loc]) -> _Loc:
        """Return the spelling of a field this file uses (the first one when it uses none)."""
        for loc in spellings:
            if _node_at(self.tree, loc) is not None:
                return loc
        return spellings[0]

    def problem(self, message: str, loc: _Loc) -> ConfigFileError:
        """Return a problem at the line of ``loc`` (or of its nearest parent that exists)."""
        return ConfigFileError(
            message, source=self.source, line=_line_of(self.tree, loc), field=dotted_field(loc)
        )


_MODEL: tuple[_Loc, ...] = (("llm", "model"), ("model",))
_TIERS: tuple[_Loc, ...] = (("llm", "tiers"), ("model_tiers",))


def _model_problems(agent: _Agent, prefixes: list[str]) -> list[ConfigFileError]:
    """Report each model string whose provider prefix is not one the executor knows."""
    found: list[ConfigFileError] = []
    models: list[tuple[str, _Loc]] = []
    if agent.config.model is not None:
        models.append((agent.config.model, agent.spelling(_MODEL)))
    tiers = agent.spelling(_TIERS)
    models += [(model, (*tiers, index)) for index, model in enumerate(agent.config.model_tiers)]
    for model, loc in models:
        prefix, colon, _ = model.partition(":")
        if colon and prefix.strip().lower() not in prefixes:
            hint = suggest_key(prefix, prefixes)
            more = f" (did you mean {hint!r}?)" if hint else ""
            found.append(
                agent.problem(
                    f"unknown model provider {prefix!r} in {model!r}{more}; known: "
                    f"{', '.join(prefixes)}",
                    loc,
                )
            )
    return found


def _check_raw_schemas(document: AgentDocument, problems: list[ConfigFileError]) -> None:
    """Check the schemas of a config that has other problems, as written in the file."""
    data = document.data if isinstance(document.data, dict) else {}
    raw_id = data.get("id") or data.get("name") or Path(document.source).parent.name
    stand_in = AgentConfig.model_validate({"id": str(raw_id), "system_prompt": "-"})
    agent = _Agent(stand_in, Path(document.source), document.root)
    reported = {(problem.line, problem.field) for problem in problems}
    for field, spellings in _SCHEMA_FIELDS:
        for loc in spellings:
            schema = _value_at(data, loc)
            if isinstance(schema, dict | bool) and _node_at(document.root, loc) is not None:
                found: list[ConfigFileError] = []
                _check_schema(agent, field, loc, schema, found, [])
                problems += [p for p in found if (p.line, p.field) not in reported]


def _value_at(data: object, loc: _Loc) -> object:
    """Return the value at ``loc`` in plain data, or ``None``."""
    for part in loc:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _system_prompt_problems(agent: _Agent) -> list[ConfigFileError]:
    if agent.config.system_prompt.strip():
        return []
    loc = agent.spelling(_SYSTEM_PROMPT)
    if _node_at(agent.tree, loc) is None:
        if not any(_node_at(agent.tree, (key,)) is not None for key in _FILE_FORM_KEYS):
            loc = ("system_prompt",)  # a blueprint-form file
        return [
            agent.problem(
                f"the agent has no system prompt; say in {dotted_field(loc)} what it does, how it "
                "works and what good output is",
                loc,
            )
        ]
    return [agent.problem("the system prompt is blank; say what the agent does and how", loc)]


def _check_tools(
    agent: _Agent,
    known: list[str],
    problems: list[ConfigFileError],
    warnings: list[ConfigFileError],
) -> None:
    seen: set[str] = set()
    for index, name in enumerate(agent.config.tools):
        loc: _Loc = ("tools", index)
        if name in seen:
            warnings.append(agent.problem(f"tool {name!r} is listed twice", loc))
        seen.add(name)
        if name in known:
            continue
        if name.endswith(":*"):
            if any(tool.startswith(name[:-1]) for tool in known):
                continue
            message = f"no known tool starts with {name[:-1]!r}"
        else:
            hint = suggest_key(name, known)
            message = f"unknown tool {name!r}" + (f" (did you mean {hint!r}?)" if hint else "")
        listing = ", ".join(known) if known else "none"
        problems.append(agent.problem(f"{message}; known tools: {listing}", loc))


def _check_schema(
    agent: _Agent,
    field: str,
    base: _Loc,
    schema: dict[str, JsonValue] | bool,
    problems: list[ConfigFileError],
    warnings: list[ConfigFileError],
) -> None:
    """Report the errors (and, for output schemas, the warnings) of one schema in a config."""
    where = f"agent {agent.config.id!r} {field}"
    output = field != "parameters_schema"
    try:
        findings = check_output_schema(schema, source=where)
    except InvalidSchemaError as error:
        problems.append(agent.problem(error.message, base + _parse_path(error.path)))
        return
    located = [
        (
            finding,
            base + _parse_path(finding.path) + ((finding.keyword,) if finding.keyword else ()),
        )
        for finding in findings
    ]
    errors = [loc for finding, loc in located if finding.severity == "error"]
    for finding, loc in located:
        if finding.severity == "warning":
            if output:
                warnings.append(agent.problem(finding.message, loc))
        # A general error above a more specific one (a meta-schema failure of ``items`` that
        # holds an unknown ``type``) says the same thing less clearly: keep the specific one.
        elif not any(len(other) > len(loc) and other[: len(loc)] == loc for other in errors):
            problems.append(agent.problem(finding.message, loc))
    if errors:
        return
    lenient = agent.config.options.lenient_formats
    try:
        if output:
            model_from_schema(schema, name="Output", lenient=lenient, source=where)
        else:
            compile_schema(schema, lenient=lenient, source=where)
    except InvalidSchemaError as error:
        problems.append(agent.problem(error.message, base + _parse_path(error.path)))
    except SchemaReferenceError as error:
        problems.append(agent.problem(error.message, base + _ref_loc(schema, error.reference)))


def _ref_loc(schema: JsonValue, reference: str) -> _Loc:
    """Return the location of the first ``$ref`` to ``reference`` in a schema (root if none)."""
    for path, node in subschemas(schema):
        if isinstance(node, dict) and node.get("$ref") == reference:
            return (*_parse_path(path), "$ref")
    return ()


def _parse_path(path: str) -> _Loc:
    """Split a JSON path such as ``$.properties["a-b"].items[0]`` into keys and indices."""
    parts: list[str | int] = []
    position = 1 if path.startswith("$") else 0
    while position < len(path):
        match = _PATH_PART.match(path, position)
        if match is None:
            break
        name, index, quoted = match.groups()
        if name is not None:
            parts.append(name)
        elif index is not None:
            parts.append(int(index))
        else:
            parts.append(str(json.loads(quoted)))
        position = match.end()
    return tuple(parts)


def _node_at(root: yaml.Node | None, loc: _Loc) -> yaml.Node | None:
    """Return the node at ``loc`` exactly, or ``None`` when it is not in the file."""
    node = root
    for part in loc:
        if node is None:
            return None
        node = _child(node, part)[0]
    return node


def _child(node: yaml.Node, part: str | int) -> tuple[yaml.Node | None, int]:
    """Return the child at ``part`` and the line of its key (or item), or ``(None, 0)``."""
    if isinstance(node, yaml.MappingNode):
        found: tuple[yaml.Node | None, int] = (None, 0)
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode) and key.tag != _MERGE and key.value == str(part):
                found = (value, key.start_mark.line + 1)  # the last one wins, as in YAML
        return found
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
        item = node.value[part]
        return item, item.start_mark.line + 1
    return None, 0


def _line_of(root: yaml.Node | None, loc: _Loc) -> int | None:
    """Return the line of the key at ``loc`` with the loader's locator (``None`` without a tree)."""
    return None if root is None else line_of(root, loc)


def _duplicate_ids(agents: list[_Agent]) -> list[ConfigFileError]:
    """Report each agent whose id an earlier file (in path order) already uses."""
    first: dict[str, _Agent] = {}
    problems: list[ConfigFileError] = []
    for agent in agents:
        earlier = first.setdefault(agent.config.id, agent)
        if earlier is agent:
            continue
        loc = earlier.spelling(_ID)
        line = _line_of(earlier.tree, loc)
        where = earlier.source if line is None else f"{earlier.source}:{line}"
        problems.append(
            agent.problem(
                f"duplicate agent id {agent.config.id!r}: {where} already uses it; ids must be "
                "unique in a fleet",
                agent.spelling(_ID),
            )
        )
    return problems
