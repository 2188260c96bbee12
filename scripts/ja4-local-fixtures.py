#!/usr/bin/env python3
"""Regenerates tests/fixtures/tls/local-clienthellos.txt: the ClientHello
each TLS client of this machine sends (tests/e2e/tls_clients.py captures it
with a bare TCP listener), with the TLS family src/tls/family.rs should
guess for it. The family column is what the client is known to use, written
here by hand, not computed:

    python3 scripts/ja4-local-fixtures.py > tests/fixtures/tls/local-clienthellos.txt
"""
import pathlib
import platform
import subprocess
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "e2e"))
import tls_clients  # noqa: E402

KNOWN = {"curl": "openssl", "python-requests": "openssl", "python-ssl": "openssl",
         "node": "openssl", "chromium": "boringssl", "go": "go"}


def version(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=20).stdout.splitlines()[0].strip()
    except Exception:
        return "?"


print("# ClientHellos recorded from this machine's clients by scripts/ja4-local-fixtures.py")
print("# (Debian 12): client, the TLS library it is built on, the first TLS record in hex.")
print(f"# {version(['curl', '--version'])}")
print(f"# Python {platform.python_version()}, {__import__('ssl').OPENSSL_VERSION}")
for name, cmd in (("chromium", ["chromium", "--version"]), ("go", ["go", "version"]), ("node", ["node", "--version"])):
    if name in tls_clients.CLIENTS:
        print(f"# {name}: {version(cmd)}")
for client in tls_clients.CLIENTS:
    rec = tls_clients.capture(client)
    if not rec:
        print(f"no ClientHello from {client}", file=sys.stderr)
        continue
    print(client, KNOWN[client], rec.hex())
