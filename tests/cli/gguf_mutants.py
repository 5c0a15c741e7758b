#!/usr/bin/env python3
"""Writes mutants of a valid GGUF file for the bad-input suite: each one breaks one field the
reader must refuse (or bound) with a one-line error. Prints one line per mutant: NAME FIELD, where
FIELD is text the error must contain (the file's name when the reader names no field).

usage: gguf_mutants.py MODEL.gguf OUT_DIR
"""
import os
import struct
import sys

SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def parse(data):
    """Offsets of the header fields, each metadata value and each tensor info."""
    pos = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
    meta = {}

    def string(p):
        (n,) = struct.unpack_from("<Q", data, p)
        return data[p + 8:p + 8 + n].decode(), p + 8 + n

    def skip_value(t, p):
        if t in SCALAR:
            return p + struct.calcsize(SCALAR[t])
        if t == 8:
            return string(p)[1]
        if t == 9:
            et, n = struct.unpack_from("<IQ", data, p)
            p += 12
            for _ in range(n):
                p = skip_value(et, p)
            return p
        raise ValueError("type %d" % t)

    for _ in range(n_kv):
        key_at = pos
        key, pos = string(pos)
        (t,) = struct.unpack_from("<I", data, pos)
        meta[key] = (key_at, t, pos + 4)
        pos = skip_value(t, pos + 4)
    tensors = []
    for _ in range(n_tensors):
        name, p = string(pos)
        (nd,) = struct.unpack_from("<I", data, p)
        info = {"name": name, "dims_at": p + 4, "type_at": p + 4 + 8 * nd, "offset_at": p + 8 + 8 * nd}
        tensors.append(info)
        pos = p + 4 + 8 * nd + 4 + 8
    return meta, tensors


def main():
    src, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    data = open(src, "rb").read()
    meta, tensors = parse(data)
    arch_key = next(k for k in meta if k.endswith(".context_length")).split(".")[0]

    def patch(buf, at, fmt, value):
        b = bytearray(buf)
        struct.pack_into(fmt, b, at, value)
        return bytes(b)

    def meta_value(key, fmt, value):
        _, t, at = meta[key]
        return patch(data, at, fmt, value)

    first = tensors[0]
    mutants = {
        "empty": (b"", "empty"),
        "magic": (b"GGUX" + data[4:], "magic"),
        "version": (patch(data, 4, "<I", 99), "version"),
        "header-cut": (data[:20], "header-cut"),
        "half": (data[: len(data) // 2], "half"),
        "last-byte-cut": (data[:-1], "last-byte-cut"),
        "tensor-count": (patch(data, 8, "<Q", 1 << 62), "tensor-count"),
        "kv-count": (patch(data, 16, "<Q", 1 << 62), "kv-count"),
        "key-length": (patch(data, 24, "<Q", 1 << 63), "key-length"),
        "value-type": (patch(data, meta[arch_key + ".context_length"][2] - 4, "<I", 77), "value-type"),
        "rope-inf": (meta_value(arch_key + ".rope.freq_base", "<f", float("inf")), "rope.freq_base"),
        "rope-nan": (meta_value(arch_key + ".rope.freq_base", "<f", float("nan")), "rope.freq_base"),
        "vocab-size": (meta_value(arch_key + ".vocab_size", "<I", 1000000000), "vocab_size"),
        "heads-zero": (meta_value(arch_key + ".attention.head_count", "<I", 0), "head_count"),
        "layers-huge": (meta_value(arch_key + ".block_count", "<I", 0xFFFFFFFF), "block_count"),
        "tensor-type": (patch(data, first["type_at"], "<I", 999), "tensor-type"),
        "tensor-dim-zero": (patch(data, first["dims_at"], "<Q", 0), "tensor-dim-zero"),
        "tensor-dim-huge": (patch(data, first["dims_at"], "<Q", 1 << 40), "tensor-dim-huge"),
        "tensor-offset": (patch(data, first["offset_at"], "<Q", 1 << 50), "tensor-offset"),
    }
    for name, (bytes_, field) in mutants.items():
        with open(os.path.join(out, name + ".gguf"), "wb") as f:
            f.write(bytes_)
        print(name, field)


if __name__ == "__main__":
    main()
