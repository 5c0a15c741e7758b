#!/usr/bin/env python3
"""Writes a copy of a GGUF file whose tokenizer.chat_template is the text of a file (added, or
replacing the one it has), for the cases where a hostile template arrives inside a model file.

usage: set_chat_template.py MODEL.gguf TEMPLATE_FILE OUT.gguf
"""
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_mutants import parse  # noqa: E402

KEY = "tokenizer.chat_template"


def gguf_string(s):
    b = s.encode("utf-8") if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def main():
    src, template_path, out = sys.argv[1:4]
    data = open(src, "rb").read()
    meta, tensors = parse(data)
    alignment = 32
    if "general.alignment" in meta:
        alignment = struct.unpack_from("<I", data, meta["general.alignment"][2])[0]
    infos_start = tensors[0]["dims_at"] - 4 - 8 - len(tensors[0]["name"].encode()) if tensors else None
    infos_end = tensors[-1]["offset_at"] + 8
    data_start = (infos_end + alignment - 1) // alignment * alignment
    # The metadata entries as bytes, in order, without the template's old one.
    keys = sorted(meta, key=lambda k: meta[k][0])
    ends = [meta[k][0] for k in keys[1:]] + [infos_start]
    entries = b"".join(data[meta[k][0]:end] for k, end in zip(keys, ends) if k != KEY)
    template = open(template_path, "rb").read()
    entries += gguf_string(KEY) + struct.pack("<I", 8) + gguf_string(template)
    n_kv = len(keys) - (1 if KEY in meta else 0) + 1
    head = data[:8] + struct.pack("<QQ", len(tensors), n_kv) + entries + data[infos_start:infos_end]
    head += bytes((-len(head)) % alignment)
    open(out, "wb").write(head + data[data_start:])


if __name__ == "__main__":
    main()
