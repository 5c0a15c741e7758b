#include "devices/opencl/cl_runtime.h"

#include <cstdlib>
#include <cstring>
#include <sstream>

#include "devices/opencl/cl_library.h"

namespace tandem::opencl {
namespace {

std::string platform_string(cl_platform_id p, cl_platform_info what) {
  size_t n = 0;
  if (clGetPlatformInfo(p, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetPlatformInfo(p, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

std::string device_string(cl_device_id d, cl_device_info what) {
  size_t n = 0;
  if (clGetDeviceInfo(d, what, 0, nullptr, &n) != CL_SUCCESS || n == 0) return {};
  std::string s(n, '\0');
  if (clGetDeviceInfo(d, what, n, s.data(), nullptr) != CL_SUCCESS) return {};
  while (!s.empty() && s.back() == '\0') s.pop_back();
  return s;
}

template <class T>
T device_value(cl_device_id d, cl_device_info what, T fallback = T{}) {
  T v{};
  return clGetDeviceInfo(d, what, sizeof v, &v, nullptr) == CL_SUCCESS ? v : fallback;
}

}  // namespace

// ---- Event -------------------------------------------------------------------------------

Event::Event(const Event& o) : e_(o.e_) {
  if (e_) clRetainEvent(e_);
}

Event& Event::operator=(const Event& o) {
  if (this != &o) {
    if (o.e_) clRetainEvent(o.e_);
    if (e_) clReleaseEvent(e_);
    e_ = o.e_;
  }
  return *this;
}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (e_) clReleaseEvent(e_);
    e_ = o.e_;
    o.e_ = nullptr;
  }
  return *this;
}

Event::~Event() {
  if (e_) clReleaseEvent(e_);
}

Status Event::wait() const {
  if (!e_) return Status::Ok();
  TANDEM_CL_CHECK(clWaitForEvents(1, &e_), "clWaitForEvents");
  cl_int exec = CL_COMPLETE;
  TANDEM_CL_CHECK(clGetEventInfo(e_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, nullptr),
                  "clGetEventInfo");
  return cl_status(exec < 0 ? exec : CL_SUCCESS, "command execution");
}

Result<bool> Event::complete() const {
  if (!e_) return true;
  cl_int exec = CL_COMPLETE;
  TANDEM_CL_CHECK(clGetEventInfo(e_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof exec, &exec, nullptr), "clGetEventInfo");
  if (exec < 0) return cl_status(exec, "command execution");
  return exec == CL_COMPLETE;
}

Result<uint64_t> Event::elapsed_ns() const {
  if (!e_) return InvalidArgument("opencl: elapsed_ns on an empty event");
  cl_ulong start = 0, end = 0;
  TANDEM_CL_CHECK(clGetEventProfilingInfo(e_, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr),
                  "clGetEventProfilingInfo");
  TANDEM_CL_CHECK(clGetEventProfilingInfo(e_, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr),
                  "clGetEventProfilingInfo");
  return uint64_t(end - start);
}

// ---- Buffer ------------------------------------------------------------------------------

Buffer::Buffer(Buffer&& o) noexcept
    : mem_(o.mem_), host_(o.host_), bytes_(o.bytes_), zero_copy_(o.zero_copy_) {
  o.mem_ = nullptr;
}

Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    if (mem_) clReleaseMemObject(mem_);
    mem_ = o.mem_;
    host_ = o.host_;
    bytes_ = o.bytes_;
    zero_copy_ = o.zero_copy_;
    o.mem_ = nullptr;
  }
  return *this;
}

Buffer::~Buffer() {
  if (mem_) clReleaseMemObject(mem_);
}

// ---- DeviceCaps --------------------------------------------------------------------------

std::string DeviceCaps::describe() const {
  std::ostringstream s;
  s << name << " (" << version << ", " << c_version << "; platform " << platform << "): "
    << compute_units << " compute units, max work-group " << max_work_group_size << ", local "
    << (local_mem_bytes >> 10) << " KiB, global " << (global_mem_bytes >> 20) << " MiB, "
    << "unified memory " << (host_unified_memory ? "yes" : "no") << ", SVM ";
  if (svm == 0) {
    s << "none";
  } else {
    if (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) s << "coarse-buffer ";
    if (svm & CL_DEVICE_SVM_FINE_GRAIN_BUFFER) s << "fine-buffer ";
    if (svm & CL_DEVICE_SVM_FINE_GRAIN_SYSTEM) s << "fine-system ";
    if (svm & CL_DEVICE_SVM_ATOMICS) s << "atomics";
  }
  s << ", base address alignment " << base_addr_align_bytes << " B, fp16 " << (fp16 ? "yes" : "no");
  return s.str();
}

// ---- Runtime -----------------------------------------------------------------------------

Result<std::shared_ptr<Runtime>> Runtime::create(const RuntimeOptions& options) {
  TANDEM_RETURN_IF_ERROR(load_opencl_library());
  cl_uint n_platforms = 0;
  const cl_int perr = clGetPlatformIDs(0, nullptr, &n_platforms);
  if (perr != CL_SUCCESS || n_platforms == 0) {
    return NotFound("opencl: no OpenCL platform found through " + opencl_library_path() +
                    " (install a driver: pocl-opencl-icd on Debian)");
  }
  std::vector<cl_platform_id> platforms(n_platforms);
  TANDEM_CL_CHECK(clGetPlatformIDs(n_platforms, platforms.data(), nullptr), "clGetPlatformIDs");

  std::string filter = options.device_filter;
  if (filter.empty()) {
    if (const char* env = std::getenv("TANDEM_OPENCL_DEVICE")) filter = env;
  }
  // Candidates: (platform, device, is_gpu, label).
  struct Cand {
    cl_platform_id p;
    cl_device_id d;
    bool gpu;
    std::string label;
  };
  std::vector<Cand> cands;
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
    std::vector<cl_device_id> devs(nd);
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, devs.data(), nullptr) != CL_SUCCESS) continue;
    for (cl_device_id d : devs) {
      const cl_device_type type = device_value<cl_device_type>(d, CL_DEVICE_TYPE);
      cands.push_back({p, d, (type & CL_DEVICE_TYPE_GPU) != 0,
                       platform_string(p, CL_PLATFORM_NAME) + " / " + device_string(d, CL_DEVICE_NAME)});
    }
  }
  if (cands.empty()) return NotFound("opencl: no OpenCL device found on any platform");
  const Cand* pick = nullptr;
  if (!filter.empty()) {
    for (const Cand& c : cands) {
      if (c.label.find(filter) != std::string::npos) {
        pick = &c;
        break;
      }
    }
    if (!pick) {
      std::string all;
      for (const Cand& c : cands) all += (all.empty() ? "" : "; ") + c.label;
      return NotFound("opencl: no device matches TANDEM_OPENCL_DEVICE=\"" + filter + "\" (have: " + all + ")");
    }
  } else {
    for (const Cand& c : cands) {
      if (c.gpu) {
        pick = &c;
        break;
      }
    }
    if (!pick) pick = &cands.front();
  }

  std::shared_ptr<Runtime> rt(new Runtime());
  rt->platform_ = pick->p;
  rt->device_ = pick->d;
  DeviceCaps& c = rt->caps_;
  c.platform = platform_string(pick->p, CL_PLATFORM_NAME) + " " + platform_string(pick->p, CL_PLATFORM_VERSION);
  c.name = device_string(pick->d, CL_DEVICE_NAME);
  c.version = device_string(pick->d, CL_DEVICE_VERSION);
  c.c_version = device_string(pick->d, CL_DEVICE_OPENCL_C_VERSION);
  c.extensions = device_string(pick->d, CL_DEVICE_EXTENSIONS);
  c.host_unified_memory = device_value<cl_bool>(pick->d, CL_DEVICE_HOST_UNIFIED_MEMORY) != CL_FALSE;
  c.svm = device_value<cl_device_svm_capabilities>(pick->d, CL_DEVICE_SVM_CAPABILITIES, 0);
  c.compute_units = device_value<cl_uint>(pick->d, CL_DEVICE_MAX_COMPUTE_UNITS);
  c.max_work_group_size = device_value<size_t>(pick->d, CL_DEVICE_MAX_WORK_GROUP_SIZE);
  c.local_mem_bytes = device_value<cl_ulong>(pick->d, CL_DEVICE_LOCAL_MEM_SIZE);
  c.global_mem_bytes = device_value<cl_ulong>(pick->d, CL_DEVICE_GLOBAL_MEM_SIZE);
  c.base_addr_align_bytes = device_value<cl_uint>(pick->d, CL_DEVICE_MEM_BASE_ADDR_ALIGN) / 8;
  c.fp16 = c.extensions.find("cl_khr_fp16") != std::string::npos;
  c.is_cpu = (device_value<cl_device_type>(pick->d, CL_DEVICE_TYPE) & CL_DEVICE_TYPE_CPU) != 0;

  cl_int err = CL_SUCCESS;
  rt->context_ = clCreateContext(nullptr, 1, &rt->device_, nullptr, nullptr, &err);
  TANDEM_CL_CHECK(err, "clCreateContext");
  rt->profiling_ = options.profiling;
  const cl_queue_properties props[] = {CL_QUEUE_PROPERTIES,
                                       options.profiling ? cl_queue_properties(CL_QUEUE_PROFILING_ENABLE) : 0, 0};
  rt->queue_ = clCreateCommandQueueWithProperties(rt->context_, rt->device_, props, &err);
  TANDEM_CL_CHECK(err, "clCreateCommandQueueWithProperties");
  return rt;
}

