"""The event-log commands: ``init``, ``migrate``, ``stats``, ``verify``, ``tail``, ``show``,
``export`` and ``import``.

They create, upgrade, inspect, verify and copy the hash-chained log itself; each handler takes
the parsed ``argparse.Namespace`` and returns an exit code (see :mod:`pmm.cli.output`)::

    pmm init --db pmm.db
    pmm verify --expect-head 1a2b3c4d
    pmm export backup.jsonl && pmm import backup.jsonl --db copy.db
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from pmm.cli.jsonl import _output, key_line
from pmm.cli.output import (
    EXIT_FAILED,
    EXIT_OK,
    _abs,
    _applied_lines,
    _db_path,
    _emit,
    _error,
    _existing_db,
    _migration_name,
    _mind,
    _opened,
    _percent,
    _remove_db,
    _shown_text,
    _table,
)
from pmm.context.users import checked_user
from pmm.errors import (
    IntegrityError,
    InvalidInputError,
)
from pmm.events.export_file import read_export_file
from pmm.events.turns import TURN_KINDS
from pmm.records import Event, VerifyReport
from pmm.storage import EventLog, is_postgres_url, open_store
from pmm.text.sizes import format_size
from pmm.text.words import snippet

# -- commands ------------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
    path = _db_path(args)
    if is_postgres_url(path):  # a wrong target for this command: a usage error (exit 2)
        raise InvalidInputError(
            "`pmm init` creates a SQLite file; a PostgreSQL database is set up when PMM "
            "first connects to it (its migrations are applied then): run `pmm stats --db "
            "URL` or open `Mind(URL)`"
        )
    existed = Path(path).exists()
    with _opened(path) as (store, backups):
        stats = store.stats()
        applied = [_migration_name(m) for m in store.applied_migrations]
    result = {
        "path": _abs(path),
        "created": not existed,
        "schema_version": stats["schema_version"],
        "applied": applied,
        "backup": backups[0] if backups else None,
        "events": stats["events"],
    }
    verb = "Created" if not existed else "Opened"
    lines = [f"{verb} {result['path']} (schema version {result['schema_version']})"]
    if existed:
        lines.append(f"{stats['events']:,} events")
    lines += _applied_lines(applied, result["backup"])
    return _emit(args, result, "\n".join(lines))


def cmd_migrate(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    with _opened(path) as (store, backups):
        version = store.stats()["schema_version"]
        applied = [_migration_name(m) for m in store.applied_migrations]
    result = {
        "path": _abs(path),
        "schema_version": version,
        "applied": applied,
        "backup": backups[0] if backups else None,
    }
    lines = _applied_lines(applied, result["backup"])
    if not applied:
        lines = [f"{_abs(path)} is up to date (schema version {version}); nothing to apply"]
    else:
        lines.append(f"{_abs(path)} is now at schema version {version}")
    return _emit(args, result, "\n".join(lines))


def cmd_stats(args: argparse.Namespace) -> int:
    if getattr(args, "user", None) is not None:
        from pmm.cli.users import cmd_user_stats

        return cmd_user_stats(args)
    path = _existing_db(args)
    with _mind(path) as mind:
        stats = mind.stats()
        from pmm.embed.backfill import embedding_coverage

        turns = int(stats["turns"])
        pending = int(stats["pending_digests"])  # 0 when summaries are off
        stats["undigested_turns"] = mind.store.count_undigested(kinds=TURN_KINDS)
        embeddings = {
            model: embedding_coverage(mind.store, model, kinds=TURN_KINDS)
            for model in stats["embeddings"]
        }
    stats["coverage"] = {
        "digests": {
            "turns": turns,
            "digested": turns - int(stats["undigested_turns"]),
            "pending": pending,
        },
        "embeddings": {
            model: {"vectors": c["vectors"], "missing": c["missing"]}
            for model, c in embeddings.items()
        },
    }
    stats["path"] = _abs(str(stats["path"]))
    if args.json:
        return _emit(args, stats, "")
    lines = [
        f"database: {stats['path']}",  # absolute, or a URL without its password
        f"schema version: {stats['schema_version']}",
        f"size on disk: {format_size(int(stats['bytes_on_disk']))}",
        f"events: {stats['events']:,}   turns: {turns:,}",
        "",
        _digest_line(stats, turns, pending),
    ]
    lines += worker_lines(stats.get("worker"))
    methods = {k: v for k, v in stats["by_digest_method"].items() if k != "None"}
    if methods:
        lines.append("  by method: " + ", ".join(f"{k} {v:,}" for k, v in methods.items()))
    if embeddings:
        lines.append("embeddings:")
        for model, c in embeddings.items():
            covered = int(c["vectors"])
            total = covered + int(c["missing"])
            lines.append(
                f"  {model}: {covered:,} vectors, {c['missing']:,} turns missing"
                f" ({_percent(covered, total)} covered)"
            )
    else:
        lines.append("embeddings: none (run `pmm embed` to add them)")
    for title, key in (("kind", "by_kind"), ("session", "by_session"), ("role", "by_role")):
        rows = [[str(name), f"{count:,}"] for name, count in stats[key].items()]
        if rows:
            lines += ["", _table([title, "events"], rows)]
    return _emit(args, stats, "\n".join(lines))


def _digest_line(stats: dict[str, Any], turns: int, pending: int) -> str:
    digested = turns - int(stats["undigested_turns"])
    if not stats["settings"]["enable_summary"]:
        return (
            f"digests: summaries off (PMM_ENABLE_SUMMARY); {digested:,} of {turns:,} turns "
            "have one from an earlier run"
            if digested
            else "digests: summaries off (PMM_ENABLE_SUMMARY); turns are kept as raw text"
        )
    return (
        f"digests: {digested:,} of {turns:,} turns digested ({_percent(digested, turns)}),"
        f" {pending:,} pending"
    )


def worker_lines(worker: dict[str, Any] | None) -> list[str]:
    """``pmm stats`` lines on the background worker: failures are never silent."""
    if not worker:
        return []
    state = "running" if worker["alive"] else "stopped" if worker["stopped"] else "DEAD"
    line = f"background worker: {state}, {worker['failures']:,} failed rounds"
    line += f", {worker['restarts']:,} restarts"
    if worker["last_error"]:
        line += f"; last error: {worker['last_error']}"
    return [line]


def cmd_verify(args: argparse.Namespace) -> int:
    expected = _head_pin(args.expect_head)
    user = args.user
    if args.file is not None:
        return _verify_export(args, expected, user)
    path = _existing_db(args)
    with open_store(path) as store:
        if expected is not None and len(expected) < HASH_HEX:
            expected = _unique_hash(store, expected, user)
        report = store.verify(expect_head=expected, user_id=user)
    return _print_verify(args, report, user, {"path": _abs(path)})


def _verify_export(args: argparse.Namespace, expected: str | None, user: str | None) -> int:
    """``pmm verify --file EXPORT``: an export (``pmm export [--user U]``) checked on its
    own, by loading it into a throwaway database: every chain it holds, its root, and with
    ``--user`` her head, the figures the source database prints for the same rows."""
    import tempfile

    from pmm.storage.sqlite import EventStore

    events, keys = read_export_file(args.file)
    with (
        tempfile.TemporaryDirectory(prefix="pmm-verify-") as folder,
        EventStore(str(Path(folder) / "export.db")) as store,
    ):
        try:
            store.import_events(events, keys=keys)
        except IntegrityError as exc:
            _error(f"FAILED: {args.file} does not verify: {exc}")
            return EXIT_FAILED
        if expected is not None and len(expected) < HASH_HEX:
            expected = _unique_hash(store, expected, user)
        report = store.verify(expect_head=expected, user_id=user)
    return _print_verify(args, report, user, {"file": _abs(args.file)})


def _print_verify(
    args: argparse.Namespace, report: VerifyReport, user: str | None, source: dict[str, Any]
) -> int:
    rate = report.rows / report.seconds if report.seconds > 0 else 0.0
    result = {**report.to_dict(), "rows_per_second": round(rate), **source}
    if user is not None:
        result["user"] = user
    speed = f"{report.seconds:.3f} s ({rate:,.0f} rows/s)"
    if report.ok:
        scope = f" of user {user!r}" if user is not None else ""
        lines = [f"OK: {report.rows:,} rows{scope} verified in {speed}"]
        if report.head is not None:
            lines.append(f"head: id {report.head_id}  hash {report.head}")
        if user is not None and report.user_head is not None:
            lines += [
                f"user head: {report.user_head}",
                f"pin it (stays valid as her chain grows): pmm verify --user {user} "
                f"--expect-head {report.user_head}",
            ]
        elif report.root is not None and report.head is not None:
            # The pins offered survive growth: a row's hash stays in the log as it grows,
            # the root changes with every append (by anyone), so a scheduled check built
            # on it would cry tampering whenever someone chats.
            lines += [
                f"root over {len(report.heads):,} chains: {report.root}"
                " (changes with every append: pin it only for a copy that no longer grows)",
                f"pin it (stays valid as the log grows): pmm verify --expect-head {report.head}",
                "  or a user's head: pmm verify --user USER (prints the pin for her chain)",
            ]
    else:
        where = f" at event {report.first_bad_id}" if report.first_bad_id is not None else ""
        lines = [
            f"FAILED{where}: {report.reason}",
            f"{report.rows:,} rows checked in {speed}",
        ]
        if report.head_id is not None:
            lines.append(f"last good row: id {report.head_id}  hash {report.head}")
    _emit(args, result, "\n".join(lines))
    return EXIT_OK if report.ok else EXIT_FAILED


HASH_HEX = 64
MIN_HEAD_PREFIX = 8


def _head_pin(value: str | None) -> str | None:
    """``--expect-head``: a full hash or a prefix of at least 8 hex digits (lower-cased)."""
    if value is None:
        return None
    pin = value.strip().lower()
    if not pin or len(pin) > HASH_HEX or any(c not in "0123456789abcdef" for c in pin):
        raise InvalidInputError(
            f"--expect-head {value!r} is not a hash: give the 64 hex digits that verify "
            f"printed, or at least their first {MIN_HEAD_PREFIX}"
        )
    if len(pin) < MIN_HEAD_PREFIX:
        raise InvalidInputError(
            f"--expect-head {value!r} is too short: give at least {MIN_HEAD_PREFIX} hex digits"
        )
    return pin


def _unique_hash(store: EventLog, prefix: str, user: str | None) -> str:
    """The one event hash (or the root) that starts with ``prefix``; the prefix itself
    when none does (verify then reports that the pinned head is not in the log)."""
    events = store.iter_events() if user is None else iter(store.events(user_id=user))
    matches = [e.hash for e in events if e.hash.startswith(prefix)]
    if len(matches) > 1:
        raise InvalidInputError(
            f"--expect-head {prefix} matches {len(matches)} events: give more digits"
        )
    if matches:
        return matches[0]
    root = None if user is not None else store.verify().root
    return root if root is not None and root.startswith(prefix) else prefix


def cmd_tail(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    with open_store(path) as store:
        events = store.events(
            session_id=args.session, newest_first=True, limit=args.n, user_id=args.user
        )
    events.reverse()
    if args.json:
        return _emit(args, [e.to_dict() for e in events], "")
    if not events:
        where = f" in session {args.session!r}" if args.session else ""
        where += f" of user {args.user!r}" if args.user is not None else ""
        return _emit(args, [], f"no events{where}")
    rows = [
        [str(e.id), e.ts, e.session_id or "", e.role or "", e.kind, snippet(_shown_text(e))]
        for e in events
    ]
    return _emit(args, [], _table(["id", "ts", "session", "role", "kind", "text"], rows))


def cmd_show(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    with open_store(path) as store:
        event = store.get(args.id)
    data = event.to_dict()
    if args.json:
        return _emit(args, data, "")
    lines = []
    for name, value in data.items():
        if name == "content":
            continue
        if isinstance(value, dict | list):
            value = json.dumps(value, ensure_ascii=False)
        lines.append(f"{name + ':':16}{'(none)' if value is None else value}")
    content = event.content if event.content is not None else "(redacted: no text)"
    lines += ["content:", content]
    return _emit(args, data, "\n".join(lines))


def cmd_export(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    count = 0
    head: Event | None = None
    with open_store(path) as store, _output(args.file) as out:
        user = checked_user(args.user)
        for chain, secret in store.chain_keys(user):
            out.write(key_line(chain, secret))
        events = store.iter_events() if user is None else store.events(user_id=user)
        for event in events:
            out.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
            count += 1
            head = event
    result = {
        "path": _abs(path),
        "file": _abs(args.file),
        "events": count,
        "head_id": head.id if head else None,
        "head": head.hash if head else None,
    }
    text = f"exported {count:,} events to {'stdout' if args.file == '-' else args.file}"
    if head is not None:
        text += f" (head id {head.id}, hash {head.hash})"
    if args.file == "-":  # stdout carries the data: the summary goes to stderr
        print(json.dumps(result) if args.json else text, file=sys.stderr)
        return EXIT_OK
    return _emit(args, result, text)


def cmd_import(args: argparse.Namespace) -> int:
    path = _db_path(args)
    events, keys = read_export_file(args.file)
    created = not Path(path).exists()
    store = open_store(path)
    imported = False
    try:
        rebased = store.count() > 0
        report = store.import_events(events, keys=keys)
        imported = True
    except IntegrityError as exc:
        _error(f"import refused: {exc}")
        return EXIT_FAILED
    finally:
        store.close()
        if created and not imported:  # leave no empty file behind
            _remove_db(path)
    result = {
        "path": _abs(path),
        "file": _abs(args.file),
        "events": len(events),
        "verified": report.ok,
        "head_id": report.head_id,
        "head": report.head,
        "rebased": rebased,
        "embeddings": "not imported: run `pmm embed`",
    }
    if rebased:  # her new chain: its head is the ``imported`` record naming the file's
        user = next(e.user_id for e in events)
        result["user"] = user
        result["user_head"] = report.user_head
        text = (
            f"imported {len(events):,} events of user {user!r} into {_abs(path)} with new ids, "
            f"plus an `imported` record of the file's head; her chain verifies "
            f"(head id {report.head_id}, hash {report.user_head})"
        )
    else:
        text = f"imported {len(events):,} events into {_abs(path)}; the chain verifies"
        if report.head is not None:
            text += f" (head id {report.head_id}, hash {report.head})"
    return _emit(args, result, text + "\nembeddings are not imported: run `pmm embed`")
