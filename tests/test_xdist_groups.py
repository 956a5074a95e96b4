"""The groups ``--dist loadgroup`` keeps on one worker, formed from the test ids."""

from __future__ import annotations

from tests.xdist_groups import group_of


def test_a_modules_tests_share_its_group_and_others_have_none() -> None:
    assert group_of("tests/agent_coordinator/test_dashboard_browser.py::test_x") == "chromium"
    assert group_of("tests/agent_coordinator/test_app.py::test_a_405[DELETE-/health]") == (
        "app-service"
    )
    assert group_of("tests/agent_coordinator/test_api_runs.py::test_x[postgres]") is None


def test_one_test_of_a_module_may_have_a_group_of_its_own() -> None:
    assert group_of("tests/test_examples.py::test_examples_pass_mypy_strict") == "mypy"
    assert group_of(
        "tests/test_readme_types.py::test_readme_and_docs_examples_pass_mypy_strict"
    ) == ("mypy")
    assert group_of("tests/test_examples.py::test_mcp_client_over_stdio") is None
