#!/usr/bin/env bash
# Create .venv and install PMM with every extra and the dev tools.
# torch is installed first and pinned, so that the extras do not pull another (multi-GB CUDA)
# build: on this project's machines pip's configuration finds the 2.13.0 CPU wheel on disk;
# elsewhere set PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu for a CPU build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
if ! python -c "import torch" 2>/dev/null; then
  python -m pip install --quiet "torch==2.13.0"
fi
python -m pip install --quiet -e ".[dev]"
