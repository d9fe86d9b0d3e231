"""The dashboard's ASGI application (Starlette): the page, its script and style, and JSON under /api.

    GET  /                          the single-page app (hash routes: #/jobs, #/job/ADDRESS, #/clusters, #/cost)
    GET  /static/app.js|app.css     its script and style (shipped in the package: no CDN)
    GET  /api/session               the CSRF token and whether actions are allowed
    GET  /api/jobs                  every job in state, and each workflow's DAG
    GET  /api/jobs/{job}            one job: placement, nodes and ranks, events, artifact
    GET  /api/jobs/{job}/metrics    its curves per rank, checkpoints, runtime events
    GET  /api/jobs/{job}/logs       its log from line ?after=N (?node=, ?metrics=1)
    GET  /api/clusters              capacity, GPUs free and queued, jsctl's jobs and their cost
    GET  /api/cost                  actual against estimate per run and per cluster
    POST /api/jobs/{job}/stop|pause|resume   only with --allow-actions (else they do not exist: 404)
"""
from __future__ import annotations

import html
import logging
import pathlib
from typing import Any, Callable

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from jsctl import __version__
from jsctl.dashboard.data import ACTIONS, Dashboard, NotFound
from jsctl.dashboard.security import COOKIE, Guard
from jsctl.errors import JsctlError, UsageError

STATIC = pathlib.Path(__file__).with_name("static")
ASSETS = {"app.js": "text/javascript; charset=utf-8", "app.css": "text/css; charset=utf-8"}
NO_STORE = {"Cache-Control": "no-store"}
SECURITY_HEADERS = [
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"content-security-policy", b"default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
                                 b"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; "
                                 b"base-uri 'none'; form-action 'none'"),
]
log = logging.getLogger("jsctl.dashboard")


def _error(status: int, message: str, hint: str | None = None) -> JSONResponse:
    return JSONResponse({"error": message, "hint": hint}, status_code=status, headers=NO_STORE)


class GuardMiddleware:
    """Every HTTP request passes here first: the Host check (loopback), the token (other hosts) and
    the security headers on every answer."""

    def __init__(self, app: Any, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers") or []) + SECURITY_HEADERS
            await send(message)

        response = self.check(Request(scope))
        if response is not None:
            await response(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)

    def check(self, request: Request) -> Response | None:
        guard = self.guard
        if not guard.host_allowed(request.headers.get("host", "")):
            return _error(403, "unknown Host: the dashboard answers on the loopback address it was started on")
        if guard.token is None:
            return None
        presented = request.query_params.get("token")
        if presented is not None and guard.token_matches(presented):
            if request.method in ("GET", "HEAD") and not request.url.path.startswith("/api/"):
                url = request.url.remove_query_params("token")
                response = RedirectResponse(url.path + (f"?{url.query}" if url.query else ""), status_code=303)
                response.set_cookie(COOKIE, guard.token, httponly=True, samesite="strict", path="/")
                return response
            return None
        if guard.authorized(request.headers, request.cookies):
            return None
        return JSONResponse({"error": "this dashboard needs its token (printed when it started)",
                             "hint": "open the URL with ?token=TOKEN once, or send Authorization: Bearer TOKEN"},
                            status_code=401, headers={"WWW-Authenticate": "Bearer", **NO_STORE})


def _json(compute: Callable[[Request], Any]) -> Callable:
    """An endpoint answering `compute(request)` as JSON, computed in a worker thread (the SDK blocks);
    jsctl's errors become JSON errors (no job: 404; a bad request: 400; refused by state or engine: 409)."""

    async def endpoint(request: Request) -> Response:
        try:
            data = await run_in_threadpool(compute, request)
        except NotFound as exc:
            return _error(404, exc.message, exc.hint)
        except UsageError as exc:
            return _error(400, exc.message, exc.hint)
        except JsctlError as exc:
            return _error(409, exc.message, exc.hint)
        except Exception as exc:  # noqa: BLE001 - a bug in jsctl: say so, keep serving
            log.exception("dashboard request %s failed", request.url.path)
            return _error(500, f"internal error: {type(exc).__name__}: {exc}")
        return JSONResponse(data, headers=NO_STORE)

    return endpoint


def _int(request: Request, name: str, default: int = 0) -> int:
    text = request.query_params.get(name)
    if text is None or text == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise UsageError(f"?{name}= expects a whole number, got {text!r}") from None


def create_app(dashboard: Dashboard, guard: Guard, allow_actions: bool = False) -> Starlette:
    page = (STATIC / "index.html").read_text(encoding="utf-8")
    page = (page.replace("{{csrf}}", html.escape(guard.csrf))
                .replace("{{actions}}", "1" if allow_actions else "0")
                .replace("{{version}}", html.escape(__version__)))
    assets = {name: (STATIC / name).read_bytes() for name in ASSETS}

    async def index(request: Request) -> Response:
        return Response(page, media_type="text/html; charset=utf-8", headers=NO_STORE)

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in assets:
            return _error(404, f"no file {name!r}")
        return Response(assets[name], media_type=ASSETS[name], headers={"Cache-Control": "no-cache"})

    async def favicon(request: Request) -> Response:
        return Response(status_code=204)

    def session(request: Request) -> dict:
        return {"csrf": guard.csrf, "actions": list(ACTIONS) if allow_actions else [], "version": __version__,
                "workspace": dashboard.ws.dir}

    def logs(request: Request) -> dict:
        metrics = request.query_params.get("metrics", "0") not in ("", "0", "false", "no")
        return dashboard.logs(request.path_params["job"], _int(request, "after"),
                              request.query_params.get("node") or None, metrics)

    routes = [
        Route("/", index),
        Route("/favicon.ico", favicon),
        Route("/static/{name}", static),
        Route("/api/session", _json(session)),
        Route("/api/jobs", _json(lambda r: dashboard.jobs())),
        Route("/api/jobs/{job}", _json(lambda r: dashboard.job(r.path_params["job"]))),
        Route("/api/jobs/{job}/metrics", _json(lambda r: dashboard.metrics(r.path_params["job"]))),
        Route("/api/jobs/{job}/logs", _json(logs)),
        Route("/api/clusters", _json(lambda r: dashboard.clusters())),
        Route("/api/cost", _json(lambda r: dashboard.cost())),
    ]
    if allow_actions:
        routes += [Route(f"/api/jobs/{{job}}/{verb}", _action(dashboard, guard, verb), methods=["POST"])
                   for verb in ACTIONS]
    return Starlette(routes=routes, middleware=[Middleware(GuardMiddleware, guard=guard)])


def _action(dashboard: Dashboard, guard: Guard, verb: str) -> Callable:
    act = _json(lambda r: dashboard.act(verb, r.path_params["job"]))

    async def endpoint(request: Request) -> Response:
        why = guard.cross_site(request.headers, request.url.scheme)
        if why is not None:
            return _error(403, why)
        return await act(request)

    return endpoint
