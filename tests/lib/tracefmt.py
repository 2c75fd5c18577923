"""Trace bytes forged by name, from the Python view of the format that
tests/lib/fmt_py.c writes at build time (BUILD/tests/lib/trace_format.py,
from format/trace_format.h): the Python tests spell no layout of their
own. find(build) puts the view on sys.path; then

    file_header(minor)          the 16-byte file header
    chunk(tid, payload, ...)    one chunk: its 48-byte header (CRC
                                included) and the payload
    event(name, dt, *fields)    a core record by its FMT_ name, fields in
                                the order CORE[name] lists them
    meta(name, body)            a metadata record around a prepared body
    uv(v), zz(v), s(b)          varint, zigzag, length-prefixed bytes
"""
import os
import struct
import sys
import zlib


def find(build):
    """Makes the generated view importable from the build tree build."""
    d = os.path.join(build, "tests", "lib")
    if not os.path.exists(os.path.join(d, "trace_format.py")):
        raise SystemExit("no %s/trace_format.py: build the tree first" % d)
    if d not in sys.path:
        sys.path.insert(0, d)
    global F
    import trace_format as F  # noqa: E402
    return F


F = None
_INT = {1: "B", 2: "H", 4: "I", 8: "Q"}


def uv(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zz(v):
    return (v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1


def s(b):
    return uv(len(b)) + b


def file_header(minor=None):
    major, cur = F.VERSION
    return F.FILE_MAGIC + struct.pack(
        "<HHI", major, cur if minor is None else minor, F.FILE_HEADER_SIZE)


def chunk(tid, payload, base=1000, seq=0, flush=None, mono=None, flags=0,
          magic=None, plen=None, crc=None):
    """One chunk of thread tid; the clock pair is (flush, mono), by default
    (base + 1000, the same). magic, plen and crc override the header's (to
    forge a bad one); by default the CRC covers what is written."""
    flush = base + 1000 if flush is None else flush
    v = {"magic": F.CHUNK_MAGIC if magic is None else magic,
         "payload_len": len(payload) if plen is None else plen,
         "crc32": 0, "tid": tid, "seq": seq, "flags": flags,
         "tsc_base": base, "tsc_flush": flush,
         "mono_flush_ns": flush if mono is None else mono}
    h = bytearray(F.CHUNK_HEADER_SIZE)
    for name, off, size in F.CHUNK_HEADER:
        struct.pack_into("<" + _INT[size], h, off, v[name] & ((1 << 8 * size) - 1))
    crc_off = dict((n, o) for n, o, _ in F.CHUNK_HEADER)["tid"]
    if crc is None:
        crc = zlib.crc32(bytes(h[crc_off:]) + payload)
    struct.pack_into("<I", h, dict((n, o) for n, o, _ in F.CHUNK_HEADER)["crc32"],
                     crc)
    return bytes(h) + payload


def header_fields(data, off):
    """The chunk header at data[off:] as a dict by field name."""
    return {name: int.from_bytes(data[off + o:off + o + size], "little")
            for name, o, size in F.CHUNK_HEADER}


class Enc:
    """The encoder state of one chunk (fmt_enc_t): the previous pointer,
    from which a 'p' field is a zigzag delta."""

    def __init__(self):
        self.last_ptr = 0

    def event(self, name, dt, *fields):
        code, layout, names = F.CORE[name]
        if len(fields) != len(layout):
            raise ValueError("%s takes %d fields (%s), not %d" % (
                name, len(layout), ", ".join(names), len(fields)))
        out = bytes([code]) + uv(dt)
        for i, (kind, v) in enumerate(zip(layout, fields)):
            if kind == "p":
                out += uv(zz(v - self.last_ptr))
                self.last_ptr = v
            elif kind == "r":
                out += uv(zz(v - fields[i - 1]))
                self.last_ptr = v
            else:
                out += uv(v)
        return out


def event(name, dt, *fields):
    """A core record as the first pointer record of its chunk would be."""
    return Enc().event(name, dt, *fields)


def meta(name, body):
    return bytes([F.META[name]]) + uv(len(body)) + body
