"""A minimal client of Firefox's Marionette protocol (the remote protocol
geckodriver speaks to Firefox; Debian ships no geckodriver).

Marionette is JSON over TCP: every message is `LENGTH:JSON`; a command is
`[0, id, name, params]` and its answer `[1, id, error, result]`. The
commands are WebDriver's (`WebDriver:Navigate`, ...), so the flows drive
Firefox as geckodriver would, with the browser's own network stack and
headers untouched.
"""

import json
import socket
import time


class MarionetteError(RuntimeError):
    pass


class Marionette:
    def __init__(self, port, timeout=120.0):
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=5)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise MarionetteError(f"Marionette did not open port {port}")
                time.sleep(0.25)
        self.sock.settimeout(timeout)
        self.buf = b""
        self.next_id = 0
        hello = self._read()
        if not isinstance(hello, dict) or hello.get("marionetteProtocol") != 3:
            raise MarionetteError(f"unexpected Marionette greeting: {hello!r}")

    def _read(self):
        while b":" not in self.buf:
            self._fill()
        size, rest = self.buf.split(b":", 1)
        size = int(size)
        self.buf = rest
        while len(self.buf) < size:
            self._fill()
        msg, self.buf = self.buf[:size], self.buf[size:]
        return json.loads(msg)

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise MarionetteError("Marionette closed the connection")
        self.buf += data

    def call(self, name, params=None):
        self.next_id += 1
        body = json.dumps([0, self.next_id, name, params or {}]).encode()
        self.sock.sendall(str(len(body)).encode() + b":" + body)
        while True:
            msg = self._read()
            if msg[0] == 1 and msg[1] == self.next_id:
                break
        if msg[2]:
            raise MarionetteError(f"{name}: {msg[2]}")
        result = msg[3]
        return result.get("value", result) if isinstance(result, dict) else result

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass
