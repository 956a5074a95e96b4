"""What a subcommand of the ``agentshape`` command line is, and how it ends.

Each command module registers its commands on :data:`Subcommands`; a command is a
:data:`Handler` that returns one of the exit codes, and a mistake on the command line raises
:class:`UsageError`, which the command line turns into :data:`EXIT_USAGE`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TextIO, TypeAlias

from agent_contracts._errors import AgentshapeError

__all__ = ["EXIT_OK", "EXIT_RUN_FAILED", "EXIT_USAGE", "Handler", "Subcommands", "UsageError"]

EXIT_OK = 0
"""The command did what was asked (the run completed, the output is valid)."""
EXIT_RUN_FAILED = 1
"""A run failed, an output is invalid, or a config has problems."""
EXIT_USAGE = 2
"""The command line, a file it names, or an agent config cannot be used."""


class UsageError(AgentshapeError):
    """A command line that cannot be carried out: a bad flag value, a missing or unreadable file."""


Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
"""The ``add_subparsers()`` object each command module registers its commands on."""

Handler: TypeAlias = Callable[[argparse.Namespace, TextIO, TextIO], int]
"""A command: ``handler(args, out, err)`` returns the exit code (results to ``out``)."""
