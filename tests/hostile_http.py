"""A hostile HTTP server on 127.0.0.1 for the NetBox client's tests and the fuzzer: each
connection gets one behaviour, chosen by name, that a real NetBox never shows.

    with HostileServer("trickle") as srv:   # srv.url, srv.requests (request lines seen)
        ...

Behaviours: `silent` accepts and never answers; `trickle` answers a byte every 0.2 s forever;
`huge` promises and streams an endless body; `garbage` sends bytes that are not HTTP;
`close` closes at once; `bad-chunks` breaks its chunked encoding; `not-json` sends HTML;
`deep-json` a JSON document nested 100,000 deep; `flaky` closes the first connection and
answers NetBox's status afterwards (a read retried must succeed; a write must not be repeated);
`mutated` answers NetBox's status, then list pages of hostile objects (wrong types, markup,
huge numbers, a `count` that lies, a `next` link back to itself: only ever to this server).
"""

from __future__ import annotations

import json
import socket
import threading
import time

BEHAVIOURS = ("silent", "trickle", "huge", "garbage", "close", "bad-chunks", "not-json", "deep-json", "flaky", "mutated")
STATUS = json.dumps({"netbox-version": "4.7.3", "django-version": "6.1"}).encode()


class HostileServer:
    def __init__(self, behaviour: str, seed: int = 0) -> None:
        assert behaviour in BEHAVIOURS, behaviour
        self.behaviour, self.seed = behaviour, seed
        self.requests: list[str] = []
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._stop = threading.Event()
        self._conns: list[socket.socket] = []
        self.url = f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def __enter__(self) -> HostileServer:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._sock.close()
        for c in self._conns:
            try:
                c.close()
            except OSError:
                pass

    def _accept(self) -> None:
        n = 0
        self._sock.settimeout(0.1)  # closing a listening socket does not wake accept(): look at _stop instead
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn, n), daemon=True).start()
            n += 1

    def _request_line(self, conn: socket.socket) -> bytes:
        data = b""
        conn.settimeout(5)
        try:
            while b"\r\n\r\n" not in data and len(data) < 65536:
                chunk = conn.recv(4096)
                if not chunk:
                    break
                data += chunk
        except OSError:
            pass
        line = data.split(b"\r\n", 1)[0]
        self.requests.append(line.decode("latin-1"))
        return line

    def _send(self, conn: socket.socket, data: bytes) -> bool:
        try:
            conn.sendall(data)
            return True
        except OSError:
            return False

    def _serve(self, conn: socket.socket, n: int) -> None:
        b = self.behaviour
        if b == "close":
            conn.close()
            return
        line = self._request_line(conn).decode("latin-1")
        if b == "silent":
            self._stop.wait()
        elif b == "trickle":
            for byte in b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n" + b" " * 100000:
                if self._stop.is_set() or not self._send(conn, bytes([byte])):
                    return
                time.sleep(0.2)
        elif b == "huge":
            if self._send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000000000\r\n\r\n["):
                block = b"0," * 32768
                while not self._stop.is_set() and self._send(conn, block):
                    pass
        elif b == "garbage":
            import random
            self._send(conn, random.Random(self.seed).randbytes(4096))
        elif b == "bad-chunks":
            self._send(conn, b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n")
        elif b == "not-json":
            self._reply(conn, b"<html>login</html>", "text/html")
        elif b == "deep-json":
            self._reply(conn, b"[" * 100_000 + b"]" * 100_000)
        elif b == "mutated":
            self._reply(conn, STATUS if "/api/status" in line else self._page(n))
        elif b == "flaky":
            if n == 0:
                conn.close()
                return
            self._reply(conn, STATUS)
        try:
            conn.close()
        except OSError:
            pass

    def _page(self, n: int) -> bytes:
        """A NetBox list page whose objects are hostile (seeded by the server's seed and the
        connection number)."""
        import random

        if n == 1:  # the client's first read after the status (its tag check) passes, so later reads are reached
            return json.dumps({"count": 0, "next": None, "previous": None, "results": []}).encode()
        rng = random.Random(f"{self.seed}-{n}")
        values = [None, 0, -1, 2**64, 10**30, 1.5, "", "[/x]", "x" * 10_000, [], {}, {"id": "x"}, {"id": 2**70},
                  "\x00", "../../etc", True, [[[]]], {"name": None}, {"slug": "loom"}]
        keys = ["id", "name", "slug", "display", "tags", "device", "rack", "position", "serial", "asset_tag",
                "mac_address", "a_terminations", "b_terminations", "status", "role", "site", "type", "custom_fields"]
        results = [{k: rng.choice(values) for k in rng.sample(keys, rng.randrange(len(keys)))}
                   for _ in range(rng.randrange(0, 30))]
        nxt = rng.choice([None, None, f"{self.url}/api/dcim/devices/?offset=0", "x", 7])
        count = rng.choice([len(results), 0, -1, 10**9, "many", None])
        return json.dumps({"count": count, "next": nxt, "previous": None, "results": results}).encode()

    def _reply(self, conn: socket.socket, body: bytes, kind: str = "application/json") -> None:
        self._send(conn, f"HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n"
                         "Connection: close\r\n\r\n".encode() + body)
