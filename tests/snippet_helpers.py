"""The Python blocks of README.md and the documentation site, for the tests that run them.

    for block in python_blocks():
        block.source, block.where, block.not_run   # not_run: the reason, or None

A block is a fenced ```` ```python ```` block. One that cannot run (it needs a server or an
API key, or an API another branch adds) is preceded by ``<!-- not-run: the reason -->``
(other HTML comments may sit between the marker and the fence).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOT_RUN = re.compile(r"^<!--\s*not-run:\s*(?P<reason>.*?)\s*-->$")


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    source: str
    not_run: str | None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def documents() -> list[Path]:
    """README.md and every page of the site (docs/hooks/ holds code, not pages)."""
    pages = sorted(p for p in (ROOT / "docs").rglob("*.md") if "hooks" not in p.parts)
    return [ROOT / "README.md", *pages]


def blocks_of(path: Path) -> list[Block]:
    lines = path.read_text("utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            reason = None
            k = start - 1
            while k >= 0 and lines[k].strip().startswith("<!--"):
                match = NOT_RUN.match(lines[k].strip())
                if match:
                    reason = match["reason"]
                k -= 1
            found.append(Block(path, start + 1, "\n".join(lines[start + 1 : end]) + "\n", reason))
            i = end
        i += 1
    return found


def python_blocks() -> list[Block]:
    return [b for p in documents() for b in blocks_of(p)]
