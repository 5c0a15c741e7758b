// The OpenCL library, loaded at run time instead of linked: one tandem binary runs on a machine
// with a GPU driver and on one without (a phone's vendor libOpenCL.so sits in /vendor, an
// x86-64 desktop's ICD loader in the system libraries). cl_library.cpp defines the OpenCL entry
// points the runtime and tests call; each forwards to the loaded library, and before a library
// is found each answers as a platform-less one would (CL_PLATFORM_NOT_FOUND_KHR, null handles).
#pragma once

#include <string>

#include "core/status.h"

namespace tandem::opencl {

// Loads the library once (later calls return the first outcome): $TANDEM_OPENCL_LIBRARY if set,
// else libOpenCL.so.1, libOpenCL.so and the Android vendor paths. NotFound names every path tried
// and the first failure; a library without an entry point tandem calls is refused by name.
Status load_opencl_library();
// The path of the loaded library ("" before a successful load_opencl_library()).
const std::string& opencl_library_path();

}  // namespace tandem::opencl
