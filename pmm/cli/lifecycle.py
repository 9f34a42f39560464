"""The lifecycle commands: ``redact``, ``forget``, ``compact``, ``backup``, ``restore``,
``recover``, ``check`` and ``migrate-to``.

They erase, shrink, copy, repair and move a log over its life; each handler takes the parsed
``argparse.Namespace`` and returns an exit code (see :mod:`pmm.cli.output`)::

    pmm backup snapshot.db && pmm check --db snapshot.db --full
    pmm forget --session alice --yes
    pmm forget --match Lisbon --dry-run      # lists what it would erase, writes nothing
    pmm migrate-to postgresql://localhost/pmm
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pmm.cli.output import (
    EXIT_FAILED,
    EXIT_OK,
    _db_path,
    _emit,
    _existing_db,
    _sqlite_store,
)
from pmm.errors import InvalidInputError
from pmm.records import Event
from pmm.storage import is_postgres_url, open_store
from pmm.text.sizes import format_size


def cmd_redact(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    with open_store(path) as store:
        marker = store.redact(args.id, reason=args.reason)
    result = {"redacted": args.id, "marker": marker.to_dict()}
    text = (
        f"redacted the text of event {args.id}; recorded as event {marker.id}"
        f" (reason: {args.reason})"
    )
    return _emit(args, result, text)


def cmd_forget(args: argparse.Namespace) -> int:
    from pmm.context.users import SessionOwners, user_erasure
    from pmm.retention.erasure import file_bytes
    from pmm.storage.sqlite.erasure import scrub

    picked = args.event or args.session is not None or args.match is not None
    if args.scrub and not (picked or args.user is not None):
        path = _existing_db(args)
        if is_postgres_url(path):
            return _rewrite_postgres(args, path)
        with _sqlite_store(path, "forget --scrub") as store:
            before = file_bytes(path)
            done = scrub(store)
            after = file_bytes(path)
        text = f"rewrote {path}: {format_size(before)} -> {format_size(after)}" + (
            "" if done else "; another process still holds it: the -wal file was not emptied"
        )
        _emit(args, {"wal_truncated": done, "bytes_before": before, "bytes_after": after}, text)
        return EXIT_OK if done else EXIT_FAILED
    if not (picked or args.user is not None):
        raise InvalidInputError(
            "say what to forget: --event ID, --session S, --match TEXT or --user U"
        )
    if args.dry_run and args.scrub:
        raise InvalidInputError("--dry-run lists what forget would erase: drop --scrub")
    if not args.yes and not args.dry_run:
        raise InvalidInputError(
            "forget erases text for good: add --yes to confirm (--dry-run lists what it would)"
        )
    path = _existing_db(args)
    with open_store(path) as store:  # a SQLite file or a PostgreSQL URL
        chosen: dict[str, Any] = {
            "event_ids": args.event,
            "session_id": args.session,
            "match": args.match,
        }
        if args.user is not None:  # as Mind.forget(user_id=...): her ids and chain key too
            chosen = user_erasure(
                store,
                SessionOwners(store),
                args.user,
                event_ids=args.event,
                session_id=args.session,
                match=args.match,
            ).arguments()
        report = store.forget(**chosen, reason=args.reason, dry_run=args.dry_run)
        events = store.get_many(report.erased)
    listed = [events[i] for i in report.erased if i in events]
    data = {**report.to_dict(), "events": [_listed(e, with_text=args.dry_run) for e in listed]}
    if args.dry_run:
        lines = [
            f"would forget {len(report.erased)} events"
            + (
                f" ({len(report.derived)} session summaries built from them)"
                if report.derived
                else ""
            )
            + " (dry run: nothing was written)"
        ]
        lines += [_event_line(e, with_text=True) for e in listed]
        return _emit(args, data, "\n".join(lines))
    lines = [
        f"forgot {len(report.erased)} events"
        + (f" ({len(report.derived)} session summaries built from them)" if report.derived else "")
        + f"; recorded as event(s) {', '.join(str(m.id) for m in report.markers)}",
    ]
    lines += _by_session(listed)
    if chosen.get("identifiers_of") is not None:
        lines.append(
            "the user's id, her thread ids and her chain's secret left the log with her text"
        )
    lines.append(f"size: {format_size(report.bytes_before)} -> {format_size(report.bytes_after)}")
    if is_postgres_url(path):
        lines.append(
            "note: the erased rows' partitions were rewritten (copied and swapped in); "
            "PostgreSQL's WAL (pg_wal), its "
            "archives, replicas and backups keep the old bytes until they are recycled"
        )
    elif not report.wal_truncated:
        lines.append("warning: another process holds the file: its -wal file was not emptied")
    return _emit(args, data, "\n".join(lines))


_PREVIEW = 60
"""Characters of an event's text a dry run shows."""


