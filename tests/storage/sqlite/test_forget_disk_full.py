"""``pmm forget`` on a nearly full disk tells the truth: the erasure itself fits and is
committed, the ``VACUUM`` that rewrites the file does not (it needs room for a copy); the
error says the erasure was committed, what was not done and how to finish (``pmm forget
--scrub``), never "the last write was not stored". On a real 8 MiB tmpfs, mounted in a
private user+mount namespace where the machine allows it (as in test_faults_disk_full.py)."""

from __future__ import annotations

import secrets
import textwrap
from pathlib import Path

from disk_full import on_small_tmpfs

CHILD = textwrap.dedent(
    """
    import json, os, subprocess, sys
    from pmm import Mind
    from pmm.storage.sqlite import EventStore
    folder, word = sys.argv[1], sys.argv[2]
    db = os.path.join(folder, "pmm.db")
    with Mind(db) as mind:
        for i in range(30):
            mind.remember_turn(f"{word} turn {i} " * 20, "ok " * 30, session_id="hers",
                               user_id="her-" + word)
        for i in range(1500):
            mind.remember_turn(f"other turn {i} " * 20, "fine " * 30, session_id=f"o{i % 10}",
                               user_id="other")
    stat = os.statvfs(folder)
    keep = int(os.path.getsize(db) * 0.5)  # room for the erasure, not for a copy of the file
    with open(os.path.join(folder, "filler"), "wb") as f:
        f.write(b"\\0" * max(stat.f_bavail * stat.f_frsize - keep, 0))

    def cli(*argv):
        done = subprocess.run(
            [sys.executable, "-c", "from pmm.cli import main; raise SystemExit(main())",
             *argv, "--db", db], capture_output=True, text=True)
        return [done.returncode, done.stdout, done.stderr]

    first = cli("forget", "--user", "her-" + word, "--yes")
    retry = cli("forget", "--user", "her-" + word, "--yes")
    os.remove(os.path.join(folder, "filler"))
    scrub = cli("forget", "--scrub")
    with EventStore(db) as store:
        ok = store.verify().ok
        left = store.count(user_id="her-" + word)
    held = b"".join(open(db + s, "rb").read() for s in ("", "-wal") if os.path.exists(db + s))
    print(json.dumps({"first": first, "retry": retry, "scrub": scrub, "ok": ok,
                      "left": left, "word_in_file": word.encode() in held}))
    """
)


def test_forget_on_a_full_disk_says_the_erasure_was_committed(tmp_path: Path) -> None:
    word = f"kumquat{secrets.token_hex(12)}"
    result = on_small_tmpfs(tmp_path, CHILD, word)
    code, _, err = result["first"]
    assert code == 1, result
    assert "the erasure was committed (60 events erased" in err, err
    assert "the last write was not stored" not in err
    assert "pmm forget --scrub" in err and "Do not repeat the forget" in err
    code, _, err = result["retry"]  # nothing of hers left: the retry says so and what to run
    assert code != 0 and "no events to erase" in err and "pmm forget --scrub" in err
    code, out, err = result["scrub"]
    assert code == 0 and "rewrote" in out, err
    assert result["ok"] and result["left"] == 0
    assert not result["word_in_file"]
