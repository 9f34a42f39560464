#!/usr/bin/env bash
# Set up (if needed) and run the whole test suite plus the linters.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
. .venv/bin/activate
export TOKENIZERS_PARALLELISM=false
ruff check .
ruff format --check .
mypy
lint-imports
python -m pytest "$@"