def _listed(event: Event, *, with_text: bool) -> dict[str, object]:
    """An event forget picked, for ``--json``: where it is (and its text on a dry run)."""
    out: dict[str, object] = {
        "id": event.id,
        "session_id": event.session_id,
        "kind": event.kind,
        "role": event.role,
    }
    if with_text:
        out["text"] = event.content if event.content is not None else event.summary
    return out


def _event_line(event: Event, *, with_text: bool) -> str:
    where = f"session {event.session_id}" if event.session_id is not None else "no session"
    line = f"  {event.id}  {where}  {event.kind}" + (f" ({event.role})" if event.role else "")
    text = event.content if event.content is not None else event.summary
    if with_text and text:
        flat = " ".join(text.split())
        line += ": " + (flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 1] + "…")
    return line


def _by_session(events: Sequence[Event]) -> list[str]:
    """``erased: session alice: 3, 4, 7`` lines, one per session."""
    sessions: dict[str | None, list[int]] = {}
    for event in events:
        sessions.setdefault(event.session_id, []).append(event.id)
    return [
        f"  session {s}: ids {', '.join(map(str, ids))}"
        if s is not None
        else f"  no session: ids {', '.join(map(str, ids))}"
        for s, ids in sessions.items()
    ]


def _rewrite_postgres(args: argparse.Namespace, path: str) -> int:
    """``pmm forget --scrub`` on PostgreSQL: rewrite PMM's tables (see
    :func:`pmm.storage.postgres.erasure.rewrite`)."""
    from pmm.storage.postgres import PostgresEventStore

    with PostgresEventStore(path) as store:
        before, after = store.rewrite_tables()
    text = (
        f"rewrote the tables of {store.path}: {format_size(before)} -> {format_size(after)};"
        " PostgreSQL's "
        "WAL (pg_wal), archives, replicas and backups keep old bytes until they are recycled"
    )
    return _emit(args, {"bytes_before": before, "bytes_after": after}, text)


def cmd_backup(args: argparse.Namespace) -> int:
    from pmm.storage.sqlite.backup import backup

    report = backup(_existing_db(args), args.file)
    text = (
        f"backed up {report.verify.rows} events ({format_size(report.bytes)}) to {report.target}"
        f" in {report.seconds:.2f}s; head {report.verify.head}"
    )
    return _emit(args, report.to_dict(), text)


def cmd_restore(args: argparse.Namespace) -> int:
    from pmm.storage.sqlite.backup import restore

    path = _db_path(args)
    if is_postgres_url(path):
        raise InvalidInputError(
            "pmm restore replaces a SQLite file; restore a PostgreSQL database with"
            " PostgreSQL's own tools (pg_restore), or copy a SQLite backup into an empty"
            " database with `pmm migrate-to URL --from BACKUP.db`"
        )
    report = restore(args.file, path, force=args.force)
    state = "verifies" if report.verify.ok else f"DOES NOT VERIFY ({report.verify.reason})"
    restored = report.verify.rows - len(report.markers)  # the markers came after the copy
    lines = [f"restored {restored} events from {report.source}; the chain {state}"]
    if report.reapplied:
        lines.append(
            f"the backup held what {report.target} recorded as erased: erased again,"
            f" recorded as new event(s) {', '.join(map(str, report.markers))} (the event"
            " ids below are those of the log before the restore, kept as"
            f" {Path(report.target).name}.before-restore-*):"
        )
        lines += [f"  {e.describe()}" for e in report.reapplied]
    lines += [f"warning: {w}" for w in report.warnings]
    return _emit(args, report.to_dict(), "\n".join(lines))


def cmd_recover(args: argparse.Namespace) -> int:
    from pmm.storage.sqlite.backup import recover

    report = recover(args.broken, args.new)
    sources = ", ".join(f"{k} {v}" for k, v in report.top_sources.items()) or "no record"
    lines = [
        f"salvaged {report.salvaged} events into {report.target}"
        f" (newest id {report.last_id}; {report.edges} edges, {report.embeddings} vectors)",
        f"highest id the damaged file knows: {report.top} ({sources})",
        f"lost ids: {_id_ranges(report.lost_ranges)}",
        f"rows that no longer verify: {_id_list(report.unverified)}",
        f"rows whose link to the previous row is cut: {_id_list(report.broken_links)}",
        *(f"could not be read to the end: {u}" for u in report.unreadable),
        "damaged tables and indexes (integrity_check): "
        + (", ".join(report.damaged) if report.damaged else "none found"),
        *(f"read error: {e}" for e in report.errors),
        *(f"derived: {d}" for d in report.derived),
    ]
    if report.verify is not None:
        lines.append(
            "the new chain verifies"
            if report.verify.ok
            else f"the new chain stops verifying at {report.verify.first_bad_id}"
        )
    _emit(args, report.to_dict(), "\n".join(lines))
    return EXIT_OK if report.complete else EXIT_FAILED


