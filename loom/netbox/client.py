"""The connection to NetBox (pynetbox): where, who, which version, and every failure as one
`NetBoxError` with a message that says what to do.

The URL comes from `NETBOX_URL`, the token only from `NETBOX_TOKEN`: it is never taken from a
flag (shell history), never printed, logged or written (error messages quote NetBox's answer,
which never contains it).  Every call goes through `Client.call`, which retries a rate-limited
request (HTTP 429, honouring `Retry-After`) a few times before giving up.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from typing import TypeVar

import pynetbox
import requests

#: Oldest NetBox Loom talks to: `?fields=` on list endpoints (4.0), MAC address objects (4.2).
MIN_VERSION = (4, 2)
TIMEOUT_S = 900  # one bulk request of 1,000 cables takes ~1 min on 2 cores
RETRIES = 5
T = TypeVar("T")


class NetBoxError(Exception):
    """A failure talking to NetBox, already worded for the operator."""


class _Session(requests.Session):
    """requests has no default timeout: a NetBox that accepts and never answers would hang us."""

    def request(self, *args, **kwargs):
        kwargs.setdefault("timeout", TIMEOUT_S)
        return super().request(*args, **kwargs)


def _parses(url: str) -> bool:
    """Does the URL have a host (and port) an HTTP client can use (`http://[::1` has none)?"""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        return bool(parts.hostname) and (parts.port is None or parts.port > 0)
    except ValueError:
        return False


class Client:
    """pynetbox's API object, checked: reachable, token accepted, version new enough."""

    def __init__(self, url: str, token: str, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.url = url.rstrip("/")
        self.sleep = sleep
        self.api = pynetbox.api(self.url, token=token, threading=True)
        self.api.http_session = _Session()
        self.version = ""

    @classmethod
    def from_env(cls) -> Client:
        url, token = os.environ.get("NETBOX_URL", "").strip(), os.environ.get("NETBOX_TOKEN", "").strip()
        if not url:
            raise NetBoxError("NETBOX_URL is not set; fix: export NETBOX_URL=https://netbox.example.com")
        if not re.match(r"^https?://[^\s/]+", url) or not _parses(url):
            raise NetBoxError(f"NETBOX_URL {url[:200]!r} is not an http(s) URL; fix: export NETBOX_URL=https://netbox.example.com")
        if not token:
            raise NetBoxError("NETBOX_TOKEN is not set; fix: create an API token with write permission in NetBox "
                              "(Admin → API tokens) and export NETBOX_TOKEN=<token>")
        return cls(url, token).check()

    def check(self) -> Client:
        """Reachable, token accepted (a read that needs it), version at least MIN_VERSION."""
        status = self.call(self.api.status, what="read the status")
        self.version = str(status.get("netbox-version", "")).split("-")[0]
        nums = tuple(int(x) for x in re.findall(r"\d+", self.version)[:2])
        if len(nums) < 2 or nums < MIN_VERSION:
            raise NetBoxError(f"NetBox at {self.url} is version {self.version or '?'}; Loom needs "
                              f"{'.'.join(map(str, MIN_VERSION))} or newer; fix: upgrade NetBox")
        self.call(lambda: list(self.api.extras.tags.filter(limit=1, fields="id")), what="read tags")
        return self

    def call(self, fn: Callable[[], T], *, what: str) -> T:
        """Run one API call; NetBox's failures become NetBoxError, rate limits are waited out."""
        for attempt in range(RETRIES + 1):
            try:
                return fn()
            except pynetbox.RequestError as exc:
                code = exc.req.status_code
                if code == 429 and attempt < RETRIES:
                    self.sleep(_retry_after(exc.req, attempt))
                    continue
                raise NetBoxError(self._explain(code, exc, what)) from None
            except requests.exceptions.Timeout:
                raise NetBoxError(f"NetBox at {self.url} did not answer within {TIMEOUT_S} s ({what}); "
                                  "fix: check the server's load and retry") from None
            except requests.exceptions.ConnectionError as exc:
                reason = str(exc.args[0] if exc.args else exc)
                reason = re.sub(r"^.*?(Connection refused|Name or service not known|No route to host|"
                                r"timed out|certificate verify failed).*$", r"\1", reason, flags=re.S)
                raise NetBoxError(f"NetBox at {self.url} is unreachable ({reason[:200]}); fix: check NETBOX_URL "
                                  "and that NetBox is running") from None
            except (pynetbox.ContentError, requests.exceptions.JSONDecodeError):
                raise NetBoxError(f"{self.url} did not answer like a NetBox API ({what}); "
                                  "fix: check NETBOX_URL (the NetBox base URL, without /api)") from None
        raise AssertionError("unreachable")

    def _explain(self, code: int, exc: pynetbox.RequestError, what: str) -> str:
        if code in (401, 403):
            return (f"NetBox at {self.url} refused the token in NETBOX_TOKEN (HTTP {code}) while trying to {what}; "
                    "fix: use a valid token with write permission")
        if code == 429:
            return (f"NetBox at {self.url} kept rate-limiting us (HTTP 429, {RETRIES} retries) while trying to "
                    f"{what}; fix: retry later or raise the limit for this token")
        if code == 404:
            return f"{self.url} has no such API endpoint ({what}); fix: check NETBOX_URL (the NetBox base URL)"
        return f"NetBox at {self.url} refused to {what} (HTTP {code}): {_body(exc)}"


def _retry_after(req, attempt: int) -> float:
    try:
        return min(60.0, max(0.0, float(req.headers.get("Retry-After", ""))))
    except ValueError:
        return min(60.0, 2.0 ** attempt)


def _body(exc: pynetbox.RequestError) -> str:
    try:
        err = exc.req.json()
    except ValueError:
        return exc.req.text[:500]
    if isinstance(err, list):  # bulk: one entry per object, most of them empty
        err = [e for e in err if e][:5]
    return str(err)[:1000]
