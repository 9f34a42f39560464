"""``pmm forget`` on PostgreSQL whose tables cannot be rewritten for want of space: the
erasure is committed, then the copy of her partition fails with ENOSPC (new tables go to a
tablespace on a real 64 KiB tmpfs); the error says the erasure was committed, what was not
done and to run ``pmm forget --scrub``, which finishes it once there is room.

The cluster runs in a private mount namespace (``unshare -m``, as root) so that its server
sees the tmpfs and nothing outside the test does; elsewhere the test is skipped saying why."""

from __future__ import annotations

import secrets
import textwrap

from disk_full import beside_tiny_tablespace

CHILD = textwrap.dedent(
    """
    import json, os, pwd, subprocess, sys
    import psycopg
    from pg_cluster import PostgresCluster
    from pg_partitions import holding, pg_files
    from pmm import Mind

    tiny, word = sys.argv[1], sys.argv[2]
    user = "her-" + word
    with PostgresCluster.start() as cluster:
        owner = pwd.getpwnam(cluster.user).pw_uid if cluster.user else os.getuid()
        subprocess.run(["mount", "-t", "tmpfs", "-o", f"size=64k,uid={owner},mode=0700",
                        "tmpfs", tiny], check=True)
        with psycopg.connect(cluster.url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE full_disk")
        url = cluster.url.rsplit("/", 1)[0] + "/full_disk"
        with Mind(url) as mind:
            for i in range(20):
                mind.remember_turn(f"{word} note {i}", "kept", session_id="t-" + word,
                                   user_id=user)
                mind.remember_turn(f"other note {i}", "fine", session_id="o", user_id="bob")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"CREATE TABLESPACE tiny LOCATION '{tiny}'")
            conn.execute("ALTER DATABASE full_disk SET default_tablespace = tiny")

        def cli(*argv):
            done = subprocess.run(
                [sys.executable, "-c", "from pmm.cli import main; raise SystemExit(main())",
                 *argv, "--db", url], capture_output=True, text=True)
            return [done.returncode, done.stdout, done.stderr]

        first = cli("forget", "--user", user, "--yes")
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ALTER DATABASE full_disk RESET default_tablespace")
        scrub = cli("forget", "--scrub")
        with Mind(url) as mind:
            ok, left = mind.verify().ok, mind.store.count(user_id=user)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CHECKPOINT")
        found = holding(pg_files(cluster, url), (word,))
    print(json.dumps({"first": first, "scrub": scrub, "ok": ok, "left": left,
                      "found": sorted(found)}))
    """
)


def test_forget_whose_rewrite_finds_no_room_says_the_erasure_was_committed() -> None:
    word = f"kumquat{secrets.token_hex(12)}"
    result = beside_tiny_tablespace(CHILD, word)
    code, _, err = result["first"]
    assert code == 1, result
    assert "the erasure was committed (" in err and "No space left on device" in err, err
    assert "pmm forget --scrub" in err and "Do not repeat the forget" in err
    code, out, err = result["scrub"]
    assert code == 0 and "rewrote the tables" in out, err
    assert result["ok"] and result["left"] == 0
    assert result["found"] == []
