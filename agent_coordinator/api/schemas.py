"""``/schemas``: the named output schema registry (the same one ``agentshape schemas`` uses)."""

from __future__ import annotations

from fastapi import APIRouter, Response

from agent_contracts.errors import AgentshapeError
from agent_coordinator.api.bodies import SchemaCreate, SchemaDetail, SchemaSummary
from agent_coordinator.api.deps import ServicesDep
from agent_coordinator.errors import PayloadTooLarge, from_library

__all__ = ["router"]

router = APIRouter(tags=["schemas"])


@router.post("/schemas", status_code=201)
def add_schema(body: SchemaCreate, services: ServicesDep) -> SchemaDetail:
    """Register a schema.

    It is checked against its draft first (400 ``InvalidSchema`` with the path of the fault);
    409 ``SchemaExists`` when the name is taken, unless ``replace``.
    """
    limit = services.limits.max_schema_bytes
    size = len(body.model_dump_json(include={"schema_"}))
    if size > limit:
        raise PayloadTooLarge("SchemaTooLarge", f"the schema is {size} bytes; the limit is {limit}")
    registry = services.execution.registry
    try:
        entry = registry.add(
            body.name, body.schema_, description=body.description, replace=body.replace
        )
    except AgentshapeError as error:
        raise from_library(error) from error
    return SchemaDetail(**entry.model_dump(), schema=body.schema_)


@router.get("/schemas")
def list_schemas(services: ServicesDep) -> list[SchemaSummary]:
    """List the registered schemas, by name."""
    try:
        entries = services.execution.registry.list()
    except AgentshapeError as error:
        raise from_library(error) from error
    return [SchemaSummary(**entry.model_dump()) for entry in entries]


@router.get("/schemas/{name}")
def get_schema(name: str, services: ServicesDep) -> SchemaDetail:
    """Return a registered schema (404 ``SchemaNotFound`` with a did-you-mean)."""
    registry = services.execution.registry
    try:
        entry = registry.info(name)
        schema = registry.get(name)
    except AgentshapeError as error:
        raise from_library(error) from error
    return SchemaDetail(**entry.model_dump(), schema=schema)


@router.delete("/schemas/{name}", status_code=204, response_class=Response)
def delete_schema(name: str, services: ServicesDep) -> Response:
    """Remove a registered schema (404 ``SchemaNotFound`` when there is none)."""
    try:
        services.execution.registry.remove(name)
    except AgentshapeError as error:
        raise from_library(error) from error
    return Response(status_code=204)
