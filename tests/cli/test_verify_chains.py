"""``pmm verify`` with one chain per user (issue 21): the root to pin, ``--user`` for one
user's chain and her head, ``--expect-head`` taking a root or a head (or a prefix)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from store_helpers import raw

from pmm.cli import main
from pmm.mind import Mind


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


@pytest.fixture
def two_users(tmp_path: Path) -> Path:
    db = tmp_path / "pmm.db"
    with Mind(str(db)) as mind:
        mind.remember_turn("I live in Lisbon", "ok", session_id="a1", user_id="alice")
        mind.remember_turn("I live in Oslo", "ok", session_id="b1", user_id="bob")
        mind.remember_turn("and I ski", "nice", session_id="a2", user_id="alice")
    return db


def test_verify_prints_the_root_and_one_users_head(
    capsys: pytest.CaptureFixture[str], two_users: Path
) -> None:
    code, out = _run(capsys, "verify", "--db", str(two_users))
    with Mind(str(two_users)) as mind:
        report = mind.verify()
        alice = mind.verify(user_id="alice")
    assert code == 0 and (
        f"pin it (stays valid as the log grows): pmm verify --expect-head {report.head}" in out
    )
    assert f"root over {len(report.heads)} chains: {report.root}" in out
    assert f"pmm verify --expect-head {report.root}" not in out  # the root moves: no pin
    code, out = _run(capsys, "verify", "--db", str(two_users), "--user", "alice", "--json")
    data = json.loads(out)
    assert code == 0 and data["ok"] and data["user_head"] == alice.user_head
    assert data["rows"] == alice.rows == 4 and data["user"] == "alice"
    for pin in (report.root, str(report.root)[:12], alice.user_head):
        code, out = _run(capsys, "verify", "--db", str(two_users), "--expect-head", str(pin))
        assert code == 0, out
    code, out = _run(
        capsys, "verify", "--db", str(two_users), "--user", "alice",
        "--expect-head", str(alice.user_head),
    )  # fmt: skip
    assert code == 0, out


def test_a_cut_chain_fails_against_the_pinned_root_and_head(
    capsys: pytest.CaptureFixture[str], two_users: Path
) -> None:
    with Mind(str(two_users)) as mind:
        root = mind.verify().root
        alice = mind.verify(user_id="alice")
        last = mind.store.events(user_id="alice")[-1].id
        before = mind.store.events(user_id="alice")[-2].id
    with raw(two_users) as conn:
        conn.execute("DELETE FROM events WHERE id = ?", (last,))
    code, out = _run(capsys, "verify", "--db", str(two_users))
    assert code == 1  # caught without a pin, and named as a truncation, blaming no row
    assert out.startswith(
        f"FAILED: chain 'alice' ends at id {before} but its recorded head is {last}: "
        "events were removed from its end\n"
    )
    code, out = _run(capsys, "verify", "--db", str(two_users), "--expect-head", str(root))
    assert code == 1 and "pinned head" in out
    code, out = _run(
        capsys, "verify", "--db", str(two_users), "--user", "alice",
        "--expect-head", str(alice.user_head),
    )  # fmt: skip
    assert code == 1 and "pinned head" in out


def test_the_pins_verify_prints_survive_other_users_appends(
    capsys: pytest.CaptureFixture[str], two_users: Path
) -> None:
    # A scheduled check built from the advice must not cry tampering when someone chats.
    pins = []
    for argv in (["verify"], ["verify", "--user", "alice"]):
        code, out = _run(capsys, *argv, "--db", str(two_users))
        [line] = [x for x in out.splitlines() if x.startswith("pin it")]
        pins.append(line.split(": ", 1)[1].split())
    with Mind(str(two_users)) as mind:
        mind.remember_turn("I moved to Bergen", "ok", session_id="b1", user_id="bob")
        mind.remember_turn("still skiing", "ok", session_id="a2", user_id="alice")
    for pin in pins:
        assert pin[:2] == ["pmm", "verify"]
        code, out = _run(capsys, *pin[1:], "--db", str(two_users))
        assert code == 0, out


def test_one_users_export_verifies_on_its_own_and_imports_elsewhere(
    capsys: pytest.CaptureFixture[str], two_users: Path, tmp_path: Path
) -> None:
    # A portability request answered by a file: her export carries her chain's secret, so
    # the file verifies with no database, to the head her source database prints, and a
    # new database imported from it prints the same head.
    export = tmp_path / "alice.jsonl"
    with Mind(str(two_users)) as mind:
        mind.export(str(export), user_id="alice")
        alice = mind.verify(user_id="alice")
    assert "Oslo" not in export.read_text("utf-8")  # bob's turn is not hers
    code, out = _run(capsys, "verify", "--file", str(export), "--user", "alice", "--json")
    data = json.loads(out)
    assert code == 0 and data["ok"] and data["user_head"] == alice.user_head
    assert data["rows"] == alice.rows and data["file"] == str(export.resolve())
    code, out = _run(capsys, "verify", "--file", str(export), "--expect-head", str(alice.user_head))
    assert code == 0, out

    copy = tmp_path / "elsewhere.db"
    code, out = _run(capsys, "import", str(export), "--db", str(copy))
    assert code == 0, out
    with Mind(str(copy)) as mind:
        assert mind.verify(user_id="alice").user_head == alice.user_head
        assert [e.content for e in mind.history("a1", user_id="alice")] == [
            "I live in Lisbon",
            "ok",
        ]

    # one edited byte, or a row left out, and the file no longer verifies
    lines = export.read_text("utf-8").splitlines()
    for name, edited in (
        ("edited", [line.replace("Lisbon", "Lisboa") for line in lines]),
        ("cut", [line for line in lines if "I live in Lisbon" not in line]),
    ):
        bad = tmp_path / f"{name}.jsonl"
        bad.write_text("\n".join(edited) + "\n", "utf-8")
        code = main(["verify", "--file", str(bad)])
        assert code == 1, name
        assert "does not verify" in capsys.readouterr().err, name
