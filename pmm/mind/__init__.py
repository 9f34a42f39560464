"""Mind: the one object that wires the event log, digests, embeddings, recall and context.

    from pmm import Mind

    with Mind("pmm.db", enable_summary=True, summarizer="heuristic") as mind:
        mind.remember("I moved to Lisbon", role="user", session_id="alice")
        mind.dream()                                   # digest + embed what is pending
        mind.recall("where do I live?", k=5, session_id="alice")
        print(mind.context("alice", query="where do I live?").text())
        mind.verify().ok

Users and threads: a *user* (tenant) owns *sessions* (threads). Pass ``user_id=`` and each
event stores it; a session belongs to one user (writing or reading another user's thread
raises :class:`~pmm.errors.InvalidInputError`). ``context`` of a user's thread shows that
thread's recent turns and rolling summary, and, in the ``user`` scope (``PMM_RECALL_SCOPE``,
the default whenever a user is known), key facts and relevant memories from all of her
threads, each labelled with its thread and date. Nothing crosses users unless the scope is
``all`` (the whole log: single-user apps only)::

        mind.remember_turn("I live in Lisbon", "Noted!", session_id="t1", user_id="alice")
        mind.context("t2", query="where do I live?", user_id="alice").text()  # knows Lisbon
        mind.recall("Lisbon", user_id="alice")           # all of alice's threads, no one else's
        mind.forget(user_id="alice", reason="account deleted")   # every thread of hers
        mind.assign_user("old-session", "bob")   # a session written before users, once

Keyword arguments are PMM settings (``enable_summary`` = ``PMM_ENABLE_SUMMARY``, ...); an
argument wins over the environment, which wins over ``.env`` and the defaults.
"""

from pmm.mind.core import Mind

__all__ = ["Mind"]
