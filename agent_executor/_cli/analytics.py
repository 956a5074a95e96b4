"""``agentshape analytics``: how each agent's runs went, from the JSONL event logs.

A table for people by default, ``--json`` for machines, ``--html FILE`` for a page with charts.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from agent_executor._analytics import DEFAULT_ANALYTICS_DIR
from agent_executor._cli.commands import EXIT_OK, Subcommands, UsageError
from agent_executor._review import format_review_table, parse_since, review, write_review_html

__all__ = ["register"]


def register(commands: Subcommands) -> None:
    """Add ``analytics`` to the command line."""
    analytics = commands.add_parser(
        "analytics", help="success rates, failures, retries, tokens and latency per agent"
    )
    analytics.add_argument(
        "dir",
        nargs="?",
        type=Path,
        default=DEFAULT_ANALYTICS_DIR,
        metavar="DIR",
        help=f"the event logs (default {DEFAULT_ANALYTICS_DIR})",
    )
    analytics.add_argument(
        "--since", metavar="WHEN", help="only events since a date (2025-01-05), time, or 7d/12h/2w"
    )
    analytics.add_argument("--agent", metavar="ID", help="only this agent's runs")
    analytics.add_argument("--json", action="store_true", help="print the review as JSON")
    analytics.add_argument("--html", type=Path, metavar="FILE", help="also write an HTML report")
    analytics.set_defaults(handler=_analytics)


def _analytics(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    try:
        since = parse_since(args.since) if args.since is not None else None
    except OverflowError:  # a span such as 99999999999d
        raise UsageError(
            f"--since {args.since!r} reaches back before the year 1; give a shorter span or a date"
        ) from None
    result = review(args.dir, since=since, agent=args.agent)
    if not args.dir.exists():
        print(f"note: {args.dir} does not exist; no runs have been logged there", file=err)
    if args.json:
        out.write(result.model_dump_json(indent=2) + "\n")
    else:
        out.write(format_review_table(result) + "\n")
    if args.html is not None:
        written = write_review_html(result, args.html)
        print(f"wrote {written}", file=err)
    return EXIT_OK
