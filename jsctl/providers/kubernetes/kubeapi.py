"""A thin REST layer over the official `kubernetes` package: one ApiClient per kubeconfig and context,
requests by path, JSON in and out, apiserver errors as ProviderError with the apiserver's own words.

Imported only by the client (never when jsctl's CLI or the provider's pure half loads): it imports
`kubernetes`, which takes a while.
"""
from __future__ import annotations

import json
import os
import urllib.parse
from typing import Any, Iterator, Mapping

import kubernetes  # noqa: F401 - the official client; its import is why this module is lazy
import urllib3
from kubernetes.client import Configuration
from kubernetes.client.rest import RESTClientObject
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.kube_config import load_kube_config

from jsctl.errors import ProviderError

APPLY_PATCH = "application/apply-patch+yaml"
MERGE_PATCH = "application/merge-patch+json"
TIMEOUT_S = 30.0

# (apiVersion, kind) → (resource, namespaced) for what jsctl touches most; others come from discovery
KNOWN: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "Pod"): ("pods", True), ("v1", "Service"): ("services", True), ("v1", "Secret"): ("secrets", True),
    ("v1", "ConfigMap"): ("configmaps", True), ("v1", "Event"): ("events", True),
    ("v1", "Node"): ("nodes", False), ("v1", "Namespace"): ("namespaces", False),
    ("batch/v1", "Job"): ("jobs", True),
}


def kubeconfig_path(configured: str | None, workspace_dir: str) -> str:
    """The kubeconfig to load: the configured path (relative to the workspace), else $KUBECONFIG (a
    list separated like PATH, merged as kubectl does), else ~/.kube/config."""
    if configured:
        path = os.path.expanduser(str(configured))
        return path if os.path.isabs(path) else os.path.join(workspace_dir, path)
    return os.environ.get("KUBECONFIG") or os.path.expanduser("~/.kube/config")


