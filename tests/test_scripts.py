"""scripts/setup.sh installs only when the venv is not current (a stamp of pyproject.toml).

The real script runs in a scratch folder whose ``.venv/bin/python`` records every pip call
instead of running it, so the test sees exactly when an install would happen.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def _scratch(tmp_path: Path) -> Path:
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n')
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    python = bin_dir / "python"
    python.write_text(
        "#!/usr/bin/env bash\n"
        'if [ "$1" = "-m" ] && [ "$2" = "pip" ]; then\n'
        f'  echo "$*" >> "{tmp_path}/pip.log"; exit 0\n'
        "fi\n"
        f'exec "{sys.executable}" "$@"\n'
    )
    python.chmod(python.stat().st_mode | stat.S_IXUSR)
    (bin_dir / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    return tmp_path


def _setup(folder: Path, *args: str) -> tuple[list[str], str]:
    log = folder / "pip.log"
    log.unlink(missing_ok=True)
    run = subprocess.run(
        ["bash", str(folder / "scripts" / "setup.sh"), *args],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHON": sys.executable},
        check=True,
    )
    calls = log.read_text().splitlines() if log.exists() else []
    return calls, run.stderr


def test_installs_once_then_skips_until_pyproject_changes(tmp_path: Path) -> None:
    folder = _scratch(tmp_path)

    calls, err = _setup(folder)
    assert any("install" in c and "-e .[dev]" in c for c in calls), calls
    assert "setup: installing" in err  # the first install says what it does
    assert (folder / ".venv" / ".pmm-installed").exists()

    calls, err = _setup(folder)
    assert calls == [] and err == ""  # a current venv: no pip at all, no output

    with (folder / "pyproject.toml").open("a") as f:
        f.write('version = "2"\n')
    calls, _ = _setup(folder)
    assert any("-e .[dev]" in c for c in calls)

    calls, _ = _setup(folder, "--force")
    assert any("-e .[dev]" in c for c in calls)


def test_a_failed_install_leaves_no_stamp(tmp_path: Path) -> None:
    folder = _scratch(tmp_path)
    python = folder / ".venv" / "bin" / "python"
    python.write_text(python.read_text().replace("exit 0", "exit 1"))
    with pytest.raises(subprocess.CalledProcessError):
        _setup(folder)
    assert not (folder / ".venv" / ".pmm-installed").exists()
