"""Embedding what has no vector yet, and how far the embeddings cover the log.

    from pmm.embed.backfill import embed_pending, embedding_coverage

    embed_pending(store, embedder, kinds=("prompt", "response"))   # -> vectors written
    embedding_coverage(store, embedder.model_name)
    # {'model': 'sentence-transformers/all-MiniLM-L6-v2', 'vectors': 120, 'missing': 0,
    #  'other_models': {'/models/old': 120}, 'ignored': 120, ...}

An event is embedded by its summary when it has one, else by its raw text. Vectors are
stored per model: after a model change, :func:`embed_pending` embeds every event again for
the new model, and the old model's vectors stay in the table, ignored by search, until
``store.delete_embeddings(old_model)`` drops them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

import numpy as np

from pmm.embed.base import embed_texts
from pmm.errors import BackendError, InvalidInputError
from pmm.events.roles import without_speaker

if TYPE_CHECKING:
    from pmm.embed.base import Embedder
    from pmm.records import Event
    from pmm.storage.base import EventLog

DEFAULT_KINDS = ("prompt", "response")
"""The turn kinds: what is embedded and recalled unless told otherwise."""


def text_to_embed(event: Event) -> str:
    """The text an event is embedded by: its summary if it has one (without the
    ``User: `` label, which would pull every user turn towards each other), else its
    content."""
    if event.summary:
        return without_speaker(event.role, event.summary)
    return event.content or ""


def _kind_tuple(kinds: Iterable[str] | str) -> tuple[str, ...]:
    found = (kinds,) if isinstance(kinds, str) else tuple(kinds)
    if not found or not all(isinstance(k, str) and k for k in found):
        raise InvalidInputError(f"kinds must be one or more non-empty strings, got {kinds!r}")
    return found


def embed_pending(
    store: EventLog,
    embedder: Embedder,
    *,
    kinds: Iterable[str] | str,
    batch_size: int = 64,
    limit: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Embed events of ``kinds`` that hold text and have no vector of
    ``embedder.model_name``, oldest first, ``batch_size`` at a time, at most ``limit`` of
    them. ``progress(done, total)`` is called after each batch. Returns how many vectors
    were stored."""
    kind_list = _kind_tuple(kinds)
    if not isinstance(batch_size, int) or batch_size < 1:
        raise InvalidInputError(f"batch_size must be a positive int, got {batch_size!r}")
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        raise InvalidInputError(f"limit must be None or an int >= 0, got {limit!r}")
    model = embedder.model_name
    total = 0
    if progress is not None:
        total = store.count_unembedded(model, kinds=kind_list)
        if limit is not None:
            total = min(total, limit)
    done = 0
    last_id = 0
    while limit is None or done < limit:
        want = batch_size if limit is None else min(batch_size, limit - done)
        events = store.unembedded(model, kinds=kind_list, limit=want)
        if not events:
            break
        if events[0].id <= last_id:
            # Vectors written by an earlier batch are gone again (deleted meanwhile by
            # another process): stop rather than loop; a later call picks them up.
            break
        vectors = embed_texts(embedder, [text_to_embed(e) for e in events])
        if vectors.ndim != 2 or vectors.shape[0] != len(events):
            raise BackendError(f"{model} returned {vectors.shape} vectors for {len(events)} texts")
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        store.put_embeddings(
            model,
            int(vectors.shape[1]),
            [(e.id, row.tobytes()) for e, row in zip(events, vectors, strict=True)],
        )
        done += len(events)
        last_id = events[-1].id
        if progress is not None:
            progress(done, max(total, done))
    return done


def embedding_coverage(
    store: EventLog, model_name: str, *, kinds: Iterable[str] | str = DEFAULT_KINDS
) -> dict[str, Any]:
    """How far ``model_name``'s vectors cover the events of ``kinds``:

    - ``vectors``: vectors of this model (the ones search uses);
    - ``missing``: events with text and no vector of this model (what
      :func:`embed_pending` would embed, e.g. all of them right after a model change);
    - ``other_models``: vectors of other models, by model, and ``ignored``, their total:
      never used by search while ``model_name`` is the model.
    """
    kind_list = _kind_tuple(kinds)
    by_model = store.embedding_models()
    others = {name: n for name, n in by_model.items() if name != model_name}
    return {
        "model": model_name,
        "kinds": list(kind_list),
        "vectors": by_model.get(model_name, 0),
        "missing": store.count_unembedded(model_name, kinds=kind_list),
        "other_models": others,
        "ignored": sum(others.values()),
    }
