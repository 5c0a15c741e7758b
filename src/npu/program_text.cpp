// The text form of a Program: one line per declaration/instruction, `key=value` operands in a
// fixed order. Canonical output round-trips exactly; the parser is strict (unknown keys, missing
// keys, out-of-range numbers and trailing junk are errors naming the line).
#include <charconv>
#include <cstring>
#include <sstream>

#include "npu/program.h"

namespace tandem::npu {

namespace {

std::string fmt_float(float f) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), f);
  return std::string(buf, r.ptr);
}

std::string units_text(uint8_t u) {
  std::string s;
  if (u & kUnitDma) s += "dma";
  if (u & kUnitMatrix) s += s.empty() ? "mat" : "|mat";
  if (u & kUnitVector) s += s.empty() ? "vec" : "|vec";
  if (u & ~kUnitAll) {
    if (!s.empty()) s.push_back('|');
    s.append(std::to_string(int(u & ~kUnitAll)));
  }
  return s.empty() ? "0" : s;
}

std::vector<std::string_view> split(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

struct LineParser {
  std::vector<std::string_view> tok;
  size_t pos = 1;  // tok[0] is the mnemonic
  std::string error;

  std::string_view value(const char* key) {
    if (!error.empty()) return {};
    if (pos >= tok.size()) { error = std::string("missing operand '") + key + "'"; return {}; }
    const std::string_view t = tok[pos];
    const size_t klen = std::strlen(key);
    if (t.size() <= klen || t.substr(0, klen) != key || t[klen] != '=') {
      error = std::string("expected '") + key + "=...', got '" + std::string(t) + "'";
      return {};
    }
    ++pos;
    return t.substr(klen + 1);
  }
  uint64_t u(const char* key, uint64_t max) {
    const std::string_view v = value(key);
    if (!error.empty()) return 0;
    uint64_t x = 0;
    auto r = std::from_chars(v.data(), v.data() + v.size(), x);
    if (r.ec != std::errc() || r.ptr != v.data() + v.size() || x > max) {
      error = std::string("bad value for '") + key + "': '" + std::string(v) + "'";
      return 0;
    }
    return x;
  }
  uint32_t u32(const char* key) { return uint32_t(u(key, UINT32_MAX)); }
  bool flag(const char* key) { return u(key, 1) != 0; }
  float f(const char* key) {
    const std::string_view v = value(key);
    if (!error.empty()) return 0;
    float x = 0;
    auto r = std::from_chars(v.data(), v.data() + v.size(), x);
    if (r.ec != std::errc() || r.ptr != v.data() + v.size()) {
      error = std::string("bad value for '") + key + "': '" + std::string(v) + "'";
      return 0;
    }
    return x;
  }
  void end() {
    if (error.empty() && pos != tok.size()) error = "unexpected operand '" + std::string(tok[pos]) + "'";
  }
};

}  // namespace

std::string to_text(const Instr& in) {
  std::ostringstream o;
  switch (in.op) {
    case Opcode::kDmaLoad:
    case Opcode::kDmaStore: {
      const DmaArgs& d = in.dma;
      o << (in.op == Opcode::kDmaLoad ? "dma.load" : "dma.store") << " buf=" << d.buffer << " off=" << d.ddr_offset
        << " stride=" << d.ddr_stride << " rows=" << d.rows << " bytes=" << d.row_bytes << " tcm=" << d.tcm
        << " tstride=" << d.tcm_stride << " ev=" << d.event;
      break;
    }
    case Opcode::kMma: {
      const MmaArgs& m = in.mma;
      o << "mma u=" << m.unit << " a=" << m.a << " lda=" << m.lda << " b=" << m.b << " ldb=" << m.ldb << " c=" << m.c
        << " ldc=" << m.ldc << " acc=" << int(m.acc) << " tb=" << int(m.tb) << " tc=" << int(m.tc);
      break;
    }
    case Opcode::kVec: {
      const VecArgs& v = in.vec;
      o << "vec." << vec_op_name(v.op) << " dst=" << v.dst << " a=" << v.a << " b=" << v.b << " c=" << v.c
        << " n=" << v.n << " imm0=" << fmt_float(v.imm0) << " imm1=" << fmt_float(v.imm1);
      break;
    }
    case Opcode::kWait: o << "wait ev=" << in.sync.event; break;
    case Opcode::kSignal: o << "signal ev=" << in.sync.event << " units=" << units_text(in.sync.units); break;
    case Opcode::kBarrier: o << "barrier"; break;
    default: o << "invalid." << int(in.op); break;
  }
  return o.str();
}

std::string to_text(const Program& p) {
  std::ostringstream o;
  o << "program " << p.name << "\n";
  o << "events " << p.num_events << "\n";
  for (const auto& b : p.buffers) o << "buffer " << b.name << " bytes=" << b.bytes << (b.writable ? " rw" : " ro") << "\n";
  for (const auto& in : p.code) o << to_text(in) << "\n";
  return o.str();
}

