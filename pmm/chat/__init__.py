"""``pmm-chat``: the interactive REPL and its offline responder."""
