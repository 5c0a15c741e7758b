// Functional results of the operator library on the Executor against double-precision references.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/half.h"
#include "core/quant.h"
#include "npu/executor.h"
#include "npu/oplib/elementwise.h"
#include "npu/oplib/elementwise_check.h"
#include "npu/oplib/matmul.h"
#include "test_util.h"

namespace tandem::npu {
namespace {

using oplib::MatmulOrder;

std::vector<fp16_t> random_f16(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<fp16_t> v(n);
  for (auto& x : v) x = f32_to_fp16(nd(rng));
  return v;
}

struct Weights {
  std::vector<uint8_t> bytes;  // GGUF rows
  std::vector<float> deq;      // what the rows mean, [out, in]
};

Weights make_weights(DType t, uint32_t out, uint32_t in, std::mt19937& rng) {
  std::normal_distribution<float> nd(0.0f, 0.5f);
  std::vector<float> w(size_t(out) * in);
  for (auto& x : w) x = nd(rng);
  Weights r;
  r.bytes.resize(row_bytes(t, in) * out);
  r.deq.resize(w.size());
  for (uint32_t o = 0; o < out; ++o) {
    const float* src = &w[size_t(o) * in];
    uint8_t* dst = &r.bytes[row_bytes(t, in) * o];
    float* deq = &r.deq[size_t(o) * in];
    if (t == DType::F16) {
      auto* h = reinterpret_cast<fp16_t*>(dst);
      for (uint32_t i = 0; i < in; ++i) { h[i] = f32_to_fp16(src[i]); deq[i] = fp16_to_f32(h[i]); }
    } else if (t == DType::Q8_0) {
      quantize_row_q8_0(src, reinterpret_cast<BlockQ8_0*>(dst), in);
      dequantize_row_q8_0(reinterpret_cast<const BlockQ8_0*>(dst), deq, in);
    } else {
      quantize_row_q4_0(src, reinterpret_cast<BlockQ4_0*>(dst), in);
      dequantize_row_q4_0(reinterpret_cast<const BlockQ4_0*>(dst), deq, in);
    }
  }
  return r;
}

void check_matmul(uint32_t n, uint32_t in, uint32_t out, DType wt, MatmulOrder order, bool dbl) {
  SCOPED_TRACE(::testing::Message() << "n=" << n << " in=" << in << " out=" << out << " " << dtype_name(wt)
                                  << (order == MatmulOrder::kWeightStationary ? " naive" : " exchanged") << (dbl ? "" : " single"));
  std::mt19937 rng(n * 7919 + in * 31 + out);
  const Weights w = make_weights(wt, out, in, rng);
  const std::vector<fp16_t> x = random_f16(size_t(n) * in, rng);
  oplib::MatmulSpec spec{n, in, out, wt, order, dbl};
  auto pm = oplib::prepare_matmul(spec, T(), w.bytes.data(), w.bytes.size());
  ASSERT_TRUE(pm.ok()) << pm.status().message();
  EXPECT_GT(pm->prepare_seconds, T().prepare.fixed_s);

  const size_t guard = 64;
  std::vector<fp16_t> y(size_t(n) * out + guard, 0x7e00);  // NaN sentinel everywhere, guard after
  Executor ex(T());
  ex.bind_const(0, x.data(), x.size() * 2);
  ex.bind_const(1, pm->weight_pack.data(), pm->weight_pack.size());
  ex.bind(2, y.data(), size_t(n) * out * 2);
  auto rep = ex.run(pm->program);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  EXPECT_GT(rep->total_cycles, 0);

  const double ulp = std::ldexp(1.0, -11);
  const double roundings = double((in + 31) / 32) + 1;  // one fp16 rounding per in-tile
  int bad = 0;
  for (uint32_t r = 0; r < n; ++r)
    for (uint32_t o = 0; o < out; ++o) {
      double ref = 0, mag = 0;
      for (uint32_t i = 0; i < in; ++i) {
        const double p = double(fp16_to_f32(x[size_t(r) * in + i])) * w.deq[size_t(o) * in + i];
        ref += p;
        mag += std::fabs(p);
      }
      const double got = fp16_to_f32(y[size_t(r) * out + o]);
      const double tol = roundings * ulp * mag + 1e-6;
      if (!(std::fabs(got - ref) <= tol) && bad++ < 5)
        ADD_FAILURE() << "y[" << r << "," << o << "] = " << got << " ref " << ref << " tol " << tol;
    }
  EXPECT_EQ(bad, 0);
  for (size_t g = 0; g < guard; ++g) ASSERT_EQ(y[size_t(n) * out + g], 0x7e00) << "write past y";
}

TEST(OplibMatmul, F16AllShapesBothOrders) {
  for (uint32_t n : {1u, 5u, 32u, 33u, 100u})
    for (auto [in, out] : {std::pair{64u, 96u}, std::pair{100u, 70u}, std::pair{128u, 33u}})
      for (auto order : {MatmulOrder::kActivationStationary, MatmulOrder::kWeightStationary}) check_matmul(n, in, out, DType::F16, order, true);
}

// The NPU keeps f16 weights; f32 and bf16 rows are rounded to f16 when a graph is prepared, giving
// exactly the pack of the rounded rows.
TEST(OplibMatmul, F32AndBf16RowsPackAsTheirF16Rounding) {
  std::mt19937 rng(77);
  std::normal_distribution<float> nd(0.0f, 0.5f);
  const uint32_t in = 96, out = 40;
  std::vector<float> f32(size_t(in) * out);
  for (float& v : f32) v = nd(rng);
  std::vector<bf16_t> bf(f32.size());
  for (size_t i = 0; i < f32.size(); ++i) bf[i] = f32_to_bf16(f32[i]);
  for (DType source : {DType::F32, DType::BF16}) {
    std::vector<fp16_t> rounded(f32.size());
    for (size_t i = 0; i < f32.size(); ++i)
      rounded[i] = f32_to_fp16(source == DType::F32 ? f32[i] : bf16_to_f32(bf[i]));
    const void* src = source == DType::F32 ? static_cast<const void*>(f32.data()) : static_cast<const void*>(bf.data());
    const size_t bytes = row_bytes(source, in) * out;
    oplib::MatmulSpec spec{8, in, out, DType::F16, MatmulOrder::kActivationStationary, true};
    auto from_source = oplib::prepare_matmul(spec, T(), src, bytes, source);
    auto from_f16 = oplib::prepare_matmul(spec, T(), rounded.data(), rounded.size() * 2);
    ASSERT_TRUE(from_source.ok()) << from_source.status().message();
    ASSERT_TRUE(from_f16.ok());
    EXPECT_EQ(from_source->weight_pack, from_f16->weight_pack) << dtype_name(source);
  }
  // A pack format other than f16 cannot take f32 rows.
  oplib::MatmulSpec q4{8, in, out, DType::Q4_0, MatmulOrder::kActivationStationary, true};
  EXPECT_FALSE(oplib::prepare_matmul(q4, T(), f32.data(), f32.size() * 4, DType::F32).ok());
}

TEST(OplibMatmul, Q8_0AllShapes) {
  for (uint32_t n : {1u, 5u, 32u, 33u, 100u})
    for (auto [in, out] : {std::pair{64u, 96u}, std::pair{96u, 70u}})
      for (auto order : {MatmulOrder::kActivationStationary, MatmulOrder::kWeightStationary}) check_matmul(n, in, out, DType::Q8_0, order, true);
}

TEST(OplibMatmul, Q4_0AllShapes) {
  for (uint32_t n : {1u, 5u, 32u, 33u, 100u})
    for (auto [in, out] : {std::pair{64u, 96u}, std::pair{160u, 33u}})
      for (auto order : {MatmulOrder::kActivationStationary, MatmulOrder::kWeightStationary}) check_matmul(n, in, out, DType::Q4_0, order, true);
}

TEST(OplibMatmul, SingleBufferedAndMultiSlab) {
  check_matmul(5, 64, 96, DType::F16, MatmulOrder::kActivationStationary, false);
  check_matmul(33, 96, 64, DType::Q4_0, MatmulOrder::kWeightStationary, false);
  // Several panels (out > 32 tiles) and several slabs along `in` (kc < KT): in=2048 f16 gives
  // slabs of 4 in-tiles when R=32.
  check_matmul(3, 2048, 1100, DType::F16, MatmulOrder::kActivationStationary, true);
  check_matmul(2, 2048, 1100, DType::Q4_0, MatmulOrder::kWeightStationary, true);
}

TEST(OplibMatmul, SeveralNBlocksWhenXDoesNotFit) {
  // in = 16384: a 32-row tile of X is 1 MiB, half the TCM holds 4 tiles = 128 rows -> n=130 needs
  // two n-blocks (the second one partial).
  const uint32_t in = 16384;
  auto plan = oplib::plan_matmul({130, in, 40, DType::Q4_0, MatmulOrder::kActivationStationary, true}, T());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->nb, 128u);
  check_matmul(130, in, 40, DType::Q4_0, MatmulOrder::kActivationStationary, true);
}

TEST(OplibMatmul, RejectsWhatItCannotDo) {
  EXPECT_FALSE(oplib::plan_matmul({1, 100, 32, DType::Q4_0}, T()).ok());      // in not a block multiple
  EXPECT_FALSE(oplib::plan_matmul({1, 32, 32, DType::BF16}, T()).ok());       // weight type
  EXPECT_FALSE(oplib::plan_matmul({0, 32, 32, DType::F16}, T()).ok());
  EXPECT_FALSE(oplib::plan_matmul({1, 1u << 20, 32, DType::F16}, T()).ok());  // X tile over TCM/2
  std::vector<uint8_t> w(10);
  EXPECT_FALSE(oplib::pack_weights({1, 32, 32, DType::F16}, T(), w.data(), w.size()).ok());
}

TEST(Executor, ReportsUnboundAndSmallBuffers) {
  auto prog = oplib::lower_matmul({1, 32, 32, DType::F16}, T());
  ASSERT_TRUE(prog.ok());
  Executor ex(T());
  auto r = ex.run(*prog);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not bound"), std::string::npos) << r.status().message();
  std::vector<uint8_t> buf(4096);
  ex.bind_const(0, buf.data(), 10);
  ex.bind_const(1, buf.data(), buf.size());
  ex.bind(2, buf.data(), buf.size());
  r = ex.run(*prog);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bound to 10 B"), std::string::npos) << r.status().message();
  ex.bind_const(0, buf.data(), buf.size());
  ex.bind_const(2, buf.data(), buf.size());
  r = ex.run(*prog);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bound const"), std::string::npos) << r.status().message();
  // Timing-only runs need no buffers.
  EXPECT_TRUE(Executor(T()).run(*prog, {false, true}).ok());
}

// ---- vector ops ----

void check_elementwise(oplib::EltOp op, uint32_t n, uint32_t d, oplib::TcmWindow window = {}) {
  SCOPED_TRACE(::testing::Message() << oplib::elt_op_name(op) << " n=" << n << " d=" << d << " window " << window.base
                                    << "+" << window.bytes);
  auto prog = oplib::lower_elementwise(op, n, d, T(), 1e-5f, window);
  ASSERT_TRUE(prog.ok()) << prog.status().message();
  auto c = oplib::check_elementwise_program(*prog, op, n, d, 1e-5f, n * 13 + d, T());
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->outputs_checked, uint64_t(n) * d);
  EXPECT_EQ(c->failures, 0u) << "max error " << c->max_error_ratio << " of the tolerance";
  EXPECT_FALSE(c->wrote_past_output);
  // Every TCM access stays inside the window (the compiler's allocator placed it there).
  if (window.bytes > 0)
    for (const Instr& i : prog->code) {
      if (i.op == Opcode::kDmaLoad || i.op == Opcode::kDmaStore) {
        EXPECT_GE(i.dma.tcm, window.base);
        EXPECT_LE(i.dma.tcm + uint64_t(i.dma.rows - 1) * i.dma.tcm_stride + i.dma.row_bytes, window.base + window.bytes);
      }
    }
}

