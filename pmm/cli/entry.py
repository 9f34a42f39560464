"""The ``pmm`` entry point: parse the arguments, run one command, map errors to exit codes.

``main(argv)`` builds the parser (:mod:`pmm.cli.parser`), hands the parsed arguments to the
command's handler and turns what goes wrong into an exit code: a :class:`~pmm.errors.PMMError`
becomes 1 or 2 (:func:`pmm.cli.output.exit_code_of`), an ``OSError`` 2, Ctrl-C 130, and a
reader that went away (``pmm export - | head -1``) is not an error. ``--json`` errors are a JSON
object on stdout too::

    from pmm.cli import main
    code = main(["verify", "--db", "pmm.db", "--json"])
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence

from pmm.cli.output import EXIT_OK, EXIT_USAGE, _fail, _json_error, _silence_stdout, exit_code_of
from pmm.cli.parser import _UsageError, build_parser
from pmm.errors import PMMError

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
