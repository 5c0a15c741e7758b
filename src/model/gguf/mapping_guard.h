// Turns a SIGBUS on a model file's mapping into a clean error.
//
// A mapped file that is truncated (or rewritten in place) while tandem runs it makes the next
// read of a vanished page raise SIGBUS, which would kill the process with no word on why. While a
// range is guarded, a SIGBUS inside it prints one line naming the file and the byte that is gone,
// and exits 1. A SIGBUS anywhere else keeps the action it had before (the default: a crash).
#pragma once

#include <cstddef>
#include <string>

namespace tandem::gguf {

// Guards [begin, begin + size) for the file at `path` (installs the handler on first use) and
// returns the slot to unguard(), or -1 when every slot is taken (the range then stays unguarded).
int guard_mapping(const void* begin, size_t size, const std::string& path);
void unguard_mapping(int slot);

}  // namespace tandem::gguf
