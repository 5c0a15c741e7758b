// GgufFile::parse: validates the whole file layout before anyone indexes into it.
// Order matters: every count is compared with the bytes that remain before memory is reserved
// for it, so a hostile header cannot make us allocate more than a small multiple of the file size.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "model/gguf/byte_cursor.h"
#include "model/gguf/ggml_type_names.h"
#include "model/gguf/gguf.h"
#include "model/gguf/gguf_format.h"
#include "model/gguf/gguf_value_io.h"
#include "model/gguf/str_cat.h"

namespace tandem::gguf {
namespace {

constexpr char kMagic[4] = {'G', 'G', 'U', 'F'};
// Smallest possible encodings, for bounding counts by the bytes left:
constexpr uint64_t kMinKvBytes = 8 + 4 + 1;                  // key length, type, a 1-byte value
constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;  // name len, n_dims, 1 dim, type, offset

std::string hex_bytes(const uint8_t* p, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < n; ++i) {
    if (i) out.push_back(' ');
    out.push_back(kHex[p[i] >> 4]);
    out.push_back(kHex[p[i] & 15]);
  }
  return out;
}

std::string tensor_field(std::string_view name) { return str_cat("tensor '", printable(name), "'"); }

std::string shape_text(const TensorInfo& t) {
  std::string s = "[";
  for (size_t i = 0; i < t.dims.size(); ++i) s += str_cat(i ? ", " : "", t.dims[i]);
  return s + "]";
}

// One parse: the cursor, and how to phrase failures as `FILE: FIELD: problem (value)`.
class Parser {
 public:
  Parser(const std::string& file_name, const uint8_t* data, size_t size)
      : file_name_(file_name), cursor_(data, size) {}

  ByteCursor& cursor() { return cursor_; }

  Status fail(std::string_view field, std::string_view problem,
              StatusCode code = StatusCode::kInvalidArgument) const {
    return Status(code, str_cat(file_name_, ": ", field, ": ", problem));
  }

  template <class T>
  Status read(std::string_view field, std::string_view what, T& out) {
    if (cursor_.read(out)) return Status::Ok();
    return fail(field, str_cat("file ends inside ", what, " (needs ", sizeof(T), " bytes at offset ",
                               cursor_.offset(), ", ", cursor_.remaining(), " left)"));
  }

  // A GGUF string: uint64 length, then that many bytes. The view points into the file.
  Status read_string(std::string_view field, std::string_view& out) {
    uint64_t len = 0;
    TANDEM_RETURN_IF_ERROR(read(field, "string length", len));
    if (cursor_.read_bytes(len, out)) return Status::Ok();
    return fail(field, str_cat("string length exceeds the bytes left (", len, " > ",
                               cursor_.remaining(), ")"));
  }

 private:
  const std::string& file_name_;
  ByteCursor cursor_;
};

// Every tensor's bytes are its own: sorted by where their data starts, each tensor must end before
// the next begins. A file whose tensors share bytes (two at one offset, or one whose type or shape
// was changed so that its data runs into the next) would hand one tensor's bytes to another's
// kernel, a silently wrong model. ggml goes further and requires the writer's exact layout (each
// offset the running sum of the padded sizes); gaps and another order are harmless, so tandem
// reads them. Ranges are file offsets [start, end), already checked to lie inside the file.
Status check_no_overlap(const Parser& p, const std::vector<TensorInfo>& tensors, uint64_t data_offset) {
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Stable: tensors at one offset are named in the order the file lists them.
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& a = tensors[order[k - 1]];
    const TensorInfo& b = tensors[order[k]];
    const uint64_t a_start = data_offset + a.offset, b_start = data_offset + b.offset;
    if (a_start == b_start) {
      return p.fail(str_cat("tensors '", printable(a.name), "' and '", printable(b.name), "'"),
                    str_cat("both start at offset ", a_start, " (each tensor's data must be its own)"));
    }
    const uint64_t a_end = a_start + a.n_bytes;  // no overflow: at most the file size
    if (a_end > b_start) {
      return p.fail(tensor_field(a.name),
                    str_cat("data [offset ", a_start, ", ", a.n_bytes, " bytes: ", dtype_name(a.type), " ",
                            shape_text(a), "] runs ", a_end - b_start, " bytes into tensor '", printable(b.name),
                            "' (at offset ", b_start, ")"));
    }
  }
  return Status::Ok();
}

}  // namespace

