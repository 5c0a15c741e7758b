// The OpenCL C sources of kernels/, embedded at build time (see CMakeLists.txt).
#include "devices/opencl/cl_ops.h"
#include "embedded_kernels.h"

namespace tandem::opencl {

const char* kernel_source() { return embedded::kKernelSource; }

}  // namespace tandem::opencl
