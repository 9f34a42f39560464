"""The JSON object inside a chat model's reply, for the three places that ask a model for
JSON without structured output (digests, session summaries, contradiction checks).

    from pmm.models.llm_json import json_object

    json_object('```json\\n{"summary": "..."}\\n```')       # {'summary': '...'}
    json_object("Sure! {\\"contradicts\\": false} Hope that helps")  # {'contradicts': False}

Models wrap JSON in code fences or chatter around it; the outermost ``{...}`` is taken.
A reply with no JSON object raises :class:`ValueError` with the start of the text, so each
caller can raise its own "malformed reply" error and ask again.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$", re.IGNORECASE)


def reply_text(content: Any) -> str:
    """A message's content as plain text: content blocks (``[{"text": ...}, ...]``) are
    joined, fences stripped."""
    if isinstance(content, list):
        content = "".join(
            str(block.get("text", "")) if isinstance(block, dict) else str(block)
            for block in content
        )
    return _FENCE.sub("", str(content).strip())


def json_object(content: Any) -> dict[str, Any]:
    """The outermost JSON object in a reply (see the module docstring).

    Raises ValueError when there is none, or it does not parse, or it is not an object.
    """
    text = reply_text(content)
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        raise ValueError(f"the reply is not JSON: {text[:80]!r}")
    try:
        data = json.loads(text[start : end + 1])
    except ValueError as exc:
        raise ValueError(f"the reply is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"the reply is not a JSON object: {text[:80]!r}")
    return data
