"""Azure REST calls through azure.core's pipeline (imported at the first call, never while planning).

MLClient can be pointed at another endpoint (`MLClient(credential, sub, rg, ws, cloud="name",
cloud_metadata={"resource_manager": URL, ...})`; tests/integration/azure/test_aml_sdk.py does it
against the fake service, and its `jobs.create_or_update` sends the same two PUTs with the same job
fields). jsctl sends the documented calls itself instead, for three reasons:
- the plan's typed request is exactly what goes out: MLClient builds the body from the YAML itself
  (its defaults, its own environment hash, preview api-versions that move with the SDK's version),
  so a saved plan's digest would not pin the request;
- azure.ai.ml costs 1.7 s to import on every `jsctl status`/`logs`; azure.core about 0.1 s;
- MLClient's log streaming first discovers the workspace's run-history endpoint (more services).
So: `PUT` the anonymous environment and the job, `GET` a job, the jobs list filtered by tag (paged by
`nextLink`), `POST .../cancel`, by ARM, with azure.core's retries and request ids, and Azure AD tokens
from azure-identity's DefaultAzureCredential (a fixed token for a loopback endpoint).
"""
from __future__ import annotations

import json
from typing import Any, Mapping
from urllib.parse import urlparse

from jsctl.errors import ProviderError

ARM_SCOPE = "https://management.azure.com/.default"
VAULT_SCOPE = "https://vault.azure.net/.default"
LOOPBACK = ("127.0.0.1", "localhost", "::1")
STATIC_TOKEN = "jsctl-local-endpoint"  # what a loopback endpoint (the tests' fake service) gets


class ApiError(ProviderError):
    def __init__(self, status: int, code: str, message: str, url: str) -> None:
        super().__init__(f"Azure ML: {code}: {message} (HTTP {status} from {url.split('?')[0]})")
        self.status, self.code = status, code


def _static_bearer():
    """A fixed bearer token for a loopback endpoint: azure.core refuses bearer tokens over plain http."""
    from azure.core.pipeline import policies

    class StaticBearer(policies.SansIOHTTPPolicy):
        def on_request(self, request) -> None:  # noqa: ANN001 - azure.core's PipelineRequest
            request.http_request.headers["Authorization"] = f"Bearer {STATIC_TOKEN}"

    return StaticBearer()


def is_loopback(url: str) -> bool:
    return (urlparse(url).hostname or "") in LOOPBACK


class Rest:
    """One authenticated pipeline per token audience (ARM and run history; Key Vault)."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")
        self._credential: Any = None
        self._clients: dict[str, Any] = {}

    def _client(self, url: str, scope: str | None) -> Any:
        key = f"{scope}|{is_loopback(url)}"
        if key not in self._clients:
            from azure.core import PipelineClient
            from azure.core.pipeline import policies

            auth: Any = None
            if scope is not None:
                if is_loopback(url):
                    auth = _static_bearer()
                else:
                    if self._credential is None:
                        from azure.identity import DefaultAzureCredential

                        self._credential = DefaultAzureCredential()
                    auth = policies.BearerTokenCredentialPolicy(self._credential, scope)
            chain = [policies.RequestIdPolicy(), policies.HeadersPolicy({"Accept": "application/json"}),
                     policies.UserAgentPolicy("jsctl"),
                     policies.RetryPolicy(retry_total=3, retry_backoff_factor=0.2), *([auth] if auth else []),
                     policies.NetworkTraceLoggingPolicy()]
            self._clients[key] = PipelineClient(base_url=self.base_url, policies=chain)
        return self._clients[key]

    def call(self, method: str, path_or_url: str, body: Mapping[str, Any] | None = None,
             params: Mapping[str, str] | None = None, scope: str | None = ARM_SCOPE,
             ok_missing: bool = False) -> Any:
        """JSON of the answer (None for an empty one, or a 404 when `ok_missing`); ApiError otherwise."""
        from azure.core.exceptions import AzureError
        from azure.core.rest import HttpRequest

        url = path_or_url if "://" in path_or_url else self.base_url + path_or_url
        req = HttpRequest(method, url, params=dict(params or {}),
                          json=dict(body) if body is not None else None)
        try:
            resp = self._client(url, scope).send_request(req)
        except AzureError as exc:
            raise ProviderError(f"Azure ML: cannot reach {url.split('?')[0]}: {exc}") from None
        if resp.status_code == 404 and ok_missing:
            return None
        text = resp.text()
        if resp.status_code >= 400:
            code, message = "HTTP", text[:300]
            try:
                err = json.loads(text).get("error") or {}
                code, message = err.get("code") or code, err.get("message") or message
            except (ValueError, AttributeError):
                pass
            raise ApiError(resp.status_code, code, message, url)
        if not text.strip():
            return None
        try:
            return json.loads(text)
        except ValueError:
            return text

    def text(self, url: str) -> str:
        """A plain GET (a log file's SAS URL: no token)."""
        from azure.core.exceptions import AzureError
        from azure.core.rest import HttpRequest

        try:
            resp = self._client(url, None).send_request(HttpRequest("GET", url))
        except AzureError as exc:
            raise ProviderError(f"Azure ML: cannot read {url.split('?')[0]}: {exc}") from None
        if resp.status_code >= 400:
            raise ApiError(resp.status_code, "HTTP", resp.text()[:300], url)
        return resp.text()
