"""Language servers as supervised actors, shared by every agent of a runtime (issue 36).

Importing this package imports neither ``lsprotocol`` nor any server: a server starts on the
first ``lsp_*`` call or edit of a file of its language. See ``pool.py`` for the pool,
``actor.py`` for the supervision tree under ``/lsp`` and ``nyzhi.jsonrpc`` for the wire.
"""

from nyzhi.core.runtime.lsp.pool import LspPool as LspPool
from nyzhi.core.runtime.lsp.pool import LspUnavailable as LspUnavailable
