"""Which tests ``--dist loadgroup`` keeps on one xdist worker: those sharing a costly fixture.

pytest-xdist's own grouping reads ``xdist_group`` marks and renames each test by a private
attribute that pytest 9 no longer reads, so its groups are not formed. :class:`GroupScheduling`
forms them from the test ids instead, by :data:`GROUPS`.
"""

from __future__ import annotations

from xdist.scheduler import LoadGroupScheduling

__all__ = ["GROUPS", "GroupScheduling", "group_of"]

GROUPS = {
    "test_dashboard_browser": "chromium",
    "test_conformance": "conformance",
    # one `agentshape serve` process (or PostgreSQL cluster) for the module, started once
    "test_app": "app-service",
    "test_client": "client-service",
    "test_editor": "editor-service",
    "test_hosts": "hosts-service",
    "test_store_faults": "restarted-cluster",
    # the one mypy run over the user programs (tests/strict_mypy.py)
    "test_readme_types": "mypy",
    "test_examples::test_examples_pass_mypy_strict": "mypy",
    "test_client::test_a_user_program_and_the_docs_client_example_pass_mypy_strict": "mypy",
}
"""Group of a test module (``test_x``) or of one test (``test_x::test_y``): a group's tests run
on one worker, so a module- or session-scoped fixture they share is set up once."""


def group_of(nodeid: str) -> str | None:
    """Return the group of the test ``nodeid`` (``tests/a/test_x.py::test_y[p]``), if any.

    Args:
        nodeid: A pytest test id.

    Returns:
        The group's name from :data:`GROUPS`, or ``None`` when the test runs wherever.
    """
    path, _, rest = nodeid.partition("::")
    module = path.rsplit("/", 1)[-1].removesuffix(".py")
    test = rest.split("[", 1)[0]
    return GROUPS.get(f"{module}::{test}") or GROUPS.get(module)


class GroupScheduling(LoadGroupScheduling):
    """``--dist loadgroup`` scheduling whose groups are :func:`group_of` the test ids.

    Each group is one unit of work: the largest are handed out first, then the other tests
    one by one in collection order.
    """

    def _split_scope(self, nodeid: str) -> str:
        return group_of(nodeid) or nodeid