def cmd_check(args: argparse.Namespace) -> int:
    from pmm.storage.sqlite.backup import check

    report = check(_existing_db(args), full=args.full)
    text = f"PRAGMA {report.pragma}: " + (
        "ok" if report.ok else "DAMAGED\n" + "\n".join(f"  {p}" for p in report.problems)
    )
    _emit(args, report.to_dict(), text)
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_migrate_to(args: argparse.Namespace) -> int:
    from pmm.storage.copy import copy_log

    source = args.source or _existing_db(args)
    report = copy_log(source, args.target)
    data = {"source": _shown(source), "target": _shown(args.target), "verify": report.to_dict()}
    text = (
        f"copied {report.rows:,} events from {data['source']} to {data['target']};"
        f" the copy verifies, head {report.head}"
    )
    return _emit(args, data, text)


def _shown(target: str) -> str:
    """A log's place for output: an absolute path, or a URL without its password."""
    if is_postgres_url(target):
        from pmm.storage.postgres.connection import Database

        return Database.redacted(target)
    return str(Path(target).resolve())


def cmd_compact(args: argparse.Namespace) -> int:
    with open_store(_existing_db(args)) as store:  # a SQLite file or a PostgreSQL URL
        report = store.compact(
            older_than=args.older_than, session_id=args.session, dry_run=args.dry_run
        )
        total = store.count_compacted()
        verified = store.verify()
    data = {**report.to_dict(), "compacted_rows_in_log": total, "verify": verified.to_dict()}
    verb = "would drop" if report.dry_run else "dropped"
    text = "\n".join(
        [
            f"{verb} the raw text of {len(report.compacted)} digested turns"
            f" ({format_size(report.raw_bytes)} of text)",
            f"file: {format_size(report.bytes_before)} -> {format_size(report.bytes_after)}",
            f"compacted rows in the log: {total}; chain "
            + ("verifies" if verified.ok else f"DOES NOT VERIFY: {verified.reason}"),
        ]
    )
    _emit(args, data, text)
    return EXIT_OK if verified.ok else EXIT_FAILED


def cmd_compress(args: argparse.Namespace) -> int:
    from pmm.retention.erasure import file_bytes
    from pmm.settings import Settings

    after = args.after if args.after is not None else Settings.load().compress_after
    if not after:
        raise InvalidInputError("give --after (1000 or 30d) or set PMM_COMPRESS_AFTER")
    path = _existing_db(args)
    before = file_bytes(path)
    with _sqlite_store(path, "compress") as store:
        report = store.compress(after, dry_run=args.dry_run, retrain=args.retrain)
        verified = store.verify()
    data = {**report.to_dict(), "verify": verified.to_dict()}
    verb = "would compress" if report.dry_run else "compressed"
    lines = [
        f"{verb} {report.compressed} texts: {format_size(report.bytes_before)}"
        + ("" if report.dry_run else f" -> {format_size(report.bytes_after)}")
        + (f" (dictionary {report.dictionary_id}" + (", new)" if report.trained else ")"))
        * (report.dictionary_id is not None),
        f"file: {format_size(before)}"
        " (free pages are reused; `pmm compact` or VACUUM returns them)",
        "chain " + ("verifies" if verified.ok else f"DOES NOT VERIFY: {verified.reason}"),
    ]
    _emit(args, data, "\n".join(lines))
    return EXIT_OK if verified.ok else EXIT_FAILED


def _id_list(ids: Sequence[int]) -> str:
    if not ids:
        return "none"
    shown = ", ".join(map(str, ids[:50]))
    return shown + (f" ... ({len(ids)} in all)" if len(ids) > 50 else "")


def _id_ranges(runs: Sequence[tuple[int, int]]) -> str:
    """``1-5, 9, 12-40 (38 ids in all)``: runs of ids, the first 50 of them."""
    if not runs:
        return "none"
    shown = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in runs[:50])
    total = sum(b - a + 1 for a, b in runs)
    more = f"; {len(runs) - 50} more runs, --json lists them" if len(runs) > 50 else ""
    return f"{shown} ({total} ids in all{more})"
