"""Which user a :class:`pmm.integrations.PMMStore` namespace names (``namespace_user``):
LangGraph's ``("memories", user_id)`` is ``namespace_user=1``; any other rule is a callable
from the namespace to the user id (None: no user).

    how = checked_namespace_user(1)
    namespace_user_id(how, ("memories", "alice"))   # 'alice'
    namespace_user_id(how, ("memories",))           # None: too short to name one
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from pmm.context.users import checked_user
from pmm.errors import InvalidInputError
from pmm.records import Event
from pmm.storage import EventLog

NamespaceUser = int | Callable[[tuple[str, ...]], str | None]
"""Which namespace label names the user (its index), or a function from the namespace to
the user id (None: the namespace names no user)."""


def checked_namespace_user(how: object) -> NamespaceUser | None:
    """``how`` when it is None, an int (not a bool) or a callable; else
    :class:`~pmm.errors.InvalidInputError`."""
    if how is None or (isinstance(how, int) and not isinstance(how, bool)):
        return how
    if callable(how):
        return how
    raise InvalidInputError(
        "namespace_user must be the index of the namespace label that names the user "
        f"or a callable namespace -> user id, got {how!r}"
    )


def namespace_user_id(how: NamespaceUser | None, namespace: Sequence[str]) -> str | None:
    """The user ``namespace`` names by ``how``, checked (:func:`pmm.context.users.checked_user`:
    an invalid one raises :class:`~pmm.errors.InvalidInputError`); None: no user. An index
    past either end of the namespace names no user."""
    labels = tuple(namespace)
    if how is None:
        return None
    if isinstance(how, int):
        if not -len(labels) <= how < len(labels):
            return None
        return checked_user(labels[how])
    user = how(labels)
    if user is not None and not isinstance(user, str):
        raise InvalidInputError(
            f"namespace_user returned {user!r} for {labels!r}: a user id (str) or None"
        )
    return checked_user(user)


def own_session(log: EventLog, session: str, user: str | None) -> None:
    """Before a put under ``user``: a namespace session written without a user is given
    hers, once (a chained ``user_assigned`` event); one of another user is left for the
    append to refuse."""
    if user is None:
        return
    has_rows, owner = log.session_owner(session)
    if has_rows and owner is None:
        log.assign_user(session, user, reason="PMMStore namespace_user")


def refuse_other_users(
    how: NamespaceUser | None,
    events: Iterable[Event],
    namespace_of: Callable[[str], tuple[str, ...]],
) -> None:
    """Before a read returns ``events``: raise :class:`~pmm.errors.InvalidInputError` when
    one of them belongs to a user other than the one this store's rule (``how``) names for
    its namespace (a different rule, a callable that disagrees), so that reads cross no
    more users than writes do. Items of no user, and a store whose rule names no user for
    the namespace, are read as in any LangGraph store. The message names no user id."""
    if how is None:
        return
    named: dict[str, str | None] = {}
    for event in events:
        if event.user_id is None or event.session_id is None:
            continue
        session = event.session_id
        if session not in named:
            named[session] = namespace_user_id(how, namespace_of(session))
        if named[session] is not None and named[session] != event.user_id:
            raise InvalidInputError(
                f"namespace {namespace_of(session)!r} belongs to another user than the one "
                "this store's namespace_user names for it: reading it is refused, as "
                "writing it is. Use the rule its items were written with"
            )
