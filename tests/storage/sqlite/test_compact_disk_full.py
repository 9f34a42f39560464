"""``pmm compact`` on a nearly full disk tells the truth, as ``pmm forget`` does: the
compaction fits and is committed, the ``VACUUM`` that rewrites the file does not (it needs
room for a copy); the error says the compaction was committed, what was not done and how to
finish (``pmm forget --scrub``), never "the last write was not stored", and a repeat finds
nothing left to compact. On a real 8 MiB tmpfs in a private user+mount namespace where the
machine allows it (as in test_forget_disk_full.py)."""

from __future__ import annotations

import secrets
import textwrap
from pathlib import Path

from disk_full import on_small_tmpfs

CHILD = textwrap.dedent(
    """
    import json, os, subprocess, sys, time
    from pmm import Mind
    from pmm.storage.sqlite import EventStore
    folder, word = sys.argv[1], sys.argv[2]
    db = os.path.join(folder, "pmm.db")
    with Mind(db) as mind:
        for i in range(30):
            mind.remember_turn(f"{word} turn {i} " * 20, "ok " * 30, session_id="hers")
        for i in range(1500):
            mind.remember_turn(f"other turn {i} " * 20, "fine " * 30, session_id=f"o{i % 10}")
    with EventStore(db) as store:
        turns = store.events(kinds=["prompt", "response"])
        store.set_digests([(e.id, "a talk about fruit", ["fruit"], "rules") for e in turns])
    time.sleep(1.1)  # every turn is older than the 1s cutoff
    stat = os.statvfs(folder)
    keep = int(os.path.getsize(db) * 0.5)  # room for the compaction, not for a copy
    with open(os.path.join(folder, "filler"), "wb") as f:
        f.write(b"\\0" * max(stat.f_bavail * stat.f_frsize - keep, 0))

    def cli(*argv):
        done = subprocess.run(
            [sys.executable, "-c", "from pmm.cli import main; raise SystemExit(main())",
             *argv, "--db", db], capture_output=True, text=True)
        return [done.returncode, done.stdout, done.stderr]

    first = cli("compact", "--older-than", "1s", "--session", "hers")
    retry = cli("compact", "--older-than", "1s", "--session", "hers")
    os.remove(os.path.join(folder, "filler"))
    scrub = cli("forget", "--scrub")
    with EventStore(db) as store:
        ok = store.verify().ok
        compacted = store.count_compacted()
    held = b"".join(open(db + s, "rb").read() for s in ("", "-wal") if os.path.exists(db + s))
    print(json.dumps({"first": first, "retry": retry, "scrub": scrub, "ok": ok,
                      "compacted": compacted, "word_in_file": word.encode() in held}))
    """
)


def test_compact_on_a_full_disk_says_the_compaction_was_committed(tmp_path: Path) -> None:
    word = f"kumquat{secrets.token_hex(12)}"
    result = on_small_tmpfs(tmp_path, CHILD, word)
    code, _, err = result["first"]
    assert code == 1, result
    assert "the compaction was committed (60 turns' text dropped" in err, err
    assert "the last write was not stored" not in err
    assert "pmm forget --scrub" in err and "Do not repeat the compact" in err
    code, out, err = result["retry"]  # nothing of hers left to compact: the retry says so
    assert code == 0 and "dropped the raw text of 0 digested turns" in out, (out, err)
    code, out, err = result["scrub"]
    assert code == 0 and "rewrote" in out, err
    assert result["ok"] and result["compacted"] == 60
    assert not result["word_in_file"]
