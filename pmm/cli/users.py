"""The user (tenant) commands and options of the admin tool: ``pmm assign-user`` and what
``--user`` shows for ``pmm stats``.

    pmm assign-user old-session alice --reason "imported before users"
    pmm stats --user alice
    pmm search "passport" --user alice         # only alice's threads (also tail, export)
    pmm forget --user alice --yes               # every thread of alice, nobody else's
"""

from __future__ import annotations

import argparse

from pmm.cli.output import EXIT_OK, _abs, _emit, _existing_db, _table
from pmm.context.users import checked_user, user_stats
from pmm.storage import open_store


def cmd_assign_user(args: argparse.Namespace) -> int:
    """Give a session written without a user its user, once (a chained event)."""
    path = _existing_db(args)
    with open_store(path) as store:
        event = store.assign_user(args.session, args.user, reason=args.reason or "")
    text = (
        f"session {args.session!r} now belongs to user {args.user!r}; recorded as event {event.id}"
    )
    return _emit(args, event.to_dict(), text)


def cmd_user_stats(args: argparse.Namespace) -> int:
    """``pmm stats --user U``: that user's events by kind, thread and role."""
    path = _existing_db(args)
    with open_store(path) as store:
        stats = user_stats(store, str(checked_user(args.user)))
    stats["path"] = _abs(str(stats["path"]))
    if args.json:
        return _emit(args, stats, "")
    lines = [
        f"database: {stats['path']}",
        f"user: {stats['user_id']}",
        f"events: {stats['events']:,}   turns: {stats['turns']:,}   threads: {stats['sessions']:,}",
    ]
    for key, title in (("by_session", "thread"), ("by_kind", "kind"), ("by_role", "role")):
        rows = [[str(name), f"{count:,}"] for name, count in stats[key].items()]
        if rows:
            lines += ["", _table([title, "events"], rows)]
    _emit(args, stats, "\n".join(lines))
    return EXIT_OK
