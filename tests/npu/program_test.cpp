#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "npu/oplib/matmul.h"
#include "npu/program.h"
#include "test_util.h"

namespace tandem::npu {
namespace {

// A small program using every instruction kind.
Program sample() {
  Program p;
  p.name = "sample";
  const uint32_t x = p.add_buffer("x", 4096, false);
  const uint32_t y = p.add_buffer("y", 4096, true);
  p.num_events = 3;
  DmaArgs d;
  d.buffer = x; d.ddr_offset = 0; d.ddr_stride = 128; d.rows = 32; d.row_bytes = 64; d.tcm = 0; d.tcm_stride = 64; d.event = 0;
  p.emit(Instr::dma_load(d));
  d.ddr_offset = 64; d.tcm = 2048; d.event = 1;
  p.emit(Instr::dma_load(d));
  p.emit(Instr::wait(0));
  p.emit(Instr::wait(1));
  p.emit(Instr::matmul({0, 0, 64, 2048, 64, 4096, 64, false, true, false}));
  p.emit(Instr::vector({VecOp::kRmsApply, 8192, 4096, 0, 12288, 1024, 0.000244140625f, 1e-5f}));
  p.emit(Instr::vector({VecOp::kScale, 8192, 8192, 0, 0, 1024, -0.3f, 0.0f}));
  p.emit(Instr::signal(2, kUnitMatrix | kUnitVector));
  p.emit(Instr::wait(2));
  DmaArgs s = d;
  s.buffer = y; s.tcm = 8192; s.event = 0;
  p.emit(Instr::dma_store(s));
  p.emit(Instr::barrier());
  return p;
}

TEST(Program, SampleVerifies) { EXPECT_TRUE(verify(sample(), T()).ok()) << verify(sample(), T()).message(); }

TEST(Program, TextRoundTripIsExact) {
  const Program p = sample();
  const std::string text = to_text(p);
  auto q = parse_text(text);
  ASSERT_TRUE(q.ok()) << q.status().message() << "\n" << text;
  EXPECT_EQ(*q, p);
  EXPECT_EQ(to_text(*q), text);
  // A lowered operator too.
  auto mm = oplib::lower_matmul({33, 100, 70, DType::F16, oplib::MatmulOrder::kActivationStationary, true}, T());
  ASSERT_TRUE(mm.ok()) << mm.status().message();
  auto mq = parse_text(to_text(*mm));
  ASSERT_TRUE(mq.ok()) << mq.status().message();
  EXPECT_EQ(*mq, *mm);
  // Comments and blank lines are accepted on input.
  auto c = parse_text("# hi\nprogram p\n\nevents 1   # one\nbarrier\n");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->code.size(), 1u);
}

TEST(Program, TextParseErrorsNameTheLine) {
  const char* bad[] = {
      "program p\nevents 1\nfrobnicate\n",
      "program p\nevents 1\nwait\n",
      "program p\nevents 1\nwait ev=x\n",
      "program p\nevents 1\nwait ev=0 extra=1\n",
      "program p\nevents 1\nmma u=0 a=0 lda=64 b=0 ldb=64 c=0 ldc=64 acc=2 tb=0 tc=0\n",
      "program p\nevents 1\nsignal ev=0 units=gpu\n",
      "program p\nevents 1\nvec.nope dst=0 a=0 b=0 c=0 n=1 imm0=0 imm1=0\n",
      "program p\nevents 1\nwait ev=99999999999\n",
  };
  for (const char* text : bad) {
    auto r = parse_text(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_NE(r.status().message().find("line 3"), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(parse_text("").ok());
  EXPECT_FALSE(parse_text("events 1\n").ok());
}

TEST(Program, BinaryRoundTrip) {
  const Program p = sample();
  const auto bytes = serialize(p);
  auto q = deserialize(bytes);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(*q, p);
  auto mm = oplib::lower_matmul({5, 64, 96, DType::Q4_0, oplib::MatmulOrder::kWeightStationary, false}, T());
  ASSERT_TRUE(mm.ok());
  auto mq = deserialize(serialize(*mm));
  ASSERT_TRUE(mq.ok()) << mq.status().message();
  EXPECT_EQ(*mq, *mm);
}

TEST(Program, VerifyNegativesNameInstructionAndProblem) {
  struct Case { const char* what; std::function<void(Program&)> edit; std::string expect; };
  const std::vector<Case> cases = {
      {"tcm overflow", [](Program& p) { p.code[0].dma.tcm = uint32_t(T().tcm.bytes - 64); }, "instruction 0 (dma.load): dma TCM range"},
      {"mma misaligned", [](Program& p) { p.code[4].mma.a = 32; }, "instruction 4 (mma): A TCM address 32 not aligned"},
      {"mma past TCM", [](Program& p) { p.code[4].mma.c = uint32_t(T().tcm.bytes - 2048); p.code[4].mma.ldc = 128; }, "instruction 4 (mma): C TCM range"},
      {"bad unit", [](Program& p) { p.code[4].mma.unit = 99; }, "matrix unit 99 out of range"},
      {"event out of range", [](Program& p) { p.code[1].dma.event = 7; }, "instruction 1 (dma.load): event 7 out of range"},
      {"wait before any completion", [](Program& p) { p.code[2].sync.event = 2; }, "instruction 2 (wait): waits on event 2 that nothing"},
      {"undeclared buffer", [](Program& p) { p.code[0].dma.buffer = 5; }, "instruction 0 (dma.load): buffer 5 not declared"},
      {"store to ro", [](Program& p) { p.code[9].dma.buffer = 0; }, "instruction 9 (dma.store): store into read-only buffer 0 (x)"},
      {"ddr past buffer", [](Program& p) { p.code[1].dma.ddr_offset = 4000; }, "DDR range [4000, "},
      {"vec past TCM", [](Program& p) { p.code[5].vec.n = 1u << 30; }, "instruction 5 (vec): dst TCM range"},
      {"bad signal mask", [](Program& p) { p.code[7].sync.units = 0; }, "instruction 7 (signal): unit mask 0"},
      {"bad name", [](Program& p) { p.buffers[1].name = "a b"; }, "buffer 1: name 'a b'"},
  };
  for (const auto& c : cases) {
    Program p = sample();
    c.edit(p);
    const Status s = verify(p, T());
    ASSERT_FALSE(s.ok()) << c.what;
    EXPECT_NE(s.message().find(c.expect), std::string::npos) << c.what << ": " << s.message();
  }
}

TEST(Program, CorruptBinaryNeverCrashes) {
  auto mm = oplib::lower_matmul({5, 64, 64, DType::Q8_0, oplib::MatmulOrder::kActivationStationary, true}, T());
  ASSERT_TRUE(mm.ok());
  Program base = *mm;
  base.code.resize(std::min<size_t>(base.code.size(), 60));
  const std::vector<uint8_t> good = serialize(base);
  std::mt19937 rng(1234);
  int parsed_after_reseal = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> b = good;
    const int kind = iter % 3;
    if (kind == 0) {  // truncation
      b.resize(rng() % b.size());
    } else {          // byte flips
      const int flips = 1 + int(rng() % 4);
      for (int f = 0; f < flips; ++f) b[rng() % b.size()] ^= uint8_t(1 + rng() % 255);
    }
    auto r = deserialize(b);
    EXPECT_FALSE(r.ok()) << "corruption accepted at iteration " << iter;  // checksum catches it
    if (kind != 0) {  // now make the checksum right and fuzz the structural parser itself
      reseal_binary(b);
      auto q = deserialize(b);
      if (q.ok()) {
        ++parsed_after_reseal;
        (void)verify(*q, T());  // must not crash either
      } else {
        EXPECT_FALSE(q.status().message().empty());
      }
    }
  }
  // Garbage of every small size.
  for (size_t n = 0; n < 64; ++n) {
    std::vector<uint8_t> g(n);
    for (auto& x : g) x = uint8_t(rng());
    EXPECT_FALSE(deserialize(g).ok());
  }
  EXPECT_FALSE(deserialize(nullptr, 0).ok());
  RecordProperty("parsed_after_reseal", parsed_after_reseal);
}

}  // namespace
}  // namespace tandem::npu
