#!/usr/bin/env bash
# Set up (if needed) and start the chat REPL. Without OPENAI_API_KEY it runs offline.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
. .venv/bin/activate
exec python chat.py "$@"