Status GgufFile::parse() {
  Parser p(path_, base_, size_);
  ByteCursor& c = p.cursor();

  // --- header ---
  if (size_ < sizeof(kMagic)) {
    return p.fail("magic", str_cat("file too short to be GGUF (", size_, " bytes)"));
  }
  if (std::memcmp(base_, kMagic, sizeof(kMagic)) != 0) {
    return p.fail("magic", str_cat("not a GGUF file, expected 47 47 55 46 \"GGUF\" (",
                                   hex_bytes(base_, sizeof(kMagic)), ")"));
  }
  char magic[4] = {};
  TANDEM_RETURN_IF_ERROR(p.read("magic", "magic", magic));
  TANDEM_RETURN_IF_ERROR(p.read("version", "version", version_));
  if (version_ == 1) {
    return p.fail("version", "GGUF v1 (32-bit counts) is not supported, re-convert the model (1)",
                  StatusCode::kUnsupported);
  }
  if (version_ != 2 && version_ != 3) {
    const uint32_t swapped = __builtin_bswap32(version_);
    const bool big_endian = swapped == 2 || swapped == 3;
    return p.fail("version",
                  str_cat("unsupported, tandem reads v2 and v3 (", version_,
                          big_endian ? ", a big-endian file?" : "", ")"),
                  StatusCode::kUnsupported);
  }
  uint64_t tensor_count = 0, kv_count = 0;
  TANDEM_RETURN_IF_ERROR(p.read("tensor_count", "tensor_count", tensor_count));
  TANDEM_RETURN_IF_ERROR(p.read("metadata_kv_count", "metadata_kv_count", kv_count));
  if (kv_count > c.remaining() / kMinKvBytes) {
    return p.fail("metadata_kv_count", str_cat("more entries than the file could hold (", kv_count,
                                               ", ", c.remaining(), " bytes left)"));
  }
  if (tensor_count > c.remaining() / kMinTensorInfoBytes) {
    return p.fail("tensor_count", str_cat("more tensors than the file could hold (", tensor_count,
                                          ", ", c.remaining(), " bytes left)"));
  }

  // --- metadata ---
  // Reserved up front so the key views stored in key_index_ never move.
  metadata_.reserve(size_t(kv_count));
  key_index_.reserve(size_t(kv_count));
  for (uint64_t i = 0; i < kv_count; ++i) {
    std::string_view key;
    TANDEM_RETURN_IF_ERROR(p.read_string(str_cat("metadata #", i, " key"), key));
    const std::string field = str_cat("key '", printable(key), "'");
    uint32_t type_id = 0;
    TANDEM_RETURN_IF_ERROR(p.read(field, "value type", type_id));
    Value value;
    if (auto err = read_value(c, type_id, 0, value)) return p.fail(field + err->where, err->problem);
    metadata_.emplace_back(std::string(key), std::move(value));
    auto [it, inserted] = key_index_.emplace(metadata_.back().first, metadata_.size() - 1);
    if (!inserted) {
      return p.fail(field, str_cat("duplicate key (metadata #", it->second, " and #", i, ")"));
    }
  }

  alignment_ = kDefaultAlignment;
  if (const Value* a = find("general.alignment")) {
    const uint32_t* a32 = std::get_if<uint32_t>(&a->v);
    if (!a32) return p.fail("general.alignment", str_cat("must be uint32 (", describe_value(*a), ")"));
    if (*a32 == 0 || (*a32 & (*a32 - 1)) != 0) {
      return p.fail("general.alignment", str_cat("must be a nonzero power of two (", *a32, ")"));
    }
    alignment_ = *a32;
  }

  // --- tensor infos ---
  tensors_.reserve(size_t(tensor_count));  // as above: tensor_index_ holds views of the names
  tensor_index_.reserve(size_t(tensor_count));
  for (uint64_t i = 0; i < tensor_count; ++i) {
    TensorInfo t;
    std::string_view name;
    const std::string name_field = str_cat("tensor #", i, " name");
    TANDEM_RETURN_IF_ERROR(p.read_string(name_field, name));
    if (name.empty()) return p.fail(name_field, "empty (\"\")");
    const std::string field = tensor_field(name);
    if (name.size() > kMaxNameBytes) {
      return p.fail(field, str_cat("name longer than ", kMaxNameBytes, " bytes (", name.size(), ")"));
    }
    t.name = std::string(name);

    uint32_t n_dims = 0;
    TANDEM_RETURN_IF_ERROR(p.read(field, "n_dims", n_dims));
    if (n_dims < 1 || n_dims > kMaxDims) {
      return p.fail(field, str_cat("n_dims must be 1..", kMaxDims, " (", n_dims, ")"));
    }
    t.dims.resize(n_dims);
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      const std::string dim_name = str_cat("dims[", d, "]");
      TANDEM_RETURN_IF_ERROR(p.read(field, dim_name, t.dims[d]));
      if (t.dims[d] == 0) return p.fail(field, str_cat(dim_name, " must be >= 1 (0)"));
      // ggml counts elements in int64_t, so the product must fit there too.
      if (__builtin_mul_overflow(n_elements, t.dims[d], &n_elements) ||
          n_elements > uint64_t(INT64_MAX)) {
        std::string dims;
        for (uint32_t k = 0; k <= d; ++k) dims += str_cat(k ? " x " : "", t.dims[k]);
        return p.fail(field, str_cat("element count overflows int64 (", dims, ")"));
      }
    }

    uint32_t type_id = 0;
    TANDEM_RETURN_IF_ERROR(p.read(field, "type", type_id));
    const std::optional<DTypeTraits> traits = dtype_traits(type_id);
    if (!traits) {
      const std::string_view ggml_name = ggml_type_name(type_id);
      return p.fail(field,
                    str_cat("unsupported tensor type (", type_id, " = ",
                            ggml_name.empty() ? std::string_view("unknown to ggml") : ggml_name, ")"),
                    StatusCode::kUnsupported);
    }
    t.type = DType(type_id);
    if (t.dims[0] % traits->block_size != 0) {
      return p.fail(field, str_cat("dims[0] must be a multiple of the ", traits->name, " block size ",
                                   traits->block_size, " (", t.dims[0], ")"));
    }
    // blocks * block_bytes: n_elements < 2^63, but block_bytes can still push it past 2^64.
    if (__builtin_mul_overflow(n_elements / traits->block_size, uint64_t(traits->block_bytes),
                               &t.n_bytes)) {
      return p.fail(field, str_cat("byte size overflows uint64 (", n_elements, " elements of ",
                                   traits->name, ")"));
    }

    TANDEM_RETURN_IF_ERROR(p.read(field, "offset", t.offset));
    if (t.offset % alignment_ != 0) {
      return p.fail(field, str_cat("data offset must be a multiple of the alignment ", alignment_,
                                   " (", t.offset, ")"));
    }
    tensors_.push_back(std::move(t));
    auto [it, inserted] = tensor_index_.emplace(tensors_.back().name, tensors_.size() - 1);
    if (!inserted) {
      return p.fail(field, str_cat("duplicate tensor name (tensor #", it->second, " and #", i, ")"));
    }
  }

  // --- data section ---
  // It starts at the next multiple of the alignment. Files without tensors (vocab-only files)
  // often end right after the infos, without that padding, which is fine: nothing is read there.
  const uint64_t infos_end = c.offset();
  const uint64_t padded = (infos_end + alignment_ - 1) / alignment_ * alignment_;  // both < 2^63
  if (tensors_.empty()) {
    data_offset_ = std::min<uint64_t>(padded, size_);
    return Status::Ok();
  }
  if (padded > size_) {
    return p.fail("data section", str_cat("padding to alignment ", alignment_,
                                          " extends past end of file (starts at ", padded,
                                          ", file is ", size_, " bytes)"));
  }
  data_offset_ = padded;
  for (TensorInfo& t : tensors_) {
    uint64_t start = 0, end = 0;
    if (__builtin_add_overflow(data_offset_, t.offset, &start) ||
        __builtin_add_overflow(start, t.n_bytes, &end) || end > size_) {
      // Offsets past 2^64 print as the stored relative offset; otherwise as a file offset.
      const bool overflow = start < data_offset_;
      return p.fail(tensor_field(t.name),
                    str_cat("data [offset ", overflow ? t.offset : start, ", ", t.n_bytes,
                            " bytes] extends past end of file (", size_, " bytes)"));
    }
    t.data = base_ + start;
  }
  return check_no_overlap(p, tensors_, data_offset_);
}

}  // namespace tandem::gguf
