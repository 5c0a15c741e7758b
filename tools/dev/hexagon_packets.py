#!/usr/bin/env python3
"""Packets of the Hexagon kernels, from llvm-objdump-19 -d of a DSP binary, beside the cost
model's cycle prediction of each compiled matmul program (docs/measurements/hexagon-packets.md).

usage: hexagon_packets.py CACHE_DIR   (a compile cache with Hexagon objects: tandem compile)

A Hexagon core issues at most one packet per cycle per hardware thread, so a packet count is a
lower bound on one thread's cycles (stalls come on top). For each function: its packets, and for
each hardware loop (loop0(start, n) ... :endloop0) the packets of its body. A program's count is
composed from its shape: per activation row, the quantize loop over blocks; per output, the chunk
kernel per chunk of 32 blocks and the scalar block-sum loop per block (matmul's structure)."""
import json, re, subprocess, sys

FLAGS = ["--no-show-raw-insn", "--mcpu=hexagonv66", "--mattr=+hvxv66,+hvx-length128b"]

def disassemble(binary):
    out = subprocess.run(["llvm-objdump-19", "-d", *FLAGS, binary], check=True, capture_output=True, text=True).stdout
    funcs, cur = {}, None
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) <(\w+)>:", line)
        if m:
            cur = funcs.setdefault(m.group(2), {"packets": [], "loops": []})
            continue
        m = re.match(r"^\s+([0-9a-f]+):\s+(.*)$", line)
        if not m or cur is None:
            continue
        addr, text = int(m.group(1), 16), m.group(2)
        if "<unknown>" in text:  # alignment padding between functions (never inside a kernel: see below)
            cur.setdefault("unknown", 0)
            cur["unknown"] = cur.get("unknown", 0) + 1
            continue
        if text.lstrip().startswith("{"):
            cur["packets"].append(addr)
        lm = re.search(r"loop0\(0x([0-9a-f]+),", text)
        if lm:
            cur["loops"].append([int(lm.group(1), 16), None])
        if ":endloop0" in text:
            for loop in cur["loops"]:
                if loop[1] is None and loop[0] <= addr:
                    loop[1] = addr
    result = {}
    for name, f in funcs.items():
        bodies = [sum(1 for p in f["packets"] if a <= p <= b) for a, b in f["loops"] if b is not None]
        result[name] = {"packets": len(f["packets"]), "loop_bodies": bodies, "unknown": f.get("unknown", 0)}
    return result

def main():
    cache = sys.argv[1]
    m = json.load(open(cache + "/manifest.json"))
    h = m["hexagon"]
    f = disassemble(cache + "/" + h["binary"]["file"])
    for k in ("thx_q8_0_chunk_sums", "thx_q4_0_chunk_sums", "thx_accumulate_blocks", "thx_quantize_block"):
        if f[k]["unknown"] > 1:
            raise SystemExit("llvm-objdump could not decode %d instructions of %s: wrong --mattr?" % (f[k]["unknown"], k))
    chunk = {"q8_0": f["thx_q8_0_chunk_sums"]["packets"], "q4_0": f["thx_q4_0_chunk_sums"]["packets"]}
    acc_body = f["thx_accumulate_blocks"]["loop_bodies"][0]
    acc_fixed = f["thx_accumulate_blocks"]["packets"] - acc_body
    quant_block = f["thx_quantize_block"]["packets"]
    split = f["thx_q4_0_split_halves"]["loop_bodies"][0] if f["thx_q4_0_split_halves"]["loop_bodies"] else 0
    print("kernel pieces (packets): q8_0 chunk %d, q4_0 chunk %d, block-sum loop body %d (+%d per call), "
          "quantize block %d, q4_0 halves per group of 8 blocks %d" % (chunk["q8_0"], chunk["q4_0"], acc_body, acc_fixed, quant_block, split))
    est = {p["name"]: p["est_cycles"] for p in m["programs"]}
    print("| program | rows x in -> out | format | order | packets (inner loops x trips) | cost model cycles | packets / model |")
    print("| --- | --- | --- | --- | ---: | ---: | ---: |")
    for p in h["programs"]:
        n, k, o, fmt = p["rows"], p["in"], p["out"], p["format"]
        nb = k // 32
        chunks = (nb + 31) // 32
        per_output = chunks * chunk[fmt] + nb * acc_body + chunks * acc_fixed
        per_row = nb * quant_block + (((nb + 7) // 8) * split if fmt == "q4_0" else 0)
        packets = n * per_row + n * o * per_output
        model = est.get(p["program"], 0)
        ratio = "%.0fx" % (packets / model) if model else "-"
        print("| %s | %d x %d -> %d | %s | %s | %d | %.0f | %s |" % (p["program"], n, k, o, fmt, p["order"], packets, model, ratio))

if __name__ == "__main__":
    main()
