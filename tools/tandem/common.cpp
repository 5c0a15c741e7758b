#include <cstdlib>
#include <thread>

#include "tools/tandem/commands.h"

namespace tandem::cli {

std::string data_dir() {
  if (const char* e = std::getenv("TANDEM_DATA_DIR"); e && *e) return e;
  return TANDEM_DEFAULT_DATA_DIR;
}

std::string user_cache_dir() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/tandem";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/tandem";
  return ".tandem-cache";
}

int default_threads() {
  const unsigned n = std::thread::hardware_concurrency();
  return n == 0 ? 4 : int(n);
}

}  // namespace tandem::cli
