#!/usr/bin/env bash
# Set up (only when needed: see scripts/setup.sh) and start the chat REPL.
# Without OPENAI_API_KEY it runs offline.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
exec .venv/bin/python chat.py "$@"
