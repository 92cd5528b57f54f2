"""The connection to NetBox (pynetbox): where, who, which version, and every failure as one
`NetBoxError` with a message that says what to do.

The URL comes from `NETBOX_URL`, the token only from `NETBOX_TOKEN`: it is never taken from a
flag (shell history), never printed, logged or written (error messages quote NetBox's answer,
which never contains it).  Every call goes through `Client.call`, which retries a rate-limited
request (HTTP 429, honouring `Retry-After`) a few times before giving up; every request has a
connect, a silence and a total deadline, and reads are retried with backoff (`_Session`).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import pynetbox
import requests

#: Oldest NetBox Loom talks to: `?fields=` on list endpoints (4.0), MAC address objects (4.2).
MIN_VERSION = (4, 2)
RETRIES = 5  # answers of HTTP 429 (rate limited) waited out per call
#: Deadlines of one request.  Connect: the TCP (and TLS) handshake.  Silence: the longest wait for
#: the next bytes.  Total: the whole request, body included, whatever the server trickles (a
#: socket's own timeouts restart on every byte, so a server sending one a second never trips
#: them); writes are cut to about 15 s of NetBox's work each (`loom.netbox.apply`), so 60 s
#: leaves room for a busy server.  `LOOM_NETBOX_TIMEOUT=<seconds>` sets the total.
CONNECT_S = 10.0
SILENCE_S = 30.0
TOTAL_ENV = "LOOM_NETBOX_TIMEOUT"
DEFAULT_TOTAL_S = 60.0
#: Reads (GET, HEAD) that fail to connect or time out are tried again after 1 s, then 2 s, within
#: the total; a write is never repeated (NetBox may have done it).
READ_RETRIES = 2
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS"})
#: The largest answer read: NetBox's pages of 1,000 objects are a few MB.
MAX_ANSWER_BYTES = 256 * 1024 * 1024
#: The most objects of one kind a list may count: the 32,768-GPU fabric has ~140,000 interfaces.
MAX_OBJECTS = 10_000_000
T = TypeVar("T")


class NetBoxError(Exception):
    """A failure talking to NetBox, already worded for the operator."""


class TotalTimeout(requests.exceptions.Timeout):
    """A request that did not complete within the total deadline."""


class AnswerTooLarge(requests.exceptions.RequestException):
    """An answer larger than MAX_ANSWER_BYTES (not a NetBox)."""


class NotNetBox(requests.exceptions.RequestException):
    """An answer no NetBox gives (a list page whose `count` is not a count)."""


#: What an answer that is not NetBox's raises inside pynetbox (a `count` that is not a number makes
#: its pagination divide by zero or None): the server's fault, told as such.
_MALFORMED = (pynetbox.ContentError, requests.exceptions.JSONDecodeError, RecursionError, TypeError, ValueError,
              KeyError, AttributeError, IndexError, ArithmeticError, NotNetBox)


def total_seconds() -> float:
    """The total deadline per request: `LOOM_NETBOX_TIMEOUT`, else DEFAULT_TOTAL_S."""
    raw = os.environ.get(TOTAL_ENV, "").strip()
    try:
        value = float(raw)
    except ValueError:
        return DEFAULT_TOTAL_S
    return value if 0 < value <= 86_400 else DEFAULT_TOTAL_S


class _Session(requests.Session):
    """requests has no total deadline (its timeouts are per socket operation) and no retries:
    each request runs in a helper thread that the caller waits for until the deadline, its body
    read there in bounded chunks; reads are retried with backoff while time remains."""

    def __init__(self, total: float, sleep: Callable[[float], None]) -> None:
        super().__init__()
        self.total, self.sleep = total, sleep

    def request(self, method, url, **kwargs):
        kwargs.setdefault("timeout", (CONNECT_S, SILENCE_S))
        kwargs["stream"] = True
        deadline = time.monotonic() + self.total
        for attempt in range(READ_RETRIES + 1):
            try:
                return self._within(deadline, method, url, kwargs)
            except (requests.exceptions.ConnectionError, requests.exceptions.Timeout):
                pause = 2.0 ** attempt
                if (str(method).upper() not in IDEMPOTENT or attempt == READ_RETRIES
                        or time.monotonic() + pause >= deadline):
                    raise
                self.sleep(pause)
        raise AssertionError("unreachable")

    def _within(self, deadline: float, method, url, kwargs):
        done: dict = {}
        finished = threading.Event()

        def run() -> None:
            try:
                resp = super(_Session, self).request(method, url, **kwargs)
                body, size = [], 0
                for chunk in resp.iter_content(1 << 16):
                    size += len(chunk)
                    if size > MAX_ANSWER_BYTES:
                        resp.close()
                        raise AnswerTooLarge(f"more than {MAX_ANSWER_BYTES} bytes")
                    body.append(chunk)
                resp._content, resp._content_consumed = b"".join(body), True
                _check_count(resp)
                done["resp"] = resp
            except BaseException as exc:  # handed to the caller's thread
                done["exc"] = exc
            finally:
                finished.set()

        threading.Thread(target=run, daemon=True, name="netbox-request").start()
        if not finished.wait(max(0.0, deadline - time.monotonic())):
            raise TotalTimeout(f"no complete answer within {self.total:g} s")  # the thread is left to its socket timeouts
        if "exc" in done:
            raise done["exc"]
        return done["resp"]


_LEADING_COUNT = re.compile(rb'\s*\{\s*"count"\s*:\s*(\d{1,12})\s*[,}]')


def _check_count(resp) -> None:
    """A list page's `count` must be a count: pynetbox sizes its parallel page reads by it, so a
    server claiming 10^9 objects would have it plan a million requests."""
    if "json" not in resp.headers.get("Content-Type", "") or b'"count"' not in resp.content[:200]:
        return
    m = _LEADING_COUNT.match(resp.content)
    if m and int(m[1]) <= MAX_OBJECTS and resp.content.count(b'"count"') == 1:
        return  # NetBox writes `count` first (once): a page of thousands of objects is not parsed twice
    try:
        count = json.loads(resp.content).get("count")
    except (ValueError, RecursionError, AttributeError):
        return  # not JSON, or not a page: the caller says so
    if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= MAX_OBJECTS:
        raise NotNetBox(f"a list page counting {str(count)[:20]!r} objects")


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
        self.api.http_session = _Session(total_seconds(), sleep)
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
            except TotalTimeout:
                raise NetBoxError(f"NetBox at {self.url} did not finish answering within {total_seconds():g} s while "
                                  f"trying to {what}; fix: check the server's load, or allow more time with "
                                  f"{TOTAL_ENV}=<seconds>") from None
            except requests.exceptions.Timeout:
                raise NetBoxError(f"NetBox at {self.url} did not answer while trying to {what} (no connection within "
                                  f"{CONNECT_S:g} s, or {SILENCE_S:g} s without a byte); fix: check NETBOX_URL and the "
                                  "server's load") from None
            except requests.exceptions.ConnectionError as exc:
                raise NetBoxError(f"NetBox at {self.url} is unreachable ({_reason(exc)}) while trying to {what}; "
                                  "fix: check NETBOX_URL and that NetBox is running") from None
            except AnswerTooLarge:
                raise NetBoxError(f"{self.url} answered more than {MAX_ANSWER_BYTES} bytes while trying to {what}, more "
                                  "than any NetBox page; fix: check NETBOX_URL (the NetBox base URL, without /api)") from None
            except _MALFORMED:
                raise NetBoxError(f"{self.url} did not answer like a NetBox API ({what}); "
                                  "fix: check NETBOX_URL (the NetBox base URL, without /api)") from None
            except requests.exceptions.RequestException as exc:  # a broken answer: bad chunking, a reset mid-body
                raise NetBoxError(f"the answer of NetBox at {self.url} broke off while trying to {what} "
                                  f"({type(exc).__name__}); fix: retry, and check the server and any proxy") from None
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


def _reason(exc: requests.exceptions.ConnectionError) -> str:
    """Why a connection failed, in a few words (never the server's bytes: they may be anything)."""
    text = str(exc.args[0] if exc.args else exc)
    for needle, words in (("BadStatusLine", "it answered something that is not HTTP"),
                          ("RemoteDisconnected", "it closed the connection without answering"),
                          ("Connection reset", "connection reset"), ("Connection refused", "Connection refused"),
                          ("Name or service not known", "Name or service not known"),
                          ("No route to host", "No route to host"), ("timed out", "timed out"),
                          ("certificate verify failed", "certificate verify failed")):
        if needle in text:
            return words
    return type(exc).__name__


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
