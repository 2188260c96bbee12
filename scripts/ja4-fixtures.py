#!/usr/bin/env python3
"""Regenerates tests/fixtures/tls/foxio-clienthellos.txt: the TLS-over-TCP
ClientHellos of the JA4 project's test captures (FoxIO-LLC/ja4, pcap/), as
hex, each with the JA4 and JA4_r that project publishes for that connection
(python/test/testdata/<pcap>.json).

    python3 scripts/ja4-fixtures.py /path/to/FoxIO-LLC/ja4 > tests/fixtures/tls/foxio-clienthellos.txt

Only what JA4 needs is decoded here: pcap and pcapng framing, Ethernet (with
VLAN tags) or Linux cooked capture, IPv4/IPv6, TCP. A ClientHello split over
several segments is reassembled in sequence order. The Rust parser then reads
the bytes; this script never computes a fingerprint itself.
"""
import json
import os
import struct
import sys


def pcap_packets(data):
    """(linktype, frame) for each packet of a pcap or pcapng file."""
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        end = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        end = ">"
    elif magic == b"\x0a\x0d\x0d\x0a":
        yield from pcapng_packets(data)
        return
    else:
        raise ValueError("not a pcap or pcapng file")
    linktype = struct.unpack(end + "I", data[20:24])[0]
    off = 24
    while off + 16 <= len(data):
        incl = struct.unpack(end + "I", data[off + 8:off + 12])[0]
        yield linktype, data[off + 16:off + 16 + incl]
        off += 16 + incl


def pcapng_packets(data):
    off, end, links = 0, "<", []
    while off + 12 <= len(data):
        btype = struct.unpack(end + "I", data[off:off + 4])[0]
        if btype == 0x0A0D0D0A:
            end = "<" if data[off + 8:off + 12] == b"\x4d\x3c\x2b\x1a" else ">"
            btype = 0x0A0D0D0A
            links = []
        blen = struct.unpack(end + "I", data[off + 4:off + 8])[0]
        body = data[off + 8:off + blen - 4]
        if btype == 1:  # interface description
            links.append(struct.unpack(end + "H", body[0:2])[0])
        elif btype == 6:  # enhanced packet
            iface, _, _, caplen, _ = struct.unpack(end + "IIIII", body[:20])
            yield links[iface], body[20:20 + caplen]
        elif btype == 3:  # simple packet
            yield links[0], body[4:]
        off += blen


def tcp_segment(linktype, frame):
    """(src, sport, dst, dport, seq, payload) or None."""
    if linktype == 1:  # Ethernet
        etype, off = struct.unpack(">H", frame[12:14])[0], 14
        while etype in (0x8100, 0x88A8):
            etype, off = struct.unpack(">H", frame[off + 2:off + 4])[0], off + 4
    elif linktype == 113:  # Linux cooked
        etype, off = struct.unpack(">H", frame[14:16])[0], 16
    elif linktype == 0:  # BSD loopback: a 4-byte address family
        etype = 0x0800 if frame[4] >> 4 == 4 else 0x86DD
        off = 4
    elif linktype in (101, 228, 229):  # raw IP
        etype = 0x0800 if frame[0] >> 4 == 4 else 0x86DD
        off = 0
    else:
        return None
    if etype == 0x0800:
        ihl = (frame[off] & 15) * 4
        if frame[off + 9] != 6:
            return None
        total = struct.unpack(">H", frame[off + 2:off + 4])[0]
        src, dst = frame[off + 12:off + 16], frame[off + 16:off + 20]
        ip_end = off + total
        off += ihl
    elif etype == 0x86DD:
        if frame[off + 6] != 6:  # no extension headers in these captures' TCP
            return None
        plen = struct.unpack(">H", frame[off + 4:off + 6])[0]
        src, dst = frame[off + 8:off + 24], frame[off + 24:off + 40]
        ip_end = off + 40 + plen
        off += 40
    else:
        return None
    sport, dport, seq = struct.unpack(">HHI", frame[off:off + 8])
    doff = (frame[off + 12] >> 4) * 4
    return src, sport, dst, dport, seq, frame[off + doff:ip_end]


def ip_text(b):
    if len(b) == 4:
        return ".".join(str(x) for x in b)
    import ipaddress
    return str(ipaddress.IPv6Address(b))


def client_hellos(path):
    """{(src, sport): handshake message bytes} of each flow's first ClientHello."""
    with open(path, "rb") as f:
        data = f.read()
    flows = {}
    for linktype, frame in pcap_packets(data):
        try:
            seg = tcp_segment(linktype, frame)
        except (IndexError, struct.error):
            continue
        if seg and seg[5]:
            src, sport, dst, dport, seq, payload = seg
            flows.setdefault((ip_text(src), sport, ip_text(dst), dport), {}).setdefault(seq, payload)
    out = {}
    for (src, sport, _, _), segs in flows.items():
        seqs = sorted(segs)
        for i, s in enumerate(seqs):
            p = segs[s]
            if len(p) < 6 or p[0] != 0x16 or p[1] != 3 or p[5] != 1:
                continue
            stream, nxt = bytearray(p), s + len(p)
            for s2 in seqs[i + 1:]:
                if s2 != nxt:
                    break
                stream += segs[s2]
                nxt += len(segs[s2])
            # Handshake bytes from consecutive handshake records.
            hs, off = bytearray(), 0
            while off + 5 <= len(stream) and stream[off] == 0x16:
                rlen = struct.unpack(">H", stream[off + 3:off + 5])[0]
                hs += stream[off + 5:off + 5 + rlen]
                off += 5 + rlen
                if len(hs) >= 4 and len(hs) >= 4 + int.from_bytes(hs[1:4], "big"):
                    break
            if len(hs) >= 4 and len(hs) >= 4 + int.from_bytes(hs[1:4], "big"):
                out[(src, sport)] = bytes(hs[:4 + int.from_bytes(hs[1:4], "big")])
            break
    return out


def main():
    repo = sys.argv[1]
    print("# The ClientHellos of FoxIO-LLC/ja4's pcap/ test captures (TLS over TCP), as handshake")
    print("# messages in hex, with the JA4 and JA4_r that project publishes for each connection in")
    print("# python/test/testdata/<capture>.json. Generated by scripts/ja4-fixtures.py; do not edit.")
    print("# capture client-address client-port ja4 ja4_r hex")
    for name in sorted(os.listdir(os.path.join(repo, "python/test/testdata"))):
        cap = name[:-len(".json")]
        path = os.path.join(repo, "pcap", cap)
        if not os.path.exists(path):
            continue
        with open(os.path.join(repo, "python/test/testdata", name)) as f:
            expected = json.load(f)
        try:
            hellos = client_hellos(path)
        except ValueError:
            continue
        seen = {}
        for e in expected:
            if "JA4.1" not in e or e["JA4.1"][0] != "t":
                continue
            hello = hellos.get((e["src"], int(e["srcport"])))
            if hello is None:
                print(f"# {cap} {e['src']} {e['srcport']}: no ClientHello found in the capture", file=sys.stderr)
                continue
            # Most connections of a capture are the same browser: three of
            # each fingerprint per capture are enough.
            seen[e["JA4.1"]] = seen.get(e["JA4.1"], 0) + 1
            if seen[e["JA4.1"]] > 3:
                continue
            print(cap, e["src"], e["srcport"], e["JA4.1"], e["JA4_r.1"], hello.hex())


main()
