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

from pmm.cli.entry import main
from pmm.cli.output import EXIT_FAILED, EXIT_OK, EXIT_USAGE, exit_code_of
from pmm.cli.parser import EPILOG, build_parser

__all__ = [
    "EPILOG",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_USAGE",
    "build_parser",
    "exit_code_of",
    "main",
]
