#!/usr/bin/env bash
# A YAML fleet run over a file of tasks: check the fleet, run every task, run again (only the
# tasks not yet completed run), and read the results.
#
#   cd examples/fleet && bash run_many.sh            # the offline test model
#   MODEL=openai:gpt-4.1-mini bash run_many.sh       # a real one (OPENAI_API_KEY)
set -euo pipefail
cd "$(dirname "$0")"
model="${MODEL:-test}"
out="${OUT:-results.jsonl}"
agentshape list
agentshape run-many summarizer --tasks tasks.jsonl --concurrency 4 --out "$out" --model "$model"
agentshape run-many summarizer --tasks tasks.jsonl --out "$out" --model "$model"
python - "$out" <<'PY'
import json
import sys

with open(sys.argv[1], encoding="utf-8") as results:
    for line in results:
        row = json.loads(line)
        print(row["id"], row["status"], row["result_data"])
PY
