"""Keep API keys out of messages: PMM puts the text of backend errors in its log and its
exceptions, and a server may echo the key it rejected ("Incorrect API key provided: sk-...").

    redact_secrets("Incorrect API key provided: sk-live-abc123456789")
    # 'Incorrect API key provided: [redacted]'

Redacted: the values of the environment variables whose names end in ``_API_KEY``,
``_TOKEN``, ``_SECRET`` or ``_PASSWORD`` (``OPENAI_API_KEY`` ...), and anything shaped like an
OpenAI-style key (``sk-`` followed by 8+ key characters).
"""

from __future__ import annotations

import os
import re

REDACTED = "[redacted]"
_SECRET_SUFFIXES = ("_API_KEY", "_TOKEN", "_SECRET", "_PASSWORD")
_KEY_SHAPE = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")


def redact_secrets(text: str) -> str:
    """``text`` with every secret value from the environment and every ``sk-...`` key
    replaced by ``[redacted]``."""
    for name, value in os.environ.items():
        if len(value) >= 8 and name.upper().endswith(_SECRET_SUFFIXES) and value in text:
            text = text.replace(value, REDACTED)
    return _KEY_SHAPE.sub(REDACTED, text)
