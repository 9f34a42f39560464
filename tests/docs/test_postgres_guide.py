"""docs/guides/postgresql.md, followed as written on the tests' throwaway cluster: its SQL
(as the superuser), its shell lines (``export`` and ``pmm ...``, with the page's host
replaced by the cluster's) and its Python, in order; each ``pmm`` command must exit 0 and
print what the page's comment says it prints."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from snippet_helpers import ROOT

sys.path.insert(0, str(ROOT / "tests" / "storage"))
from pg_cluster import PostgresCluster, find_bindir

psycopg = pytest.importorskip("psycopg")
GUIDE = ROOT / "docs" / "guides" / "postgresql.md"
HOST = "db.internal:5432"
FENCE = re.compile(r"^```(\w+)\n(.*?)^```", re.MULTILINE | re.DOTALL)


def steps(page: str) -> list[tuple[str, str, str]]:
    """``(language, code, marker)`` of each fenced block of the guide's steps, in order;
    ``marker`` is the ``<!-- needs: ... -->`` line above it, if any."""
    body = page.split("## From an empty server to a verified memory", 1)[1]
    body = body.split("\n## ", 1)[0]
    out = []
    for match in FENCE.finditer(body):
        before = body[: match.start()].rstrip().splitlines()[-1]
        out.append((match[1], match[2], before if before.startswith("<!--") else ""))
    return out


@pytest.fixture
def cluster() -> Iterator[PostgresCluster]:
    if find_bindir() is None:
        pytest.skip("PostgreSQL binaries (initdb, pg_ctl) not found: set PMM_PG_BIN")
    started = PostgresCluster.start()
    try:
        yield started
    finally:
        started.stop()


def _sql(url: str, code: str, has_vector: bool, marker: str) -> int:
    """Run a block as psql would (``\\c DB`` switches the database); returns how many
    statements ran."""
    conn = psycopg.connect(url, autocommit=True)
    ran, statement = 0, ""
    try:
        for line in code.splitlines():
            if line.startswith("\\c "):
                conn.close()
                conn = psycopg.connect(url.rsplit("/", 1)[0] + "/" + line.split()[1])
                conn.autocommit = True
                continue
            statement += line + "\n"
            if not line.rstrip().endswith(";"):
                continue
            if "pgvector" in marker and not has_vector:
                with pytest.raises(psycopg.errors.FeatureNotSupported, match="vector"):
                    conn.execute(statement)
            else:
                conn.execute(statement)
            ran, statement = ran + 1, ""
        assert not statement.strip(), f"a statement without its semicolon: {statement}"
    finally:
        conn.close()
    return ran


def _pmm(line: str, env: dict[str, str]) -> None:
    command, _, comment = line.partition("#")
    args = [os.path.expandvars(a) if "$" in a else a for a in shlex.split(command)[1:]]
    args = [a.replace("${PMM_DB_URL}", env["PMM_DB_URL"]) for a in args]
    run = subprocess.run(
        [sys.executable, str(ROOT / "pmm_cli.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=300,
    )
    assert run.returncode == 0, (line, run.stdout, run.stderr)
    for expected in re.findall(
        r"(OK: \d+ rows (?:of user '\w+' )?verified|vector search: )", comment
    ):
        assert expected in run.stdout, (line, run.stdout)
    assert env.get("PGPASSWORD", "\0") not in run.stdout + run.stderr


def test_the_guide_runs_from_an_empty_server_to_a_verified_memory(
    cluster: PostgresCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        has_vector = bool(
            conn.execute("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'").fetchone()
        )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMM_", "PG"))}
    ran = {"sql": 0, "pmm": 0, "python": 0}
    for language, code, marker in steps(GUIDE.read_text("utf-8")):
        if language == "sql":
            ran["sql"] += _sql(cluster.url, code, has_vector, marker)
        elif language == "bash":
            for line in code.splitlines():
                if line.startswith("export "):
                    name, _, value = line.removeprefix("export ").partition("=")
                    env[name] = value.replace(HOST, f"127.0.0.1:{cluster.port}")
                elif line.startswith("pmm "):
                    for name, value in env.items():
                        line = line.replace(f'"${name}"', shlex.quote(value))
                    _pmm(line, env)
                    ran["pmm"] += 1
                else:
                    assert line.startswith("pip install "), line  # the install step
        elif language == "python":
            for name in ("PMM_DB_URL", "PGPASSWORD"):
                monkeypatch.setenv(name, env[name])
            monkeypatch.chdir(tmp_path)
            exec(compile(code, f"{GUIDE}:python", "exec"), {"__name__": "guide"})
            ran["python"] += 1
    assert ran == {"sql": 5, "pmm": 3, "python": 1}
    with psycopg.connect(env["PMM_DB_URL"]) as conn:  # the app role owns what PMM made
        owner = conn.execute("SELECT tableowner FROM pg_tables WHERE tablename = 'events'")
        assert owner.fetchone() == ("pmm_app",)


def test_a_wrong_role_is_reported_as_the_guide_says(cluster: PostgresCluster) -> None:
    url = f"postgresql://nobody@127.0.0.1:{cluster.port}/postgres"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PMM_", "PG"))}
    doctor = subprocess.run(
        [sys.executable, str(ROOT / "pmm_cli.py"), "doctor", "--db", url],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert "vector search: unknown: cannot connect to PostgreSQL" in doctor.stdout
    assert 'role "nobody" does not exist' in doctor.stderr
    page = " ".join(GUIDE.read_text("utf-8").split())
    assert "`vector search: unknown: cannot connect to PostgreSQL ...`" in page
