// LeakSanitizer suppressions for the opencl tests (used only in -DTANDEM_SANITIZE=ON builds;
// harmless otherwise). PoCL keeps driver-lifetime allocations (its LLVM compiler instance,
// kernel caches, device threads' state) that it never frees before exit; they are reported
// as leaks from inside libpocl / libLLVM / the ICD loader, not from tandem's code.
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libpocl\n"
         "leak:libLLVM\n"
         "leak:libclang\n"
         "leak:libOpenCL\n"
         "leak:pocl\n";
}
