// The OpenCL device's runtime: one platform/device, a context, an in-order command queue, program
// builds from the OpenCL C sources embedded in the binary, and zero-copy buffers over host memory.
//
// Design for the generic Device contract that will wrap this: work is enqueued asynchronously on
// the explicit queue and may hand back an Event (completion); finish() blocks until the queue is
// empty. Errors are one-line Status messages naming the OpenCL call (and the kernel, if any).
//
// Zero copy: buffers wrap host memory (the MemoryPool block, the mmap'd weights) with
// CL_MEM_USE_HOST_PTR; on a unified-memory device (PoCL on this CPU, mobile GPUs) the kernels
// read and write that memory in place. Every host<->device transfer this runtime performs, and
// every buffer whose mapping shows the driver keeps a shadow copy, adds to bytes_copied().
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 300
#endif
#include <CL/cl.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace tandem::opencl {

// "CL_INVALID_KERNEL_ARGS" for -52, "CL_UNKNOWN_ERROR(-1234)" for codes it does not know.
std::string cl_error_name(cl_int err);
// Ok when err == CL_SUCCESS; otherwise "opencl: <call>[ (kernel <k>)]: <CL_NAME> (<code>)".
Status cl_status(cl_int err, std::string_view call, std::string_view kernel = {});

#define TANDEM_CL_CHECK(expr, call) TANDEM_RETURN_IF_ERROR(::tandem::opencl::cl_status((expr), (call)))

// An owned cl_event (retained / released); empty when the work was not asked to signal one.
class Event {
 public:
  Event() = default;
  explicit Event(cl_event e) : e_(e) {}  // takes ownership
  Event(const Event& o);
  Event& operator=(const Event& o);
  Event(Event&& o) noexcept : e_(o.e_) { o.e_ = nullptr; }
  Event& operator=(Event&& o) noexcept;
  ~Event();

  bool valid() const { return e_ != nullptr; }
  cl_event get() const { return e_; }
  Status wait() const;                   // blocks until the command completes (or failed)
  Result<bool> complete() const;         // non-blocking: has the command finished (error if it failed)
  // Device time of the command in nanoseconds (start..end); needs a profiling queue.
  Result<uint64_t> elapsed_ns() const;

 private:
  cl_event e_ = nullptr;
};

struct DeviceCaps {
  std::string platform;        // platform name + version
  std::string name;            // device name
  std::string version;         // CL_DEVICE_VERSION
  std::string c_version;       // CL_DEVICE_OPENCL_C_VERSION
  std::string extensions;
  bool host_unified_memory = false;
  cl_device_svm_capabilities svm = 0;  // 0 when the device has none (or is OpenCL 1.x)
  cl_uint compute_units = 0;
  size_t max_work_group_size = 0;
  cl_ulong local_mem_bytes = 0;
  cl_ulong global_mem_bytes = 0;
  cl_uint base_addr_align_bytes = 0;  // CL_DEVICE_MEM_BASE_ADDR_ALIGN / 8
  bool fp16 = false;                  // cl_khr_fp16 (half arithmetic); vload_half works regardless
  bool is_cpu = false;                // CL_DEVICE_TYPE_CPU (PoCL's pthread device)

  std::string describe() const;  // one line
};

// A cl_mem plus what it wraps. Owned; moved, never copied.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer();

  cl_mem mem() const { return mem_; }
  void* host() const { return host_; }
  size_t bytes() const { return bytes_; }
  bool zero_copy() const { return zero_copy_; }  // the device works on host() itself

 private:
  friend class Runtime;
  cl_mem mem_ = nullptr;
  void* host_ = nullptr;
  size_t bytes_ = 0;
  bool zero_copy_ = false;
};

// A place in a buffer: kernels take the cl_mem plus an offset argument (not sub-buffers, whose
// origins must be aligned to CL_DEVICE_MEM_BASE_ADDR_ALIGN, which pool regions need not be).
struct BufRef {
  cl_mem mem = nullptr;
  size_t offset = 0;  // bytes

  BufRef at(size_t extra_bytes) const { return {mem, offset + extra_bytes}; }
};

struct RuntimeOptions {
  // Choose the first device whose "platform name / device name" contains this substring;
  // empty: the TANDEM_OPENCL_DEVICE environment variable, else the first GPU, else any device.
  std::string device_filter;
  bool profiling = false;  // CL_QUEUE_PROFILING_ENABLE (Event::elapsed_ns)
};

class Runtime {
 public:
  static Result<std::shared_ptr<Runtime>> create(const RuntimeOptions& options = {});
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const DeviceCaps& caps() const { return caps_; }
  cl_context context() const { return context_; }
  cl_device_id device() const { return device_; }
  cl_command_queue queue() const { return queue_; }
  bool profiling() const { return profiling_; }

  // Builds a program from OpenCL C source; a compile error carries the build log.
  Result<cl_program> build_program(std::string_view source, std::string_view options,
                                   std::string_view what);

  // Wraps host memory without copying (CL_MEM_USE_HOST_PTR). Zero copy is checked by mapping
  // the buffer: if the driver hands back another address it keeps a shadow copy, and the
  // buffer's bytes are added to bytes_copied().
  Result<Buffer> wrap_host(void* host, size_t bytes, bool read_only);
  // Wraps read-only host memory (mmap'd weights).
  Result<Buffer> wrap_host(const void* host, size_t bytes) {
    return wrap_host(const_cast<void*>(host), bytes, true);
  }

  // Makes host writes to [offset, offset+bytes) of a wrapped buffer visible to the device
  // (map for write, then unmap): no data moves on a zero-copy buffer. `fill` writes the data
  // through the pointer the map hands back.
  template <class F>
  Status host_write(const Buffer& b, size_t offset, size_t bytes, F&& fill);
  // Makes device writes visible to the host (map for read, unmap) and reads them via `use`.
  template <class F>
  Status host_read(const Buffer& b, size_t offset, size_t bytes, F&& use);

  Status finish();  // blocks until everything enqueued has completed
  Status flush();

  // Bytes moved between host and device memory by this runtime (explicit transfers and
  // driver shadow copies). Stays 0 on a unified-memory device.
  uint64_t bytes_copied() const { return bytes_copied_.load(); }
  void add_bytes_copied(uint64_t n) { bytes_copied_ += n; }

 private:
  Runtime() = default;
  Result<void*> map(const Buffer& b, size_t offset, size_t bytes, cl_map_flags flags);
  Status unmap(const Buffer& b, void* mapped);

  DeviceCaps caps_;
  cl_platform_id platform_ = nullptr;
  cl_device_id device_ = nullptr;
  cl_context context_ = nullptr;
  cl_command_queue queue_ = nullptr;
  bool profiling_ = false;
  std::atomic<uint64_t> bytes_copied_{0};
};

template <class F>
Status Runtime::host_write(const Buffer& b, size_t offset, size_t bytes, F&& fill) {
  auto p = map(b, offset, bytes, CL_MAP_WRITE_INVALIDATE_REGION);
  if (!p.ok()) return p.status();
  if (static_cast<char*>(*p) != static_cast<char*>(b.host()) + offset) add_bytes_copied(bytes);
  fill(*p);
  return unmap(b, *p);
}

template <class F>
Status Runtime::host_read(const Buffer& b, size_t offset, size_t bytes, F&& use) {
  auto p = map(b, offset, bytes, CL_MAP_READ);
  if (!p.ok()) return p.status();
  if (static_cast<char*>(*p) != static_cast<char*>(b.host()) + offset) add_bytes_copied(bytes);
  use(static_cast<const void*>(*p));
  return unmap(b, *p);
}

}  // namespace tandem::opencl
