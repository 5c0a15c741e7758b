// The open files that release_resident() (gguf.h) looks a pointer up in.
#pragma once

namespace tandem::gguf {

class GgufFile;

void register_open_file(const GgufFile* file);    // once open() has succeeded
void unregister_open_file(const GgufFile* file);  // in the destructor; harmless if never registered

}  // namespace tandem::gguf
