"""``python pmm_cli.py COMMAND``: the ``pmm`` admin command from a checkout (see pmm/cli/)."""

from pmm.cli import main

raise SystemExit(main())
