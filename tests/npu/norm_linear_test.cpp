// The fused rmsnorm -> projections program (npu/oplib/norm_linear.h) against the double-precision
// reference, and what fusing buys: X read once, the normalized rows never written back.
#include <gtest/gtest.h>

#include <numeric>

#include "npu/executor.h"
#include "npu/oplib/elementwise.h"
#include "npu/oplib/matmul.h"
#include "npu/oplib/norm_linear.h"
#include "npu/oplib/norm_linear_check.h"
#include "test_util.h"

namespace tandem::npu {
namespace {

oplib::NormLinearSpec spec(uint32_t n, uint32_t in, std::vector<uint32_t> outs, DType w,
                           oplib::MatmulOrder order = oplib::MatmulOrder::kActivationStationary) {
  oplib::NormLinearSpec s;
  s.base.n = n;
  s.base.in = in;
  s.base.wtype = w;
  s.base.order = order;
  s.outs = std::move(outs);
  s.eps = 1e-5f;
  return s;
}

// The library's blocking for the widest projection, with the prologue's buffers after it.
Result<Program> lower(const oplib::NormLinearSpec& s, uint32_t nb = 0) {
  TANDEM_ASSIGN_OR_RETURN(oplib::MatmulPlan lib, oplib::plan_matmul(s.widest(), T()));
  TANDEM_ASSIGN_OR_RETURN(oplib::MatmulPlan p, oplib::block_norm_linear(s, T(), nb ? nb : lib.nb, lib.R, lib.kc));
  EXPECT_LE(p.tcm_used, T().tcm.bytes);
  return oplib::emit_norm_linear(s, p, T());
}

void expect_matches(const oplib::NormLinearSpec& s, uint32_t valid_rows, uint32_t nb = 0) {
  auto prog = lower(s, nb);
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  ASSERT_TRUE(verify(*prog, T()).ok()) << verify(*prog, T()).message();
  auto c = oplib::check_norm_linear_program(*prog, s, s.base.wtype, valid_rows, 7, T());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_TRUE(c->ok()) << "max error " << c->max_error_ratio << " of the tolerance, " << c->failures << " failures";
  uint64_t outputs = 0;
  for (uint32_t o : s.outs) outputs += uint64_t(valid_rows) * o;
  EXPECT_EQ(c->outputs_checked, outputs);  // every projection's every valid output was compared
}

TEST(OplibNormLinear, MatchesReferenceEveryFormatAndOrder) {
  for (DType w : {DType::F16, DType::Q8_0, DType::Q4_0})
    for (auto order : {oplib::MatmulOrder::kActivationStationary, oplib::MatmulOrder::kWeightStationary}) {
      SCOPED_TRACE(std::string(dtype_name(w)) + (order == oplib::MatmulOrder::kWeightStationary ? " naive" : " exchanged"));
      // Rows and projections not multiples of the tile; the last rows are bucket padding.
      expect_matches(spec(40, 96, {64, 40, 24}, w, order), 37);
    }
}

TEST(OplibNormLinear, SeveralNBlocksNormalizeEachBlock) {
  const uint32_t T32 = uint32_t(T().matrix.tile_dim);
  expect_matches(spec(3 * T32 + 5, 128, {96, 32}, DType::Q4_0), 3 * T32 + 5, T32);
}

TEST(OplibNormLinear, ReadsXOnceAndNeverWritesTheNormalizedRows) {
  const auto s = spec(64, 256, {256, 128, 128}, DType::Q4_0);
  auto fused = lower(s);
  ASSERT_TRUE(fused.ok()) << fused.status().message();
  // Executed for traffic only: zero operands are enough.
  auto traffic = [&](const Program& p) {
    std::vector<std::vector<uint8_t>> mem;
    Executor ex(T());
    for (size_t i = 0; i < p.buffers.size(); ++i) {
      mem.emplace_back(p.buffers[i].bytes, 0);
      if (p.buffers[i].writable) ex.bind(uint32_t(i), mem.back().data(), mem.back().size());
      else ex.bind_const(uint32_t(i), mem.back().data(), mem.back().size());
    }
    auto r = ex.run(p, {false, true});
    EXPECT_TRUE(r.ok()) << r.status().message();
    return r.ok() ? *r : ExecReport{};
  };
  const ExecReport f = traffic(*fused);
  ExecReport sep = traffic(*oplib::lower_elementwise(oplib::EltOp::kRmsNorm, 64, 256, T()));
  for (size_t i = 0; i < s.outs.size(); ++i) {
    const ExecReport m = traffic(*oplib::lower_matmul(s.projection(i), T()));
    sep.dma_bytes_in += m.dma_bytes_in;
    sep.dma_bytes_out += m.dma_bytes_out;
  }
  const uint64_t x = 64 * 256 * 2, y = 64ull * (256 + 128 + 128) * 2;
  EXPECT_EQ(f.dma_bytes_out, y);                        // only the projections leave the NPU
  EXPECT_EQ(sep.dma_bytes_out, y + x);                  // op by op, the normalized rows go back to DDR
  EXPECT_EQ(sep.dma_bytes_in - f.dma_bytes_in, 3 * x);  // ... and are read once per projection
}

TEST(OplibNormLinear, CheckCatchesAProgramWithoutTheNorm) {
  const auto s = spec(32, 64, {32, 32}, DType::F16);
  auto prog = lower(s);
  ASSERT_TRUE(prog.ok());
  Program broken = *prog;
  std::erase_if(broken.code, [](const Instr& i) { return i.op == Opcode::kVec && i.vec.op == VecOp::kRmsApply; });
  auto c = oplib::check_norm_linear_program(broken, s, DType::F16, 32, 7, T());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_FALSE(c->ok());
  EXPECT_GT(c->failures, 0u);
}

TEST(OplibNormLinear, RejectsWhatItCannotDo) {
  EXPECT_FALSE(oplib::block_norm_linear(spec(8, 64, {}, DType::F16), T(), 32, 1, 1).ok());
  auto bad_eps = spec(8, 64, {32}, DType::F16);
  bad_eps.eps = 0;
  EXPECT_FALSE(oplib::block_norm_linear(bad_eps, T(), 32, 1, 1).ok());
  EXPECT_FALSE(oplib::block_norm_linear(spec(8, 40, {32}, DType::Q4_0), T(), 32, 1, 1).ok());  // in not a block multiple
  auto s = spec(8, 64, {32, 32}, DType::F16);
  auto prog = lower(s);
  ASSERT_TRUE(prog.ok());
  auto three = s;
  three.outs.push_back(32);
  EXPECT_FALSE(oplib::check_norm_linear_program(*prog, three, DType::F16, 8, 1, T()).ok());  // buffers do not match
}

}  // namespace
}  // namespace tandem::npu
