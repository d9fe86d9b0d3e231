"""Serve the dashboard: bind the socket first (a clear error for a busy port, and the real port when
asked for 0), print the address (and the token off loopback), then run uvicorn on that socket."""
from __future__ import annotations

import socket
import sys
from typing import TYPE_CHECKING, Callable

from jsctl.errors import UsageError

if TYPE_CHECKING:
    from jsctl.config.workspace import Workspace


def bind(host: str, port: int) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise UsageError(f"cannot listen on {host!r}: {exc.strerror}") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        hint = "choose another with --port (0: any free port)" if port else None
        raise UsageError(f"cannot listen on {host} port {port}: {exc.strerror}", hint=hint) from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def serve(ws: Workspace, host: str, port: int, allow_actions: bool = False, open_browser: bool = False,
          echo: Callable[[str], None] = print) -> None:
    import uvicorn

    from jsctl.dashboard.app import create_app
    from jsctl.dashboard.data import Dashboard
    from jsctl.dashboard.security import Guard, url_host

    sock = bind(host, port)
    port = sock.getsockname()[1]
    guard = Guard.for_bind(host, port)
    app = create_app(Dashboard(ws), guard, allow_actions)
    url = f"http://{url_host(host)}:{port}/"
    echo(f"jsctl dashboard: {url + (f'?token={guard.token}' if guard.token else '')}")
    echo(f"  workspace: {ws.dir}")
    echo("  actions: stop, pause and resume buttons" if allow_actions else
         "  read-only (start with --allow-actions for stop, pause and resume buttons)")
    if guard.token:
        echo(f"  token: {guard.token}  (open the URL above once, or send Authorization: Bearer TOKEN)")
    echo("  Ctrl-C stops it.")
    sys.stdout.flush()  # a pipe or file reading the address gets it now
    if open_browser:
        import threading
        import webbrowser

        threading.Thread(target=webbrowser.open, args=(url + (f"?token={guard.token}" if guard.token else ""),),
                         daemon=True).start()
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off",
                            timeout_graceful_shutdown=3)
    uvicorn.Server(config).run(sockets=[sock])
