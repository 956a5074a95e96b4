"""Which output contract a run enforces, built once per schema: :func:`resolve_contract`.

The agent's own contract (its ``output_schema``, or a Pydantic class) wins and no caller can
replace it; otherwise the caller's inline schema, else a registered one, else the agent's
``default_output_schema``. A schema's contract is built once (compiled, checked, its model and
its output tool) and kept in a bounded cache.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import cast

from pydantic import BaseModel, JsonValue

from agent_contracts.config import AgentConfig
from agent_contracts.errors import ConfigError
from agent_contracts.runs import JsonSchema, SchemaSource
from agent_contracts.validation import ValidationIssue
from agent_core.caches import SchemaCache, schema_cache
from agent_core.contract import OutputContract
from agent_core.output_tool import build_output_tool
from agent_core.output_validation import json_form, validate_output
from agent_core.schema_checks import ensure_output_schema
from agent_core.schema_model import compile_schema, model_from_schema, schema_hash

logger = logging.getLogger(__name__)

__all__ = ["resolve_contract"]


_contracts: SchemaCache[tuple[str, SchemaSource, str | None, bool], OutputContract]
_contracts = schema_cache("agent_core.contracts", 256)


def _for_schema(
    schema: JsonSchema, source: SchemaSource, name: str | None, lenient: bool, where: str
) -> OutputContract:
    """Build (once per schema) the contract: compile, check, model, and the output tool.

    The config-time checks of ``schema_checks`` run here: errors raise, warnings (such as an
    unknown keyword that looks like a typo) are logged once per schema.
    """
    compiled = compile_schema(schema, lenient=lenient, source=where)
    key = (compiled.hash, source, name, lenient)
    cached = _contracts.get(key)
    if cached is not None:
        return cached
    for finding in ensure_output_schema(schema, source=where):
        logger.warning("%s: %s: %s", where, finding.path, finding.message)
    model = model_from_schema(schema, name="Output", lenient=lenient, source=where)
    contract = OutputContract(
        schema=schema,
        model=model,
        source=source,
        hash=compiled.hash,
        name=name,
        tool=build_output_tool(schema),
        lenient=lenient,
        _judge=compiled.issues,
    )
    _contracts.put(key, contract)
    return contract


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
        _json_form=None if hasattr(model, "agentshape_compiled") else partial(json_form, model),
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
