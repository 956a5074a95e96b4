"""The ``agentshape`` command line: one module per command or concern.

:func:`main` runs it; :func:`build_parser` builds its parser, to which the layers above add their
own commands (``extra_commands``). This package is the only place that prints and picks exit
codes.
"""

from __future__ import annotations

from agent_executor._cli.inputs import find_agent_file, parse_param
from agent_executor._cli.main import EPILOG, Registrar, build_parser, main

__all__ = ["EPILOG", "Registrar", "build_parser", "find_agent_file", "main", "parse_param"]
