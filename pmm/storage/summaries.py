"""The backend-neutral rules of appending a session summary at most once (the SQL that
reads and writes stays in each backend's ``append_summary``).

    if (kept := covering_summary(newest, covers_upto)) is not None:
        return kept, False          # the newest summary already covers these turns
    edges = summary_edges(event.id, covered_ids, newest, "SUMMARIZES", "SUPERSEDES")
"""

from __future__ import annotations

from collections.abc import Sequence

from pmm.records import Event


def covering_summary(newest: Event | None, covers_upto: int) -> Event | None:
    """The session's newest summary when it is live and already covers turns up to
    ``covers_upto``: then nothing new is written."""
    if (
        newest is not None
        and newest.content is not None
        and int(newest.meta.get("covers_upto", 0)) >= covers_upto
    ):
        return newest
    return None


def summary_edges(
    summary_id: int,
    covered_ids: Sequence[int],
    newest: Event | None,
    summarizes: str,
    supersedes: str,
) -> list[tuple[int, int, str]]:
    """The edges a new summary gets: one ``summarizes`` edge to each covered turn, and a
    ``supersedes`` edge to the summary it replaces (when there is one)."""
    edges = [(summary_id, dst, summarizes) for dst in covered_ids]
    if newest is not None:
        edges.append((summary_id, newest.id, supersedes))
    return edges