Result<Program> parse_text(std::string_view text) {
  Program p;
  bool have_program = false, have_events = false;
  size_t line_no = 0, start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view line = text.substr(start, nl - start);
    start = nl + 1;
    ++line_no;
    if (const size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
    LineParser lp;
    lp.tok = split(line);
    if (lp.tok.empty()) continue;
    auto fail = [&](const std::string& m) {
      return InvalidArgument("npu program text line " + std::to_string(line_no) + ": " + m);
    };
    const std::string_view mn = lp.tok[0];
    if (!have_program) {
      if (mn != "program" || lp.tok.size() != 2) return fail("expected 'program <name>' first");
      p.name = std::string(lp.tok[1]);
      have_program = true;
      continue;
    }
    if (!have_events) {
      if (mn != "events") return fail("expected 'events <count>' after the program line");
      lp.pos = 1;
      if (lp.tok.size() != 2) return fail("expected 'events <count>'");
      uint32_t n = 0;
      auto r = std::from_chars(lp.tok[1].data(), lp.tok[1].data() + lp.tok[1].size(), n);
      if (r.ec != std::errc() || r.ptr != lp.tok[1].data() + lp.tok[1].size()) return fail("bad event count");
      p.num_events = n;
      have_events = true;
      continue;
    }
    Instr in;
    if (mn == "buffer") {
      if (!p.code.empty()) return fail("buffer declarations must precede instructions");
      if (lp.tok.size() != 4) return fail("expected 'buffer <name> bytes=<n> ro|rw'");
      BufferDecl b;
      b.name = std::string(lp.tok[1]);
      lp.pos = 2;
      b.bytes = lp.u("bytes", UINT64_MAX);
      if (!lp.error.empty()) return fail(lp.error);
      if (lp.tok[3] != "ro" && lp.tok[3] != "rw") return fail("expected ro or rw, got '" + std::string(lp.tok[3]) + "'");
      b.writable = lp.tok[3] == "rw";
      p.buffers.push_back(std::move(b));
      continue;
    } else if (mn == "dma.load" || mn == "dma.store") {
      in.op = mn == "dma.load" ? Opcode::kDmaLoad : Opcode::kDmaStore;
      DmaArgs& d = in.dma;
      d.buffer = lp.u32("buf");
      d.ddr_offset = lp.u("off", UINT64_MAX);
      d.ddr_stride = lp.u("stride", UINT64_MAX);
      d.rows = lp.u32("rows");
      d.row_bytes = lp.u32("bytes");
      d.tcm = lp.u32("tcm");
      d.tcm_stride = lp.u32("tstride");
      d.event = lp.u32("ev");
    } else if (mn == "mma") {
      in.op = Opcode::kMma;
      MmaArgs& m = in.mma;
      m.unit = lp.u32("u");
      m.a = lp.u32("a");
      m.lda = lp.u32("lda");
      m.b = lp.u32("b");
      m.ldb = lp.u32("ldb");
      m.c = lp.u32("c");
      m.ldc = lp.u32("ldc");
      m.acc = lp.flag("acc");
      m.tb = lp.flag("tb");
      m.tc = lp.flag("tc");
    } else if (mn.substr(0, 4) == "vec.") {
      in.op = Opcode::kVec;
      VecArgs& v = in.vec;
      int found = -1;
      for (int i = 0; i < kNumVecOps; ++i)
        if (vec_op_name(VecOp(i)) == mn.substr(4)) found = i;
      if (found < 0) return fail("unknown vector op '" + std::string(mn) + "'");
      v.op = VecOp(found);
      v.dst = lp.u32("dst");
      v.a = lp.u32("a");
      v.b = lp.u32("b");
      v.c = lp.u32("c");
      v.n = lp.u32("n");
      v.imm0 = lp.f("imm0");
      v.imm1 = lp.f("imm1");
    } else if (mn == "wait") {
      in.op = Opcode::kWait;
      in.sync.event = lp.u32("ev");
    } else if (mn == "signal") {
      in.op = Opcode::kSignal;
      in.sync.event = lp.u32("ev");
      const std::string_view u = lp.value("units");
      if (lp.error.empty()) {
        uint8_t mask = 0;
        size_t s = 0;
        while (s <= u.size()) {
          size_t bar = u.find('|', s);
          if (bar == std::string_view::npos) bar = u.size();
          const std::string_view part = u.substr(s, bar - s);
          if (part == "dma") mask |= kUnitDma;
          else if (part == "mat") mask |= kUnitMatrix;
          else if (part == "vec") mask |= kUnitVector;
          else { lp.error = "bad unit '" + std::string(part) + "' (dma, mat, vec joined by |)"; break; }
          s = bar + 1;
        }
        in.sync.units = mask;
      }
    } else if (mn == "barrier") {
      in.op = Opcode::kBarrier;
    } else {
      return fail("unknown instruction '" + std::string(mn) + "'");
    }
    lp.end();
    if (!lp.error.empty()) return fail(lp.error);
    p.code.push_back(in);
  }
  if (!have_program || !have_events) return InvalidArgument("npu program text: missing 'program' or 'events' line");
  return p;
}

}  // namespace tandem::npu
