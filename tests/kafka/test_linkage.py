"""The `kafka` feature links librdkafka into the edgeguard binary only: the
library nginx loads, from the very same build, holds none of it.

`make test-kafka` builds target/release with the feature on, which rebuilds
both the binary and libedgeguard.so; the binary holding librdkafka shows
the feature was on for the build that made this .so (a later build without
it would have relinked both).
"""

import ctypes
import subprocess

from conftest import EDGEGUARD, ROOT

LIB = ROOT / "target" / "release" / "libedgeguard.so"


def symbols(path, *flags):
    done = subprocess.run(["nm", *flags, path], capture_output=True, text=True, check=True)
    return [line.split()[-1] for line in done.stdout.splitlines() if line.strip()]


def needed(path):
    done = subprocess.run(["readelf", "-d", path], capture_output=True, text=True, check=True)
    return [line.split("[")[1].rstrip("]") for line in done.stdout.splitlines() if "(NEEDED)" in line]


def test_the_binary_holds_librdkafka():
    # The control: nm finds librdkafka's functions where they are.
    names = symbols(EDGEGUARD)
    assert "rd_kafka_new" in names and "rd_kafka_consumer_poll" in names
    assert "rd_kafka_version" in names


def test_the_library_nginx_loads_holds_none_of_it():
    assert LIB.stat().st_mtime >= EDGEGUARD.stat().st_mtime - 600, "libedgeguard.so is older than the build"
    every = symbols(LIB)
    assert every, "the .so keeps its symbol table (nm would see librdkafka)"
    assert not [n for n in every if "rd_kafka" in n or "rdkafka" in n]
    exported = symbols(LIB, "-D", "--defined-only")
    assert exported and all(n.startswith("edgeguard_") for n in exported), exported
    # Nothing librdkafka would bring: itself, zlib, SASL, OpenSSL.
    assert set(needed(LIB)) <= {"libgcc_s.so.1", "libm.so.6", "libc.so.6", "ld-linux-x86-64.so.2"}, needed(LIB)
    # And it loads, as nginx's LuaJIT does.
    lib = ctypes.CDLL(str(LIB))
    assert lib.edgeguard_version
