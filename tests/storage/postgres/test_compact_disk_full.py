"""``pmm compact`` on PostgreSQL whose tables cannot be rewritten for want of space: the
compaction is committed, then the copy of the partition fails with ENOSPC (new tables go to
a tablespace on a real 64 KiB tmpfs); the error says the compaction was committed, what was
not done and to run ``pmm forget --scrub``, which finishes it once there is room.

The cluster runs in a private mount namespace (``unshare -m``, as root) so that its server
sees the tmpfs and nothing outside the test does; elsewhere the test is skipped saying why."""

from __future__ import annotations

import secrets
import textwrap

from disk_full import beside_tiny_tablespace

CHILD = textwrap.dedent(
    """
    import json, os, pwd, subprocess, sys, time
    import psycopg
    from pg_cluster import PostgresCluster
    from pg_partitions import holding, pg_files
    from pmm import Mind

    tiny, word = sys.argv[1], sys.argv[2]
    user = "her"
    with PostgresCluster.start() as cluster:
        owner = pwd.getpwnam(cluster.user).pw_uid if cluster.user else os.getuid()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size=64k,uid={owner},mode=0700",
                        "tmpfs", tiny], check=True)
        with psycopg.connect(cluster.url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE full_disk")
        url = cluster.url.rsplit("/", 1)[0] + "/full_disk"
        with Mind(url) as mind:
            for i in range(20):
                mind.remember_turn(f"{word} note {i}", "kept", session_id="t-hers",
                                   user_id=user)
                mind.remember_turn(f"other note {i}", "fine", session_id="o", user_id="bob")
            turns = mind.store.events(session_id="t-hers", kinds=["prompt", "response"])
            mind.store.set_digests([(e.id, "a note", ["note"], "rules") for e in turns])
        time.sleep(1.1)  # her turns are older than the 1s cutoff
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"CREATE TABLESPACE tiny LOCATION '{tiny}'")
            conn.execute("ALTER DATABASE full_disk SET default_tablespace = tiny")

        def cli(*argv):
            done = subprocess.run(
                [sys.executable, "-c", "from pmm.cli import main; raise SystemExit(main())",
                 *argv, "--db", url], capture_output=True, text=True)
            return [done.returncode, done.stdout, done.stderr]

        first = cli("compact", "--older-than", "1s", "--session", "t-hers")
        retry = cli("compact", "--older-than", "1s", "--session", "t-hers")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ALTER DATABASE full_disk RESET default_tablespace")
        scrub = cli("forget", "--scrub")
        with Mind(url) as mind:
            ok, left = mind.verify().ok, mind.store.count_compacted()
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
        found = holding(pg_files(cluster, url), (word,))
    print(json.dumps({"first": first, "retry": retry, "scrub": scrub, "ok": ok, "left": left,
                      "found": sorted(found)}))
    """
)


def test_compact_whose_rewrite_finds_no_room_says_the_compaction_was_committed() -> None:
    word = f"kumquat{secrets.token_hex(12)}"
    result = beside_tiny_tablespace(CHILD, word)
    code, _, err = result["first"]
    assert code == 1, result
    assert "the compaction was committed (40 turns' text dropped" in err, err
    assert "No space left on device" in err and "the last write was not stored" not in err
    assert "pmm forget --scrub" in err and "Do not repeat the compact" in err
    code, out, err = result["retry"]
    assert code == 0 and "dropped the raw text of 0 digested turns" in out, (out, err)
    code, out, err = result["scrub"]
    assert code == 0 and "rewrote the tables" in out, err
    assert result["ok"] and result["left"] == 40
    assert result["found"] == []
