// Linked into the test programs that use the cpu device as the oracle of other devices (OpenCL in
// fp32, the npu in fp16): the cpu decodes Q4_0 / Q8_0 in fp32 there, not with the int8 activations
// it uses by default, so a difference is the device's and not the cpu's arithmetic. The int8 path
// is checked against the fp64 reference by matmul_test and model_tests.
#include <gtest/gtest.h>

#include "devices/cpu/matmul/matmul.h"

namespace {

class Fp32DecodeOracle : public ::testing::Environment {
 public:
  void SetUp() override { tandem::cpu::set_decode_precision(tandem::cpu::DecodePrecision::kFp32); }
};

const auto* const kRegistered = ::testing::AddGlobalTestEnvironment(new Fp32DecodeOracle);

}  // namespace
