"""One chain per user under concurrency (issue 21): processes appending to one user and
to users of their own at once, beside the other writers (assignment, summaries,
supersessions, redaction), leave every chain strictly ordered, each append exactly once."""

from __future__ import annotations

import multiprocessing as mp

from pmm.records import NewEvent
from pmm.storage.postgres import PostgresEventStore

PROCESSES = 4
APPENDS = 40


def _writer(url: str, worker: int) -> list[str]:
    """Alternate appends to the shared user and to this worker's own user; returns the
    contents acknowledged."""
    done: list[str] = []
    with PostgresEventStore(url, pool_size=1) as store:
        for n in range(APPENDS):
            user = "shared" if n % 2 == 0 else f"own{worker}"
            text = f"w{worker} n{n}"
            if n % 10 == 5:  # a batch: all of it or none of it
                batch = [text, f"{text} b"]
                store.append_many(
                    [
                        NewEvent("prompt", t, f"{user}-{worker}", "user", None, None, user)
                        for t in batch
                    ]
                )
                done += batch
            else:
                store.append_many(
                    [NewEvent("prompt", text, f"{user}-{worker}", "user", None, None, user)]
                )
                done.append(text)
    return done


def _other_writers(url: str) -> int:
    """Meanwhile: events without a user, a session assigned to the shared user, a session
    summary, a supersession and a redaction."""
    from pmm.storage.postgres.store import PostgresEventStore as Store

    with Store(url, pool_size=1) as store:
        first = store.append("prompt", "old chat", session_id="old", role="user")
        for i in range(10):
            store.append("event", f"nobody {i}")
        store.assign_user("old", "shared")
        summary, _ = store.append_summary(
            NewEvent("summary", "a summary", "old", "system", {"key": "k1"}),
            audit=lambda e: NewEvent("summary_audit", f"audit {e.id}", "old", "system"),
            key="k1", covers_upto=first.id, covered_ids=[first.id],
            summarizes="SUMMARIZES", supersedes="SUPERSEDES",
        )  # fmt: skip
        store.append_supersession(
            NewEvent("supersession", "newer wins", "old", "system"),
            newer=summary.id, older=first.id, kind="SUPERSEDES_FACT",
        )  # fmt: skip
        store.redact(first.id, reason="test")
        return 10


def test_appends_of_one_user_and_many_users_from_processes_stay_ordered(pg_url: str) -> None:
    PostgresEventStore(pg_url).close()  # migrate once up front
    ctx = mp.get_context("spawn")
    with ctx.Pool(PROCESSES + 1) as pool:
        others = pool.apply_async(_other_writers, (pg_url,))
        acknowledged = pool.starmap(_writer, [(pg_url, w) for w in range(PROCESSES)])
        others.get()
    with PostgresEventStore(pg_url) as store:
        report = store.verify()
        assert report.ok, report
        assert len(report.heads) == PROCESSES + 2  # own users, the shared one, no user
        for worker, texts in enumerate(acknowledged):
            for user in ("shared", f"own{worker}"):
                stored = [e.content for e in store.events(session_id=f"{user}-{worker}")]
                mine = [t for t in texts if f"{user}-{worker}" == _session(t, worker)]
                assert stored == mine  # exactly once, in the order acknowledged
            assert store.verify(user_id=f"own{worker}").ok
        shared = store.verify(user_id="shared")
        assert shared.ok and shared.user_head == report.heads[_label(store, "shared")]
        ids = store.event_ids()
        assert len(ids) == len(set(ids))


def _session(text: str, worker: int) -> str:
    n = int(text.split()[1][1:])
    return f"{'shared' if n % 2 == 0 else f'own{worker}'}-{worker}"


def _label(store: PostgresEventStore, user: str) -> str:
    from pmm.events.chains import user_digest

    return user_digest(dict(store.chain_keys(user))[user], user)