class ApiError(ProviderError):
    """A request the apiserver answered with an error status (`status`: the HTTP code)."""

    def __init__(self, message: str, status: int, reason: str | None, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.status = status
        self.reason = reason


class KubeApi:
    """Requests to one apiserver, as the kubeconfig's context says to reach it."""

    def __init__(self, kubeconfig: str, context: str | None = None) -> None:
        self.kubeconfig = kubeconfig
        self.context = context
        cfg = type.__call__(Configuration)
        try:
            load_kube_config(config_file=kubeconfig, context=context, client_configuration=cfg,
                             persist_config=False)
        except (ConfigException, OSError, ValueError, TypeError) as exc:
            where = kubeconfig + (f" (context {context})" if context else "")
            raise ProviderError(f"cannot load the kubeconfig {where}: {exc}",
                                hint="set kubeconfig (and context) in the cluster's settings, or KUBECONFIG") \
                from None
        self.cfg = cfg
        self.server = cfg.host.rstrip("/")
        # the package's own connection pool (TLS, client certificates, proxy as the kubeconfig says); requests
        # are built here, by path, so that they do not depend on the package's generated-client API
        self.pool = RESTClientObject(cfg).pool_manager
        self._resources: dict[tuple[str, str], tuple[str, bool]] = dict(KNOWN)
        self._discovered: set[str] = set()

    # ---- requests ---------------------------------------------------------------------------------
    def raw(self, method: str, path: str, query: Mapping[str, Any] | None = None, body: Any = None,
            content_type: str | None = None, accept: str = "application/json", timeout: float | None = TIMEOUT_S,
            what: str | None = None):
        """The urllib3 response of a request (not read: a log follows from it), or ApiError."""
        headers = {"Accept": accept, **self._auth()}
        if content_type:
            headers["Content-Type"] = content_type
        params = [(k, str(v).lower() if isinstance(v, bool) else v) for k, v in (query or {}).items() if v is not None]
        url = self.server + path + ("?" + urllib.parse.urlencode(params) if params else "")
        data = body if body is None or isinstance(body, (str, bytes)) else json.dumps(body)  # JSON is YAML too
        try:
            res = self.pool.request(method, url, body=data, headers=headers, preload_content=False,
                                    timeout=urllib3.Timeout(total=timeout) if timeout else None, retries=False)
        except urllib3.exceptions.HTTPError as exc:
            raise ProviderError(f"{what or method + ' ' + path}: cannot reach the apiserver at {self.server}: "
                                f"{_transport(exc)}", hint=f"is the cluster up? (kubeconfig {self.kubeconfig})") \
                from None
        if res.status >= 400:
            text = res.data.decode("utf-8", "replace") if res.data else ""
            reason, message = res.reason, text.strip()[:1000]
            try:
                doc = json.loads(text)
                reason, message = doc.get("reason") or reason, doc.get("message") or message
            except ValueError:
                pass
            raise ApiError(f"{what or method + ' ' + path}: {reason}: {message}", res.status, reason)
        return res

    def _auth(self) -> dict[str, str]:
        """The kubeconfig's credentials as headers (a bearer token; client certificates are in the pool)."""
        out = {}
        for setting in self.cfg.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                out[setting["key"]] = setting["value"]
        return out

    def request(self, method: str, path: str, query: Mapping[str, Any] | None = None, body: Any = None,
                content_type: str | None = None, timeout: float | None = TIMEOUT_S, what: str | None = None) -> Any:
        res = self.raw(method, path, query, body, content_type, timeout=timeout, what=what)
        data = res.data
        try:
            return json.loads(data) if data else None
        except ValueError:
            return data.decode("utf-8", "replace")

    def lines(self, path: str, query: Mapping[str, Any], what: str, timeout: float | None) -> Iterator[str]:
        """A text response line by line, as it arrives (a followed log)."""
        res = self.raw("GET", path, query, accept="*/*", timeout=timeout, what=what)
        pending = b""
        try:
            for chunk in res.stream(4096, decode_content=True):
                pending += chunk
                *done, pending = pending.split(b"\n")
                for line in done:
                    yield line.decode("utf-8", "replace") + "\n"
        except urllib3.exceptions.HTTPError:
            pass  # the apiserver closed the stream (the container ended)
        finally:
            res.release_conn()
        if pending:
            yield pending.decode("utf-8", "replace")

    # ---- resources --------------------------------------------------------------------------------
    def _discover(self, api_version: str) -> None:
        if api_version in self._discovered:
            return
        base = "/api/" + api_version if "/" not in api_version else "/apis/" + api_version
        try:
            doc = self.request("GET", base, what=f"discovering {api_version}")
        except ApiError as exc:
            if exc.status == 404:
                raise ProviderError(f"the apiserver at {self.server} does not serve {api_version}",
                                    hint="is the CRD (or the controller that serves it) installed?") from None
            raise
        self._discovered.add(api_version)
        for r in doc.get("resources") or ():
            if "/" not in r.get("name", ""):
                self._resources.setdefault((api_version, r["kind"]), (r["name"], bool(r.get("namespaced"))))

    def resource(self, api_version: str, kind: str) -> tuple[str, bool]:
        """(plural resource name, namespaced) of a kind, from discovery (once per group version)."""
        if (api_version, kind) not in self._resources:
            self._discover(api_version)
        if (api_version, kind) not in self._resources:
            raise ProviderError(f"the apiserver at {self.server} serves {api_version} but no kind {kind} in it")
        return self._resources[(api_version, kind)]

    def kind(self, api_version: str, lower: str) -> str:
        """The Kind (as written, CamelCase) of a lowercase kind name, as a handle spells it."""
        for attempt in (0, 1):
            for (version, kind) in self._resources:
                if version == api_version and kind.lower() == lower:
                    return kind
            if attempt == 0:
                self._discover(api_version)
        raise ProviderError(f"the apiserver at {self.server} serves no kind {lower} in {api_version}")

    def path(self, api_version: str, kind: str, namespace: str | None, name: str | None = None) -> str:
        plural, namespaced = self.resource(api_version, kind)
        base = "/api/" + api_version if "/" not in api_version else "/apis/" + api_version
        if namespaced and namespace:
            base += "/namespaces/" + urllib.parse.quote(namespace, safe="")
        base += "/" + plural
        return base + ("/" + urllib.parse.quote(name, safe="") if name else "")


def _transport(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return str(reason or exc)
