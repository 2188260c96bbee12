#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz targets from the repository's fixtures.

    fuzz/seed.py CORPUS_DIR

Seeds are generated, not committed: CORPUS_DIR/<target>/ gets one file per
seed, named by content hash so reruns add nothing twice.
"""
import hashlib
import json
import pathlib
import struct
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CATBOOST = ROOT / "tests/fixtures/catboost"
VERSIONS = {"1.0": 0, "1.1": 1, "2": 2, "2.0": 2, "3": 3, "3.0": 3}


def put(corpus, target, data):
    d = corpus / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def header_lists():
    for p in ["nginx-conf/internal-headers.txt", "tests/e2e/data/internal-headers.txt",
              "benches/data/trie-hard-headers.txt"]:
        f = ROOT / p
        if f.exists():
            yield f.read_bytes()
    yield b"x-user-id\nX-Internal-*   # prefix\n# comment\ncf-connecting-ip\r\n"


def requests():
    for line in (ROOT / "tests/fixtures/traffic/sample.jsonl").read_text().splitlines():
        r = json.loads(line)
        head = f"{r['method']} {r['uri']} {r.get('client', '')}".encode()
        lines = [bytes([VERSIONS.get(str(r.get("version")), 1)]) + head]
        lines += [f"{k}:{v}".encode() for k, v in r["headers"]]
        if r.get("edgeguard_ja4"):  # the target's TLS facts line
            lines.append(f"tls:{r['edgeguard_ja4']}".encode())
        yield b"\n".join(lines)


def main():
    corpus = pathlib.Path(sys.argv[1])
    for text in header_lists():
        put(corpus, "header_list_parse", text)
    for req in requests():
        put(corpus, "features_extract", req)
    for model in sorted(CATBOOST.glob("*.json")):
        put(corpus, "model_load", model.read_bytes())
    # header_match and model_predict take structured (arbitrary) input; a few
    # byte patterns give the fuzzer a start beyond the empty input.
    for n in (0, 1, 2):
        put(corpus, "model_predict", bytes([n]) + struct.pack("<8f", 0.5, -1, 3e38, 0, 1, 2, 7, 9) * 4)
    for n in range(6):
        put(corpus, "model_kernels", bytes([n]) + struct.pack("<8f", 0.5, -1, 3e38, 0, 1, 2, 7, 9) * 4)
    for text in header_lists():
        put(corpus, "header_match", text[:512])
    # replay_line: the fixture lines in both shapes (requests, access log).
    for p in ["tests/fixtures/traffic/sample.jsonl", "tests/fixtures/replay/nginx-access.jsonl"]:
        for line in (ROOT / p).read_bytes().splitlines():
            if line:
                put(corpus, "replay_line", line)
    # tls_client_hello: every recorded ClientHello (the hex is each line's
    # last field), as handshake messages and as records.
    for p in ["tests/fixtures/tls/foxio-clienthellos.txt", "tests/fixtures/tls/local-clienthellos.txt"]:
        for line in (ROOT / p).read_text().splitlines():
            if line and not line.startswith("#"):
                put(corpus, "tls_client_hello", bytes.fromhex(line.rsplit(" ", 1)[1]))


if __name__ == "__main__":
    main()
