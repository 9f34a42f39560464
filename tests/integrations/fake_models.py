"""The fake chat models live in :mod:`pmm.testing.chat_models` (the published conformance
suite uses them); the agent tests import them from here by name."""

from pmm.testing.chat_models import RecordingFakeModel, fake_model, system_text

__all__ = ["RecordingFakeModel", "fake_model", "system_text"]
