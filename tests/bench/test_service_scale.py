"""``bench/service_scale.py``: a store it builds is one the service reads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.agent_coordinator.harness import Service

REPO = Path(__file__).parents[2]
TOOL = REPO / "bench" / "service_scale.py"


def _build(database: str, sessions: int) -> str:
    done = subprocess.run(
        [sys.executable, str(TOOL), "--sessions", str(sessions), "--database", database],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_built_store_is_read_by_the_api(database: str, tmp_path: Path) -> None:
    printed = _build(database, 500)
    assert printed.startswith("built 500 sessions (")
    service = Service(tmp_path, database, workers=0)
    try:
        page = service.client.get("/reports/sessions", params={"limit": 200}).json()
        assert page["total"] == 500
        assert page["error_types"] == ["output_schema_validation_failed"]
        items = page["items"]
        assert len(items) == 200
        created = [item["created_at"] for item in items]
        assert created == sorted(created, reverse=True)
        agents = {item["agent_name"] for item in items}
        assert "pr-reviewer" in agents and len(agents) > 1
        assert {item["status"] for item in items} == {"completed", "failed"}
        assert all(item["model"] == "gpt-4.1-mini" and item["tokens"] for item in items)
        failed = [item for item in items if item["status"] == "failed"]
        assert failed and {item["error_type"] for item in failed} == {
            "output_schema_validation_failed"
        }

        detail = service.client.get(f"/reports/sessions/{failed[0]['session_id']}").json()
        assert detail["schema_valid"] is False and detail["attempts"] == 2

        runs = int(printed.split(" runs (")[0].rsplit(" ", 1)[1])
        overall = service.client.get("/reports/analytics").json()["overall"]
        assert overall["runs"] == runs > 500
        assert 0.8 < overall["success_rate"] < 0.97
        assert overall["retries"] > 0 and overall["incomplete"] == 0
        review = service.client.get("/reports/analytics").json()
        assert review["unrecognised_events"] == 0

        sessions = [service.client.get(f"/sessions/{item['session_id']}").json() for item in items]
        resumed = [session for session in sessions if len(session["runs"]) == 2]
        assert resumed and all(session["messages"] == 4 for session in resumed)
        assert all(session["messages"] == 2 for session in sessions if len(session["runs"]) == 1)
    finally:
        service.close()


def test_a_store_with_sessions_is_refused(tmp_path: Path) -> None:
    full = str(tmp_path / "full.db")
    _build(full, 3)
    done = subprocess.run(
        [sys.executable, str(TOOL), "--sessions", "3", "--database", full],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode != 0
    assert "already holds 3 sessions" in done.stderr


@pytest.mark.parametrize("sessions", ["0", "-1"])
def test_a_count_below_one_is_refused(tmp_path: Path, sessions: str) -> None:
    done = subprocess.run(
        [sys.executable, str(TOOL), "--sessions", sessions, "--database", str(tmp_path / "x.db")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert done.returncode == 2
    assert "--sessions must be at least 1" in done.stderr
