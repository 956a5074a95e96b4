"""An agent's configuration: one model that reads the blueprint form and the ``kb.agent/1`` form.

Both forms normalise to the same typed fields of ``AgentConfig``. Each field may be given by one
spelling only (``output.schema`` and ``output_schema`` together are an error); unknown keys are
errors naming the path and the nearest known key. Every problem is reported at once, at the
location of the key the user wrote. Schemas are kept as given; ``agent_core`` checks them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

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

from agent_contracts._call_limits import CallLimits
from agent_contracts._config_forms import (
    CONFIG_SCHEMA_ID,
    _Loc,
    normalise,
    relocated,
    source_loc,
    suggest_key,
)
from agent_contracts._mcp import McpServer
from agent_contracts._profiles import ProfileOverride
from agent_contracts._runs import JsonSchema, RunOptions

__all__ = ["CONFIG_SCHEMA_ID", "AgentConfig", "AgentType", "suggest_key"]


AgentType = Literal["autonomous", "procedural"]
"""The blueprint ``type``: an autonomous agent runs a model loop; a procedural one is code."""


class AgentConfig(BaseModel):
    """An agent, normalised from the blueprint form or the ``kb.agent/1`` file form.

    Construct it with ``AgentConfig.model_validate(mapping)`` (or ``agent_core._loading`` for a
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
    mcp_servers: list[McpServer] = Field(default_factory=list)
    """MCP servers whose allowed tools join the input tools (``mcpServers`` in the file form)."""
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
    webhook: str | None = Field(default=None, pattern=r"^https?://[^/?#\s]+")
    """An http(s) URL ``agentshape serve`` POSTs each of the agent's runs' end to, unless the
    run names its own ``webhook``; running the agent in-process ignores it."""
    profile: ProfileOverride = Field(default_factory=ProfileOverride)
    """Provider-profile fields to override (``llm.profile``), such as ``strict_tools: false``
    for a server that rejects strict tools; unset fields keep the provider's own."""
    call_limits: CallLimits | None = None
    """Limits on the calls to the agent's model (``llm.limits``: ``concurrency``,
    ``requests_per_minute``, ``tokens_per_minute``), shared by every worker using one store."""

    @model_validator(mode="wrap")
    @classmethod
    def _from_either_form(
        cls, data: object, handler: ModelWrapValidatorHandler[AgentConfig]
    ) -> AgentConfig:
        """Normalise either form, then report every problem at the key the user wrote."""
        if not isinstance(data, Mapping):
            return handler(data)
        normalised, origins, problems = normalise(data)
        config: AgentConfig | None = None
        try:
            config = handler(normalised)
        except ValidationError as exc:
            seen: set[tuple[_Loc, str]] = set()
            for error in exc.errors():
                loc = source_loc(tuple(error["loc"]), origins)
                if (loc, error["msg"]) not in seen:
                    seen.add((loc, error["msg"]))
                    problems.append(relocated(error, loc))
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
