"""The client's one door to the embedded server (console.localserver): nothing else outside that
package imports it (tests/test_architecture.py checks), so the AWS client reaches moto, Flask and
waitress only through the names below.

    LocalKinesisServer      the server in a child process kconsole starts, watches and stops (`--local`)
    build_server, serve     the server in this process (`kconsole local serve`)
    require_local_extra     one line, before anything starts, when the `local` extra is missing
"""

from __future__ import annotations

from console.localserver.main import build_server, serve
from console.localserver.supervision import LocalKinesisServer, require_local_extra

__all__ = ["LocalKinesisServer", "build_server", "require_local_extra", "serve"]
