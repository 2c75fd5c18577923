"""Trace bytes forged by name, from the Python view of the format that
tests/lib/fmt_py.c writes at build time (BUILD/tests/lib/trace_format.py,
from format/trace_format.h): the Python tests spell no layout of their
own. find(build) puts the view on sys.path; then

    file_header(minor)          the 16-byte file header
    version(data)               the (major, minor) a file header says
    chunk(tid, payload, ...)    one chunk: its 48-byte header (CRC
                                included) and the payload
    chunks(data)                (offset, header fields) of each chunk
    seal(buf, off)              the CRC of the chunk at buf[off:] made
                                to match what it holds (a forged chunk)
    put(buf, fields, name, v)   a field of a layout (F.CHUNK_HEADER,
    get(buf, fields, name)      F.CTL_PAGE: (name, offset, size) lists)
                                written or read, little-endian
    field(fields, name)         its (offset, size)
    pack(fields, name, v)       its bytes for the value v
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


def field(fields, name):
    """The (offset, size) of the field name in the layout fields."""
    for n, off, size in fields:
        if n == name:
            return off, size
    raise KeyError(name)


def pack(fields, name, v):
    """The bytes of v (masked to its width) in the field name of the layout
    fields."""
    size = field(fields, name)[1]
    return (v & ((1 << 8 * size) - 1)).to_bytes(size, "little")


def put(buf, fields, name, v, base=0):
    """Writes v into the field name of the layout fields at buf[base:]."""
    off, size = field(fields, name)
    buf[base + off:base + off + size] = pack(fields, name, v)


def get(buf, fields, name, base=0):
    """The unsigned value of the field name of the layout fields at
    buf[base:]."""
    off, size = field(fields, name)
    return int.from_bytes(buf[base + off:base + off + size], "little")


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


def version(data):
    """The (major, minor) of the file header at the start of data."""
    n = len(F.FILE_MAGIC)
    return struct.unpack_from("<HH", data, n)


def _crc(header, payload):
    """A chunk's CRC-32: its header from tid on, and its payload."""
    return zlib.crc32(bytes(header[field(F.CHUNK_HEADER, "tid")[0]:]) +
                      bytes(payload))


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
    for name, _, _ in F.CHUNK_HEADER:
        put(h, F.CHUNK_HEADER, name, v[name])
    put(h, F.CHUNK_HEADER, "crc32", _crc(h, payload) if crc is None else crc)
    return bytes(h) + payload


def seal(buf, off):
    """Rewrites the CRC of the chunk at buf[off:] (a bytearray) over what
    its header and payload now hold."""
    h = F.CHUNK_HEADER_SIZE
    plen = get(buf, F.CHUNK_HEADER, "payload_len", off)
    put(buf, F.CHUNK_HEADER, "crc32",
        _crc(buf[off:off + h], buf[off + h:off + h + plen]), off)


def chunks(data):
    """(offset, header fields) of each chunk of a trace file's bytes, up to
    the first header with a bad magic or a payload past the end."""
    off = F.FILE_HEADER_SIZE
    while off + F.CHUNK_HEADER_SIZE <= len(data):
        h = header_fields(data, off)
        end = off + F.CHUNK_HEADER_SIZE + h["payload_len"]
        if h["magic"] != F.CHUNK_MAGIC or end > len(data):
            break
        yield off, h
        off = end


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
