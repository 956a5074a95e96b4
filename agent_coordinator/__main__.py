"""``python -m agent_coordinator serve|runner``.

The service's commands, without the ``agentshape`` entry point.
"""

import sys

from agent_coordinator._cli import main

sys.exit(main())
