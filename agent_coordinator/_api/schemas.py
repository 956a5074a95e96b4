"""``/schemas``: the named output schema registry (the same one ``agentshape schemas`` uses).

A name stands for one schema (schemas are immutable). Registering the same schema
again under its name is answered with the stored entry (200); a different schema under a taken
name is 409 ``SchemaExists``. A session keeps the content of the named schema it started with,
so deleting a name (or replacing it with ``replace``) changes what new runs get, never what a
stored session is held to when it runs or is resumed.
"""

from __future__ import annotations

from fastapi import APIRouter, Response

from agent_contracts._errors import AgentshapeError, SchemaRegistryError
from agent_coordinator._api.deps import ServicesDep
from agent_coordinator._errors import Conflict, PayloadTooLarge, from_library
from agent_coordinator._service.bodies import SchemaCreate, SchemaDetail, SchemaSummary
from agent_core._schema_documents import schema_hash

__all__ = ["router"]

router = APIRouter(tags=["schemas"])


@router.post(
    "/schemas",
    status_code=201,
    responses={200: {"model": SchemaDetail, "description": "The same schema was registered"}},
)
def add_schema(body: SchemaCreate, services: ServicesDep, response: Response) -> SchemaDetail:
    """Register a schema (201).

    It is checked against its draft first (400 ``InvalidSchema`` with the path of the fault).
    The same schema again under its name is 200 with the stored entry; another schema under a
    taken name is 409 ``SchemaExists``, unless ``replace`` (sessions keep what they started with).
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
    except SchemaRegistryError as error:
        if "already registered" not in error.message:
            raise from_library(error) from error
        try:
            stored = registry.info(body.name)
        except AgentshapeError as gone:  # removed meanwhile: the name is free again
            raise from_library(error) from gone
        if stored.hash != schema_hash(body.schema_):
            raise Conflict(
                "SchemaExists",
                f"a different schema is registered as {body.name!r}; schemas are immutable, "
                "so register this one under a new name (sessions that used "
                f"{body.name!r} keep the schema they started with)",
            ) from error
        response.status_code = 200
        return SchemaDetail(**stored.model_dump(), schema=registry.get(body.name))
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
    """Remove a schema's name (404 ``SchemaNotFound`` when there is none).

    Sessions that used it keep its content: they run and resume with it as before.
    """
    try:
        services.execution.registry.remove(name)
    except AgentshapeError as error:
        raise from_library(error) from error
    return Response(status_code=204)