Runtime::~Runtime() {
  if (queue_) {
    clFinish(queue_);
    clReleaseCommandQueue(queue_);
  }
  if (context_) clReleaseContext(context_);
}

Result<cl_program> Runtime::build_program(std::string_view source, std::string_view options,
                                          std::string_view what) {
  const char* src = source.data();
  const size_t len = source.size();
  cl_int err = CL_SUCCESS;
  cl_program prog = clCreateProgramWithSource(context_, 1, &src, &len, &err);
  TANDEM_CL_CHECK(err, "clCreateProgramWithSource");
  const std::string opts(options);
  err = clBuildProgram(prog, 1, &device_, opts.c_str(), nullptr, nullptr);
  if (err != CL_SUCCESS) {
    size_t n = 0;
    std::string log;
    if (clGetProgramBuildInfo(prog, device_, CL_PROGRAM_BUILD_LOG, 0, nullptr, &n) == CL_SUCCESS && n > 0) {
      log.resize(n);
      clGetProgramBuildInfo(prog, device_, CL_PROGRAM_BUILD_LOG, n, log.data(), nullptr);
      while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
    }
    clReleaseProgram(prog);
    Status s = cl_status(err, "clBuildProgram " + std::string(what));
    return Status(s.code(), s.message() + "; build log:\n" + log);
  }
  return prog;
}

