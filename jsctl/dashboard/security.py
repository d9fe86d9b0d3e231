"""Who may ask the dashboard, decided from a request's headers (no web framework here).

- Bound to the loopback interface (the default), the page needs no token, but the Host header must
  name the loopback address and the port: a web page that rebinds its own DNS name to 127.0.0.1
  cannot read the API (DNS rebinding).
- Bound to any other address, every request needs the token printed at start: `?token=` once (the
  page then keeps it in an HttpOnly, SameSite=Strict cookie), or `Authorization: Bearer TOKEN`.
- An action (POST) must come from the dashboard's own page: a foreign Origin, or Sec-Fetch-Site
  other than same-origin, is refused, and the X-Jsctl-Csrf header must carry the token the page
  reads from its own meta tag (another site can neither read it nor send the header without CORS).
"""
from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Mapping

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")
COOKIE = "jsctl_dashboard_token"
CSRF_HEADER = "x-jsctl-csrf"


def is_loopback(host: str) -> bool:
    return host in LOOPBACK_NAMES or host.startswith("127.")


def _same(presented: str | None, expected: str | None) -> bool:
    if not presented or not expected:
        return False
    return secrets.compare_digest(presented.encode("utf-8", "replace"), expected.encode("utf-8"))


def url_host(host: str) -> str:
    """A host as it is written in a URL (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host and not host.startswith("[") else host


@dataclass(frozen=True)
class Guard:
    host: str
    port: int
    token: str | None  # None: loopback, no token needed
    csrf: str = field(default_factory=lambda: secrets.token_urlsafe(32))

    @classmethod
    def for_bind(cls, host: str, port: int) -> Guard:
        return cls(host, port, None if is_loopback(host) else secrets.token_urlsafe(24))

    # ---- who ------------------------------------------------------------------------------------------
    def host_allowed(self, host_header: str) -> bool:
        """With a token, any Host (the token is the proof); on loopback only the loopback names with
        this port."""
        if self.token is not None:
            return True
        names = {url_host(n) for n in (*LOOPBACK_NAMES, self.host)}
        return host_header.lower() in {f"{n}:{self.port}" for n in names} | (names if self.port == 80 else set())

    def bearer(self, headers: Mapping[str, str]) -> str | None:
        value = headers.get("authorization") or ""
        scheme, _, token = value.partition(" ")
        return token.strip() if scheme.lower() == "bearer" else None

    def authorized(self, headers: Mapping[str, str], cookies: Mapping[str, str]) -> bool:
        """Whether the request carries the token (header or cookie); always on loopback."""
        if self.token is None:
            return True
        return _same(self.bearer(headers), self.token) or _same(cookies.get(COOKIE), self.token)

    def token_matches(self, presented: str | None) -> bool:
        return self.token is not None and _same(presented, self.token)

    # ---- from where ----------------------------------------------------------------------------------
    def cross_site(self, headers: Mapping[str, str], scheme: str) -> str | None:
        """Why an action request is refused (it does not come from this dashboard's page), or None."""
        origin = headers.get("origin")
        host = headers.get("host") or ""
        if origin is not None and origin.lower() != f"{scheme}://{host}".lower():
            return f"the request comes from another site (Origin {origin})"
        site = headers.get("sec-fetch-site")
        if site is not None and site not in ("same-origin", "none"):
            return f"the request comes from another site (Sec-Fetch-Site {site})"
        if not _same(headers.get(CSRF_HEADER), self.csrf):
            return "the X-Jsctl-Csrf header is missing or wrong (reload the dashboard's page)"
        return None
