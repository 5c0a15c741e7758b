// The last lowering of the compiler's npu-level matmul programs: each becomes one C translation
// unit for clang-19's Hexagon target (v66, HVX 128-byte), its shape and loop order baked in as
// constants, so the loops the runtime's generic matmul (dsp/matmul.c) runs with run-time bounds
// run here with compile-time ones: full chunks of 32 blocks and the ragged tail known statically,
// no per-call shape decoding, and the schedule's loop order (a weight-stationary program reads
// each weight row once for all its activation rows; the generic kernel re-reads them per row).
//
// Why C for clang-19 and not MLIR's LLVM dialect: the kernels' inner loops are HVX intrinsics
// (vrmpy, vshuff) that clang-19 spells as __builtin_HEXAGON_V6_*; MLIR 19 has no Hexagon dialect,
// so the LLVM-dialect path would emit the same intrinsic calls as llvm.call_intrinsic text with
// no checking and no scheduling help, while C reuses the DSP runtime's tested chunk kernels
// (dsp/kernels.h) and keeps every program's arithmetic the oracle's (hexagon/reference.h) by
// construction: each program is quantize + the same chunk sums + the same ordered fp32 sum.
//
// A program is one call (THX_METHOD_PROGRAM): the fp32 rows are quantized and multiplied in the
// DSP without a second round trip.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hexagon/reference.h"

namespace tandem::hexagon {

struct HexagonProgramSpec {
  std::string name;  // the npu program it lowers (the compile cache's entry name)
  WeightFormat format = WeightFormat::kQ8_0;
  uint32_t rows = 1, in = 32, out = 1;  // y [rows][out] = x [rows][in] . w [out][in]^T
  bool weight_stationary = false;       // weight row outer (read once), else activation row outer
};

// "" when the DSP can take the shape, else why not.
std::string why_not_lowerable(const HexagonProgramSpec& s);

// The C source of program `index` (defines thx_program_<index>).
std::string kernel_source(const HexagonProgramSpec& s, uint32_t index);

// The program table the DSP runtime serves THX_METHOD_PROGRAM from (dsp/program_table.h).
std::string program_table_source(const std::vector<HexagonProgramSpec>& specs);

// Bytes of the scratch buffer (buf[1]) program s needs: its quantized rows, then their scales.
uint64_t program_scratch_bytes(const HexagonProgramSpec& s);

}  // namespace tandem::hexagon
