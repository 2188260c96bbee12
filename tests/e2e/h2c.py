"""A corpus row over cleartext HTTP/2 with prior knowledge, byte for byte.

HPACK literals without indexing or Huffman coding carry each name and
value exactly as the row has them; the header block keeps the row's
arrival order (nginx lists `host`, made from :authority, first). Shared by
tests/e2e/test_real_clients.py, tests/e2e/test_model_properties.py and
scripts/deployment-measure.py.
"""

import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
DATA, HEADERS, SETTINGS, GOAWAY, CONTINUATION = 0, 1, 4, 7, 9
END_STREAM, END_HEADERS, PADDED, PRIORITY = 0x1, 0x4, 0x8, 0x20

# nginx encodes :status as an indexed static entry (RFC 7541 appendix A)
# or as a literal with the :status name index and three raw digits.
STATIC_STATUS = {0x88: 200, 0x89: 204, 0x8A: 206, 0x8B: 304, 0x8C: 400, 0x8D: 404, 0x8E: 500}


def is_h2(row):
    return str(row["version"]).upper() in ("HTTP/2.0", "HTTP/2", "2", "2.0")


def body_of(row):
    """A body of the row's Content-Length (the corpus keeps no bodies)."""
    for name, value in row["headers"]:
        if name.lower() == "content-length" and value.strip().isdigit():
            return b"x" * int(value)
    return b""


def hpack_int(value, prefix_bits, first=0):
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append((value & 127) | 128)
        value >>= 7
    out.append(value)
    return bytes(out)


def hpack_literal(name, value):
    """Literal header field without indexing, new name, no Huffman coding:
    the bytes carry the name and value exactly."""
    n, v = name.encode("utf-8"), value.encode("utf-8")
    return b"\x00" + hpack_int(len(n), 7) + n + hpack_int(len(v), 7) + v


def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


def header_block(row, target=None):
    """The row's pseudo-headers (:path `target`, else its URI), then its
    headers in arrival order."""
    headers = list(row["headers"])
    block = hpack_literal(":method", row["method"]) + hpack_literal(":scheme", "http") + \
        hpack_literal(":path", target or row["uri"])
    if headers and headers[0][0].lower() == "host":
        block += hpack_literal(":authority", headers.pop(0)[1])
    for name, value in headers:
        block += hpack_literal(name, value)
    return block


def request_bytes(row):
    """The connection's first bytes: preface, SETTINGS, the row on stream 1
    (END_STREAM on its HEADERS without a body, else on its DATA)."""
    body = body_of(row)
    out = PREFACE + frame(SETTINGS, 0, 0, b"")
    out += frame(HEADERS, END_HEADERS | (0 if body else END_STREAM), 1, header_block(row))
    if body:
        out += frame(DATA, END_STREAM, 1, body)
    return out


def frames(sock):
    """The server's frames as (kind, flags, stream, payload), HEADERS
    without padding and priority; SETTINGS acknowledged. OSError on a
    closed connection or GOAWAY."""
    buf = b""
    while True:
        while len(buf) < 9:
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError("the HTTP/2 connection closed without an answer")
            buf += chunk
        length = int.from_bytes(buf[:3], "big")
        kind, flags, stream = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7FFFFFFF
        while len(buf) < 9 + length:
            chunk = sock.recv(65536)
            if not chunk:
                raise OSError("truncated HTTP/2 frame")
            buf += chunk
        payload, buf = buf[9:9 + length], buf[9 + length:]
        if kind == SETTINGS and not flags & 0x1:
            sock.sendall(frame(SETTINGS, 0x1, 0, b""))  # ACK
        if kind == GOAWAY:
            raise OSError(f"GOAWAY {payload!r}")
        if kind == HEADERS:
            if flags & PADDED:
                payload = payload[1:len(payload) - payload[0]]
            if flags & PRIORITY:
                payload = payload[5:]
        yield kind, flags, stream, payload


def status_of(block):
    """:status of a response header block whose first field is :status, as
    nginx sends it."""
    first = block[0]
    if first in STATIC_STATUS:
        return STATIC_STATUS[first]
    assert first == 0x48 and block[1] == 3, "unexpected :status encoding %r" % block[:8]
    return int(block[2:5])
