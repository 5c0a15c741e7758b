// One DSP process for a test suite (a process start is ~20 ms under qemu), reopened if a test
// left it dead, and helpers that place host data in its pool.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "hexagon/host/dsp_session.h"
#include "hexagon_test_support.h"

namespace tandem::hexagon::testing {

class DspTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TANDEM_HEXAGON_OR_SKIP();
    if (!session() || !session()->alive()) {
      Result<std::unique_ptr<DspSession>> s = DspSession::open();
      ASSERT_TRUE(s.ok()) << s.status().message();
      session() = std::move(s).value();
    }
    session()->reset_pool();
  }
  static void TearDownTestSuite() { session().reset(); }

  static std::unique_ptr<DspSession>& session() {
    static std::unique_ptr<DspSession> s;
    return s;
  }
  DspSession& dsp() { return *session(); }

  // `bytes` of the pool whose offset is `shift` past a multiple of 128, holding `data`.
  PoolBuffer put(const void* data, size_t bytes, size_t shift = 0) {
    Result<PoolBuffer> b = dsp().allocate(bytes + shift, THX_ACT_ROW_ALIGN);
    EXPECT_TRUE(b.ok()) << b.status().message();
    PoolBuffer p{b->offset + uint32_t(shift), uint32_t(bytes)};
    if (data) std::memcpy(dsp().host(p), data, bytes);
    return p;
  }
  template <class T>
  PoolBuffer put(const std::vector<T>& v, size_t shift = 0) {
    return put(v.data(), v.size() * sizeof(T), shift);
  }
  template <class T>
  std::vector<T> get(PoolBuffer b) {
    std::vector<T> v(b.bytes / sizeof(T));
    std::memcpy(v.data(), dsp().host(b), v.size() * sizeof(T));
    return v;
  }

  // The DSP's matmul of reference-quantized activations; weights at `shift` past alignment.
  Result<std::vector<float>> dsp_matmul(WeightFormat f, const std::vector<uint8_t>& w, const QuantizedActivations& a,
                                        uint32_t out, size_t shift = 0) {
    const PoolBuffer wb = put(w, shift), qb = put(a.q), db = put(a.d);
    const PoolBuffer yb = put(nullptr, size_t(a.n) * out * 4);
    std::memset(dsp().host(yb), 0xcd, yb.bytes);
    TANDEM_RETURN_IF_ERROR(dsp().matmul(f, wb, qb, db, yb, a.n, a.in, out));
    return get<float>(yb);
  }
};

}  // namespace tandem::hexagon::testing
