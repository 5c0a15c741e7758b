// The OpenCL entry points tandem calls, each forwarding to the library load_opencl_library()
// found (see cl_library.h). Every function is named once in TANDEM_CL_FUNCTIONS with its
// parameters as CL/cl.h declares them; the definitions below must match those declarations
// exactly, or the compiler refuses them as conflicting C functions. A new OpenCL call in tandem
// or its tests needs a line here (the link fails without one).
//
// Why these definitions do not clash with a driver's: an executable exports no symbol to shared
// libraries unless linked with --export-dynamic, so the ICD loader and the driver it loads keep
// calling their own functions; only tandem's calls land here.
#include "devices/opencl/cl_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <type_traits>
#include <vector>

#include "devices/opencl/cl_runtime.h"

#ifndef CL_PLATFORM_NOT_FOUND_KHR
#define CL_PLATFORM_NOT_FOUND_KHR -1001  // cl_khr_icd: what a loader with no platform returns
#endif

// X(name, (parameters), (arguments), errcode_ret parameter or nullptr)
#define TANDEM_CL_FUNCTIONS(X)                                                                                         \
  X(clGetPlatformIDs, (cl_uint n, cl_platform_id * platforms, cl_uint * count), (n, platforms, count), nullptr)        \
  X(clGetPlatformInfo, (cl_platform_id p, cl_platform_info what, size_t size, void* value, size_t* size_ret),          \
    (p, what, size, value, size_ret), nullptr)                                                                         \
  X(clGetDeviceIDs, (cl_platform_id p, cl_device_type type, cl_uint n, cl_device_id * devices, cl_uint * count),       \
    (p, type, n, devices, count), nullptr)                                                                             \
  X(clGetDeviceInfo, (cl_device_id d, cl_device_info what, size_t size, void* value, size_t* size_ret),                \
    (d, what, size, value, size_ret), nullptr)                                                                         \
  X(clCreateContext,                                                                                                   \
    (const cl_context_properties* props, cl_uint n, const cl_device_id* devices,                                       \
     void(CL_CALLBACK * notify)(const char*, const void*, size_t, void*), void* user, cl_int* err),                    \
    (props, n, devices, notify, user, err), err)                                                                       \
  X(clReleaseContext, (cl_context c), (c), nullptr)                                                                    \
  X(clCreateCommandQueueWithProperties, (cl_context c, cl_device_id d, const cl_queue_properties* props, cl_int* err), \
    (c, d, props, err), err)                                                                                           \
  X(clReleaseCommandQueue, (cl_command_queue q), (q), nullptr)                                                         \
  X(clFlush, (cl_command_queue q), (q), nullptr)                                                                       \
  X(clFinish, (cl_command_queue q), (q), nullptr)                                                                      \
  X(clCreateBuffer, (cl_context c, cl_mem_flags flags, size_t size, void* host, cl_int* err),                          \
    (c, flags, size, host, err), err)                                                                                  \
  X(clReleaseMemObject, (cl_mem m), (m), nullptr)                                                                      \
  X(clEnqueueMapBuffer,                                                                                                \
    (cl_command_queue q, cl_mem m, cl_bool blocking, cl_map_flags flags, size_t offset, size_t size, cl_uint n_wait,   \
     const cl_event* wait, cl_event* event, cl_int* err),                                                              \
    (q, m, blocking, flags, offset, size, n_wait, wait, event, err), err)                                              \
  X(clEnqueueUnmapMemObject,                                                                                           \
    (cl_command_queue q, cl_mem m, void* mapped, cl_uint n_wait, const cl_event* wait, cl_event* event),               \
    (q, m, mapped, n_wait, wait, event), nullptr)                                                                      \
  X(clCreateProgramWithSource,                                                                                         \
    (cl_context c, cl_uint count, const char** strings, const size_t* lengths, cl_int* err),                           \
    (c, count, strings, lengths, err), err)                                                                            \
  X(clBuildProgram,                                                                                                    \
    (cl_program p, cl_uint n, const cl_device_id* devices, const char* options,                                        \
     void(CL_CALLBACK * notify)(cl_program, void*), void* user),                                                       \
    (p, n, devices, options, notify, user), nullptr)                                                                   \
  X(clGetProgramBuildInfo,                                                                                             \
    (cl_program p, cl_device_id d, cl_program_build_info what, size_t size, void* value, size_t* size_ret),            \
    (p, d, what, size, value, size_ret), nullptr)                                                                      \
  X(clReleaseProgram, (cl_program p), (p), nullptr)                                                                    \
  X(clCreateKernelsInProgram, (cl_program p, cl_uint n, cl_kernel * kernels, cl_uint * count), (p, n, kernels, count), \
    nullptr)                                                                                                           \
  X(clGetKernelInfo, (cl_kernel k, cl_kernel_info what, size_t size, void* value, size_t* size_ret),                   \
    (k, what, size, value, size_ret), nullptr)                                                                         \
  X(clSetKernelArg, (cl_kernel k, cl_uint index, size_t size, const void* value), (k, index, size, value), nullptr)    \
  X(clReleaseKernel, (cl_kernel k), (k), nullptr)                                                                      \
  X(clEnqueueNDRangeKernel,                                                                                            \
    (cl_command_queue q, cl_kernel k, cl_uint dims, const size_t* offset, const size_t* global, const size_t* local,   \
     cl_uint n_wait, const cl_event* wait, cl_event* event),                                                           \
    (q, k, dims, offset, global, local, n_wait, wait, event), nullptr)                                                 \
  X(clWaitForEvents, (cl_uint n, const cl_event* events), (n, events), nullptr)                                        \
  X(clGetEventInfo, (cl_event e, cl_event_info what, size_t size, void* value, size_t* size_ret),                      \
    (e, what, size, value, size_ret), nullptr)                                                                         \
  X(clGetEventProfilingInfo, (cl_event e, cl_profiling_info what, size_t size, void* value, size_t* size_ret),         \
    (e, what, size, value, size_ret), nullptr)                                                                         \
  X(clRetainEvent, (cl_event e), (e), nullptr)                                                                         \
  X(clReleaseEvent, (cl_event e), (e), nullptr)

