"""Agents over HTTP: ``POST /agents``, ``PATCH /agents/{name}`` and ``DELETE /agents/{name}``.

An agent is its file, ``<fleet>/<id>/agent.yml``. Creating one writes that file (409
``AgentExists`` when the id is taken); changing one sets only the fields the request names,
keeping the file's comments and key order; deleting one removes the file (409 ``AgentBusy`` while
a run of it is queued or running). A change or deletion may carry ``If-Match`` with the file's
version (the ``ETag`` of the last answer, or ``version`` of ``GET /agents/{name}/source``); when
the file was changed since, the request is refused with 409 ``AgentFileChanged``.

Every written file gets the checks ``agentshape list`` makes: when the file would not load, it is
put back as it was and the answer is 400 ``ConfigError`` with every problem, each at its line.
After a write the running service uses the fleet as it is on disk.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import Annotated

from fastapi import APIRouter, Header, Response

from agent_contracts._config import AgentConfig
from agent_contracts._errors import ConfigFileError, FleetProblems
from agent_coordinator._agent_files import (
    FileChanged,
    create_agent_file,
    delete_agent_file,
    file_version,
    patch_agent_file,
    restore_agent_file,
)
from agent_coordinator._api.deps import ServicesDep
from agent_coordinator._api.editor_bodies import (
    AgentCreate,
    AgentUpdate,
    AgentWritten,
    ConfigProblemView,
)
from agent_coordinator._api.fleet_checks import load_checked, problem_view
from agent_coordinator._errors import BadRequest, Conflict, ErrorDetail, NotFound, Unprocessable
from agent_coordinator._service.services import Services
from agent_coordinator._service.views import agent_detail
from agent_core._fleet import AGENT_FILE, Fleet
from agent_core._loading import load_agent_config

__all__ = ["router"]

router = APIRouter(tags=["agents"])

_AGENT_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_ACTIVE = ("queued", "running")

IfMatch = Annotated[str | None, Header(alias="If-Match", max_length=200)]


def _wanted_version(if_match: str | None) -> str | None:
    """Return the version ``If-Match`` names (quoted or not); ``None`` for none or ``*``."""
    if if_match is None or if_match.strip() == "*":
        return None
    return if_match.strip().removeprefix("W/").strip('"')


def _changed(path: Path) -> Conflict:
    return Conflict(
        "AgentFileChanged",
        f"{path} was changed after the version you sent; read the agent again and repeat the "
        "change (nothing was written)",
    )


def _reload(services: Services, path: Path, before: bytes | None, agent_id: str) -> bool:
    """Use the fleet on disk now; put ``path`` back and raise when it is what fails to load."""
    try:
        fleet = load_checked(services.execution.fleet.directory)
    except FleetProblems as error:
        mine = [p for p in error.problems if Path(p.source) == path]
        if mine:
            restore_agent_file(path, before)
            raise BadRequest(
                "ConfigError",
                f"nothing was written: {path} would not load ({len(mine)} problem(s)); "
                "fix them and send it again",
                details=[
                    ErrorDetail(path=f"$.{p.field}" if p.field else "$", message=p.format_message())
                    for p in mine
                ],
            ) from error
        return False
    except ConfigFileError:
        return False
    if agent_id not in fleet or fleet.source(agent_id) != path:
        restore_agent_file(path, before)
        raise Unprocessable(
            "InvalidRequest",
            f"nothing was written: {path} would load as another agent than {agent_id!r} (its "
            "id names its folder)",
        )
    services.execution.fleet = fleet
    return True


def _written(services: Services, path: Path, text: str, reloaded: bool) -> AgentWritten:
    config: AgentConfig
    try:
        config = load_agent_config(path)
    except ConfigFileError as error:  # pragma: no cover - the reload above loaded it
        raise BadRequest("ConfigError", error.format_message()) from error
    warnings: list[ConfigProblemView] = []
    if reloaded:
        fleet = services.execution.fleet
        warnings = [problem_view(w, "warning") for w in fleet.warnings if Path(w.source) == path]
    return AgentWritten(
        **agent_detail(config).model_dump(),
        file=os.fspath(path),
        version=file_version(text.encode("utf-8")),
        reloaded=reloaded,
        warnings=warnings,
    )


def _agent_id(body: dict[str, object]) -> str:
    given = body.get("id", body.get("name"))
    if not isinstance(given, str) or not given:
        raise Unprocessable(
            "InvalidRequest",
            "an agent needs an 'id' (or a 'name'): it names the agent's folder",
            details=[ErrorDetail(path="$.id", message="missing")],
        )
    if not _AGENT_ID.fullmatch(given) or given in {".", ".."}:
        raise Unprocessable(
            "InvalidRequest",
            f"{given!r} cannot name an agent's folder: use letters, digits, '.', '_' and '-', "
            "starting with a letter or digit (at most 100)",
            details=[ErrorDetail(path="$.id", message="not a folder name")],
        )
    return given


def _create(services: Services, body: AgentCreate) -> AgentWritten:
    agent_id = _agent_id(dict(body.root))
    directory = services.execution.fleet.directory
    path = directory / agent_id / AGENT_FILE
    if agent_id in services.execution.fleet or path.exists():
        raise Conflict(
            "AgentExists",
            f"agent {agent_id!r} exists already; change it with PATCH /agents/{agent_id}",
        )
    try:
        text = create_agent_file(path, body.root)
    except FileExistsError as error:
        raise Conflict("AgentExists", f"agent {agent_id!r} exists already") from error
    except OSError as error:
        raise BadRequest("ConfigError", f"{path}: the agent was not written: {error}") from error
    reloaded = _reload(services, path, None, agent_id)
    return _written(services, path, text, reloaded)


def _path_of(services: Services, name: str) -> Path:
    fleet = services.execution.fleet
    if name in fleet:
        return fleet.source(name)
    path = fleet.directory / name / AGENT_FILE
    if _AGENT_ID.fullmatch(name) and path.is_file():
        return path  # written but not yet loaded (another file stops the reload)
    services.execution.config(name)  # raises AgentNotFound with a did-you-mean
    raise NotFound("AgentNotFound", f"agent {name!r} not found")  # pragma: no cover


def _update(services: Services, name: str, body: AgentUpdate, version: str | None) -> AgentWritten:
    if not body.root:
        raise Unprocessable("InvalidRequest", "name at least one field to change")
    if body.root.get("id", name) != name:
        raise Unprocessable(
            "InvalidRequest",
            f"an agent's id names its folder and cannot change ({name!r}); create the agent "
            "under the new id and delete this one",
            details=[ErrorDetail(path="$.id", message="cannot change")],
        )
    path = _path_of(services, name)
    try:
        text, before = patch_agent_file(path, body.root, version)
    except FileChanged as error:
        raise _changed(path) from error
    except (OSError, ValueError) as error:
        raise BadRequest("ConfigError", f"{path}: the agent was not changed: {error}") from error
    reloaded = _reload(services, path, before, name)
    return _written(services, path, text, reloaded)


def _delete(services: Services, name: str, version: str | None) -> None:
    path = _path_of(services, name)
    for status in _ACTIVE:
        active = services.store.list_runs(limit=1, status=status, agent_name=name)
        if active:
            raise Conflict(
                "AgentBusy",
                f"agent {name!r} has run {active[0].id} {status}; delete it after that run ends "
                "(or cancel it)",
            )
    try:
        delete_agent_file(path, version)
    except FileChanged as error:
        raise _changed(path) from error
    except OSError as error:
        raise BadRequest("ConfigError", f"{path}: the agent was not deleted: {error}") from error
    fleet = services.execution.fleet
    try:
        services.execution.fleet = load_checked(fleet.directory)
    except ConfigFileError:
        # another file stops the reload: the running fleet just loses this agent
        services.execution.fleet = Fleet(
            fleet.directory,
            [(config, fleet.source(config.id)) for config in fleet.configs if config.id != name],
            [w for w in fleet.warnings if Path(w.source) != path],
        )


@router.post("/agents", status_code=201)
async def create_agent(
    body: AgentCreate, services: ServicesDep, response: Response
) -> AgentWritten:
    """Create an agent: write ``agents/<id>/agent.yml`` from a blueprint (or a file form).

    The file gets ``agentshape list``'s checks (400 ``ConfigError`` with every problem, nothing
    kept); 409 ``AgentExists`` when the id is taken. The ``ETag`` is the file's version.
    """
    written = await asyncio.to_thread(_create, services, body)
    response.headers["ETag"] = f'"{written.version}"'
    return written


@router.patch("/agents/{name}")
async def update_agent(
    name: str,
    body: AgentUpdate,
    services: ServicesDep,
    response: Response,
    if_match: IfMatch = None,
) -> AgentWritten:
    """Change the fields the body names (``null`` removes one), keeping the rest of the file.

    ``If-Match`` with the file's version refuses a stale change (409 ``AgentFileChanged``); the
    changed file gets ``agentshape list``'s checks (400 ``ConfigError``, the file put back).
    """
    written = await asyncio.to_thread(_update, services, name, body, _wanted_version(if_match))
    response.headers["ETag"] = f'"{written.version}"'
    return written


@router.delete("/agents/{name}", status_code=204)
async def delete_agent(name: str, services: ServicesDep, if_match: IfMatch = None) -> Response:
    """Delete an agent's file (409 ``AgentBusy`` while a run of it is queued or running).

    Its sessions and results stay readable; ``If-Match`` refuses a stale delete (409
    ``AgentFileChanged``).
    """
    await asyncio.to_thread(_delete, services, name, _wanted_version(if_match))
    return Response(status_code=204)
