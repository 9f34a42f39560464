"""Where ``pmm export`` writes: ``_output(file)`` opens the export target (``-`` is stdout).
The file format itself (``read_export_file``, ``key_line``) is :mod:`pmm.events.export_file`'s.

    with _output("backup.jsonl") as out:
        out.write(key_line(chain, secret))
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from pmm.events.export_file import key_line

__all__ = ["_output", "key_line"]


@contextmanager
def _output(file: str) -> Iterator[IO[str]]:
    if file == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    with open(file, "w", encoding="utf-8") as out:
        yield out