TEST(OplibElementwise, MatchesReference) {
  for (auto op : {oplib::EltOp::kRmsNorm, oplib::EltOp::kSwiglu, oplib::EltOp::kAdd}) {
    check_elementwise(op, 1, 4096);
    check_elementwise(op, 7, 100);
    check_elementwise(op, 33, 64);
  }
  // Several double-buffered chunks through the 8 MiB TCM.
  check_elementwise(oplib::EltOp::kRmsNorm, 600, 4096);
  check_elementwise(oplib::EltOp::kSwiglu, 400, 4096);
  // In a window the compiler placed: chunks of as many rows as fit it.
  for (auto op : {oplib::EltOp::kRmsNorm, oplib::EltOp::kSwiglu, oplib::EltOp::kAdd})
    check_elementwise(op, 50, 256, {4096, oplib::elementwise_tcm_bytes(op, 8, 256, T())});
  EXPECT_FALSE(oplib::lower_elementwise(oplib::EltOp::kAdd, 4, 256, T(), 1e-5f, {4096, 1024}).ok());  // not one row
  EXPECT_FALSE(oplib::lower_elementwise(oplib::EltOp::kAdd, 4, 256, T(), 1e-5f, {100, 0}).ok());     // misaligned
}

TEST(OplibElementwise, CheckCatchesAWrongProgram) {
  // An add program checked as swiglu must fail.
  auto prog = oplib::lower_elementwise(oplib::EltOp::kAdd, 8, 64, T());
  ASSERT_TRUE(prog.ok());
  auto c = oplib::check_elementwise_program(*prog, oplib::EltOp::kSwiglu, 8, 64, 1e-5f, 1, T());
  ASSERT_TRUE(c.ok());
  EXPECT_GT(c->failures, 0u);
}

