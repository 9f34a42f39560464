"""Each agent message stored once when writers race (issue 22's soak stored 2 of 2,454
messages twice on PostgreSQL): the middleware asks which message ids the session holds and
then appends the others, so two runs of one thread that both ask before either appends
(a cancelled run whose after-agent hook is still going in its worker thread while the
retried run stores the same messages, or two servers given the same thread) both stored
them. The append now checks again, in its own transaction, under the lock that orders
the session's appends (``append_many(..., unique_meta="message_id")``)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Sequence

import pytest

from pmm import Mind
from pmm.errors import InvalidInputError
from pmm.records import NewEvent
from pmm.testing.fixtures import *  # noqa: F403

pytest.importorskip("langchain")


def _stored_ids(target: str, session: str) -> Counter[str]:
    with Mind(target) as mind:
        return Counter(
            str((e.meta or {}).get("message_id")) for e in mind.store.events(session_id=session)
        )


def test_two_racing_runs_of_one_thread_store_each_message_once(log_target: str) -> None:
    """Both runs ask "already stored?" before either appends (a barrier holds each at its
    answer until the other has its own): before the fix, every message was stored twice."""
    from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage

    from pmm.integrations import PMMMiddleware

    messages: list[AnyMessage] = [
        HumanMessage("I moved to Porto last spring.", id="h1"),
        AIMessage(
            "", id="a1", tool_calls=[{"id": "c1", "name": "weather", "args": {"city": "Porto"}}]
        ),
        ToolMessage("sunny, 24 C", tool_call_id="c1", id="t1", name="weather"),
        AIMessage("Porto is sunny today.", id="a2"),
        HumanMessage("x" * 1_500_000, id="h2"),  # stored as two linked parts
    ]
    both_asked = threading.Barrier(2, timeout=30)
    runs = [PMMMiddleware(log_target), PMMMiddleware(log_target)]  # two processes' worth
    for run in runs:
        asked: Callable[[str, Sequence[str]], set[str]] = run.mind.stored_message_ids

        def held(
            session: str, ids: Sequence[str], asked: Callable[..., set[str]] = asked
        ) -> set[str]:
            answer = asked(session, ids)
            both_asked.wait()  # neither appends before both have their answer
            return answer

        run.mind.stored_message_ids = held  # type: ignore[method-assign,assignment]
    appended: list[list[int]] = []
    failures: list[BaseException] = []

    def remember(run: PMMMiddleware) -> None:
        try:
            appended.append(run.remember_messages("thread-1", messages, "alice"))
        except BaseException as exc:  # reported below, with the test's own assertion
            failures.append(exc)

    threads = [threading.Thread(target=remember, args=(run,)) for run in runs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for run in runs:
        run.close()
    assert not failures, failures
    counts = _stored_ids(log_target, "thread-1")
    assert counts == {"h1": 1, "a1": 1, "t1": 1, "a2": 1, "h2": 2}, counts  # h2: two parts
    assert sorted(len(ids) for ids in appended) == [0, 6]  # one run stored all, one nothing
    with Mind(log_target) as mind:
        assert mind.verify().ok


def test_unique_meta_from_many_writers(log_target: str) -> None:
    """Eight writers append the same messages of one session at once: each is stored once,
    a message in parts all of its parts once, and the other sessions are not looked at."""
    rounds = 6
    go = threading.Barrier(8, timeout=30)
    minds = [Mind(log_target) for _ in range(8)]
    failures: list[BaseException] = []

    def write(mind: Mind) -> None:
        try:
            go.wait()
            for n in range(rounds):
                batch = [
                    NewEvent("prompt", f"question {n}", "s", "user", {"message_id": f"q{n}"}),
                    NewEvent("response", f"answer {n} part 1", "s", "assistant",
                             {"message_id": f"r{n}", "part": 1}),
                    NewEvent("response", f"answer {n} part 2", "s", "assistant",
                             {"message_id": f"r{n}", "part": 2}),
                ]  # fmt: skip
                mind.remember_many(batch, user_id="bob", unique_meta="message_id")
        except BaseException as exc:  # reported below
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(m,)) for m in minds]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    for mind in minds:
        mind.close()
    assert not failures, failures
    counts = _stored_ids(log_target, "s")
    assert counts == {
        **{f"q{n}": 1 for n in range(rounds)},
        **{f"r{n}": 2 for n in range(rounds)},
    }, counts
    with Mind(log_target) as mind:
        # the same message id in another session is another message
        other = mind.remember_many(
            [NewEvent("prompt", "question 0 again", "s2", "user", {"message_id": "q0"})],
            user_id="bob",
            unique_meta="message_id",
        )
        assert len(other) == 1
        # without unique_meta an append stores what it is given, as before
        again = mind.remember_many(
            [NewEvent("prompt", "question 0", "s", "user", {"message_id": "q0"})], user_id="bob"
        )
        assert len(again) == 1
        assert mind.verify().ok


def test_unique_meta_must_be_a_plain_name(log_target: str) -> None:
    with Mind(log_target) as mind:
        with pytest.raises(InvalidInputError, match="plain name"):
            mind.remember_many(
                [NewEvent("prompt", "hi", "s", "user", {"message_id": "m1"})],
                unique_meta="message_id') OR ('1",
            )
        assert mind.store.count() == 0  # nothing written
