"""The one reader of JSON in chat-model replies (digests, session summaries, contradictions)."""

from __future__ import annotations

import pytest

from pmm.models.llm_json import json_object, reply_text


def test_fenced_and_chatty_replies_give_the_object() -> None:
    assert json_object('```json\n{"a": 1}\n```') == {"a": 1}
    assert json_object('Sure! {"contradicts": false, "reason": "x"} Hope that helps') == {
        "contradicts": False,
        "reason": "x",
    }


def test_content_blocks_are_joined() -> None:
    blocks = [{"type": "text", "text": '{"a": '}, {"type": "text", "text": "2}"}]
    assert reply_text(blocks) == '{"a": 2}'
    assert json_object(blocks) == {"a": 2}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("no json here", "not JSON"),
        ("{not: json}", "not JSON"),
        ("[1, 2] {", "not JSON"),
        ('{"a": 1} and {"b": 2}', "not JSON"),
    ],
)
def test_replies_without_one_object_raise_value_error(content: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        json_object(content)
