#!/usr/bin/env bash
# Set up (if needed) and run the linters, the docs build and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
. .venv/bin/activate
export TOKENIZERS_PARALLELISM=false
ruff check .
ruff format --check .
mypy
lint-imports
# The documentation site: a broken link, a missing page or an unresolved API reference fails.
NO_MKDOCS_2_WARNING=1 mkdocs build --strict --quiet --site-dir "${TMPDIR:-/tmp}/pmm-site-$$"
rm -rf "${TMPDIR:-/tmp}/pmm-site-$$"
python -m pytest "$@"
