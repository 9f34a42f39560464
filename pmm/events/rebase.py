"""Importing one user's exported history into a log that already holds events (a "rebased"
import, issue 21), independent of any database: checking the file on its own, renumbering
its events and every event id their hashed ``meta`` names, and the provenance record that
pins the file's verified head in the new chain.

    report = verify_export(events, keys)         # IntegrityError: the file was tampered with
    user = single_user(events)                   # InvalidInputError: not one user's history
    planned = rebased(events, new_ids, report)   # CheckedEvent per event, + the provenance
    # the store appends ``planned`` through its own append path, under its write lock

The rows get new ids from the target, in the file's order, and are sealed anew onto a new
chain of the user (the target's secret, the target's current hash version): a redacted or
erased row re-hashes without its text, because the rule covers the content's digest. The
id references are remapped by kind (:data:`ID_REFERENCES`), never by field name alone: a
turn's meta is the caller's and is left as it is. See ``docs/design/chains.md`` ("Import").
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from hashlib import sha256
from typing import Any, cast

from pmm.errors import IntegrityError, InvalidInputError
from pmm.events.chain import CheckedEvent, check_new_event
from pmm.events.chains import ChainsWalker
from pmm.events.hashing import LEGACY_HASH_VERSION, canonical_json, legacy_hash, utc_now
from pmm.records import Event, NewEvent, VerifyReport

IMPORTED_KIND = "imported"
"""The kind of the provenance event a rebased import appends last to the user's new chain:
``meta["imported"]`` holds the file's verified ``head`` hash, its ``head_id`` (an id of the
source database, never remapped) and how many ``events`` were imported."""

_ONE = "one"  # the field holds one id (or None)
_MANY = "many"  # a list of ids
ID_REFERENCES: dict[str, dict[str, str]] = {
    # pmm.retention.erasure.redaction_entries: the erased row(s) of the marker's session
    "redaction": {"target": _ONE, "targets": _MANY},
    # pmm.dream.consolidation (SUMMARY_KIND): the first and last turn covered, and the
    # summary it replaces; its "key" names the range too and is rebuilt from them
    "summary": {"covers_from": _ONE, "covers_upto": _ONE, "supersedes": _ONE},
    # pmm.dream.consolidation (AUDIT_KIND): the summary, every turn it covers, the one replaced
    "summary_created": {"summary_id": _ONE, "covered_ids": _MANY, "supersedes": _ONE},
    # pmm.dream.contradictions (MARKER_KIND): the superseded and the superseding turn
    "superseded": {"older": _ONE, "newer": _ONE},
}
"""Every kind of event whose hashed meta names other events by id, and the fields that do.
Not here: ``compaction`` (``ids`` runs; written without a user, so never in one user's
file, which :func:`single_user` refuses) and :data:`IMPORTED_KIND` (its ``head_id`` names
the source database's row, on purpose)."""


def meta_spelling(event: Event) -> str:
    """The meta text an exported row's hash covers (the earlier PMM, version 0, hashed its
    own spelling of it; every later version the canonical JSON)."""
    if event.hash_version == LEGACY_HASH_VERSION and event.content is not None:
        for spelling in (json.dumps(event.meta), json.dumps(event.meta, ensure_ascii=False)):
            if legacy_hash(event.prev_hash, event.kind, event.content, spelling) == event.hash:
                return spelling
    return canonical_json(event.meta)


def verify_export(events: Sequence[Event], keys: Iterable[tuple[str, bytes]]) -> VerifyReport:
    """Verify exported events on their own, in id order, exactly as a log holding only
    them would (``keys``: the file's chain secrets); raises :class:`IntegrityError` naming
    the first row that does not verify."""
    walker = ChainsWalker(keys=keys)
    for e in sorted(events, key=lambda e: e.id):
        reason = walker.step(
            e.id, e.ts, e.kind, e.session_id, e.role, e.content, e.content_sha256,
            meta_spelling(e), e.prev_hash, e.hash, e.hash_version, e.user_id,
            e.user_digest, e.session_digest,
        )  # fmt: skip
        if reason is not None:
            break
    report = walker.report()
    if not report.ok:
        raise IntegrityError(
            f"the imported chain does not verify at event {report.first_bad_id}: "
            f"{report.reason}; nothing was imported"
        )
    return report


def single_user(events: Sequence[Event]) -> str:
    """The one user all ``events`` belong to; raises :class:`InvalidInputError` for an
    empty file, events without a user, or several users (a whole-database export, which
    only a new, empty database can take verbatim)."""
    if not events:
        raise InvalidInputError("the file holds no events: there is nothing to import")
    users = {e.user_id for e in events}
    if None in users:
        first = min(e.id for e in events if e.user_id is None)
        raise InvalidInputError(
            f"event {first} of the file has no user: only one user's export "
            "(`pmm export --user U`) can be imported into a database that already holds "
            "events; import a whole-database export into a new, empty database"
        )
    if len(users) > 1:
        raise InvalidInputError(
            f"the file holds the events of {len(users)} users: only one user's export "
            "(`pmm export --user U`) can be imported into a database that already holds "
            "events; import a whole-database export into a new, empty database"
        )
    return cast(str, next(iter(users)))


def rebased(
    events: Sequence[Event],
    new_ids: Sequence[int],
    report: VerifyReport,
    max_content_bytes: int = 1 << 20,
) -> list[CheckedEvent]:
    """The entries to append for ``events`` (verified, one user's; any order) that take
    ``new_ids`` (ascending, one per event, then one for the provenance record) in the
    file's id order: each with its ts, kind, session, role, text and content digest, its
    meta's id references remapped (:data:`ID_REFERENCES`; a reference to an id the file
    does not hold raises :class:`InvalidInputError`), and last the :data:`IMPORTED_KIND`
    record naming ``report``'s head. A redacted row's entry has ``content`` None: its
    text is gone, and the new hash covers its digest alone. Each event passes the
    append's input checks (:func:`check_new_event`, ``max_content_bytes``): a file that
    verifies was hashed by whoever held its secret, which the file itself carries."""
    ordered = sorted(events, key=lambda e: e.id)
    if len(new_ids) != len(ordered) + 1:
        raise ValueError(f"{len(ordered) + 1} ids needed, got {len(new_ids)}")
    id_map = {e.id: new for e, new in zip(ordered, new_ids, strict=False)}
    user = single_user(ordered)
    out: list[CheckedEvent] = []
    for e in ordered:
        meta = remap_meta(e, id_map)
        check_new_event(
            NewEvent(e.kind, e.content or "", e.session_id, e.role, meta, e.ts, user),
            max_content_bytes,
        )  # raises InvalidInputError; the row keeps its own ts text below
        content_sha = e.content_sha256
        if e.content is not None:
            content_sha = sha256(e.content.encode()).hexdigest()
        entry = NewEvent(
            e.kind,
            cast(str, e.content),  # None for a redacted row: only its digest is hashed
            e.session_id,
            e.role,
            meta,
            e.ts,
            user,
        )
        out.append(CheckedEvent(entry, content_sha, canonical_json(meta)))
    provenance = {"imported": {"head": report.head, "head_id": report.head_id,
                               "events": len(ordered)}}  # fmt: skip
    text = f"imported {len(ordered)} events of a verified export (head {report.head})"
    entry = NewEvent(IMPORTED_KIND, text, None, "system", provenance, utc_now(), user)
    out.append(CheckedEvent(entry, sha256(text.encode()).hexdigest(), canonical_json(provenance)))
    return out


def remap_meta(event: Event, id_map: dict[int, int]) -> dict[str, Any]:
    """``event``'s meta with every id it names (by kind, :data:`ID_REFERENCES`) replaced
    by ``id_map``'s; raises :class:`InvalidInputError` for an id the map lacks."""
    fields = ID_REFERENCES.get(event.kind)
    meta = dict(event.meta)
    if not fields:
        return meta

    def new(value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value not in id_map:
            raise InvalidInputError(
                f"event {event.id} ({event.kind}) names event {value!r}, which the file "
                "does not hold: its reference cannot be renumbered; nothing was imported"
            )
        return id_map[value]

    for name, shape in fields.items():
        value = meta.get(name)
        if value is None:
            continue
        if shape == _ONE:
            meta[name] = new(value)
        elif isinstance(value, list):
            meta[name] = [new(v) for v in value]
        else:
            raise InvalidInputError(
                f"event {event.id} ({event.kind}): meta {name!r} should be a list of ids, "
                f"got {value!r}; nothing was imported"
            )
    if event.kind == "summary" and "key" in meta:
        # pmm.dream.consolidation.summary_key: "{first}-{last}:{count}"; earlier versions
        # wrote "{session}:{first}-{last}:{count}", which the new chain drops the session of
        span = f"{event.meta.get('covers_from')}-{event.meta.get('covers_upto')}:"
        key = str(meta["key"])
        for old in (span, f"{event.session_id}:{span}"):
            if key.startswith(old):
                count = key[len(old) :]
                meta["key"] = f"{meta['covers_from']}-{meta['covers_upto']}:{count}"
                break
    return meta


def rebuilt_edges(appended: Sequence[Event]) -> list[tuple[int, int, str]]:
    """The derived edges the renumbered events call for, read from their remapped meta:
    a summary's ``SUMMARIZES`` edges to its turns and ``SUPERSEDES`` edge to the summary
    it replaces (from its ``summary_created`` record), and a ``superseded`` marker's
    ``SUPERSEDES`` (``SUPERSEDES_SLOT`` for a slot's) edge newer -> older, as
    :mod:`pmm.dream.consolidation` and :mod:`pmm.dream.contradictions` write them."""
    edges: list[tuple[int, int, str]] = []
    for e in appended:
        if e.kind == "summary_created" and isinstance(e.meta.get("summary_id"), int):
            src = e.meta["summary_id"]
            edges += [(src, dst, "SUMMARIZES") for dst in e.meta.get("covered_ids") or []]
            if isinstance(e.meta.get("supersedes"), int):
                edges.append((src, e.meta["supersedes"], "SUPERSEDES"))
        elif e.kind == "superseded" and isinstance(e.meta.get("newer"), int):
            kind = "SUPERSEDES_SLOT" if e.meta.get("method") == "slot" else "SUPERSEDES"
            edges.append((e.meta["newer"], e.meta["older"], kind))
    return edges


def carried_digests(
    events: Sequence[Event], appended: Sequence[Event]
) -> list[tuple[int, str, list[str], str]]:
    """``(new id, summary, keywords, method)`` of each exported event that carried a
    digest, for ``set_digests`` (``appended``: the renumbered events, in the file's id
    order, the provenance record last)."""
    ordered = sorted(events, key=lambda e: e.id)
    return [
        (new.id, e.summary, list(e.keywords), e.digest_method)
        for e, new in zip(ordered, appended, strict=False)
        if e.summary is not None and e.digest_method is not None and e.content is not None
    ]


def refuse_taken(
    user: str, *, user_rows: int, has_chain: bool, taken_sessions: Sequence[str]
) -> None:
    """Raise :class:`InvalidInputError` when the target already holds ``user``'s events or
    chain, or any of the file's sessions (``taken_sessions``: those the target holds rows
    of, whoever they belong to): nothing may be merged into an existing history."""
    if user_rows or has_chain:
        raise InvalidInputError(
            f"user {user!r} already has events in this database ({user_rows}): an export "
            "is imported only for a user the database does not hold; nothing was imported"
        )
    if taken_sessions:
        raise InvalidInputError(
            f"session {taken_sessions[0]!r} of the file already holds events in this "
            "database (of another user, or written without one): a session belongs to one "
            "user; nothing was imported"
        )
