"""Every behaviour a PMM storage backend must have, as pytest tests over one root fixture.

    from pmm.testing.conformance import *  # noqa: F403   (all of it)
    from pmm.testing.conformance.log import *  # noqa: F403   (one part)

Each module is one part (the log's appends, reads, search and verify; the chains; the
window keys; Mind, PMMStore and the agent middleware over the log; users and erasure);
importing one with ``*`` into a test module brings its tests and the fixtures they use,
and pytest collects them there. The host defines ``pmm_backend`` (a
:class:`pmm.testing.Backend`); see :mod:`pmm.testing.fixtures` for what the tests build
on it. The parts need the ``[testing]`` extra (pytest, hypothesis, LangChain and
LangGraph).

The names of the parts' tests and fixtures are distinct, so that importing them all into
one module loses none (tests/storage/test_out_of_tree_backend.py checks it).
"""

from pmm.testing.conformance.chains import *  # noqa: F403
from pmm.testing.conformance.exactly_once import *  # noqa: F403
from pmm.testing.conformance.forget_dry_run import *  # noqa: F403
from pmm.testing.conformance.identifier_erasure import *  # noqa: F403
from pmm.testing.conformance.import_user import *  # noqa: F403
from pmm.testing.conformance.integrations import *  # noqa: F403
from pmm.testing.conformance.log import *  # noqa: F403
from pmm.testing.conformance.mind import *  # noqa: F403
from pmm.testing.conformance.session_index import *  # noqa: F403
from pmm.testing.conformance.store_guards import *  # noqa: F403
from pmm.testing.conformance.store_scope_ttl import *  # noqa: F403
from pmm.testing.conformance.store_users import *  # noqa: F403
from pmm.testing.conformance.symbol_recall import *  # noqa: F403
from pmm.testing.conformance.users import *  # noqa: F403
from pmm.testing.conformance.users_isolation import *  # noqa: F403
from pmm.testing.conformance.windows import *  # noqa: F403

PARTS = (
    "chains",
    "exactly_once",
    "forget_dry_run",
    "identifier_erasure",
    "import_user",
    "integrations",
    "log",
    "mind",
    "session_index",
    "store_guards",
    "store_scope_ttl",
    "store_users",
    "symbol_recall",
    "users",
    "users_isolation",
    "windows",
)
