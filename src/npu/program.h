// Program: the NPU's instruction list (the "target instruction" IR level of EdgeLLM-MLIR).
//
// Execution model (what the Executor implements and what verify() checks):
//  * One scalar core issues instructions in order. DMA, matrix and vector instructions are handed
//    to their units and run asynchronously; each unit is an in-order queue (DMA: `channels`
//    queues, the least busy one takes the next transfer; matrix: one queue per array, chosen by
//    the instruction; vector: one queue).
//  * Ordering between units is the program's job, through events: a DMA names the event it
//    completes into; `signal e units` makes e complete when everything already issued to the
//    named units has finished; `wait e` stalls issue until every completion issued into e so far
//    has happened. `barrier` stalls issue until every unit is idle.
//  * Functionally the Executor runs instructions in program order; a correctly synchronized
//    program has the same result under the concurrent timing model.
//  * Memory: DDR buffers (declared by the program, bound by the caller as host memory) and TCM
//    (a byte array of target.tcm.bytes). Matrix and vector units only touch TCM.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "npu/target_model.h"

namespace tandem::npu {

// Events are 16-bit in the program formats: at most this many per program.
constexpr uint32_t kMaxEvents = 1u << 16;

enum class Opcode : uint8_t { kDmaLoad = 1, kDmaStore = 2, kMma = 3, kVec = 4, kWait = 5, kSignal = 6, kBarrier = 7 };

// Unit mask for `signal`.
enum UnitMask : uint8_t { kUnitDma = 1, kUnitMatrix = 2, kUnitVector = 4, kUnitAll = 7 };

// 2-D transfer: `rows` rows of `row_bytes`; DDR rows `ddr_stride` apart, TCM rows `tcm_stride` apart.
struct DmaArgs {
  uint32_t buffer = 0;
  uint64_t ddr_offset = 0;
  uint64_t ddr_stride = 0;
  uint32_t rows = 0;
  uint32_t row_bytes = 0;
  uint32_t tcm = 0;
  uint32_t tcm_stride = 0;
  uint32_t event = 0;
  bool operator==(const DmaArgs&) const = default;
};

// One tile op on array `unit`: C (+)= A x B, T x T fp16 tiles at TCM addresses with row pitches in
// bytes. B is the operand the array HOLDS (loaded into the array, reused while the next op names
// the same B); A streams through row by row. tb: B is read transposed (the array loads it
// column-wise). tc: C is read/written transposed. acc: C += (else C =).
// Numerics: products summed in fp32 inside the op (plus the old C when acc), rounded to fp16 once
// when C is written.
struct MmaArgs {
  uint32_t unit = 0;
  uint32_t a = 0, lda = 0;
  uint32_t b = 0, ldb = 0;
  uint32_t c = 0, ldc = 0;
  bool acc = false, tb = false, tc = false;
  bool operator==(const MmaArgs&) const = default;
};

// Vector op on n elements (see VecOp in target_model.h for each op's operands).
struct VecArgs {
  VecOp op = VecOp::kAdd;
  uint32_t dst = 0, a = 0, b = 0, c = 0;
  uint32_t n = 0;
  float imm0 = 0, imm1 = 0;
  bool operator==(const VecArgs&) const = default;
};

struct SyncArgs {
  uint32_t event = 0;
  uint8_t units = 0;  // signal only
  bool operator==(const SyncArgs&) const = default;
};

// One instruction; only the member matching `op` is meaningful (the others stay default, so ==
// compares instructions exactly).
struct Instr {
  Opcode op = Opcode::kBarrier;
  DmaArgs dma;
  MmaArgs mma;
  VecArgs vec;
  SyncArgs sync;
  bool operator==(const Instr&) const = default;

  static Instr dma_load(DmaArgs a) { Instr i; i.op = Opcode::kDmaLoad; i.dma = a; return i; }
  static Instr dma_store(DmaArgs a) { Instr i; i.op = Opcode::kDmaStore; i.dma = a; return i; }
  static Instr matmul(MmaArgs a) { Instr i; i.op = Opcode::kMma; i.mma = a; return i; }
  static Instr vector(VecArgs a) { Instr i; i.op = Opcode::kVec; i.vec = a; return i; }
  static Instr wait(uint32_t e) { Instr i; i.op = Opcode::kWait; i.sync.event = e; return i; }
  static Instr signal(uint32_t e, uint8_t units) { Instr i; i.op = Opcode::kSignal; i.sync = {e, units}; return i; }
  static Instr barrier() { return Instr{}; }
};

struct BufferDecl {
  std::string name;  // [A-Za-z0-9_.-]+
  uint64_t bytes = 0;
  bool writable = false;
  bool operator==(const BufferDecl&) const = default;
};

struct Program {
  std::string name;  // [A-Za-z0-9_.-]+
  std::vector<BufferDecl> buffers;
  uint32_t num_events = 0;
  std::vector<Instr> code;
  bool operator==(const Program&) const = default;

  uint32_t add_buffer(std::string n, uint64_t bytes, bool writable) {
    buffers.push_back({std::move(n), bytes, writable});
    return uint32_t(buffers.size() - 1);
  }
  void emit(const Instr& i) { code.push_back(i); }
};

// Bytes a vector op reads from `a` / writes to dst, given n (used by verify and the executor).
struct VecFootprint {
  uint64_t dst_bytes, a_bytes, b_bytes, c_bytes;  // 0 = operand unused
};
VecFootprint vec_footprint(VecOp op, uint32_t n);

// Structural and resource checks against the target: at most 65536 events, TCM bounds and alignment, DDR bounds against
// the declared buffers, store into a read-only buffer, event ids, waits on events nothing has
// completed into, matrix unit ids, vector element counts. The error names the instruction index.
Status verify(const Program& p, const TargetModel& t);

// Text form: one instruction per line, exact round trip (print(parse(s)) == s, parse(print(p)) == p).
std::string to_text(const Program& p);
std::string to_text(const Instr& i);
Result<Program> parse_text(std::string_view text);

// Binary form: "TNPU" magic, version, payload, FNV-1a 64 checksum. deserialize() never reads out
// of bounds and rejects any structural inconsistency; it does not run verify().
std::vector<uint8_t> serialize(const Program& p);
Result<Program> deserialize(const uint8_t* data, size_t size);
inline Result<Program> deserialize(const std::vector<uint8_t>& b) { return deserialize(b.data(), b.size()); }
// For tests that fuzz the payload parser itself: recompute the checksum after editing bytes.
void reseal_binary(std::vector<uint8_t>& bytes);

}  // namespace tandem::npu
