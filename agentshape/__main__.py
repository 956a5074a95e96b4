"""``python -m agentshape``: the ``agentshape`` command."""

from __future__ import annotations

import sys

from agentshape._cli import main

sys.exit(main())
