// `tandem buckets --lengths DIST --count K [--json]`: static-shape length buckets for a length
// distribution (buckets/bucket_optimizer.h), beside powers of two, every 128 and one bucket.
#include <cstdio>
#include <iostream>

#include <nlohmann/json.hpp>

#include "buckets/bucket_optimizer.h"
#include "buckets/layer_latency.h"
#include "model/gen_model.h"
#include "tools/tandem/commands.h"
#include "tools/tandem/numeric_options.h"

namespace tandem::cli {

Command add_buckets(CLI::App& app) {
  struct Opts {
    std::string lengths = "heavy-tail", target, preset = "llama3.2-1b";
    int count = 6;
    int64_t granularity = 128;
    double variant_ms = 0, padding_ms = 0;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  CLI::App* sub = app.add_subcommand("buckets", "Choose static-shape length buckets for a length distribution");
  sub->add_option("--lengths", o->lengths, "heavy-tail | uniform:LO-HI | pareto:SHAPE:LO-HI | a histogram file ('length weight' lines)")
      ->capture_default_str();
  sub->add_option("--count", o->count, "at most this many buckets, 1..64")->transform(integer_in(1, 64))->capture_default_str();
  sub->add_option("--granularity", o->granularity, "candidate boundaries are multiples of this, 1..65536")->transform(integer_in(1, 65536))->capture_default_str();
  sub->add_option("--target", o->target, "NPU target JSON (default: data/npu/hexagon-v75.json)");
  sub->add_option("--model-preset", o->preset, "model whose decoder layer the latency proxy times")->capture_default_str();
  sub->add_option("--variant-cost-ms", o->variant_ms, "objective cost per bucket (code size, compile, cache), 0..1e9")->transform(real_in({0, 1e9}))->capture_default_str();
  sub->add_option("--padding-cost-ms", o->padding_ms, "objective cost per padded token beyond its latency, 0..1e9")->transform(real_in({0, 1e9}))->capture_default_str();
  sub->add_flag("--json", o->json, "print JSON");
  return {sub, [o]() -> Status {
            if (o->granularity < 1 || o->granularity > 65536) return InvalidArgument("--granularity: must be in 1..65536");
            if (!(o->variant_ms >= 0) || !(o->padding_ms >= 0)) return InvalidArgument("--variant-cost-ms, --padding-cost-ms: must be >= 0");
            TANDEM_ASSIGN_OR_RETURN(buckets::LengthDistribution d, buckets::LengthDistribution::parse(o->lengths));
            TANDEM_ASSIGN_OR_RETURN(npu::TargetModel t, o->target.empty() ? npu::TargetModel::load_default() : npu::TargetModel::load(o->target));
            TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<Model> model, shape_only_preset(o->preset, DType::Q4_0));
            const auto layer = buckets::npu_layer_latency(t, *model);
            buckets::BucketObjective obj;
            obj.latency = [&](int64_t b) { return layer(b) * 1e3; };  // ms
            obj.variant_weight = o->variant_ms;
            obj.padding_weight = o->padding_ms;
            const std::vector<int64_t> cands = buckets::candidate_boundaries(d, o->granularity);
            TANDEM_ASSIGN_OR_RETURN(buckets::BucketSet opt, buckets::optimize_buckets(d, cands, o->count, obj));
            TANDEM_ASSIGN_OR_RETURN(buckets::BucketSet pow2, buckets::evaluate_buckets(d, buckets::pow2_boundaries(d, o->granularity), obj, "pow2"));
            TANDEM_ASSIGN_OR_RETURN(buckets::BucketSet every, buckets::evaluate_buckets(d, buckets::every_boundaries(d, o->granularity), obj,
                                                                                          "every" + std::to_string(o->granularity)));
            TANDEM_ASSIGN_OR_RETURN(buckets::BucketSet single, buckets::evaluate_buckets(d, buckets::single_boundary(d, o->granularity), obj, "single"));
            const std::vector<const buckets::BucketSet*> all = {&opt, &pow2, &every, &single};
            if (o->json) {
              auto js = [](const buckets::BucketSet& s) {
                return nlohmann::json{{"boundaries", s.boundaries}, {"padding_pct", s.padding_pct}, {"latency_proxy_ms", s.expected_latency},
                                      {"objective", s.objective}, {"variants", s.boundaries.size()}};
              };
              nlohmann::json j = {{"lengths", d.name}, {"mean_length", d.mean()}, {"target", t.name}, {"model", o->preset}};
              j["optimized"] = js(opt);
              j["pow2"] = js(pow2);
              j["every"] = js(every);
              j["single"] = js(single);
              std::cout << j.dump() << "\n";
              return Status::Ok();
            }
            std::printf("lengths %s (mean %.0f tokens, %lld..%lld); latency proxy: one %s layer on %s (the compiler's fusion-cluster cost model), ms\n", d.name.c_str(),
                        d.mean(), (long long)d.min_length(), (long long)d.max_length(), o->preset.c_str(), t.name.c_str());
            std::printf("| %-10s | %7s | %9s | %13s | %9s | %s\n", "policy", "buckets", "padding %", "latency proxy", "objective", "boundaries");
            std::printf("| %-10s | %7s | %9s | %13s | %9s | %s\n", "----------", "------:", "--------:", "------------:", "--------:", "---");
            for (const buckets::BucketSet* s : all) {
              std::string b;
              for (size_t i = 0; i < s->boundaries.size(); ++i) {
                if (i == 12 && s->boundaries.size() > 14) { b += " ... " + std::to_string(s->boundaries.back()); break; }
                b += (i ? "/" : "") + std::to_string(s->boundaries[i]);
              }
              std::printf("| %-10s | %7zu | %9.2f | %13.3f | %9.3f | %s\n", s->policy.c_str(), s->boundaries.size(), s->padding_pct,
                          s->expected_latency, s->objective, b.c_str());
            }
            return Status::Ok();
          }};
}

}  // namespace tandem::cli
