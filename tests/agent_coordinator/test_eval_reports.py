"""``GET /reports/evals``: the ``agentshape eval`` reports of ``serve --evals-dir``, over HTTP."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from agent_executor._cli import main as cli
from tests.agent_coordinator.harness import Service, write_fleet
from tests.agent_coordinator.processes import serve
from tests.agent_executor.cli.test_main import AGENT_YML


def write_eval(
    root: Path, out: str, models: str = "test,test:fail_first=invalid_arguments"
) -> None:
    """Run ``agentshape eval`` for real (the offline test models), its reports under ``root``."""
    (root / "fleet" / "grader").mkdir(parents=True, exist_ok=True)
    (root / "fleet" / "grader" / "agent.yml").write_text(AGENT_YML)
    tasks = root / "tasks.jsonl"
    tasks.write_text("".join(json.dumps({"id": k, "task": f"Grade {k}."}) + "\n" for k in "ab"))
    arguments = (
        [
            "eval", "grader", "--agents-dir", str(root / "fleet"), "--tasks", str(tasks),
            "--models", models, "--out", str(root / "evals" / out), "--concurrency", "1",
            "--analytics-dir", str(root / "analytics"),
        ]
    )  # fmt: skip
    # A thread of its own: the eval runs its own event loop (a browser test's thread has one).
    with ThreadPoolExecutor(1) as pool:
        code = pool.submit(cli, arguments).result()
    assert code == 0


def listed(service: Service) -> dict[str, Any]:
    response = service.client.get("/reports/evals")
    assert response.status_code == 200
    body: dict[str, Any] = response.json()
    return body


def test_without_an_evals_dir_the_list_is_empty_and_says_so(service: Service) -> None:
    assert listed(service) == {"evals_dir": None, "evals": []}


def test_the_reports_an_eval_wrote_are_listed_with_their_figures(
    service: Service, tmp_path: Path
) -> None:
    write_eval(tmp_path, "grader-local")
    service.services.evals_dir = tmp_path / "evals"

    body = listed(service)
    assert body["evals_dir"] == str(tmp_path / "evals")
    (entry,) = body["evals"]
    assert entry["path"] == "grader-local/eval.json" and entry["error"] is None
    report = entry["report"]
    assert (report["agent"], report["tasks"]) == ("grader", 2)
    by_model = {m["model"]: m for m in report["models"]}
    assert by_model["test"]["completed"] == 2 and by_model["test"]["rescued_by_reask"] == 0
    rescued = by_model["test:fail_first=invalid_arguments"]
    assert (rescued["completed"], rescued["first_try_valid"], rescued["rescued_by_reask"]) == (
        2,
        1,
        1,
    )


def test_a_file_that_is_not_a_report_is_listed_with_its_error_and_hides_nothing(
    service: Service, tmp_path: Path
) -> None:
    write_eval(tmp_path, "good")
    (tmp_path / "evals" / "broken").mkdir()
    (tmp_path / "evals" / "broken" / "eval.json").write_text("{not json")
    (tmp_path / "evals" / "foreign").mkdir()
    (tmp_path / "evals" / "foreign" / "eval.json").write_text(json.dumps({"agent": "x"}))
    service.services.evals_dir = tmp_path / "evals"

    entries = listed(service)["evals"]
    assert [e["path"] for e in entries] == [
        "good/eval.json",
        "broken/eval.json",
        "foreign/eval.json",
    ]
    assert entries[1]["report"] is None
    assert entries[1]["error"].startswith("broken/eval.json: not an eval report (")
    assert entries[2]["error"].startswith("foreign/eval.json: not an eval report (tasks: ")


def test_the_list_needs_the_token_like_every_report(make_service: Any, tmp_path: Path) -> None:
    service = make_service(token="s3cret")
    service.services.evals_dir = tmp_path
    response = service.client.get("/reports/evals", headers={"Authorization": "Bearer wrong"})
    assert response.status_code == 401
    assert response.json()["error"] == "Unauthorized"
    assert service.client.get("/reports/evals").status_code == 200


@pytest.mark.parametrize("missing", [True, False])
def test_a_missing_or_empty_directory_lists_nothing(
    service: Service, tmp_path: Path, missing: bool
) -> None:
    directory = tmp_path / "nothing-here"
    if not missing:
        directory.mkdir()
    service.services.evals_dir = directory
    assert listed(service) == {"evals_dir": str(directory), "evals": []}


def test_serve_evals_dir_shows_the_reports_over_http(tmp_path: Path, database: str) -> None:
    write_eval(tmp_path, "grader-local")
    write_fleet(tmp_path / "agents")
    process, url = serve(tmp_path, database, {}, "--workers", "0", "--evals-dir", "evals")
    try:
        process.read_until("evals:")
        assert "  evals:    evals\n" in "".join(process.lines)
        body = httpx.get(f"{url}/reports/evals").json()
        assert body["evals_dir"] == "evals"
        assert [e["path"] for e in body["evals"]] == ["grader-local/eval.json"]
        page = httpx.get(f"{url}/evals", headers={"accept": "text/html"})
        assert page.status_code == 200 and "<nav" in page.text
    finally:
        assert process.stop() == 0
