"""Quiet model loading: transformers' "Loading weights 100%" bar only when progress is wanted.

    from pmm.models.loading import quiet_model_loading

    with quiet_model_loading():
        model = SentenceTransformer(path)      # no progress bar on stderr

Progress is wanted when the ``pmm`` logger is at INFO or below (``pmm -v``), or when
``show`` is passed as True. The previous state of transformers' switch is restored on exit.
"""

from __future__ import annotations

import importlib.util
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def progress_wanted() -> bool:
    """Whether model loads should draw their progress bars (``pmm -v`` or INFO logging)."""
    return logging.getLogger("pmm").isEnabledFor(logging.INFO)


@contextmanager
def quiet_model_loading(show: bool | None = None) -> Iterator[None]:
    """Hide transformers' progress bars inside the block unless ``show`` (default:
    :func:`progress_wanted`). Does nothing when transformers is not installed."""
    if show is None:
        show = progress_wanted()
    if show or importlib.util.find_spec("transformers") is None:
        yield
        return
    from transformers.utils import logging as hf_module

    hf_logging: Any = hf_module  # its switches are untyped
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()
