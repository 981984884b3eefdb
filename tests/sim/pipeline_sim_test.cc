// The pipeline simulator shows the whole catalog: run at its default rate and seed for 10 s (its
// clock is real time), scrape /metrics over HTTP every half second while it serves, and require a
// non-zero sample (a non-zero _count for histograms) in every vllm_omni:* and vllm:* family of the
// catalog in one of those scrapes, sparse ones included (diffusion KV load, skipped audio, aborted
// Speech streams, NIXL faults, preemptions). No family is exempt: each has a source the simulator
// drives.
#include "sim/pipeline_sim.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "modelmetrics/parser.h"
#include "net/http_client.h"
#include "pipeline/catalog.h"

namespace modelmetrics::sim {
namespace {

using namespace std::chrono_literals;

// Every exposed sample of `family` (a catalog name): counters are exposed with `_total`.
const MetricFamily* FindExposed(const std::vector<MetricFamily>& families, std::string_view name) {
  for (const MetricFamily& f : families) {
    if (f.name == name || f.name == std::string(name) + "_total") return &f;
  }
  return nullptr;
}

bool HasNonZero(const MetricFamily& f) {
  for (const MetricSample& s : f.samples) {
    const bool histogram_count = s.name.ends_with("_count");
    if (f.type == MetricType::kHistogram ? histogram_count && s.value > 0 : s.value != 0) {
      return true;
    }
  }
  return false;
}

// One scrape of the simulator's /metrics, parsed.
std::vector<MetricFamily> ScrapeFamilies(uint16_t port, std::string* error) {
  net::HttpClient client;
  std::vector<net::FetchRequest> batch{
      {"http://127.0.0.1:" + std::to_string(port) + "/metrics", {}}};
  const net::FetchResult result =
      client.FetchAll(batch, std::chrono::steady_clock::now() + 5s).at(0);
  if (!result.ok()) {
    *error = result.message;
    return {};
  }
  ParseOptions parse;
  parse.format = Format::kText;
  std::vector<ParseError> errors;
  std::vector<MetricFamily> families = ParseFamilies(result.body, parse, &errors);
  if (!errors.empty()) *error = errors.front().ToString();
  return families;
}

TEST(PipelineSimTest, EveryCatalogFamilyIsNonZeroWithinTenSeconds) {
  PipelineSimOptions options;  // the default rate and seed, as `simulate pipeline` runs
  options.listen = "127.0.0.1:0";
  options.duration = 10s;
  options.log_interval = 0ms;
  std::ostringstream out;
  options.out = &out;
  // A gauge is non-zero at some instants only (nothing may be running at the last one): every
  // family is looked at in a scrape each half second and at the end.
  std::set<std::string> non_zero;
  std::vector<MetricFamily> families;
  std::string error;
  auto look = [&](uint16_t port) {
    families = ScrapeFamilies(port, &error);
    for (const MetricFamily& f : families) {
      if (HasNonZero(f)) non_zero.insert(f.name);
    }
  };
  options.wait = [&](std::chrono::milliseconds duration) {
    // The listening line is written on this thread before the wait begins.
    const std::string text = out.str();
    const size_t colon = text.find("127.0.0.1:");
    const uint16_t port = static_cast<uint16_t>(std::stoi(text.substr(colon + 10)));
    const auto end = std::chrono::steady_clock::now() + duration;
    while (std::chrono::steady_clock::now() + 500ms < end) {
      std::this_thread::sleep_for(500ms);
      look(port);
    }
    std::this_thread::sleep_until(end);
    return false;
  };
  options.before_stop = look;
  ASSERT_EQ(RunPipelineSimulator(options), 0) << out.str();
  ASSERT_TRUE(error.empty()) << error;

  std::vector<std::string> missing, zero;
  size_t checked = 0;
  for (auto table : {pipeline::OmniFamilies(), pipeline::VllmEngineFamilies()}) {
    for (const pipeline::FamilySpec& spec : table) {
      ++checked;
      const MetricFamily* f = FindExposed(families, spec.name);
      if (f == nullptr || f->samples.empty()) {
        missing.emplace_back(spec.name);
      } else if (!non_zero.contains(f->name)) {
        zero.emplace_back(spec.name);
      }
    }
  }
  EXPECT_EQ(checked, 99u);  // 55 vllm_omni:* + 44 vllm:*: the whole catalog was looked at
  EXPECT_TRUE(missing.empty()) << "no samples: " << ::testing::PrintToString(missing);
  EXPECT_TRUE(zero.empty()) << "only zeros: " << ::testing::PrintToString(zero);

  // stage_type takes only upstream's values (a stage's `stage_type`: llm or diffusion).
  const MetricFamily* gen = FindExposed(families, "vllm_omni:stage_gen_time_s");
  ASSERT_NE(gen, nullptr);
  std::set<std::string> stage_types;
  for (const MetricSample& s : gen->samples) {
    for (const LabelPair& l : s.labels) {
      if (l.first == "stage_type") stage_types.insert(l.second);
    }
  }
  EXPECT_EQ(stage_types, (std::set<std::string>{std::string(pipeline::kStageTypeLlm),
                                                std::string(pipeline::kStageTypeDiffusion)}));
}

}  // namespace
}  // namespace modelmetrics::sim
