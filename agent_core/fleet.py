"""Load a fleet: every ``<id>/agent.yml`` under a directory, with every problem reported at once.

A fleet is a directory holding one folder per agent, each with an ``agent.yml``::

    agents/
      researcher/agent.yml
      reviewer/agent.yml

:func:`load_fleet` loads each file with :func:`agent_core.loading.load_agent_config` and then
checks what a single file cannot show on its own. Nothing stops at the first problem: every
problem in every file is collected and raised together as one
:class:`~agent_contracts.errors.FleetProblems`, each a
:class:`~agent_contracts.errors.ConfigFileError` naming the file, the line and the field:

* the file cannot be read, is not valid YAML, or has unknown keys (with a suggestion), duplicate
  keys or wrong values (everything the loader reports);
* an output, default output or parameters schema that cannot be used: the errors of
  :func:`agent_core.schema_checks.check_output_schema`, or a schema the validation engine
  refuses, each at the line of the offending keyword inside the schema;
* a missing or blank system prompt;
* a tool that does not exist (with a suggestion); the known tool names are passed in, since the
  tools themselves live in the executor;
* an id that another file in the fleet already uses (naming both files).

Findings that do not stop an agent from working (a likely typo in a schema keyword, a tool listed
twice, an id that differs from its folder's name) are kept as :attr:`Fleet.warnings`.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from agent_contracts.config import AgentConfig
from agent_contracts.errors import (
    ConfigFileError,
    FleetProblems,
)
from agent_core.caches import reserve_caches
from agent_core.fleet_checks import (
    _ID,
    _SCHEMA_FIELDS,
    _Agent,
    _check_raw_schemas,
    _check_schema,
    _check_tools,
    _duplicate_ids,
    _model_problems,
    _system_prompt_problems,
)
from agent_core.loading import read_agent_document

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
