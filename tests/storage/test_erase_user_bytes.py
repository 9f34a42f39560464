"""Erasing a whole user leaves no byte of her: after the real ``pmm forget --user U --yes``,
on SQLite (the file, its -wal and -shm: the full-text index's shadow tables are in the
file) and on PostgreSQL (every data file under ``base/`` after a ``CHECKPOINT``), no copy
of her user id, her thread ids, her words or her chain's secret (raw, hex in either case)
is found, on every path that once put them somewhere else: a session summary's hashed meta,
and a thread written without a user and given hers later (``assign_user``, which moves rows
between PostgreSQL partitions). The ids are random and 24+ characters long, so a match can
be neither missed nor chance; another user's ids stay, which shows the search finds them."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import psycopg
import pytest
from pg_partitions import pg_files

from pmm import Mind
from pmm.cli.entry import main
from pmm.dream.consolidation import SUMMARY_KIND
from pmm.storage import is_postgres_url, open_store


@pytest.fixture(params=["sqlite", "postgres"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "pmm.db")
    return str(request.getfixturevalue("pg_url"))


def _token(label: str) -> str:
    return f"{label}-{secrets.token_hex(12)}"  # 24 random hex digits


class Person:
    """A user with two threads and words nobody else says."""

    def __init__(self, label: str) -> None:
        self.user = _token(f"{label}-user")
        self.threads = (_token(f"{label}-thread"), _token(f"{label}-thread"))
        self.word = _token(f"{label}-said")

    def tokens(self) -> dict[str, bytes]:
        plain = {"user id": self.user, "words": self.word}
        plain.update({f"thread {i}": t for i, t in enumerate(self.threads)})
        found = {name: value.encode() for name, value in plain.items()}
        for name, value in plain.items():  # hex-encoded, as a blob or an escaped copy holds it
            found[f"{name} (hex)"] = value.encode().hex().encode()
        return found


def _secret_tokens(target: str, user: str) -> dict[str, bytes]:
    with open_store(target) as store:
        [(_, secret)] = store.chain_keys(user)
    return {
        "chain secret": secret,
        "chain secret (hex)": secret.hex().encode(),
        "chain secret (HEX)": secret.hex().upper().encode(),
    }


def _files(target: str, request: pytest.FixtureRequest) -> list[Path]:
    """Every file the log's bytes live in (PostgreSQL: after a checkpoint writes them)."""
    if not is_postgres_url(target):
        return [Path(target + s) for s in ("", "-wal", "-shm") if Path(target + s).exists()]
    with psycopg.connect(target, autocommit=True) as conn:
        conn.execute("VACUUM")  # dead row versions stay in the files after it too
        conn.execute("CHECKPOINT")  # the test server runs with fsync off: write the pages
    folder = pg_files(request.getfixturevalue("pg_cluster"), target)
    return [p for p in folder.rglob("*") if p.is_file()]


def _holding(files: list[Path], tokens: dict[str, bytes]) -> set[str]:
    found: set[str] = set()
    for path in files:
        data = path.read_bytes()
        found.update(name for name, token in tokens.items() if token in data)
    return found


def _plain(tokens: dict[str, bytes]) -> set[str]:
    """The names of the tokens stored as they are (not hex-encoded)."""
    return {name for name in tokens if "hex" not in name.lower()}


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _forget(capsys: pytest.CaptureFixture[str], target: str, user: str) -> str:
    code, out, err = _cli(capsys, "forget", "--user", user, "--yes", "--db", target)
    assert code == 0, err
    assert "chain's secret left the log" in out
    return out


def _nothing_of_her_left(capsys: pytest.CaptureFixture[str], target: str, user: str) -> None:
    code, out, _ = _cli(capsys, "stats", "--user", user, "--json", "--db", target)
    stats = json.loads(out)
    assert code == 0 and stats["events"] == 0 and stats["by_session"] == {}
    code, out, _ = _cli(capsys, "verify", "--db", target, "--json")
    assert code == 0 and json.loads(out)["ok"]


