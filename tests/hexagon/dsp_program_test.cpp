// Compiled programs (codegen/): a DSP binary built from specs by clang-19 + ld.lld-19 runs each
// program bit for bit as the oracle computes it -- both loop orders, ragged chunk tails, several
// rows -- refuses a call whose shape is not the program's, and the generic binary (no programs)
// refuses the method.
#include <gtest/gtest.h>

#include <filesystem>

#include "hexagon/codegen/dsp_build.h"
#include "hexagon/host/dsp_session.h"
#include "hexagon_test_support.h"
#include "tests/model/test_models.h"

namespace tandem::hexagon {
namespace {

using testing::same_float;

// in 96: one chunk of 3 blocks; 1056: a full chunk of 32 and a tail of 1; 2048: two full chunks.
std::vector<HexagonProgramSpec> specs() {
  return {
      {"p_q8_ws", WeightFormat::kQ8_0, 3, 1056, 20, true},  {"p_q8_as", WeightFormat::kQ8_0, 2, 96, 7, false},
      {"p_q4_ws", WeightFormat::kQ4_0, 4, 1056, 9, true},   {"p_q4_as", WeightFormat::kQ4_0, 1, 2048, 5, false},
      {"p_q4_tail", WeightFormat::kQ4_0, 5, 160, 33, true},
  };
}

class DspPrograms : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto tc = find_hexagon_compiler();
    if (!tc.ok()) return;
    dir() = tandem::testing::process_temp_dir() + "/dsp_programs";
    auto b = build_dsp_programs(specs(), dir(), *tc, 2);
    ASSERT_TRUE(b.ok()) << b.status().message();
    binary() = b->binary;
  }
  void SetUp() override {
    TANDEM_HEXAGON_OR_SKIP();
    ASSERT_FALSE(binary().empty());
  }
  static std::string& dir() { static std::string d; return d; }
  static std::string& binary() { static std::string b; return b; }
};

TEST_F(DspPrograms, EachProgramIsTheOracleBitForBit) {
  DspSessionOptions o;
  o.dsp_binary = binary();
  auto s = DspSession::open(o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  DspSession& dsp = **s;
  const std::vector<HexagonProgramSpec> all = specs();
  for (uint32_t i = 0; i < all.size(); ++i) {
    const HexagonProgramSpec& p = all[i];
    dsp.reset_pool();
    const std::vector<float> x = testing::random_activations(p.rows, p.in, 100 + i);
    const std::vector<uint8_t> w = testing::quantized_weights(p.format, p.out, p.in, 200 + i);
    auto xb = dsp.allocate(x.size() * 4), sb = dsp.allocate(program_scratch_bytes(p)), wb = dsp.allocate(w.size(), 1),
         yb = dsp.allocate(size_t(p.rows) * p.out * 4);
    ASSERT_TRUE(xb.ok() && sb.ok() && wb.ok() && yb.ok());
    std::memcpy(dsp.host(*xb), x.data(), x.size() * 4);
    std::memcpy(dsp.host(*wb), w.data(), w.size());
    std::memset(dsp.host(*yb), 0xcd, yb->bytes);
    Status st = dsp.run_program(i, p.format, *xb, *sb, *wb, *yb, p.rows, p.in, p.out);
    ASSERT_TRUE(st.ok()) << p.name << ": " << st.message();
    auto q = quantize_activations(x, p.rows, p.in);
    ASSERT_TRUE(q.ok());
    auto want = matmul(p.format, w, p.out, *q);
    ASSERT_TRUE(want.ok());
    const float* got = reinterpret_cast<const float*>(dsp.host(*yb));
    for (size_t k = 0; k < want->size(); ++k)
      ASSERT_TRUE(same_float(got[k], (*want)[k])) << p.name << " output " << k << ": " << got[k] << " vs " << (*want)[k];
    // A call whose shape is not the program's is refused, and the DSP keeps serving.
    st = dsp.run_program(i, p.format, *xb, *sb, *wb, *yb, p.rows, p.in, p.out + 1);
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.message().find("bad scalar arguments"), std::string::npos) << st.message();
  }
  const Status past = dsp.run_program(uint32_t(all.size()), WeightFormat::kQ8_0, {}, {}, {}, {}, 1, 32, 1);
  EXPECT_FALSE(past.ok());
  EXPECT_TRUE(dsp.ping(5).ok()) << "refusals leave the DSP serving";
}

TEST_F(DspPrograms, TheGenericBinaryHasNoPrograms) {
  auto s = DspSession::open();
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto xb = (*s)->allocate(4 * 32);
  const Status st = (*s)->run_program(0, WeightFormat::kQ8_0, *xb, *xb, *xb, *xb, 1, 32, 1);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("no such method"), std::string::npos) << st.message();
}

TEST(DspProgramSource, NamesItsShapeAndOrderAndRefusesWhatTheDspCannotTake) {
  const std::string ws = kernel_source({"blk.0.ffn_up", WeightFormat::kQ4_0, 8, 1056, 64, true}, 3);
  EXPECT_NE(ws.find("void thx_program_3("), std::string::npos);
  EXPECT_NE(ws.find("#define TAIL 1u"), std::string::npos) << ws;
  EXPECT_NE(ws.find("for (uint32_t c = 0; c < OUT; ++c)\n    for (uint32_t r = 0;"), std::string::npos)
      << "weight-stationary: weight row outer";
  const std::string as = kernel_source({"x", WeightFormat::kQ8_0, 8, 64, 64, false}, 0);
  EXPECT_NE(as.find("for (uint32_t r = 0; r < ROWS; ++r)\n    for (uint32_t c = 0;"), std::string::npos) << as;
  EXPECT_NE(why_not_lowerable({"x", WeightFormat::kQ8_0, 1, 172, 8, false}).find("172 is not a multiple of 32"),
            std::string::npos);
  EXPECT_EQ(why_not_lowerable({"x", WeightFormat::kQ8_0, 1, 192, 8, false}), "");
}

}  // namespace
}  // namespace tandem::hexagon