namespace tandem::opencl {
namespace {

struct Api {
#define TANDEM_CL_POINTER(name, params, args, err) decltype(&::name) name = nullptr;
  TANDEM_CL_FUNCTIONS(TANDEM_CL_POINTER)
#undef TANDEM_CL_POINTER
};

struct Library {
  Status status = NotFound("opencl: the OpenCL library was not loaded yet");
  std::string path;
  Api api;
  bool loaded = false;
};

Library& library() {
  static Library lib;
  return lib;
}

// Where a driver's library lives: the ICD loader's soname (Debian's ocl-icd, any desktop), its
// development link, and Android's vendor and system paths (64-bit processes).
std::vector<std::string> candidate_paths() {
  if (const char* e = std::getenv("TANDEM_OPENCL_LIBRARY"); e && *e) return {e};
  return {"libOpenCL.so.1", "libOpenCL.so", "/vendor/lib64/libOpenCL.so", "/system/vendor/lib64/libOpenCL.so",
          "/system/lib64/libOpenCL.so"};
}

Status load_once(Library& lib) {
  std::string tried, first_error;
  for (const std::string& path : candidate_paths()) {
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      tried += (tried.empty() ? "" : ", ") + path;
      if (first_error.empty()) {
        const char* e = dlerror();
        first_error = e ? e : path + ": cannot be opened";
      }
      continue;
    }
    Api api;
    std::string missing;
#define TANDEM_CL_RESOLVE(name, params, args, err)                      \
  api.name = reinterpret_cast<decltype(&::name)>(dlsym(handle, #name)); \
  if (!api.name) missing += std::string(missing.empty() ? "" : ", ") + #name;
    TANDEM_CL_FUNCTIONS(TANDEM_CL_RESOLVE)
#undef TANDEM_CL_RESOLVE
    if (!missing.empty()) {
      dlclose(handle);
      return Unsupported("opencl: " + path + " lacks " + missing +
                         " (tandem needs an OpenCL 2.0 or later library and driver)");
    }
    lib.api = api;
    lib.path = path;
    lib.loaded = true;
    return Status::Ok();
  }
  return NotFound("opencl: no OpenCL library found (tried " + tried + "; " + first_error +
                  "): install an OpenCL driver (pocl-opencl-icd on Debian), or point TANDEM_OPENCL_LIBRARY at one");
}

const Api* loaded_api() {
  static std::once_flag once;
  std::call_once(once, [] { library().status = load_once(library()); });
  return library().loaded ? &library().api : nullptr;
}

// What an entry point answers before any library is loaded: the error a loader without a
// platform gives, and no object.
template <class R>
R not_loaded(cl_int* err) {
  if (err) *err = CL_PLATFORM_NOT_FOUND_KHR;
  if constexpr (std::is_pointer_v<R>) {
    return nullptr;
  } else {
    return CL_PLATFORM_NOT_FOUND_KHR;
  }
}

template <class F>
struct ReturnOf;
template <class R, class... A>
struct ReturnOf<R (*)(A...)> {
  using type = R;
};

}  // namespace

Status load_opencl_library() {
  loaded_api();
  return library().status;
}

const std::string& opencl_library_path() { return library().path; }

}  // namespace tandem::opencl

#define TANDEM_CL_DEFINE(name, params, args, err)                                                 \
  extern "C" ::tandem::opencl::ReturnOf<decltype(&::name)>::type CL_API_CALL name params {        \
    using R = ::tandem::opencl::ReturnOf<decltype(&::name)>::type;                                \
    if (const ::tandem::opencl::Api* api = ::tandem::opencl::loaded_api()) return api->name args; \
    return ::tandem::opencl::not_loaded<R>(err);                                                  \
  }
TANDEM_CL_FUNCTIONS(TANDEM_CL_DEFINE)
#undef TANDEM_CL_DEFINE
