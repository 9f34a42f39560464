#!/usr/bin/env bash
# Create .venv and install PMM with every extra and the dev tools.
#
# The install runs only when needed: after a successful one, .venv/.pmm-installed holds the
# SHA-256 of pyproject.toml and the Python version; while both still match, this script does
# nothing (a ready venv starts in well under a second). `./scripts/setup.sh --force`
# reinstalls anyway. A fresh clone (no .venv) always gets the full install.
#
# torch is installed first and pinned, so that the extras do not pull another (multi-GB CUDA)
# build: on this project's machines pip's configuration finds the 2.13.0 CPU wheel on disk;
# elsewhere set PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu for a CPU build.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
STAMP=.venv/.pmm-installed
FORCE=0
if [ "${1:-}" = "--force" ]; then FORCE=1; fi

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $("$PYTHON" --version 2>&1)" >&2
  "$PYTHON" -m venv .venv
fi
wanted=$(.venv/bin/python - <<'PY'
import hashlib, sys
with open("pyproject.toml", "rb") as f:
    print(hashlib.sha256(f.read()).hexdigest(), sys.version.split()[0])
PY
)
if [ "$FORCE" = 0 ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$wanted" ]; then
  exit 0  # installed from this very pyproject.toml: nothing to do
fi

echo "setup: installing PMM, its extras and the dev tools into .venv" >&2
echo "setup: the first install downloads and unpacks several hundred MB; it takes minutes" >&2
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
if ! python -c "import torch" 2>/dev/null; then
  echo "setup: [1/2] torch (CPU build)" >&2
  python -m pip install --progress-bar on "torch==2.13.0"
fi
echo "setup: [2/2] pmm-memory[dev] (editable) and its dependencies" >&2
python -m pip install --progress-bar on -e ".[dev]"
rm -f "$STAMP"
echo "$wanted" > "$STAMP"
echo "setup: done; the next start skips this step until pyproject.toml changes" >&2