Result<Buffer> Runtime::wrap_host(void* host, size_t bytes, bool read_only) {
  if (!host || bytes == 0) return InvalidArgument("opencl: wrap_host needs memory (null or 0 bytes)");
  cl_int err = CL_SUCCESS;
  const cl_mem_flags flags = CL_MEM_USE_HOST_PTR | (read_only ? CL_MEM_READ_ONLY : CL_MEM_READ_WRITE);
  Buffer b;
  b.mem_ = clCreateBuffer(context_, flags, bytes, host, &err);
  TANDEM_CL_CHECK(err, "clCreateBuffer(CL_MEM_USE_HOST_PTR)");
  b.host_ = host;
  b.bytes_ = bytes;
  // Zero copy holds when a map hands back the host pointer itself.
  void* p = clEnqueueMapBuffer(queue_, b.mem_, CL_TRUE, CL_MAP_READ, 0, bytes, 0, nullptr, nullptr, &err);
  TANDEM_CL_CHECK(err, "clEnqueueMapBuffer");
  b.zero_copy_ = p == host;
  TANDEM_CL_CHECK(clEnqueueUnmapMemObject(queue_, b.mem_, p, 0, nullptr, nullptr), "clEnqueueUnmapMemObject");
  TANDEM_CL_CHECK(clFinish(queue_), "clFinish");
  if (!b.zero_copy_) add_bytes_copied(bytes);
  return b;
}

Result<void*> Runtime::map(const Buffer& b, size_t offset, size_t bytes, cl_map_flags flags) {
  if (offset + bytes > b.bytes()) return OutOfRange("opencl: map past the end of a buffer");
  cl_int err = CL_SUCCESS;
  void* p = clEnqueueMapBuffer(queue_, b.mem(), CL_TRUE, flags, offset, bytes, 0, nullptr, nullptr, &err);
  TANDEM_CL_CHECK(err, "clEnqueueMapBuffer");
  return p;
}

Status Runtime::unmap(const Buffer& b, void* mapped) {
  TANDEM_CL_CHECK(clEnqueueUnmapMemObject(queue_, b.mem(), mapped, 0, nullptr, nullptr), "clEnqueueUnmapMemObject");
  return Status::Ok();
}

Status Runtime::finish() {
  TANDEM_CL_CHECK(clFinish(queue_), "clFinish");
  return Status::Ok();
}

Status Runtime::flush() {
  TANDEM_CL_CHECK(clFlush(queue_), "clFlush");
  return Status::Ok();
}

}  // namespace tandem::opencl