TEST(Executor, VectorConvertAndUnpackOps) {
  // dst = cvt_f16(cvt_f32(x) ) round trip, fill, scale, unpack_q8 of one block.
  Program p;
  p.name = "vec";
  const uint32_t bx = p.add_buffer("x", 64 * 2, false);
  const uint32_t bq = p.add_buffer("q", sizeof(BlockQ8_0) * 2, false);
  const uint32_t by = p.add_buffer("y", 64 * 2 * 4, true);
  p.num_events = 2;
  p.emit(Instr::dma_load({bx, 0, 0, 1, 128, 0, 0, 0}));
  p.emit(Instr::dma_load({bq, 0, 0, 1, uint32_t(sizeof(BlockQ8_0) * 2), 1024, 0, 0}));
  p.emit(Instr::wait(0));
  p.emit(Instr::vector({VecOp::kCvtF16F32, 2048, 0, 0, 0, 64, 0, 0}));
  p.emit(Instr::vector({VecOp::kCvtF32F16, 128, 2048, 0, 0, 64, 0, 0}));
  p.emit(Instr::vector({VecOp::kScale, 256, 0, 0, 0, 64, 0.5f, 0}));
  p.emit(Instr::vector({VecOp::kFill, 384, 0, 0, 0, 64, 3.0f, 0}));
  p.emit(Instr::vector({VecOp::kUnpackQ8, 512, 1024, 0, 0, 64, 0, 0}));
  p.emit(Instr::signal(1, kUnitVector));
  p.emit(Instr::wait(1));
  p.emit(Instr::dma_store({by, 0, 0, 1, 512, 128, 0, 0}));
  std::mt19937 rng(5);
  const auto x = random_f16(64, rng);
  std::vector<float> qsrc(64);
  for (auto& v : qsrc) v = std::normal_distribution<float>(0, 1)(rng);
  BlockQ8_0 q[2];
  quantize_row_q8_0(qsrc.data(), q, 64);
  float deq[64];
  dequantize_row_q8_0(q, deq, 64);
  std::vector<fp16_t> y(256);
  Executor ex(T());
  ex.bind_const(bx, x.data(), 128);
  ex.bind_const(bq, q, sizeof(q));
  ex.bind(by, y.data(), 512);
  auto r = ex.run(p);
  ASSERT_TRUE(r.ok()) << r.status().message();
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(y[i], x[i]);
    EXPECT_EQ(y[64 + i], f32_to_fp16(fp16_to_f32(x[i]) * 0.5f));
    EXPECT_EQ(fp16_to_f32(y[128 + i]), 3.0f);
    EXPECT_EQ(y[192 + i], f32_to_fp16(deq[i]));
  }
}

}  // namespace
}  // namespace tandem::npu
