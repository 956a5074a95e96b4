"""``/agents``: the fleet's agents, their contracts, and ``agentshape list``'s schema checks."""

from __future__ import annotations

from fastapi import APIRouter

from agent_coordinator._api.deps import ServicesDep
from agent_coordinator._service.bodies import (
    AgentDetail,
    AgentSummary,
    SchemaCheck,
    ValidateSchemaRequest,
)
from agent_coordinator._service.schema_checks import check_schema
from agent_coordinator._service.views import agent_detail, agent_summary

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
    return check_schema(body)
