"""Helpers shared by the format's python3 tests: a CHECK that prints each
result and counts failures, and the chunks of a trace file as found by
their headers (docs/trace-format.md: a 16-byte file header, then chunks of
a 48-byte header and its payload)."""
import struct
import sys

failed = [0]


def check(cond, what):
    print(("ok: " if cond else "FAIL: ") + what)
    if not cond:
        failed[0] += 1


def done(name):
    print(f"{name}: {failed[0]} failed")
    sys.exit(1 if failed[0] else 0)


def chunks(path):
    """(offset, flags, payload_len) of each chunk, up to the first header
    with a bad magic or a payload past the end of the file."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    off = 16
    while off + 48 <= len(data):
        magic, plen, _crc, _tid, _seq, flags = struct.unpack_from("<6I", data, off)
        if magic != 0x434b4c4d or off + 48 + plen > len(data):
            break
        out.append((off, flags, plen))
        off += 48 + plen
    return out
