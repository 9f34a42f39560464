"""MkDocs hook: the Sphinx roles in PMM's docstrings (``:class:`pmm.mind.Mind```,
``:func:`~pmm.cli.parser.build_parser```) render as code on the API pages, linked to the
object's own page when mkdocstrings documents it, instead of a raw ``:class:`` before it.

    mkdocs build --strict          # runs this hook on every page's HTML

Markdown has already turned the backticks into ``<code>``, so the role is the text just
before it. A full ``pmm.`` path becomes an optional cross-reference that mkdocs-autorefs
resolves (or leaves as plain code when no page documents it); ``~`` shows the last name
only, as in Sphinx.
"""

from __future__ import annotations

import html
import re
from typing import Any

ROLE = re.compile(
    r":(?:py:)?(?:class|func|meth|attr|mod|exc|data|obj|const|ref):"
    r"<code>(?P<target>[^<]*)</code>"
)


def _render(match: re.Match[str]) -> str:
    target = html.unescape(match["target"]).strip()
    short = target.startswith("~")
    target = target.lstrip("~").rstrip("()")
    shown = target.rsplit(".", 1)[-1] if short else target
    if match["target"].rstrip().endswith("()"):
        shown += "()"
    code = f"<code>{html.escape(shown)}</code>"
    if target.startswith("pmm.") and re.fullmatch(r"[\w.]+", target):
        return f'<autoref identifier="{target}" optional>{code}</autoref>'
    return code


def render_roles(content: str) -> str:
    """``content`` (HTML) with every Sphinx role rendered as code or a reference."""
    return ROLE.sub(_render, content)


def on_page_content(html_text: str, **_: Any) -> str:
    return render_roles(html_text)
