#include "compile_cache/manifest.h"

#include <nlohmann/json.hpp>

#include "compile_cache/sha256.h"

namespace tandem::compile_cache {

using nlohmann::json;

std::string CacheKey::digest() const {
  return sha256_hex(model_hash + "\n" + target_hash + "\n" + driver_version + "\n" + quant_config);
}

const ProgramEntry* Manifest::find_program(const std::string& name) const {
  for (const ProgramEntry& p : programs)
    if (p.name == name) return &p;
  return nullptr;
}

std::string Manifest::to_json_text() const {
  json j;
  j["format_version"] = format_version;
  j["key"] = {{"model_hash", key.model_hash},
              {"target_hash", key.target_hash},
              {"driver_version", key.driver_version},
              {"quant_config", key.quant_config},
              {"digest", key.digest()}};
  j["model"] = model_name;
  j["target"] = target_name;
  j["buckets"] = buckets;
  j["variants"] = json::array();
  for (const VariantEntry& v : variants) {
    json fb = json::array();
    for (const FallbackEntry& f : v.fallbacks)
      fb.push_back({{"op", f.op}, {"device", f.device}, {"reason", f.reason}, {"switch_cost_s", f.switch_cost_s}});
    j["variants"].push_back({{"phase", v.phase},
                             {"rows", v.rows},
                             {"power_level", v.power_level},
                             {"power_cap_w", v.power_cap_w},
                             {"precision", v.precision},
                             {"programs", v.programs},
                             {"fallbacks", fb},
                             {"est_seconds", v.est_seconds},
                             {"exec_seconds", v.exec_seconds},
                             {"ddr_bytes", v.ddr_bytes},
                             {"compile_seconds", v.compile_seconds}});
  }
  j["programs"] = json::array();
  for (const ProgramEntry& p : programs) {
    json e = {{"name", p.name}, {"file", p.file}, {"sha256", p.sha256}, {"bytes", p.bytes}, {"kind", p.kind}, {"rows", p.rows},
              {"est_cycles", p.est_cycles}, {"max_error_ratio", p.max_error_ratio}};
    if (p.kind == "kv_append") {
      e["kv"] = {{"capacity", p.kv.capacity}, {"heads", p.kv.heads}, {"head_dim", p.kv.head_dim},
                 {"page_tokens", p.kv.page_tokens}, {"layout", p.kv.layout}, {"phase", p.kv.phase}};
    } else if (p.kind == "elementwise") {
      e["elementwise"] = {{"op", p.elementwise.op}, {"cols", p.elementwise.cols}, {"eps", p.elementwise.eps}};
    } else {
      e.update({{"in", p.in}, {"format", p.format}, {"source_quant", p.source_quant}, {"order", p.order},
                {"double_buffer", p.double_buffer}, {"double_buffer_out", p.double_buffer_out}, {"arrays", p.arrays}});
      if (p.kind == "norm_linear") e["norm_linear"] = {{"outs", p.norm_linear.outs}, {"eps", p.norm_linear.eps}};
      else e["out"] = p.out;
    }
    j["programs"].push_back(std::move(e));
  }
  if (has_hexagon) {
    auto file_json = [](const HexagonFile& f) { return json{{"file", f.file}, {"sha256", f.sha256}, {"bytes", f.bytes}}; };
    json h = {{"target", hexagon.target}, {"toolchain", hexagon.toolchain}, {"binary", file_json(hexagon.binary)},
              {"sources", json::array()}, {"objects", json::array()}, {"programs", json::array()}};
    for (const HexagonFile& f : hexagon.sources) h["sources"].push_back(file_json(f));
    for (const HexagonFile& f : hexagon.objects) h["objects"].push_back(file_json(f));
    for (const HexagonProgramEntry& p : hexagon.programs)
      h["programs"].push_back({{"index", p.index}, {"program", p.program}, {"rows", p.rows}, {"in", p.in}, {"out", p.out},
                               {"format", p.format}, {"order", p.order}});
    j["hexagon"] = std::move(h);
  }
  return j.dump(1) + "\n";
}

namespace {

// Strict field access: every error names the file and the JSON path.
struct Reader {
  const std::string& file;
  Status error;

