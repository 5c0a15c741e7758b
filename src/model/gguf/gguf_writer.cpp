// GgufWriter: writes GGUF v3 the way llama.cpp lays it out, so llama.cpp can load our files:
// header, metadata in insertion order, tensor infos with offsets that are running sums of the
// aligned tensor sizes, zero padding to the alignment, then each tensor's bytes, each padded with
// zeros to the alignment (the last one too, as llama.cpp and gguf-py do).
//
// The file is written atomically (core/file_io.h: a temporary beside it, fsync, rename) and only
// over a regular file, so a failed or interrupted write never leaves a truncated file under the real
// name. Ctrl-C inside an InterruptScope stops it between tensors.
#include <cerrno>
#include <cstdio>
#include <memory>
#include <system_error>
#include <unordered_set>

#include "core/file_io.h"
#include "core/interrupt.h"
#include "model/gguf/gguf.h"
#include "model/gguf/gguf_format.h"
#include "model/gguf/gguf_value_io.h"
#include "model/gguf/str_cat.h"

namespace tandem::gguf {
namespace {

constexpr uint32_t kVersion = 3;
constexpr std::string_view kAlignmentKey = "general.alignment";

template <class T>
void append_raw(std::string& out, T x) {
  out.append(reinterpret_cast<const char*>(&x), sizeof(T));  // little-endian host (byte_cursor.h)
}

void append_string(std::string& out, std::string_view s) {
  append_raw<uint64_t>(out, s.size());
  out.append(s);
}

uint64_t align_up(uint64_t n, uint64_t alignment) { return (n + alignment - 1) / alignment * alignment; }

}  // namespace

void GgufWriter::set(std::string key, Value value) {
  if (key == kAlignmentKey) {
    // Keep the layout and the key in step; write() rejects a key that is not a valid uint32.
    if (const uint32_t* a = std::get_if<uint32_t>(&value.v)) alignment_ = *a;
  }
  for (auto& [existing_key, existing_value] : metadata_) {
    if (existing_key == key) {
      existing_value = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(std::move(key), std::move(value));
}

void GgufWriter::add_tensor(std::string name, std::vector<uint64_t> dims, DType type, Producer producer) {
  tensors_.push_back(PendingTensor{std::move(name), std::move(dims), type, std::move(producer)});
}

void GgufWriter::set_alignment(uint64_t alignment) {
  alignment_ = alignment;
  bool has_key = false;
  for (const auto& kv : metadata_) has_key |= kv.first == kAlignmentKey;
  // Out-of-range values are kept in alignment_ only, so write() can report them.
  if ((alignment != kDefaultAlignment || has_key) && alignment <= UINT32_MAX) {
    set(std::string(kAlignmentKey), Value{uint32_t(alignment)});
  }
}

Status GgufWriter::write(const std::string& path) const {
  auto fail = [&](std::string_view field, std::string_view problem) {
    return InvalidArgument(str_cat(path, ": ", field, ": ", problem));
  };

  // --- validate everything before creating the file ---
  if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0 || alignment_ > UINT32_MAX) {
    return fail("alignment", str_cat("must be a power of two that fits uint32 (", alignment_, ")"));
  }
  for (const auto& [key, value] : metadata_) {
    if (auto err = check_writable(value)) return fail(str_cat("key '", printable(key), "'", err->where), err->problem);
    if (key == kAlignmentKey) {
      const uint32_t* a = std::get_if<uint32_t>(&value.v);
      if (!a || *a != alignment_) {
        return fail(kAlignmentKey, str_cat("must be uint32 equal to the alignment ", alignment_, " (",
                                           describe_value(value), ")"));
      }
    }
  }

  std::vector<uint64_t> n_bytes(tensors_.size());
  std::vector<uint64_t> offsets(tensors_.size());
  uint64_t data_size = 0;
  std::unordered_set<std::string_view> names;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const PendingTensor& t = tensors_[i];
    const std::string field = str_cat("tensor '", printable(t.name), "'");
    if (t.name.empty() || t.name.size() > kMaxNameBytes) {
      return fail(field, str_cat("name must be 1..", kMaxNameBytes, " bytes (", t.name.size(), ")"));
    }
    if (!names.insert(t.name).second) return fail(field, str_cat("duplicate tensor name (#", i, ")"));
    const std::optional<DTypeTraits> traits = dtype_traits(uint32_t(t.type));
    if (!traits) return fail(field, str_cat("unsupported type (", uint32_t(t.type), ")"));
    if (t.dims.empty() || t.dims.size() > kMaxDims) {
      return fail(field, str_cat("n_dims must be 1..", kMaxDims, " (", t.dims.size(), ")"));
    }
    uint64_t n_elements = 1;
    for (size_t d = 0; d < t.dims.size(); ++d) {
      if (t.dims[d] == 0) return fail(field, str_cat("dims[", d, "] must be >= 1 (0)"));
      if (__builtin_mul_overflow(n_elements, t.dims[d], &n_elements) || n_elements > uint64_t(INT64_MAX)) {
        return fail(field, str_cat("element count overflows int64 (dims[", d, "] = ", t.dims[d], ")"));
      }
    }
    if (t.dims[0] % traits->block_size != 0) {
      return fail(field, str_cat("dims[0] must be a multiple of the ", traits->name, " block size ",
                                 traits->block_size, " (", t.dims[0], ")"));
    }
    if (!t.producer) return fail(field, "no producer (null)");
    n_bytes[i] = n_elements / traits->block_size * traits->block_bytes;
    offsets[i] = data_size;
    if (__builtin_add_overflow(data_size, align_up(n_bytes[i], alignment_), &data_size)) {
      return fail(field, str_cat("data section size overflows uint64 (", n_bytes[i], " bytes)"));
    }
  }

  // --- header, metadata and tensor infos, built in memory (small next to the data) ---
  std::string head;
  head.append("GGUF");
  append_raw<uint32_t>(head, kVersion);
  append_raw<uint64_t>(head, tensors_.size());
  append_raw<uint64_t>(head, metadata_.size());
  for (const auto& [key, value] : metadata_) {
    append_string(head, key);
    append_raw<uint32_t>(head, uint32_t(value.type()));
    append_value(head, value);
  }
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const PendingTensor& t = tensors_[i];
    append_string(head, t.name);
    append_raw<uint32_t>(head, uint32_t(t.dims.size()));
    for (uint64_t d : t.dims) append_raw<uint64_t>(head, d);
    append_raw<uint32_t>(head, uint32_t(t.type));
    append_raw<uint64_t>(head, offsets[i]);
  }
  head.resize(align_up(head.size(), alignment_), '\0');

  // --- stream it out ---
  TANDEM_ASSIGN_OR_RETURN(AtomicOutput out, AtomicOutput::create(path, "the GGUF file"));
  TANDEM_RETURN_IF_ERROR(out.write(head));

  // One tensor's bytes at a time: the buffer grows to the largest tensor, never to the model.
  std::vector<uint8_t> buffer;
  for (size_t i = 0; i < tensors_.size(); ++i) {
    if (interrupted()) return IoError(str_cat(path, ": interrupted; nothing written"));
    const uint64_t padded = align_up(n_bytes[i], alignment_);
    buffer.assign(size_t(padded), 0);  // zeroed: padding bytes are 0, and so is anything a producer skips
    tensors_[i].producer(buffer.data(), size_t(n_bytes[i]));
    TANDEM_RETURN_IF_ERROR(out.write(buffer.data(), buffer.size()));
  }
  TANDEM_RETURN_IF_ERROR(out.commit());
  return Status::Ok();
}

}  // namespace tandem::gguf
