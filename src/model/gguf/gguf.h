// GGUF: the model file format of llama.cpp (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md).
//
// GgufFile maps a file read-only and validates everything before anything else looks at it:
// a GgufFile that opened is safe to index (every tensor lies inside the file, every count was
// checked against the bytes that remain). Errors are one line naming the file, field and value.
// GgufWriter writes the same format; llama.cpp loads what it writes.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/dtype.h"
#include "core/status.h"

namespace tandem::gguf {

enum class ValueType : uint32_t {
  UINT8 = 0, INT8 = 1, UINT16 = 2, INT16 = 3, UINT32 = 4, INT32 = 5, FLOAT32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, UINT64 = 10, INT64 = 11, FLOAT64 = 12,
};
std::string_view value_type_name(ValueType t);

struct Value;

// A typed array; arrays may nest (an ARRAY of ARRAYs).
struct Array {
  ValueType type = ValueType::UINT8;  // element type
  std::vector<Value> items;

  bool operator==(const Array& other) const;  // same element type and equal items
};

struct Value {
  using Storage = std::variant<uint8_t, int8_t, uint16_t, int16_t, uint32_t, int32_t, float, bool,
                               std::string, Array, uint64_t, int64_t, double>;
  Storage v;

  ValueType type() const;
  // Integer of any width, if it is an integer (bool excluded).
  std::optional<int64_t> as_int() const;
  // Float or double, if it is one.
  std::optional<double> as_float() const;
  const std::string* as_string() const { return std::get_if<std::string>(&v); }
  const Array* as_array() const { return std::get_if<Array>(&v); }
  const bool* as_bool() const { return std::get_if<bool>(&v); }

  // Same type and value (floats compare as floats: NaN != NaN, -0 == 0).
  bool operator==(const Value& other) const { return v == other.v; }
};

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> dims;  // ggml order: dims[0] is the innermost (contiguous) dimension
  DType type = DType::F32;
  uint64_t offset = 0;   // from the start of the data section, as stored
  uint64_t n_bytes = 0;  // derived from dims and type
  const uint8_t* data = nullptr;  // points into the mapping

  uint64_t n_elements() const;
};

// How an opened file's bytes are held in memory.
//   kHugePages: read once into anonymous memory advised for transparent huge pages. Decode streams
//               every float weight once per token; with 4 KiB file pages that walks a page table per
//               4 KiB (550k walks per token for a 2.2 GB model) and measured 10 vs 16.5 tok/s on
//               BF16 tinyllama-1.1b here. Also immune to the file shrinking under a mapping.
//   kMap:       mmap of the file: lazy and shared with the page cache (`--mmap`, TANDEM_MMAP=1).
//   kRead:      `--no-mmap`: read into memory as kHugePages (whatever the size or types) and never
//               mapped again, not even by release_resident(): the run holds the file's bytes and
//               keeps going whatever happens to the file on disk, at the cost of memory.
//   kAuto:      the default: kMap for files whose tensor bytes are mostly block-quantized (the cpu
//               device decodes those from its own repacked copy, so the file's bytes are read once)
//               or larger than half the physical memory, kHugePages otherwise (f32/f16/bf16).
enum class Residency { kAuto, kHugePages, kMap, kRead };
void set_default_residency(Residency r);  // what open() uses from now on
Residency default_residency();

// The caller keeps its own copy of bytes [p, p + n) of an open file (the cpu device's repacked
// decode weights) and no longer needs them resident: the whole pages inside go back to the file,
// so the process's memory holds one copy of each weight instead of two. The bytes stay readable and
// unchanged; a later touch reads them again from the page cache. Whole pages only: a huge-page
// copy's pages are replaced by a read-only mapping of the same file offsets; a mapped file's pages
// are dropped. Nothing happens (0 returned) where p is in no open file, or where the
// file has changed on disk since it was read. Returns the bytes released.
size_t release_resident(const void* p, size_t n);

class GgufFile {
 public:
  // Maps (or reads, per default_residency()) and validates a file.
  static Result<std::shared_ptr<GgufFile>> open(const std::string& path);
  // Validates a buffer the caller keeps alive (the fuzz target uses this); name appears in errors.
  static Result<std::shared_ptr<GgufFile>> from_memory(const uint8_t* data, size_t size,
                                                       std::string name);
  ~GgufFile();
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }  // file offset of the data section
  bool mapped() const { return mapped_; }                // kMap residency (else a copy in memory)
  // How the bytes are held, for `run -v`: "mapped", "read into memory (huge pages)" and so on.
  std::string residency_text() const;
  // release_resident() for a range of this file's bytes.
  size_t release(const uint8_t* p, size_t n) const;
  size_t file_size() const { return size_; }

  const std::vector<std::pair<std::string, Value>>& metadata() const { return metadata_; }
  const Value* find(std::string_view key) const;  // nullptr when absent

  // Typed getters; the error names the file, the key and what was found instead.
  Result<std::string> get_string(std::string_view key) const;
  Result<int64_t> get_int(std::string_view key) const;        // any integer type
  Result<double> get_float(std::string_view key) const;       // float32/float64 (or an integer)
  Result<bool> get_bool(std::string_view key) const;
  Result<const Array*> get_array(std::string_view key) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;  // nullptr when absent

 private:
  GgufFile() = default;
  Status parse();

  std::string path_;
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;
  bool mapped_ = false;  // true when base_ is our mmap (unmapped in the destructor)
  bool owned_ = false;   // true when base_ is our huge-page copy (unmapped in the destructor)
  size_t owned_bytes_ = 0;  // the copy's length, a whole number of huge pages
  // The file behind a huge-page copy, kept open so released ranges can map it back in place, with
  // what it was when read (a changed file is never mapped over the copy).
  int fd_ = -1;
  int64_t file_mtime_ns_ = 0;
  // The mapping_guard slot of the range that may be backed by the file (a mapping, or a copy that
  // release() maps file pages into): a SIGBUS there is the file changing on disk.
  int guard_slot_ = -1;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<TensorInfo> tensors_;
  // Name -> index lookups; the views point into metadata_/tensors_, which never change after parse.
  std::unordered_map<std::string_view, size_t> key_index_;
  std::unordered_map<std::string_view, size_t> tensor_index_;
};

class GgufWriter {
 public:
  // Fills exactly n_bytes at dst; called once, in tensor order, while the file is written, so a
  // multi-gigabyte model never has to sit in memory twice.
  using Producer = std::function<void(uint8_t* dst, size_t n_bytes)>;

  void set(std::string key, Value value);  // replaces an existing key, keeps insertion order
  void add_tensor(std::string name, std::vector<uint64_t> dims, DType type, Producer producer);
  void set_alignment(uint64_t alignment);  // also written as general.alignment when not 32
  Status write(const std::string& path) const;

 private:
  struct PendingTensor {
    std::string name;
    std::vector<uint64_t> dims;
    DType type;
    Producer producer;
  };
  uint64_t alignment_ = 32;
  std::vector<std::pair<std::string, Value>> metadata_;
  std::vector<PendingTensor> tensors_;
};

}  // namespace tandem::gguf
