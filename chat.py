"""``python chat.py``: the PMM chat REPL from a checkout (see pmm/repl.py)."""

from pmm.repl import main

raise SystemExit(main())
