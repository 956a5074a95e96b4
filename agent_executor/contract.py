"""The output contract a run enforces, resolved once from the agent and the request.

A contract is a JSON Schema (checked against its draft's meta-schema and compiled once) or a
Pydantic class. Either way it judges a value the same way for every output mode: a list of
``ValidationIssue``, empty when the value meets it, and builds the typed output object.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from pydantic import BaseModel, JsonValue

from agent_contracts.config import AgentConfig
from agent_contracts.errors import ConfigError
from agent_contracts.runs import JsonSchema, SchemaSource
from agent_contracts.validation import ValidationIssue
from agent_core.dialects import Dialect
from agent_core.output_tool import OutputTool, build_output_tool
from agent_core.schema_model import compile_schema, model_from_schema, schema_hash
from agent_core.validation import validate_output
from agent_executor.providers.base import ResponseFormat, ToolDefinition

__all__ = ["OutputContract", "dialect_for", "resolve_contract"]


def dialect_for(provider_name: str) -> Dialect:
    """Return the tool dialect a provider gets: strict OpenAI, Anthropic, or neutral.

    OpenAI-compatible servers (``ollama`` and the like) get the neutral schema, since many of
    them reject OpenAI's strict mode; test doubles get it too.
    """
    if provider_name == "openai":
        return "openai"
    if provider_name == "anthropic":
        return "anthropic"
    return "neutral"


@dataclass(frozen=True)
class OutputContract:
    """The output contract of one run.

    Attributes:
        schema: The designer's JSON Schema (for a Pydantic class, its generated schema).
        model: The class ``result.output`` is an instance of.
        source: Where the contract came from (``agent``, ``inline``, ``named``, ``default``).
        hash: A stable hash of ``schema``, as logged in analytics.
        name: The registered name, when the schema came from the registry.
        tool: The ``submit_result`` tool built from the contract.
        lenient: Whether ``format`` is only an annotation.
    """

    schema: JsonSchema
    model: type[BaseModel]
    source: SchemaSource
    hash: str
    name: str | None
    tool: OutputTool
    lenient: bool
    _judge: Callable[[JsonValue], list[ValidationIssue]]

    def issues(self, value: JsonValue) -> list[ValidationIssue]:
        """Return every problem ``value`` has against the contract (empty when it meets it)."""
        return self._judge(value)

    def build(self, value: JsonValue) -> BaseModel:
        """Return ``value`` (already judged valid) as an instance of :attr:`model`."""
        return self.model.model_validate(value)

    def tool_definition(self, provider_name: str) -> ToolDefinition:
        """Return ``submit_result`` compiled for the provider's dialect."""
        dialect = dialect_for(provider_name)
        if dialect == "anthropic":
            tool = self.tool.anthropic_tool()
            parameters = tool["input_schema"]
            strict = bool(tool.get("strict", False))
        else:
            function = self.tool.openai_tool(strict=dialect == "openai")["function"]
            assert isinstance(function, dict)
            parameters = function["parameters"]
            strict = bool(function["strict"])
        assert isinstance(parameters, dict)
        return ToolDefinition(
            name=self.tool.name,
            description=self.tool.description,
            parameters=parameters,
            strict=strict,
        )

    def response_format(self, provider_name: str) -> ResponseFormat:
        """Return the native structured-output request for the provider's dialect.

        Raises:
            ConfigError: The schema cannot be used with the provider's native structured output.
        """
        dialect = dialect_for(provider_name)
        if dialect == "anthropic":
            schema = self.tool.anthropic_output_format()["schema"]
            strict = True
        else:
            spec = self.tool.openai_response_format()["json_schema"]
            assert isinstance(spec, dict)
            schema = spec["schema"]
            strict = bool(spec["strict"]) and dialect == "openai"
            if not strict:
                schema = self.tool.parameters
        assert isinstance(schema, dict)
        return ResponseFormat(name=self.tool.name, json_schema=schema, strict=strict)

    def unwrap(self, value: JsonValue, provider_name: str) -> JsonValue:
        """Map the provider's arguments back to a value for the designer's schema."""
        return self.tool.unwrap(value, dialect_for(provider_name))


def _for_schema(
    schema: JsonSchema, source: SchemaSource, name: str | None, lenient: bool, where: str
) -> OutputContract:
    compiled = compile_schema(schema, lenient=lenient, source=where)
    model = model_from_schema(schema, name="Output", lenient=lenient, source=where)
    return OutputContract(
        schema=schema,
        model=model,
        source=source,
        hash=compiled.hash,
        name=name,
        tool=build_output_tool(schema),
        lenient=lenient,
        _judge=compiled.issues,
    )


def _for_class(model: type[BaseModel], lenient: bool) -> OutputContract:
    schema = cast(dict[str, JsonValue], model.model_json_schema())

    def judge(value: JsonValue) -> list[ValidationIssue]:
        return validate_output(value, model, lenient=lenient)

    return OutputContract(
        schema=schema,
        model=model,
        source="agent",
        hash=schema_hash(schema),
        name=model.__name__,
        tool=build_output_tool(model),
        lenient=lenient,
        _judge=judge,
    )


def resolve_contract(
    config: AgentConfig,
    *,
    output_type: type[BaseModel] | None,
    inline: JsonSchema | None,
    named: tuple[str, JsonSchema] | None,
    lenient: bool,
) -> OutputContract | None:
    """Pick the run's contract: the agent's own, else inline, else named, else the default.

    Args:
        config: The agent.
        output_type: A Pydantic class given as the agent's contract in Python.
        inline: The caller's inline schema for this run.
        named: The caller's registered schema for this run, as ``(name, schema)``.
        lenient: Treat ``format`` as an annotation only.

    Returns:
        The contract, or ``None`` for a run that returns free text.

    Raises:
        ConfigError: The caller tried to replace the agent's own output contract.
        InvalidSchemaError: The chosen schema is not valid under its draft.
        SchemaReferenceError: The chosen schema has a ``$ref`` that does not resolve offline.
    """
    caller = "an inline output schema" if inline is not None else "a named output schema"
    if output_type is not None or config.output_schema is not None:
        if inline is not None or named is not None:
            raise ConfigError(
                f"agent {config.id!r} has its own output contract, which a caller cannot "
                f"override; this run gave {caller}. Drop it, or give the agent a "
                "default_output_schema instead of an output_schema if callers should choose."
            )
        if output_type is not None:
            return _for_class(output_type, lenient)
        assert config.output_schema is not None
        where = f"agent {config.id!r} output_schema"
        return _for_schema(config.output_schema, "agent", None, lenient, where)
    if inline is not None:
        return _for_schema(inline, "inline", None, lenient, "inline output schema")
    if named is not None:
        name, schema = named
        return _for_schema(schema, "named", name, lenient, f"schema {name!r}")
    if config.default_output_schema is not None:
        where = f"agent {config.id!r} default_output_schema"
        return _for_schema(config.default_output_schema, "default", None, lenient, where)
    return None
