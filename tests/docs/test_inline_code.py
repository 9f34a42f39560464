"""Inline code on the documentation pages that constructs a ``Mind`` runs as written
(issue 36: the users page showed ``Mind("pmm.db", user_id="alice")``, which is refused)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from snippet_helpers import documents

from pmm import Mind

SPAN = re.compile(r"`(Mind\([^`]*\)[^`]*)`")
CALLS = [
    (f"{path.name}:{n}", span)
    for path in documents()
    for n, line in enumerate(path.read_text("utf-8").splitlines(), 1)
    for span in SPAN.findall(line)
    if "..." not in span and "URL" not in span and "postgresql" not in span
]


def test_pages_show_inline_mind_calls() -> None:
    assert any("users-and-sessions.md" in where for where, _ in CALLS), CALLS


@pytest.mark.parametrize(("where", "code"), CALLS, ids=[w for w, _ in CALLS])
def test_an_inline_mind_call_runs(
    where: str, code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = eval(compile(code, where, "eval"), {"Mind": Mind})
    if isinstance(result, Mind):
        result.close()
