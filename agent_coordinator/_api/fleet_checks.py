"""The fleet's files as the API checks them: loaded with the service's tools, problems as views."""

from __future__ import annotations

from pathlib import Path

from agent_contracts._errors import ConfigFileError
from agent_coordinator._api.editor_bodies import ConfigProblemView
from agent_coordinator._execution import Execution
from agent_core._fleet import Fleet, load_fleet
from agent_executor._providers.resolve import KNOWN_PREFIXES
from agent_executor._tools import KNOWN_TOOLS

__all__ = ["load_checked", "problem_view"]


def load_checked(directory: Path) -> Fleet:
    """Load the fleet in ``directory`` with the checks ``agentshape list`` makes.

    Raises:
        ConfigFileError: A file does not load (with every problem).
    """
    return load_fleet(
        directory,
        known_tools=Execution.known_tools(KNOWN_TOOLS),
        known_model_prefixes=KNOWN_PREFIXES,
    )


def problem_view(error: ConfigFileError, severity: str) -> ConfigProblemView:
    """Return a problem of an agent file as the API shows it."""
    return ConfigProblemView.model_validate(
        {
            "file": error.source,
            "line": error.line,
            "field": error.field,
            "severity": severity,
            "message": error.message,
            "text": error.format_message(),
        }
    )