def _talk(mind: Mind, person: Person, user: str | None = None) -> None:
    for thread in person.threads:
        for i in range(3):
            mind.remember_turn(
                f"note {i}: {person.word} is my locker code, keep it",
                f"kept {person.word} safe",
                session_id=thread,
                user_id=user,
            )


def test_the_cli_erases_her_ids_and_secret_on_both_backends(
    target: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    her, bob = Person("her"), Person("bob")
    with Mind(target) as mind:
        _talk(mind, her, her.user)
        _talk(mind, bob, bob.user)
    tokens = {**her.tokens(), **_secret_tokens(target, her.user)}
    assert _holding(_files(target, request), tokens) >= _plain(tokens)  # the search finds them
    _forget(capsys, target, her.user)
    _nothing_of_her_left(capsys, target, her.user)
    files = _files(target, request)
    assert _holding(files, tokens) == set()
    assert _holding(files, bob.tokens()) >= _plain(bob.tokens())  # nobody else's


def test_no_thread_id_of_hers_stays_in_a_session_summary(
    target: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    her = Person("her")
    options = {"enable_summary": True, "summarizer": "heuristic", "summary_mode": "inline"}
    with Mind(target, session_summary_min_turns=2, dream_on_close=False, **options) as mind:
        _talk(mind, her, her.user)
        mind.dream()
        made = mind.store.events(user_id=her.user, kinds=(SUMMARY_KIND,))
        assert {s.session_id for s in made} == set(her.threads)
        assert all(t not in json.dumps(s.meta) for s in made for t in her.threads)
    _forget(capsys, target, her.user)
    _nothing_of_her_left(capsys, target, her.user)
    assert _holding(_files(target, request), her.tokens()) == set()


def test_a_thread_given_its_user_later_leaves_no_copy_behind(
    target: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """Her threads are written without a user and assigned to her (on PostgreSQL their rows
    move out of the no-user partition); the control user had her id from the start."""
    her, control, bystander = Person("her"), Person("control"), Person("bystander")
    with Mind(target) as mind:
        _talk(mind, her)  # no user yet
        _talk(mind, bystander)  # no user, never assigned: the no-user partition keeps rows
        _talk(mind, control, control.user)
        for thread in her.threads:
            mind.assign_user(thread, her.user, reason="signed up")
    tokens = {**her.tokens(), **_secret_tokens(target, her.user)}
    control_tokens = {**control.tokens(), **_secret_tokens(target, control.user)}
    _forget(capsys, target, her.user)
    _forget(capsys, target, control.user)
    for user in (her.user, control.user):
        _nothing_of_her_left(capsys, target, user)
    files = _files(target, request)
    assert _holding(files, tokens) == set()
    assert _holding(files, control_tokens) == set()
    assert _holding(files, bystander.tokens()) >= _plain(bystander.tokens()) - {"user id"}


def test_a_store_namespace_given_its_user_later_leaves_no_copy_behind(
    target: str, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    """LangGraph's ``("memories", user_id)`` namespace written by a store without a user
    rule, then by one with ``namespace_user=1``: its first put of hers assigns the
    namespace's session to her (``assign_user``); ``pmm forget --user`` leaves nothing."""
    from pmm.integrations import PMMStore

    her = Person("her")
    namespace = ("memories", her.user)
    plain = PMMStore(target)
    try:
        plain.put(namespace, "locker", {"text": f"code {her.word}"})
    finally:
        plain.close()
    ruled = PMMStore(target, namespace_user=1)
    try:
        ruled.put(namespace, "trip", {"text": f"Kyoto, with {her.word}"})
        assert ruled.mind.store.count(user_id=her.user) >= 2  # both puts are hers now
    finally:
        ruled.close()
    tokens = {**her.tokens(), **_secret_tokens(target, her.user)}
    del tokens["thread 0"], tokens["thread 1"], tokens["thread 0 (hex)"], tokens["thread 1 (hex)"]
    assert _holding(_files(target, request), tokens) >= {"user id", "words"}
    _forget(capsys, target, her.user)
    _nothing_of_her_left(capsys, target, her.user)
    assert _holding(_files(target, request), tokens) == set()
