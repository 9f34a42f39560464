"""What a model call sees: the assembled context of a session within a token budget."""
