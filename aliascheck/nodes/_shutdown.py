"""``aliascheck.nodes.shutdown``: stop and join every worker of a pipeline, now.

torchdata stops a node's workers only from ``__del__`` or a later ``reset()``, so a
test that wants no thread left behind (``threading.enumerate()``) calls this. The
walk is the harness's, shared with ``aliascheck check``.
"""

from __future__ import annotations

from aliascheck.harness import shutdown

__all__ = ["shutdown"]
