"""Where local models run: CUDA when available, else Apple MPS, else CPU.

pick_device("auto")   # 'cuda' on a GPU machine, 'cpu' here
"""

from __future__ import annotations

from pmm.errors import ConfigurationError


def pick_device(preference: str = "auto") -> str:
    """Resolve ``PMM_DEVICE`` (auto, cpu, cuda, mps) to a device torch can use.

    Imports torch, so call it only from a backend that needs torch anyway.
    """
    import torch

    if preference == "auto":
        if torch.cuda.is_available():
            return "cuda"
        mps = getattr(torch.backends, "mps", None)
        if mps is not None and mps.is_available():
            return "mps"
        return "cpu"
    if preference == "cuda" and not torch.cuda.is_available():
        raise ConfigurationError("PMM_DEVICE=cuda but torch sees no CUDA GPU: use auto or cpu")
    if preference == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ConfigurationError("PMM_DEVICE=mps but MPS is not available: use auto or cpu")
    if preference not in {"cpu", "cuda", "mps"}:
        raise ConfigurationError(f"PMM_DEVICE={preference!r}: expected auto, cpu, cuda or mps")
    return preference
