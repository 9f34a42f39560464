"""``python chat.py``: the PMM chat REPL from a checkout (see pmm/chat/repl.py)."""

from pmm.chat.repl import main

raise SystemExit(main())
