"""Consolidation ("dream deep"): one summary node per session, kept current, and the
recall expansion of a summary into its best turns.

    from pmm.dream.consolidation import Consolidator, expand_summary_hits

    report = Consolidator(store, settings, chat_model=None).summarize_sessions()
    report.created, report.dropped_bullets
    summary = current_summary(store, "alice")        # the Event in use, or None

A session with at least ``session_summary_min_turns`` digested turns (after its last clear
marker) gets a ``summary`` event whose text is cited bullets built from the digests
(:mod:`pmm.dream.session_summaries`), ``SUMMARIZES`` edges to every covered turn, and a chained
``summary_created`` audit event (covered ids, method, prompt version). The stable key is
``first-last:count`` of the covered turns (no session id: see :func:`summary_key`), checked
inside the write transaction, so dreaming twice, or in two processes at once, writes one
summary. When more turns are digested, the next dream writes a new version whose meta names
the summary it supersedes (a
``SUPERSEDES`` edge too); only the newest summary of a session is used.

A summary over ``summary_word_limit`` words is compressed by the llm to about
``summary_sentences`` sentences (meta-consolidation); if that fails, or there is no llm, the
longer summary is kept and one warning says why.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pmm.dream.session_summaries import (
    COMPRESS_PROMPT_VERSION,
    HEURISTIC_VERSION,
    SUMMARY_PROMPT_VERSION,
    Bullet,
    LLMSessionSummarizer,
    heuristic_bullets,
    parse_rendered,
    render,
    word_count,
)
from pmm.errors import BackendError
from pmm.records import NewEvent
from pmm.text.words import search_terms

if TYPE_CHECKING:
    from pmm.records import Event, Hit
    from pmm.settings import Settings
    from pmm.storage.base import EventLog

log = logging.getLogger(__name__)

SUMMARY_KIND = "summary"
AUDIT_KIND = "summary_created"
SUMMARIZES = "SUMMARIZES"
SUPERSEDES = "SUPERSEDES"
SLOT_SUPERSEDES = "SUPERSEDES_SLOT"
TURN_KINDS = ("prompt", "response")


@dataclass(frozen=True, slots=True)
class SummaryReport:
    """What one consolidation pass did."""

    created: int = 0
    superseded: int = 0
    dropped_bullets: int = 0
    compressed: int = 0
    llm_calls: int = 0


def summary_key(covered: Sequence[int]) -> str:
    """The stable identity of a summary within its session: the range of turns it covers,
    ``first-last:count``. No session id: the key is looked up within its session only, and
    it sits in the hashed meta, which an erasure cannot change (a thread id there would
    outlive ``forget(user_id=...)``; files of earlier versions hold
    ``session:first-last:count``)."""
    return f"{covered[0]}-{covered[-1]}:{len(covered)}"


def current_summary(store: EventLog, session_id: str) -> Event | None:
    """The summary in use for a session (its newest), or None."""
    return store.latest_summary(session_id, kind=SUMMARY_KIND)


REDACTED_SOURCE = "a turn it was built from was redacted"


def redact_derived(store: EventLog) -> int:
    """Erase what consolidation derived from redacted turns: the text of every summary
    that covers one, and of every ``superseded`` marker naming one (their reasons may quote
    it). Each erasure is itself a chained ``redaction`` event; the next pass writes a new
    summary from the turns that remain. Returns how many events were redacted."""
    done = 0
    gone = {int(r.meta["target"]) for r in store.events(kinds=("redaction",)) if "target" in r.meta}
    if not gone:
        return 0
    covering = {src for srcs in store.edge_sources(gone, SUMMARIZES).values() for src in srcs}
    for summary in store.get_many(covering).values():
        if summary.content is not None:
            store.redact(summary.id, reason=REDACTED_SOURCE)
            done += 1
    for marker in store.events(kinds=("superseded",)):
        named = {marker.meta.get("older"), marker.meta.get("newer")}
        if marker.content is not None and gone & named:
            store.redact(marker.id, reason=REDACTED_SOURCE)
            done += 1
    return done


class Consolidator:
    """Writes and refreshes session summaries (see the module docstring).

    ``chat_model`` (a LangChain chat model) enables the llm summarizer; without it the
    bullets are built from the digests by :func:`~pmm.dream.session_summaries.heuristic_bullets`.
    """

    def __init__(self, store: EventLog, settings: Settings, chat_model: Any = None) -> None:
        self.store = store
        self.settings = settings
        self.llm = LLMSessionSummarizer(chat_model) if chat_model is not None else None
        self._warned: set[str] = set()

    def _warn_once(self, reason: str, message: str, *args: object) -> None:
        if reason not in self._warned:
            self._warned.add(reason)
            log.warning(message, *args)

    def summarize_sessions(self) -> SummaryReport:
        """Write a summary for every session whose digested turns are not all covered."""
        created = superseded = dropped = compressed = calls = 0
        minimum = max(self.settings.session_summary_min_turns, 1)
        for session, count, newest_id in self.store.summary_candidates(kinds=TURN_KINDS):
            if count < minimum:
                continue
            current = current_summary(self.store, session)
            if (
                current is not None
                and current.content is not None
                and int(current.meta.get("covers_upto", 0)) >= newest_id
            ):
                continue
            turns = self.store.summary_turns(session, kinds=TURN_KINDS, upto=newest_id)
            if len(turns) < minimum:
                continue
            bullets, method, version, dropped_now = self._bullets(turns)
            bullets, was_compressed = self._meta_consolidate(bullets)
            if was_compressed:
                version += "+" + COMPRESS_PROMPT_VERSION
            _, wrote = self._write(session, turns, bullets, method, version, dropped_now, current)
            created += wrote
            superseded += bool(wrote and current is not None)
            dropped += dropped_now
            compressed += was_compressed
        calls = self.llm.calls if self.llm is not None else 0
        return SummaryReport(created, superseded, dropped, compressed, calls)

    def _bullets(self, turns: Sequence[Event]) -> tuple[list[Bullet], str, str, int]:
        if self.llm is not None:
            try:
                result = self.llm.summarize(turns)
                return result.bullets, "llm", SUMMARY_PROMPT_VERSION, result.dropped
            except BackendError as exc:
                self._warn_once(
                    "summary",
                    "llm session summary failed (%s); falling back to the heuristic summary",
                    exc,
                )
        return heuristic_bullets(turns), "heuristic", HEURISTIC_VERSION, 0

    def _meta_consolidate(self, bullets: list[Bullet]) -> tuple[list[Bullet], bool]:
        """Compress a summary over the word limit; keep the longer one when that fails."""
        words = word_count(render(bullets))
        limit = self.settings.summary_word_limit
        if not limit or words <= limit:
            return bullets, False
        if self.llm is None:
            self._warn_once(
                "compress",
                "session summary of %d words exceeds PMM_SUMMARY_WORD_LIMIT=%d but no llm is "
                "configured to compress it; keeping it whole",
                words,
                limit,
            )
            return bullets, False
        try:
            result = self.llm.compress(bullets, self.settings.summary_sentences)
        except BackendError as exc:
            self._warn_once(
                "compress",
                "compressing a %d-word session summary failed (%s); keeping the longer one",
                words,
                exc,
            )
            return bullets, False
        return result.bullets, True

    def _write(
        self,
        session: str,
        turns: Sequence[Event],
        bullets: list[Bullet],
        method: str,
        version: str,
        dropped: int,
        current: Event | None,
    ) -> tuple[Event, bool]:
        covered = [t.id for t in turns]
        key = summary_key(covered)
        text = render(bullets) or "(no content)"
        meta: dict[str, Any] = {
            "key": key,
            "covers_from": covered[0],
            "covers_upto": covered[-1],
            "turns": len(covered),
            "method": method,
            "prompt_version": version,
            "supersedes": current.id if current is not None else None,
        }

        def audit(summary: Event) -> NewEvent:
            return NewEvent(
                AUDIT_KIND,
                f"summary {summary.id} of session {session} covers {len(covered)} turns "
                f"({covered[0]}..{covered[-1]})",
                session,
                "system",
                {
                    "summary_id": summary.id,
                    "covered_ids": covered,
                    "method": method,
                    "prompt_version": version,
                    "supersedes": meta["supersedes"],
                    "dropped_bullets": dropped,
                },
            )

        return self.store.append_summary(
            NewEvent(SUMMARY_KIND, text, session, "system", meta),
            audit,
            key=key,
            covers_upto=covered[-1],
            covered_ids=covered,
            summarizes=SUMMARIZES,
            supersedes=SUPERSEDES,
        )


def summary_bullets(summary: Event) -> list[Bullet]:
    """The cited bullets of a stored summary event."""
    return parse_rendered(summary.content or "")


def best_children(
    store: EventLog, summary: Event, query: str, k: int, *, ranked: Sequence[int] = ()
) -> list[Event]:
    """The ``k`` turns a summary covers that best match ``query``: turns the rankers
    already found (in ``ranked`` order) first, then by shared query words (ties: turns a
    matching bullet cites, then the newer turn). Deterministic."""
    children = store.edge_targets([summary.id], SUMMARIZES).get(summary.id, [])
    if not children or k <= 0:
        return []
    events = store.get_many(children)
    terms = set(search_terms(query))
    cited: set[int] = set()
    for bullet in summary_bullets(summary):
        if terms & set(search_terms(bullet.text)):
            cited.update(bullet.turns)
    position = {event_id: index for index, event_id in enumerate(ranked)}

    def order(event: Event) -> tuple[int, int, int, int]:
        text = f"{event.summary or ''} {event.content or ''} {' '.join(event.keywords)}"
        shared = len(terms & set(search_terms(text)))
        return (position.get(event.id, len(position)), -shared, -(event.id in cited), -event.id)

    live = [e for e in events.values() if e.content is not None]
    return sorted(live, key=order)[:k]


def expand_summary_hits(
    store: EventLog,
    hits: Sequence[Hit],
    query: str,
    k: int,
    *,
    children: int,
    prior: float,
) -> list[Hit]:
    """Recall's one hook for summaries: superseded summaries are dropped, each summary hit
    gets ``prior`` added to its score and is followed by its ``children`` best turns (as
    hits just below it, unless already listed); the list is re-sorted and cut to ``k``."""
    from pmm.records import Hit as HitRecord

    summaries = [h for h in hits if h.event.kind == SUMMARY_KIND]
    if not summaries:
        return list(hits)[:k]
    replaced = store.edge_sources([h.event.id for h in summaries], SUPERSEDES)
    ranked = [h.event.id for h in hits if h.event.kind != SUMMARY_KIND]
    listed = set(ranked)
    out: list[HitRecord] = []
    for hit in hits:
        if hit.event.kind != SUMMARY_KIND:
            out.append(hit)
            continue
        if hit.event.id in replaced:
            continue
        score = hit.score + prior
        out.append(HitRecord(hit.event, score, {**hit.rankers, "summary_prior": 0}))
        for child in best_children(store, hit.event, query, children, ranked=ranked):
            if child.id in listed:
                continue
            listed.add(child.id)
            score -= 1e-6
            out.append(HitRecord(child, score, {"summary": hit.event.id}))
    out.sort(key=lambda h: -h.score)
    return out[:k]


def demote_superseded(store: EventLog, hits: Sequence[Hit]) -> list[Hit]:
    """Hits of statements a newer one superseded are ranked just below the newer one
    (which is added, at the older one's score, when the rankers did not find it)."""
    from pmm.records import Hit as HitRecord

    turns = [h.event.id for h in hits if h.event.kind != SUMMARY_KIND]
    replaced = store.edge_sources(turns, (SUPERSEDES, SLOT_SUPERSEDES)) if turns else {}
    if not replaced:
        return list(hits)
    scores = {h.event.id: h.score for h in hits}
    newest = {old: max(new) for old, new in replaced.items()}
    missing = store.get_many(n for n in newest.values() if n not in scores)
    out: list[HitRecord] = []
    for hit in hits:
        newer = newest.get(hit.event.id)
        if newer is None:
            out.append(hit)
            continue
        event = missing.pop(newer, None)
        if event is not None and event.content is not None:
            scores[newer] = hit.score
            out.append(HitRecord(event, hit.score, {"supersedes": hit.event.id}))
        below = min(hit.score, scores.get(newer, hit.score)) - 1e-6
        out.append(HitRecord(hit.event, below, {**hit.rankers, "superseded_by": newer}))
    out.sort(key=lambda h: -h.score)
    return out


def consolidated_hits(
    store: EventLog,
    hits: Sequence[Hit],
    query: str,
    k: int,
    *,
    children: int,
    prior: float,
) -> list[Hit]:
    """Recall's one consolidation hook: summary expansion, then superseded statements
    ranked below the statements that replaced them; at most ``k`` hits."""
    expanded = expand_summary_hits(
        store, hits, query, len(hits) + children * len(hits), children=children, prior=prior
    )
    return demote_superseded(store, expanded)[:k]
