"""`jsctl dashboard`: the web dashboard (jsctl.dashboard). Starlette and uvicorn are imported only
when the command runs, so no other verb (and not `jsctl --help`) pays for them."""
from __future__ import annotations

import click

from jsctl.cli.common import workspace_option


@click.command()
@click.option("--port", type=click.IntRange(0, 65535), default=8765, show_default=True,
              help="Port to listen on (0: any free port; the address is printed).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on. Any other than loopback requires the token printed at start.")
@click.option("--open", "open_browser", is_flag=True, help="Open the dashboard in a web browser.")
@click.option("--allow-actions", is_flag=True,
              help="Add stop, pause and resume buttons (read-only without it).")
@workspace_option
def dashboard(port, host, open_browser, allow_actions, workspace_file) -> None:
    """Serve a web dashboard of the workspace's jobs: phases and workflow DAGs, each job's nodes,
    live curves and log, clusters, and cost against the estimate. Updates live; works offline.

    Example: jsctl dashboard --open
    """
    from jsctl import api

    ws = api.open_workspace(workspace_file)
    from jsctl.dashboard.server import serve  # starlette, uvicorn: a missing one names the extra to install

    serve(ws, host, port, allow_actions, open_browser, echo=click.echo)


COMMANDS = (dashboard,)
