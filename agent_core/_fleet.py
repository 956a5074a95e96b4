"""Load a fleet: every ``<id>/agent.yml`` under a directory, with every problem reported at once.

:func:`load_fleet` loads each file with :func:`agent_core._loading.load_agent_config`, then checks
what a single file cannot show: unusable schemas (at the offending keyword's line), a blank
system prompt, unknown tools (the known names are passed in: tools live in the executor) and
duplicate ids. Every problem is raised together as one
:class:`~agent_contracts._errors.FleetProblems`; findings that do not stop an agent from working are
kept as :attr:`Fleet.warnings`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

import yaml
from pydantic import JsonValue

from agent_contracts._config import AgentConfig, suggest_key
from agent_contracts._errors import (
    ConfigFileError,
    FleetProblems,
    InvalidSchemaError,
    SchemaReferenceError,
)
from agent_core._caches import reserve_caches
from agent_core._compiled_schema import compile_schema
from agent_core._loading import AgentDocument, dotted_field, line_of, read_agent_document
from agent_core._schema_checks import check_output_schema
from agent_core._schema_model import model_from_schema
from agent_core._schema_walk import subschemas

__all__ = ["AGENT_FILE", "Fleet", "load_fleet"]

AGENT_FILE = "agent.yml"
"""The name of the config file in each agent's folder."""


class Fleet(Mapping[str, AgentConfig]):
    """The agents of a fleet, by id; iteration, :attr:`ids` and :attr:`configs` are id-sorted.

    A fleet is a read-only mapping from agent id to :class:`AgentConfig`: ``fleet["researcher"]``,
    ``"researcher" in fleet``, ``len(fleet)``. Build one with :func:`load_fleet`.

    Attributes:
        directory: The directory the fleet was loaded from.
        warnings: Findings that do not stop an agent from working, each naming file, line and
            field, ordered by file and line.
    """

    __slots__ = ("_configs", "_sources", "directory", "warnings")

    def __init__(
        self,
        directory: Path,
        agents: Iterable[tuple[AgentConfig, Path]],
        warnings: Sequence[ConfigFileError] = (),
    ) -> None:
        """Hold the given agents.

        Args:
            directory: The fleet's directory.
            agents: Each agent's config and the file it came from.
            warnings: Findings that did not stop any agent from loading.

        Raises:
            ValueError: Two agents have the same id.
        """
        configs: dict[str, AgentConfig] = {}
        sources: dict[str, Path] = {}
        for config, source in sorted(agents, key=lambda pair: pair[0].id):
            if config.id in configs:
                raise ValueError(
                    f"agent id {config.id!r} is used by {sources[config.id]} and {source}"
                )
            configs[config.id] = config
            sources[config.id] = source
        self.directory = directory
        self.warnings: tuple[ConfigFileError, ...] = tuple(warnings)
        self._configs = configs
        self._sources = sources

    def __getitem__(self, agent_id: str) -> AgentConfig:
        return self._configs[agent_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._configs)

    def __len__(self) -> int:
        return len(self._configs)

    def __repr__(self) -> str:
        return f"Fleet({os.fspath(self.directory)!r}, ids={list(self._configs)!r})"

    @property
    def ids(self) -> tuple[str, ...]:
        """Every agent id, sorted."""
        return tuple(self._configs)

    @property
    def configs(self) -> tuple[AgentConfig, ...]:
        """Every agent's config, sorted by id."""
        return tuple(self._configs.values())

    def source(self, agent_id: str) -> Path:
        """Return the file an agent was loaded from.

        Args:
            agent_id: The agent's id.

        Returns:
            The path of its ``agent.yml``.

        Raises:
            KeyError: No agent in the fleet has that id.
        """
        return self._sources[agent_id]


def load_fleet(
    directory: str | os.PathLike[str],
    *,
    known_tools: Collection[str] | None,
    known_model_prefixes: Collection[str] | None = None,
) -> Fleet:
    """Load every ``*/agent.yml`` under ``directory`` and check the fleet as a whole.

    Args:
        directory: The fleet's directory, one folder per agent.
        known_tools: The input tool names agents may use (the executor passes its
            ``KNOWN_TOOLS``); ``prefix:*`` in a config stands for every known tool with that
            prefix. ``None`` skips the tool check.
        known_model_prefixes: The provider prefixes a model string may start with (the
            executor passes its own); an ``llm.model`` or ``llm.tiers`` entry with another
            prefix is a problem at its line. ``None`` skips the check.

    Returns:
        The fleet; a directory with no agent folders gives an empty fleet.

    Raises:
        ConfigFileError: ``directory`` does not exist or is not a directory.
        FleetProblems: Any file has a problem; ``problems`` lists every problem in every file,
            ordered by file and line, each naming its file, line and field.
    """
    root = Path(directory)
    if not root.exists():
        raise ConfigFileError("fleet directory not found", source=os.fspath(root))
    if not root.is_dir():
        raise ConfigFileError(
            "not a directory; a fleet is a directory with one folder per agent",
            source=os.fspath(root),
        )
    problems: list[ConfigFileError] = []
    warnings: list[ConfigFileError] = []
    loaded: list[_Agent] = []
    tools = None if known_tools is None else sorted(set(known_tools))
    paths = sorted(root.glob(f"*/{AGENT_FILE}"))
    reserve_caches(len(paths))  # each agent's schema is checked now and built again later
    for path in paths:
        agent = _check_file(path, tools, problems, warnings, known_model_prefixes)
        if agent is not None:
            loaded.append(agent)
    problems += _duplicate_ids(loaded)
    if problems:
        raise FleetProblems(sorted(problems, key=_order), directory=os.fspath(root))
    return Fleet(
        root,
        [(agent.config, agent.path) for agent in loaded],
        sorted(warnings, key=_order),
    )


def _order(problem: ConfigFileError) -> tuple[str, int]:
    return problem.source, problem.line or 0


def _check_file(
    path: Path,
    known_tools: list[str] | None,
    problems: list[ConfigFileError],
    warnings: list[ConfigFileError],
    model_prefixes: Collection[str] | None = None,
) -> _Agent | None:
    """Load one file and check it, adding what is wrong to ``problems`` and ``warnings``."""
    try:
        document = read_agent_document(path)
    except ConfigFileError as error:
        problems.append(error)
        return None
    config = document.config
    if config is None:
        # The config has problems; its schemas are still checked, so one `agentshape list`
        # shows an unknown key and a bad schema type in the same file together.
        problems += document.problems
        _check_raw_schemas(document, problems)
        return None
    agent = _Agent(config, path, document.root)
    problems += _system_prompt_problems(agent)
    if model_prefixes is not None:
        problems += _model_problems(agent, sorted(model_prefixes))
    if known_tools is not None:
        _check_tools(agent, known_tools, problems, warnings)
    for field, spellings in _SCHEMA_FIELDS:
        schema = getattr(config, field)
        if schema is not None:
            _check_schema(agent, field, agent.spelling(spellings), schema, problems, warnings)
    folder = path.parent.name
    if config.id != folder:
        warnings.append(
            agent.problem(
                f"agent id {config.id!r} is not its folder's name {folder!r}; agents are found "
                f"by folder, so name the folder {config.id!r}",
                agent.spelling(_ID),
            )
        )
    return agent


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
