"""How much of a contract a llama.cpp grammar carries: agentshape's compiler against llama.cpp's.

``python bench/grammar_coverage.py [DIR]`` reads every JSONSchemaBench ``*.jsonl`` file in
``DIR`` (default ``$AGENTSHAPE_CONFORMANCE_DIR/jsonschemabench``, else
``/work/shared/conformance/jsonschemabench``) in place and
prints, per category and in total, the share of schemas whose every validation keyword the
grammar carries, so that nothing is left to validation and the re-ask:

- agentshape: :func:`agent_core._gbnf_grammar.schema_to_gbnf` gives no notes;
- llama.cpp: :func:`bench.llamacpp_grammar.grammar_notes`, the keywords llama.cpp's own
  ``json_schema_to_grammar`` is documented to leave out, gives none.

Both count keywords, not decoding: a keyword is carried when the grammar enforces it. It also
prints the grammar's size (median and largest, in characters) and the keywords most often left
out by agentshape's. Exit status 0, or 2 when ``DIR`` holds no ``*.jsonl`` file.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from agent_core import schema_to_gbnf
from bench.llamacpp_grammar import grammar_notes

DEFAULT_DIR = (
    Path(os.environ.get("AGENTSHAPE_CONFORMANCE_DIR") or "/work/shared/conformance")
    / "jsonschemabench"
)


@dataclass
class Tally:
    """Counts for one category."""

    schemas: int = 0
    ours: int = 0
    llamacpp: int = 0
    sizes: list[int] = field(default_factory=list)
    left_out: Counter[str] = field(default_factory=Counter)


def _keyword(note: str) -> str:
    """Return the keyword a note names: ``$.a: uniqueItems is not...`` gives ``uniqueItems``."""
    text = note.split(": ", 1)[1]
    match = re.match(r"(format '[^']*'|\$ref|[A-Za-z]+)", text)
    return match.group(1) if match else text


def tally(path: Path) -> Tally:
    """Return the counts for one JSONSchemaBench file."""
    counts = Tally()
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        schema = json.loads(line)["schema"]
        grammar = schema_to_gbnf(schema)
        counts.schemas += 1
        counts.ours += not grammar.notes
        counts.llamacpp += not grammar_notes(schema)
        counts.sizes.append(len(grammar.text))
        counts.left_out.update({_keyword(note) for note in grammar.notes})
    return counts


def main(argv: list[str] | None = None) -> int:
    """Print the coverage table; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", nargs="?", type=Path, default=DEFAULT_DIR)
    args = parser.parse_args(argv)
    files = sorted(Path(args.dir).glob("*.jsonl"))
    if not files:
        print(f"no *.jsonl file in {args.dir}", file=sys.stderr)
        return 2
    total = Tally()
    print(f"{'category':<16} {'schemas':>7} {'agentshape':>11} {'llama.cpp':>10}")
    for path in files:
        counts = tally(path)
        print(
            f"{path.stem:<16} {counts.schemas:>7} {counts.ours / counts.schemas:>11.0%} "
            f"{counts.llamacpp / counts.schemas:>10.0%}"
        )
        total.schemas += counts.schemas
        total.ours += counts.ours
        total.llamacpp += counts.llamacpp
        total.sizes += counts.sizes
        total.left_out.update(counts.left_out)
    print(
        f"{'all':<16} {total.schemas:>7} {total.ours / total.schemas:>11.0%} "
        f"{total.llamacpp / total.schemas:>10.0%}"
    )
    print(
        f"grammar size: median {statistics.median(total.sizes):,.0f} chars, "
        f"largest {max(total.sizes):,} chars"
    )
    common = ", ".join(f"{key} ({n})" for key, n in total.left_out.most_common(8))
    print(f"left to validation most often (schemas): {common}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
