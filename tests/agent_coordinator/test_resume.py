"""``agentshape run --resume SESSION_ID --database ...``: a stored session continued."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from agentshape._cli import main
from tests.agent_coordinator.conftest import ServiceFactory
from tests.agent_coordinator.harness import Service

COUNT = {
    "type": "object",
    "required": ["files"],
    "properties": {"files": {"type": "integer"}},
    "additionalProperties": False,
}


def _resume(service: Service, tmp_path: Path, database: str, *args: str) -> tuple[int, str, str]:
    """Run ``agentshape run --resume ...`` in-process against the service's store."""
    out, err = io.StringIO(), io.StringIO()
    where = ["--database", database, "--agents-dir", str(tmp_path / "agents")]
    where += ["--registry", str(tmp_path / "schemas.db"), "--model", "test"]
    with contextlib.redirect_stderr(err):
        code = main(["run", *args, *where], out=out)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("workers", [0, 2])
def test_resume_continues_a_service_session_which_the_service_then_shows(
    make_service: ServiceFactory, tmp_path: Path, database: str, workers: int
) -> None:
    service = make_service(workers=2)
    started = service.run(
        {"agent_name": "writer", "prompt": "Count the files.", "output_schema": COUNT}
    ).json()
    assert started["status"] == "completed"
    service.close()
    later = make_service(workers=workers)  # the service may be running or not
    session_id = started["session_id"]
    code, out, _ = _resume(
        later, tmp_path, database, "--resume", session_id, "--task", "And the tests?", "--json"
    )
    assert code == 0, out
    result = json.loads(out)
    assert result["status"] == "completed" and set(result["result_data"]) == {"files"}
    session = later.client.get(f"/sessions/{session_id}").json()
    assert [run["type"] for run in session["runs"]] == ["start_session", "resume_session"]
    assert [run["status"] for run in session["runs"]] == ["completed", "completed"]
    assert session["runs"][1]["prompt"] == "And the tests?"
    assert session["runs"][1]["run_id"] == result["run_id"]
    answer = later.client.get(f"/sessions/{session_id}/result").json()
    assert answer["result_data"] == result["result_data"]
    assert session["messages"] > 2  # the conversation went on, not a new one


def test_resume_refuses_what_it_cannot_do(
    make_service: ServiceFactory, tmp_path: Path, database: str
) -> None:
    service = make_service(workers=0)
    code, _, err = _resume(service, tmp_path, database, "--resume", "ses_nope", "--task", "x")
    assert code == 2 and "no session 'ses_nope'" in err
    started = service.client.post("/runs", json={"agent_name": "writer", "prompt": "Hi"}).json()
    code, _, err = _resume(
        service, tmp_path, database, "--resume", started["session_id"], "--task", "x"
    )
    assert code == 2 and "SessionBusy" in err  # its first run is still queued
    code, _, err = _resume(
        service,
        tmp_path,
        database,
        "--resume",
        started["session_id"],
        "--task",
        "x",
        "--schema",
        "code-count",
    )
    assert code == 2 and "--schema does not go with --resume" in err
    code, _, err = _resume(service, tmp_path, database, "writer", "--task", "x")
    assert code == 2 and "--database goes with --resume" in err
