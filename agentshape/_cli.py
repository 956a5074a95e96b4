"""The ``agentshape`` command: the executor's commands, the service's and ``run --resume``.

The executor's command line (``run``, ``list``, ``schemas``...) lives in ``agent_executor``,
which cannot import the layers above it; this module is where the service's commands join it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from agent_coordinator._call_limits import register_run_many_limits
from agent_coordinator._cli import register as register_service
from agent_coordinator._resume import register_resume
from agent_executor._cli import main as executor_main

__all__ = ["main"]


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the ``agentshape`` command line and return its exit code.

    Args:
        argv: The arguments (default: ``sys.argv[1:]``).
        out: Where results go (default: standard output).

    Returns:
        The exit code: 0 done, 1 a run failed or a check found problems, 2 bad usage or config.
    """
    return executor_main(
        argv, out=out, extra_commands=[register_service, register_resume, register_run_many_limits]
    )
