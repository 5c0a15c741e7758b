// The binary form of a Program (little endian):
//   "TNPU" | u32 version | str name | u32 num_events | u32 nbuf | nbuf x (str name, u64 bytes,
//   u8 writable) | u64 ninstr | ninstr x (u8 opcode, operands by opcode) | u64 FNV-1a-64 of all
//   preceding bytes.      str = u32 length (<= 256) + bytes.
// The reader checks every length against the bytes that remain before allocating or reading.
#include <cstring>

#include "npu/program.h"

namespace tandem::npu {

namespace {

constexpr uint8_t kMagic[4] = {'T', 'N', 'P', 'U'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kMaxName = 256;

uint64_t fnv1a(const uint8_t* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) { h ^= p[i]; h *= 1099511628211ull; }
  return h;
}

struct Writer {
  std::vector<uint8_t> out;
  void u8(uint8_t v) { out.push_back(v); }
  void u32(uint32_t v) { for (int i = 0; i < 4; ++i) out.push_back(uint8_t(v >> (8 * i))); }
  void u64(uint64_t v) { for (int i = 0; i < 8; ++i) out.push_back(uint8_t(v >> (8 * i))); }
  void f32(float f) { uint32_t u; std::memcpy(&u, &f, 4); u32(u); }
  void str(const std::string& s) { u32(uint32_t(s.size())); out.insert(out.end(), s.begin(), s.end()); }
};

struct Reader {
  const uint8_t* p;
  size_t n, pos = 0;
  std::string error;
  bool need(size_t k, const char* what) {
    if (!error.empty()) return false;
    if (n - pos < k) { error = std::string("truncated at byte ") + std::to_string(pos) + " reading " + what; return false; }
    return true;
  }
  uint8_t u8(const char* w) { if (!need(1, w)) return 0; return p[pos++]; }
  uint32_t u32(const char* w) {
    if (!need(4, w)) return 0;
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t(p[pos + i]) << (8 * i);
    pos += 4;
    return v;
  }
  uint64_t u64(const char* w) {
    if (!need(8, w)) return 0;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t(p[pos + i]) << (8 * i);
    pos += 8;
    return v;
  }
  float f32(const char* w) { const uint32_t u = u32(w); float f; std::memcpy(&f, &u, 4); return f; }
  bool flag(const char* w) {
    const uint8_t v = u8(w);
    if (error.empty() && v > 1) error = std::string("bad boolean ") + std::to_string(v) + " in " + w;
    return v != 0;
  }
  std::string str(const char* w) {
    const uint32_t len = u32(w);
    if (!error.empty()) return {};
    if (len > kMaxName) { error = std::string(w) + " length " + std::to_string(len) + " over " + std::to_string(kMaxName); return {}; }
    if (!need(len, w)) return {};
    std::string s(reinterpret_cast<const char*>(p + pos), len);
    pos += len;
    return s;
  }
};

}  // namespace

std::vector<uint8_t> serialize(const Program& prog) {
  Writer w;
  w.out.insert(w.out.end(), kMagic, kMagic + 4);
  w.u32(kVersion);
  w.str(prog.name);
  w.u32(prog.num_events);
  w.u32(uint32_t(prog.buffers.size()));
  for (const auto& b : prog.buffers) { w.str(b.name); w.u64(b.bytes); w.u8(b.writable ? 1 : 0); }
  w.u64(prog.code.size());
  for (const auto& in : prog.code) {
    w.u8(uint8_t(in.op));
    switch (in.op) {
      case Opcode::kDmaLoad:
      case Opcode::kDmaStore:
        w.u32(in.dma.buffer); w.u64(in.dma.ddr_offset); w.u64(in.dma.ddr_stride); w.u32(in.dma.rows);
        w.u32(in.dma.row_bytes); w.u32(in.dma.tcm); w.u32(in.dma.tcm_stride); w.u32(in.dma.event);
        break;
      case Opcode::kMma:
        w.u32(in.mma.unit); w.u32(in.mma.a); w.u32(in.mma.lda); w.u32(in.mma.b); w.u32(in.mma.ldb);
        w.u32(in.mma.c); w.u32(in.mma.ldc);
        w.u8(uint8_t((in.mma.acc ? 1 : 0) | (in.mma.tb ? 2 : 0) | (in.mma.tc ? 4 : 0)));
        break;
      case Opcode::kVec:
        w.u8(uint8_t(in.vec.op)); w.u32(in.vec.dst); w.u32(in.vec.a); w.u32(in.vec.b); w.u32(in.vec.c);
        w.u32(in.vec.n); w.f32(in.vec.imm0); w.f32(in.vec.imm1);
        break;
      case Opcode::kWait: w.u32(in.sync.event); break;
      case Opcode::kSignal: w.u32(in.sync.event); w.u8(in.sync.units); break;
      case Opcode::kBarrier: break;
    }
  }
  w.u64(fnv1a(w.out.data(), w.out.size()));
  return std::move(w.out);
}

void reseal_binary(std::vector<uint8_t>& bytes) {
  if (bytes.size() < 8) return;
  const uint64_t h = fnv1a(bytes.data(), bytes.size() - 8);
  for (int i = 0; i < 8; ++i) bytes[bytes.size() - 8 + i] = uint8_t(h >> (8 * i));
}

Result<Program> deserialize(const uint8_t* data, size_t size) {
  auto fail = [](const std::string& m) { return InvalidArgument("npu program binary: " + m); };
  if (data == nullptr || size < 16) return fail("too short (" + std::to_string(size) + " bytes)");
  if (std::memcmp(data, kMagic, 4) != 0) return fail("bad magic (not a TNPU program)");
  uint64_t stored = 0;
  for (int i = 0; i < 8; ++i) stored |= uint64_t(data[size - 8 + i]) << (8 * i);
  if (stored != fnv1a(data, size - 8)) return fail("checksum mismatch (corrupt or truncated)");

  Reader r{data, size - 8, 0, {}};
  r.pos = 4;
  const uint32_t version = r.u32("version");
  if (version != kVersion) return fail("unsupported version " + std::to_string(version) + " (expected " + std::to_string(kVersion) + ")");
  Program prog;
  prog.name = r.str("program name");
  prog.num_events = r.u32("event count");
  const uint32_t nbuf = r.u32("buffer count");
  if (!r.error.empty()) return fail(r.error);
  if (nbuf > (r.n - r.pos) / 13) return fail("buffer count " + std::to_string(nbuf) + " larger than the data");
  prog.buffers.resize(nbuf);
  for (auto& b : prog.buffers) {
    b.name = r.str("buffer name");
    b.bytes = r.u64("buffer size");
    b.writable = r.flag("buffer writable flag");
  }
  const uint64_t ninstr = r.u64("instruction count");
  if (!r.error.empty()) return fail(r.error);
  if (ninstr > r.n - r.pos) return fail("instruction count " + std::to_string(ninstr) + " larger than the data");
  prog.code.resize(size_t(ninstr));
  for (size_t i = 0; i < prog.code.size() && r.error.empty(); ++i) {
    Instr& in = prog.code[i];
    const uint8_t op = r.u8("opcode");
    if (!r.error.empty()) break;
    if (op < uint8_t(Opcode::kDmaLoad) || op > uint8_t(Opcode::kBarrier))
      return fail("instruction " + std::to_string(i) + ": unknown opcode " + std::to_string(op));
    in.op = Opcode(op);
    switch (in.op) {
      case Opcode::kDmaLoad:
      case Opcode::kDmaStore:
        in.dma.buffer = r.u32("dma"); in.dma.ddr_offset = r.u64("dma"); in.dma.ddr_stride = r.u64("dma");
        in.dma.rows = r.u32("dma"); in.dma.row_bytes = r.u32("dma"); in.dma.tcm = r.u32("dma");
        in.dma.tcm_stride = r.u32("dma"); in.dma.event = r.u32("dma");
        break;
      case Opcode::kMma: {
        in.mma.unit = r.u32("mma"); in.mma.a = r.u32("mma"); in.mma.lda = r.u32("mma"); in.mma.b = r.u32("mma");
        in.mma.ldb = r.u32("mma"); in.mma.c = r.u32("mma"); in.mma.ldc = r.u32("mma");
        const uint8_t f = r.u8("mma flags");
        if (r.error.empty() && (f & ~7) != 0) return fail("instruction " + std::to_string(i) + ": bad mma flags " + std::to_string(f));
        in.mma.acc = f & 1; in.mma.tb = f & 2; in.mma.tc = f & 4;
        break;
      }
      case Opcode::kVec: {
        const uint8_t v = r.u8("vec op");
        if (r.error.empty() && v >= kNumVecOps) return fail("instruction " + std::to_string(i) + ": unknown vector op " + std::to_string(v));
        in.vec.op = VecOp(v);
        in.vec.dst = r.u32("vec"); in.vec.a = r.u32("vec"); in.vec.b = r.u32("vec"); in.vec.c = r.u32("vec");
        in.vec.n = r.u32("vec"); in.vec.imm0 = r.f32("vec"); in.vec.imm1 = r.f32("vec");
        break;
      }
      case Opcode::kWait: in.sync.event = r.u32("wait"); break;
      case Opcode::kSignal: {
        in.sync.event = r.u32("signal");
        in.sync.units = r.u8("signal units");
        break;
      }
      case Opcode::kBarrier: break;
    }
  }
  if (!r.error.empty()) return fail(r.error);
  if (r.pos != r.n) return fail(std::to_string(r.n - r.pos) + " trailing bytes after the last instruction");
  return prog;
}

}  // namespace tandem::npu
