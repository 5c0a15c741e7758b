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


def skip_item(data, t, p):
    """The offset just past a value of type t at p."""
    if t in SCALAR:
        return p + struct.calcsize(SCALAR[t])
    if t == 8:
        (n,) = struct.unpack_from("<Q", data, p)
        return p + 8 + n
    if t == 9:
        et, n = struct.unpack_from("<IQ", data, p)
        p += 12
        for _ in range(n):
            p = skip_item(data, et, p)
        return p
    raise ValueError("type %d" % t)


def parse(data):
    """Offsets of the header fields, each metadata value and each tensor info."""
    pos = 24
    n_tensors, n_kv = struct.unpack_from("<QQ", data, 8)
    meta = {}

    def string(p):
        (n,) = struct.unpack_from("<Q", data, p)
        return data[p + 8:p + 8 + n].decode(), p + 8 + n

    for _ in range(n_kv):
        key_at = pos
        key, pos = string(pos)
        (t,) = struct.unpack_from("<I", data, pos)
        meta[key] = (key_at, t, pos + 4)
        pos = skip_item(data, t, pos + 4)
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
    by_name = {t["name"]: t for t in tensors}

    def tensor_field(name, what):
        return struct.unpack_from("<Q", data, by_name[name][what])[0]

    def with_tensor(buf, name, what, value):
        return patch(buf, by_name[name][what], "<Q" if what != "type_at" else "<I", value)

    # Where the data section starts: after the tensor infos, at the alignment (32: the small model
    # has no general.alignment).
    infos_end = tensors[-1]["offset_at"] + 8
    data_start = (infos_end + 31) // 32 * 32

    def relocated(buf, name, rows):
        """The tensor's data moved to a new end of the file with `rows` rows (zeros), so its size
        changes without touching its neighbours: another shape, and still a well-formed file."""
        t = by_name[name]
        cols = tensor_field(name, "dims_at")
        type_id = struct.unpack_from("<I", buf, t["type_at"])[0]
        row_bytes = {0: cols * 4, 8: cols // 32 * 34}[type_id]
        offset = (len(buf) - data_start + 31) // 32 * 32
        buf = patch(buf, t["dims_at"] + 8, "<Q", rows)
        buf = patch(buf, t["offset_at"], "<Q", offset)
        return buf + bytes(data_start + offset - len(buf)) + bytes(rows * row_bytes)

    def tokens_cut(n):
        """The tokenizer's per-token arrays cut to their first n entries: the metadata shrinks, so
        the tensor infos and the data section move up (their offsets are relative to the data)."""
        keys = ["tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type"]
        out, pos = bytearray(), 0
        for key in sorted(keys, key=lambda k: meta[k][2]):
            _, _, at = meta[key]
            et, count = struct.unpack_from("<IQ", data, at)  # at: the value, after its type
            items_end = end = at + 12
            for i in range(count):
                end = skip_item(data, et, end)
                if i == n - 1:
                    items_end = end
            out += data[pos:at + 4] + struct.pack("<Q", n) + data[at + 12:items_end]
            pos = end
        out += data[pos:infos_end]
        out += bytes((len(out) + 31) // 32 * 32 - len(out))
        return bytes(out) + data[data_start:]

    attn_q, attn_k = "blk.0.attn_q.weight", "blk.0.attn_k.weight"
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
        # Tensors whose data share bytes (issue 56): the error names both.
        "tensors-one-offset": (with_tensor(data, attn_k, "offset_at", tensor_field(attn_q, "offset_at")), attn_k),
        "tensor-retyped": (with_tensor(data, attn_q, "type_at", 0), attn_k),  # q8_0 -> f32: 4352 -> 16384 bytes
        "tensor-rows-grown": (patch(data, by_name["blk.0.ffn_gate.weight"]["dims_at"] + 8, "<Q", 193), "blk.0.ffn_up.weight"),
        "tensor-inside-another": (with_tensor(data, attn_k, "offset_at", tensor_field(attn_q, "offset_at") + 64), attn_k),
        # The tokenizer and the embedding disagree: one row per token.
        "tokens-ten": (tokens_cut(10), "tokenizer.ggml.tokens"),
        "embedding-short": (patch(data, by_name["token_embd.weight"]["dims_at"] + 8, "<Q", 31000), "tokenizer.ggml.tokens"),
        "embedding-padded": (relocated(relocated(data, "token_embd.weight", 32064), "output.weight", 32064),
                             "tokenizer.ggml.tokens"),
        "output-short": (patch(data, by_name["output.weight"]["dims_at"] + 8, "<Q", 31968), "output.weight"),
        "output-padded": (relocated(data, "output.weight", 32064), "output.weight"),
    }
    for name, (bytes_, field) in mutants.items():
        with open(os.path.join(out, name + ".gguf"), "wb") as f:
            f.write(bytes_)
        print(name, field)


if __name__ == "__main__":
    main()
