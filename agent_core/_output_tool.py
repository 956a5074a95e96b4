"""The ``submit_result`` tool built from an output contract, in every provider's spelling.

:func:`build_output_tool` turns a JSON Schema or Pydantic class into an :class:`OutputTool` that
writes itself in each dialect, maps answers back to the designer's shape (:meth:`OutputTool.unwrap`)
and reports what each provider enforces (rules in :mod:`agent_core._dialects`).
:func:`provider_tool_name` and :class:`ToolNameMap` give input tools provider-safe names.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, JsonValue, PydanticUserError

from agent_contracts._errors import ConfigError, InvalidSchemaError
from agent_core._dialects import (
    DIALECTS,
    WRAPPER_PROPERTY,
    CompileReport,
    Dialect,
    ProviderSchema,
    compile_for_provider,
)
from agent_core._tool_names import ToolNameMap, provider_tool_name

__all__ = [
    "OUTPUT_TOOL_NAME",
    "Contract",
    "OutputTool",
    "ToolNameMap",
    "build_output_tool",
    "json_schema_of",
    "provider_tool_name",
]

OUTPUT_TOOL_NAME = "submit_result"
"""The name of the tool a model calls to hand in its result."""

Contract = Mapping[str, JsonValue] | bool | type[BaseModel]
"""An output contract: a JSON Schema (object or boolean) or a Pydantic model class."""

JsonDict = dict[str, JsonValue]

_DESCRIPTION = (
    "Submit your final result. Call this tool exactly once, when your work is done; "
    "its arguments are the result and must match the parameter schema."
)
_WRAPPED_HINT = f" Put the whole result in the `{WRAPPER_PROPERTY}` argument."


def json_schema_of(contract: Contract) -> dict[str, JsonValue] | bool:
    """Return the JSON Schema a contract stands for, as a fresh copy.

    Args:
        contract: A JSON Schema (object or boolean) or a Pydantic model class (its
            ``model_json_schema()``, with ``$defs`` and ``#/$defs/...`` references).

    Returns:
        A fresh copy of the JSON Schema (an object, or a boolean schema).

    Raises:
        InvalidSchemaError: When the contract is neither, the schema is not JSON, or the model
            class has no JSON Schema.
    """
    if isinstance(contract, bool):
        return contract
    if isinstance(contract, type) and issubclass(contract, BaseModel):
        try:
            return contract.model_json_schema()
        except PydanticUserError as error:
            name = contract.__name__
            raise InvalidSchemaError(f"{name} has no JSON Schema: {error}") from error
    if not isinstance(contract, Mapping):
        kind = type(contract).__name__
        raise InvalidSchemaError(
            f"an output contract is a JSON Schema (object or boolean) or a Pydantic model "
            f"class, not {kind}"
        )
    try:
        schema = json.loads(json.dumps(contract, allow_nan=False))
    except (TypeError, ValueError) as error:
        raise InvalidSchemaError(f"the output schema is not JSON: {error}") from error
    assert isinstance(schema, dict)
    return schema


class _Dialects(Mapping[Dialect, ProviderSchema]):
    """The schema compiled for each dialect, each compiled on first use."""

    def __init__(self, schema: JsonValue, allow_narrowing: bool) -> None:
        self._schema = schema
        self._allow_narrowing = allow_narrowing
        self._done: dict[Dialect, ProviderSchema] = {}

    def __getitem__(self, dialect: Dialect) -> ProviderSchema:
        done = self._done.get(dialect)
        if done is None:
            if dialect not in DIALECTS:
                raise KeyError(dialect)
            done = compile_for_provider(
                self._schema, dialect, allow_narrowing=self._allow_narrowing
            )
            self._done[dialect] = done  # two threads may both compile it: the same result
        return done

    def __iter__(self) -> Iterator[Dialect]:
        return iter(DIALECTS)

    def __len__(self) -> int:
        return len(DIALECTS)


@dataclass(frozen=True)
class OutputTool:
    """The ``submit_result`` tool for one contract, compiled for every dialect.

    Build it with :func:`build_output_tool`. Every method returns fresh dictionaries: changing
    one does not change the tool.

    Attributes:
        name: The tool's name, ``submit_result``.
        description: What the model reads about the tool.
        schema: The designer's JSON Schema; validation judges against it.
    """

    name: str
    description: str
    schema: dict[str, JsonValue] | bool
    compiled: Mapping[Dialect, ProviderSchema]
    """The schema compiled for each dialect."""

    @property
    def wrapped(self) -> bool:
        """Whether the root travels as ``{"result": <value>}`` (the schema's root is no object)."""
        return self.compiled["neutral"].wrapped

    @property
    def parameters(self) -> JsonDict:
        """The neutral parameters: the schema as written (wrapped when needed)."""
        return copy.deepcopy(self.compiled["neutral"].parameters)

    def neutral_tool(self) -> JsonDict:
        """Return ``{"name", "description", "parameters"}`` with the neutral parameters.

        For OpenAI-compatible servers that reject strict mode; unwrap with ``"neutral"``.
        """
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def openai_tool(self, *, strict: bool = True) -> JsonDict:
        """Return the OpenAI Chat Completions tool definition.

        Args:
            strict: Use strict mode when the schema allows it. With ``False`` the neutral
                parameters are sent with ``strict: false``; unwrap those with ``"neutral"``.

        Returns:
            ``{"type": "function", "function": {"name", "description", "parameters",
            "strict"}}``.
        """
        compiled = self.compiled["openai" if strict else "neutral"]
        function: JsonDict = {
            "name": self.name,
            "description": self.description,
            "parameters": copy.deepcopy(compiled.parameters),
            "strict": compiled.strict,
        }
        return {"type": "function", "function": function}

    def anthropic_tool(self, *, strict: bool = True) -> JsonDict:
        """Return the Anthropic Messages tool definition.

        Args:
            strict: Use strict mode when the schema allows it (``"strict": true`` is then set).
                With ``False`` the neutral parameters are sent; unwrap those with ``"neutral"``.

        Returns:
            ``{"name", "description", "input_schema"}``, plus ``"strict": true`` when strict.
        """
        compiled = self.compiled["anthropic" if strict else "neutral"]
        tool: JsonDict = {
            "name": self.name,
            "description": self.description,
            "input_schema": copy.deepcopy(compiled.parameters),
        }
        if compiled.strict:
            tool["strict"] = True
        return tool

    def openai_response_format(self) -> JsonDict:
        """Return OpenAI's native structured output ``response_format``; unwrap with ``"openai"``.

        Returns:
            ``{"type": "json_schema", "json_schema": {"name", "description", "schema",
            "strict"}}``, strict exactly when the tool would be.
        """
        compiled = self.compiled["openai"]
        json_schema: JsonDict = {
            "name": self.name,
            "description": self.description,
            "schema": copy.deepcopy(compiled.parameters),
            "strict": compiled.strict,
        }
        return {"type": "json_schema", "json_schema": json_schema}

    def anthropic_output_format(self) -> JsonDict:
        """Return Anthropic's native structured output format; unwrap with ``"anthropic"``.

        The value goes in the request's ``output_config`` as ``{"format": <this>}``. Anthropic
        structured outputs accept only the strict subset, so this needs a strict schema.

        Returns:
            ``{"type": "json_schema", "schema": ...}``.

        Raises:
            ConfigError: When the schema cannot be strict for Anthropic; the message gives the
                reasons (use the tool instead).
        """
        compiled = self.compiled["anthropic"]
        if not compiled.strict:
            reasons = "\n".join(f"  - {note}" for note in compiled.report.notes)
            raise ConfigError(
                "this output schema cannot be used with Anthropic structured outputs, which "
                f"accept only the strict subset; use the {self.name} tool instead:\n{reasons}"
            )
        return {"type": "json_schema", "schema": copy.deepcopy(compiled.parameters)}

    def report(self, dialect: Dialect) -> CompileReport:
        """Return what ``dialect``'s provider enforces and what only validation guarantees.

        Args:
            dialect: ``neutral``, ``openai`` or ``anthropic``.

        Raises:
            ConfigError: When ``dialect`` is not a dialect.
        """
        return self._dialect(dialect).report

    def unwrap(self, arguments: JsonValue, dialect: Dialect) -> JsonValue:
        """Map a provider's parsed arguments back to a value for the designer's schema.

        Undoes the root wrapper and the nulls strict mode forced; never raises, never changes
        ``arguments``. Validate the result against :attr:`schema`.

        Args:
            arguments: The parsed tool arguments or structured output.
            dialect: The dialect the tool or format was sent in.

        Returns:
            The value to validate.

        Raises:
            ConfigError: When ``dialect`` is not a dialect.
        """
        return self._dialect(dialect).unwrap(arguments)

    def from_openai_arguments(self, arguments: JsonValue) -> JsonValue:
        """Return :meth:`unwrap` of OpenAI arguments (the tool or response format, strict)."""
        return self.unwrap(arguments, "openai")

    def from_anthropic_input(self, arguments: JsonValue) -> JsonValue:
        """Return :meth:`unwrap` of an Anthropic ``tool_use`` input or structured output."""
        return self.unwrap(arguments, "anthropic")

    def to_arguments(self, value: JsonValue, dialect: Dialect) -> JsonValue:
        """Return the arguments ``dialect``'s provider would send for ``value``.

        The inverse of :meth:`unwrap`, for test doubles that answer like a real provider.

        Args:
            value: A value valid for the designer's schema.
            dialect: The dialect to answer in.

        Raises:
            ConfigError: When ``dialect`` is not a dialect.
        """
        return self._dialect(dialect).to_arguments(value)

    def _dialect(self, dialect: Dialect) -> ProviderSchema:
        if dialect not in DIALECTS:  # not ``in self.compiled``: a Mapping looks it up twice
            raise ConfigError(f"unknown dialect {dialect!r}; use one of {', '.join(DIALECTS)}")
        return self.compiled[dialect]


def build_output_tool(
    contract: Contract, *, description: str | None = None, allow_narrowing: bool = False
) -> OutputTool:
    """Build the ``submit_result`` tool for an output contract.

    Args:
        contract: A JSON Schema (object or boolean) or a Pydantic model class.
        description: What the model reads about the tool; a default tells it to call the tool
            once with its final result. When the root is wrapped, a sentence saying to put the
            result in the ``result`` argument is appended.
        allow_narrowing: Let strict mode close objects open to undeclared properties and type
            untyped schemas, so the provider produces a subset of the valid values. Off by
            default: strict mode is then used only when it changes nothing.

    Returns:
        The tool; each dialect is compiled when first asked for.

    Raises:
        InvalidSchemaError: When the contract is not a JSON Schema or a Pydantic model class.
    """
    schema = json_schema_of(contract)
    compiled = _Dialects(schema, allow_narrowing)
    text = _DESCRIPTION if description is None else description
    if compiled["neutral"].wrapped:
        text += _WRAPPED_HINT
    return OutputTool(name=OUTPUT_TOOL_NAME, description=text, schema=schema, compiled=compiled)
