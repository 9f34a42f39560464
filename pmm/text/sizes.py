"""Sizes as people read them, shared by ``pmm stats`` and the chat's ``/stats``.

>>> format_size(1536)
'1.5 KiB'
"""

from __future__ import annotations


def format_size(n: int) -> str:
    """``1,536`` -> ``1.5 KiB``; bytes below 1 KiB stay exact (``"512 B"``)."""
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{n} B"