  const json* field(const json& obj, const std::string& path, const char* name) {
    if (!error.ok()) return nullptr;
    if (!obj.is_object() || !obj.contains(name)) {
      error = InvalidArgument(file + ": missing field '" + path + name + "'");
      return nullptr;
    }
    return &obj.at(name);
  }
  std::string str(const json& o, const std::string& path, const char* name) {
    const json* v = field(o, path, name);
    if (!v) return {};
    if (!v->is_string()) {
      error = InvalidArgument(file + ": field '" + path + name + "' must be a string, got " + v->dump());
      return {};
    }
    return v->get<std::string>();
  }
  double num(const json& o, const std::string& path, const char* name) {
    const json* v = field(o, path, name);
    if (!v) return 0;
    if (!v->is_number()) {
      error = InvalidArgument(file + ": field '" + path + name + "' must be a number, got " + v->dump());
      return 0;
    }
    return v->get<double>();
  }
  uint64_t count(const json& o, const std::string& path, const char* name, uint64_t max) {
    const json* v = field(o, path, name);
    if (!v) return 0;
    if (!v->is_number_unsigned() || v->get<uint64_t>() > max) {
      error = InvalidArgument(file + ": field '" + path + name + "' must be an integer in 0.." + std::to_string(max) +
                              ", got " + v->dump());
      return 0;
    }
    return v->get<uint64_t>();
  }
  bool flag(const json& o, const std::string& path, const char* name) {
    const json* v = field(o, path, name);
    if (!v) return false;
    if (!v->is_boolean()) {
      error = InvalidArgument(file + ": field '" + path + name + "' must be true or false, got " + v->dump());
      return false;
    }
    return v->get<bool>();
  }
  const json* array(const json& o, const std::string& path, const char* name) {
    const json* v = field(o, path, name);
    if (v && !v->is_array()) {
      error = InvalidArgument(file + ": field '" + path + name + "' must be an array");
      return nullptr;
    }
    return v;
  }
};

constexpr uint64_t kMaxDim = 1u << 30;

// A file the manifest lists: a relative path inside the cache and a SHA-256 of 64 digits.
Status check_cache_file(const std::string& manifest, const std::string& path, const std::string& name,
                        const std::string& sha256) {
  if (name.empty() || name.find("..") != std::string::npos || name[0] == '/')
    return InvalidArgument(manifest + ": field '" + path + "file' must be a relative path inside the cache, got '" + name + "'");
  if (sha256.size() != 64)
    return InvalidArgument(manifest + ": field '" + path + "sha256' must be 64 hex digits, got '" + sha256 + "'");
  return Status::Ok();
}
constexpr size_t kMaxProjections = 16;  // a norm feeds q/k/v or gate/up: far fewer

}  // namespace

Result<Manifest> Manifest::from_json_text(const std::string& text, const std::string& file) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded()) return InvalidArgument(file + ": not valid JSON");
  Reader r{file, Status::Ok()};
  Manifest m;
  m.format_version = int(r.count(j, "", "format_version", 1000));
  if (r.error.ok() && m.format_version != 2)
    return InvalidArgument(file + ": format_version " + std::to_string(m.format_version) +
                           " (this tandem reads 2; recompile the cache with tandem compile)");
  if (const json* k = r.field(j, "", "key")) {
    m.key.model_hash = r.str(*k, "key.", "model_hash");
    m.key.target_hash = r.str(*k, "key.", "target_hash");
    m.key.driver_version = r.str(*k, "key.", "driver_version");
    m.key.quant_config = r.str(*k, "key.", "quant_config");
  }
  m.model_name = r.str(j, "", "model");
  m.target_name = r.str(j, "", "target");
  if (const json* b = r.array(j, "", "buckets"))
    for (size_t i = 0; i < b->size(); ++i) {
      if (!(*b)[i].is_number_unsigned() || (*b)[i].get<uint64_t>() == 0 || (*b)[i].get<uint64_t>() > kMaxDim)
        return InvalidArgument(file + ": field 'buckets[" + std::to_string(i) + "]' must be a positive row count, got " +
                               (*b)[i].dump());
      m.buckets.push_back(uint32_t((*b)[i].get<uint64_t>()));
    }
  if (const json* ps = r.array(j, "", "programs"))
    for (size_t i = 0; i < ps->size() && r.error.ok(); ++i) {
      const json& o = (*ps)[i];
      const std::string path = "programs[" + std::to_string(i) + "].";
      ProgramEntry p;
      p.name = r.str(o, path, "name");
      p.file = r.str(o, path, "file");
      p.sha256 = r.str(o, path, "sha256");
      p.bytes = r.count(o, path, "bytes", uint64_t(1) << 40);
      p.kind = r.str(o, path, "kind");
      p.rows = uint32_t(r.count(o, path, "rows", kMaxDim));
      if (p.kind == "matmul" || p.kind == "norm_linear") {
        p.in = uint32_t(r.count(o, path, "in", kMaxDim));
        if (p.kind == "matmul") p.out = uint32_t(r.count(o, path, "out", kMaxDim));
        p.format = r.str(o, path, "format");
        p.source_quant = r.str(o, path, "source_quant");
        p.order = r.str(o, path, "order");
        p.double_buffer = r.flag(o, path, "double_buffer");
        p.double_buffer_out = r.flag(o, path, "double_buffer_out");
        p.arrays = uint32_t(r.count(o, path, "arrays", 4096));
        const json* nl = p.kind == "norm_linear" ? r.field(o, path, "norm_linear") : nullptr;
        if (nl) {
          const std::string np = path + "norm_linear.";
          if (const json* outs = r.array(*nl, np, "outs")) {
            if (r.error.ok() && (outs->empty() || outs->size() > kMaxProjections))
              return InvalidArgument(file + ": field '" + np + "outs' must list 1.." + std::to_string(kMaxProjections) +
                                     " projections, got " + std::to_string(outs->size()));
            for (size_t k = 0; k < outs->size() && r.error.ok(); ++k) {
              if (!(*outs)[k].is_number_unsigned() || (*outs)[k].get<uint64_t>() == 0 || (*outs)[k].get<uint64_t>() > kMaxDim)
                return InvalidArgument(file + ": field '" + np + "outs[" + std::to_string(k) +
                                       "]' must be a positive dimension, got " + (*outs)[k].dump());
              p.norm_linear.outs.push_back(uint32_t((*outs)[k].get<uint64_t>()));
            }
          }
          p.norm_linear.eps = r.num(*nl, np, "eps");
          if (r.error.ok() && !(p.norm_linear.eps > 0))
            return InvalidArgument(file + ": field '" + np + "eps' must be > 0, got " + std::to_string(p.norm_linear.eps));
        }
      } else if (p.kind == "kv_append") {
        if (const json* kv = r.field(o, path, "kv")) {
          const std::string kp = path + "kv.";
          p.kv.capacity = uint32_t(r.count(*kv, kp, "capacity", kMaxDim));
          p.kv.heads = uint32_t(r.count(*kv, kp, "heads", kMaxDim));
          p.kv.head_dim = uint32_t(r.count(*kv, kp, "head_dim", kMaxDim));
          p.kv.page_tokens = uint32_t(r.count(*kv, kp, "page_tokens", kMaxDim));
          p.kv.layout = r.str(*kv, kp, "layout");
          p.kv.phase = r.str(*kv, kp, "phase");
          if (r.error.ok() && p.kv.layout != "token_major" && p.kv.layout != "head_major")
            return InvalidArgument(file + ": field '" + kp + "layout' must be token_major or head_major, got '" + p.kv.layout + "'");
        }
      } else if (p.kind == "elementwise") {
        if (const json* e = r.field(o, path, "elementwise")) {
          const std::string ep = path + "elementwise.";
          p.elementwise.op = r.str(*e, ep, "op");
          p.elementwise.cols = uint32_t(r.count(*e, ep, "cols", kMaxDim));
          p.elementwise.eps = r.num(*e, ep, "eps");
          if (r.error.ok() && p.elementwise.op != "rmsnorm" && p.elementwise.op != "swiglu" && p.elementwise.op != "add")
            return InvalidArgument(file + ": field '" + ep + "op' must be rmsnorm, swiglu or add, got '" + p.elementwise.op + "'");
        }
      } else if (r.error.ok()) {
        return InvalidArgument(file + ": field '" + path + "kind' must be matmul, kv_append, elementwise or norm_linear, got '" + p.kind + "'");
      }
      p.est_cycles = r.num(o, path, "est_cycles");
      p.max_error_ratio = r.num(o, path, "max_error_ratio");
      if (r.error.ok()) TANDEM_RETURN_IF_ERROR(check_cache_file(file, path, p.file, p.sha256));
      m.programs.push_back(std::move(p));
    }
  if (const json* vs = r.array(j, "", "variants"))
    for (size_t i = 0; i < vs->size() && r.error.ok(); ++i) {
      const json& o = (*vs)[i];
      const std::string path = "variants[" + std::to_string(i) + "].";
      VariantEntry v;
      v.phase = r.str(o, path, "phase");
      v.rows = uint32_t(r.count(o, path, "rows", kMaxDim));
      v.power_level = r.str(o, path, "power_level");
      v.power_cap_w = r.num(o, path, "power_cap_w");
      v.precision = r.str(o, path, "precision");
      v.est_seconds = r.num(o, path, "est_seconds");
      v.exec_seconds = r.num(o, path, "exec_seconds");
      v.ddr_bytes = r.count(o, path, "ddr_bytes", uint64_t(1) << 50);
      v.compile_seconds = r.num(o, path, "compile_seconds");
      if (const json* progs = r.array(o, path, "programs"))
        for (size_t k = 0; k < progs->size(); ++k) {
          if (!(*progs)[k].is_string() || !m.find_program((*progs)[k].get<std::string>()))
            return InvalidArgument(file + ": field '" + path + "programs[" + std::to_string(k) +
                                   "]' must name a program of the manifest, got " + (*progs)[k].dump());
          v.programs.push_back((*progs)[k].get<std::string>());
        }
      if (const json* fbs = r.array(o, path, "fallbacks"))
        for (size_t k = 0; k < fbs->size() && r.error.ok(); ++k) {
          const std::string fp = path + "fallbacks[" + std::to_string(k) + "].";
          FallbackEntry f;
          f.op = r.str((*fbs)[k], fp, "op");
          f.device = r.str((*fbs)[k], fp, "device");
          f.reason = r.str((*fbs)[k], fp, "reason");
          f.switch_cost_s = r.num((*fbs)[k], fp, "switch_cost_s");
          v.fallbacks.push_back(std::move(f));
        }
      m.variants.push_back(std::move(v));
    }
  if (r.error.ok() && j.is_object() && j.contains("hexagon")) {
    const json& h = j.at("hexagon");
    m.has_hexagon = true;
    m.hexagon.target = r.str(h, "hexagon.", "target");
    m.hexagon.toolchain = r.str(h, "hexagon.", "toolchain");
    auto read_file = [&](const json& o, const std::string& path) {
      HexagonFile f;
      f.file = r.str(o, path, "file");
      f.sha256 = r.str(o, path, "sha256");
      f.bytes = r.count(o, path, "bytes", uint64_t(1) << 40);
      if (r.error.ok()) r.error = check_cache_file(file, path, f.file, f.sha256);
      return f;
    };
    if (const json* b = r.field(h, "hexagon.", "binary")) m.hexagon.binary = read_file(*b, "hexagon.binary.");
    for (const char* list : {"sources", "objects"})
      if (const json* a = r.array(h, "hexagon.", list))
        for (size_t k = 0; k < a->size() && r.error.ok(); ++k) {
          HexagonFile f = read_file((*a)[k], std::string("hexagon.") + list + "[" + std::to_string(k) + "].");
          (std::string(list) == "sources" ? m.hexagon.sources : m.hexagon.objects).push_back(std::move(f));
        }
    if (const json* a = r.array(h, "hexagon.", "programs"))
      for (size_t k = 0; k < a->size() && r.error.ok(); ++k) {
        const std::string path = "hexagon.programs[" + std::to_string(k) + "].";
        HexagonProgramEntry p;
        p.index = uint32_t(r.count((*a)[k], path, "index", 1u << 20));
        p.program = r.str((*a)[k], path, "program");
        p.rows = uint32_t(r.count((*a)[k], path, "rows", kMaxDim));
        p.in = uint32_t(r.count((*a)[k], path, "in", kMaxDim));
        p.out = uint32_t(r.count((*a)[k], path, "out", kMaxDim));
        p.format = r.str((*a)[k], path, "format");
        p.order = r.str((*a)[k], path, "order");
        if (r.error.ok() && p.format != "q8_0" && p.format != "q4_0")
          r.error = InvalidArgument(file + ": field '" + path + "format' must be q8_0 or q4_0, got '" + p.format + "'");
        m.hexagon.programs.push_back(std::move(p));
      }
  }
  if (!r.error.ok()) return r.error;
  return m;
}

}  // namespace tandem::compile_cache
