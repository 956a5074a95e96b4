"""``/agents``: the fleet's agents, their contracts, and ``agentshape list``'s schema checks."""

from __future__ import annotations

from fastapi import APIRouter

from agent_contracts.errors import InvalidSchemaError, SchemaReferenceError
from agent_coordinator.api.bodies import (
    AgentDetail,
    AgentSummary,
    SchemaCheck,
    SchemaFindingView,
    ValidateSchemaRequest,
)
from agent_coordinator.api.deps import ServicesDep
from agent_coordinator.api.views import agent_detail, agent_summary
from agent_core.compiled_schema import compile_schema
from agent_core.schema_checks import check_output_schema
from agent_core.schema_model import model_from_schema

__all__ = ["router"]

router = APIRouter(tags=["agents"])


@router.get("/agents")
def list_agents(services: ServicesDep) -> list[AgentSummary]:
    """List the fleet's agents, by name."""
    return [agent_summary(config) for config in services.execution.fleet.configs]


@router.get("/agents/{name}")
def get_agent(name: str, services: ServicesDep) -> AgentDetail:
    """Return an agent's blueprint with its contracts (404 ``AgentNotFound``)."""
    return agent_detail(services.execution.config(name))


@router.post("/agents/validate-schema")
def validate_schema(body: ValidateSchemaRequest) -> SchemaCheck:
    """Check a schema as ``agentshape list`` checks an agent's.

    Every error and warning comes with its path; ``valid`` is false when any is an error.
    """
    schema = body.schema_
    findings: list[SchemaFindingView] = []
    if body.kind == "output":
        findings = [
            SchemaFindingView(
                path=f.path, severity=f.severity, message=f.message, keyword=f.keyword
            )
            for f in check_output_schema(schema, source="request")
        ]
    elif not isinstance(schema, dict | bool):
        findings = [
            SchemaFindingView(
                path="$",
                severity="error",
                message=f"a JSON Schema is an object or a boolean, not {type(schema).__name__}",
            )
        ]
    if not any(f.severity == "error" for f in findings) and isinstance(schema, dict | bool):
        try:
            if body.kind == "output":
                model_from_schema(schema, name="Output", source="request")
            else:
                compile_schema(schema, source="request")
        except InvalidSchemaError as error:
            findings.append(
                SchemaFindingView(path=error.path, severity="error", message=error.message)
            )
        except SchemaReferenceError as error:
            findings.append(SchemaFindingView(path="$", severity="error", message=error.message))
    return SchemaCheck(valid=not any(f.severity == "error" for f in findings), findings=findings)
