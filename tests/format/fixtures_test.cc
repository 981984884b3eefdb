// Every shared capture parses: real ones strictly, all of them leniently, with family and sample
// counts that were counted outside the parser (a line count of `# TYPE` lines and sample lines,
// plus untyped names; see the table).
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>

#include "modelmetrics/parser.h"
#include "test_paths.h"

namespace modelmetrics {
namespace {

struct FixtureCounts {
  const char* path;  // under fixtures/
  size_t families;   // distinct TYPE names + sample names of untyped families
  size_t samples;    // non-blank, non-comment lines
  size_t typed;      // `# TYPE` lines
};

// Counted with a short Python script over the raw files (split lines, skip blank and `#` lines,
// collect TYPE names), independent of this parser.
constexpr FixtureCounts kFixtures[] = {
    {"real/llm-d-epp/gie-golden-request_ttft_seconds_metric.txt", 1, 114, 1},
    {"real/llm-d-epp/kserve-llmisvc-llm-d-epp-scheduler.txt", 201, 1359, 201},
    {"real/llm-d-epp/llmd-sched-golden-llm_d_request_duration_seconds_metric.txt", 1, 114, 1},
    {"real/llm-d-epp/llmd-sched-golden-llm_d_scheduler_attempts_multiple_endpoints_metrics.txt", 1,
     2, 1},
    {"real/sglang/sglang-docs-production-metrics-llama31-8b.txt", 12, 91, 12},
    {"real/triton/trtllm-backend-readme-nv_inference-base.txt", 10, 10, 10},
    {"real/triton/trtllm-backend-readme-nv_trt_llm-inflight.txt", 6, 20, 6},
    {"real/vllm/aibrix-docs-vllm-0.7-qwen25-coder-trimmed.txt", 14, 29, 14},
    {"real/vllm/bsc-vllm-0.6-fork-opt-2.7b-startup.txt", 15, 15, 15},
    {"real/vllm/datadog-vllm-0.5-opt125m-original.txt", 29, 120, 29},
    {"real/vllm/datadog-vllm-v0-base-plus-v1-additions.txt", 50, 185, 50},
    {"real/vllm/kserve-llmisvc-vllm-v1-pd-nixl-tinyllama.txt", 101, 493, 101},
    {"deployment/sglang_gateway_no_workers.prom", 2, 3, 2},
    {"deployment/sglang_server_busy_first.prom", 5, 12, 5},
    {"deployment/sglang_server_busy_second.prom", 5, 12, 5},
    {"deployment/sglang_server_idle_first.prom", 4, 8, 4},
    {"deployment/sglang_server_idle_second.prom", 4, 8, 4},
    {"deployment/vllm_router_backend_failure.prom", 3, 3, 3},
    {"deployment/vllm_router_pd_serving.prom", 6, 12, 6},
    {"deployment/vllm_router_server_first.prom", 3, 3, 3},
    {"deployment/vllm_router_server_second.prom", 3, 3, 3},
    {"deployment/vllm_server_busy_first.prom", 9, 12, 9},
    {"deployment/vllm_server_busy_second.prom", 9, 12, 9},
    {"deployment/vllm_server_idle_first.prom", 9, 12, 9},
};

std::string ReadFixture(const std::string& relative) {
  std::ifstream file(test_paths::Shared("fixtures/") + relative, std::ios::binary);
  EXPECT_TRUE(file.good()) << relative;
  return std::string(std::istreambuf_iterator<char>(file), {});
}

class FixturesTest : public ::testing::TestWithParam<FixtureCounts> {};

void ExpectCounts(const FixtureCounts& c, bool strict) {
  const std::string text = ReadFixture(c.path);
  ASSERT_FALSE(text.empty());
  ParseOptions options;
  options.strict = strict;
  std::vector<ParseError> errors;
  size_t error_count = 0;
  std::vector<MetricFamily> families = ParseFamilies(text, options, &errors, &error_count);
  EXPECT_EQ(error_count, 0u) << (errors.empty() ? "" : errors.front().ToString());
  size_t samples = 0, typed = 0;
  for (const MetricFamily& f : families) {
    samples += f.samples.size();
    typed += f.type != MetricType::kUntyped;
  }
  EXPECT_EQ(families.size(), c.families);
  EXPECT_EQ(samples, c.samples);
  EXPECT_EQ(typed, c.typed);  // every fixture family declares a type other than untyped
}

TEST_P(FixturesTest, ParsesStrictly) { ExpectCounts(GetParam(), /*strict=*/true); }
TEST_P(FixturesTest, ParsesLeniently) { ExpectCounts(GetParam(), /*strict=*/false); }

INSTANTIATE_TEST_SUITE_P(AllCaptures, FixturesTest, ::testing::ValuesIn(kFixtures),
                         [](const auto& info) {
                           std::string name = info.param.path;
                           for (char& ch : name) {
                             if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return name;
                         });

TEST(Fixtures, FilteredParseOfTheVllmV1Scrape) {
  const std::string text = ReadFixture("real/vllm/kserve-llmisvc-vllm-v1-pd-nixl-tinyllama.txt");
  ParseOptions options;
  options.families = {"vllm:num_requests_running", "vllm:time_to_first_token_seconds",
                      "vllm:prefix_cache_hits_total"};
  std::vector<MetricFamily> families = ParseFamilies(text, options);
  ASSERT_EQ(families.size(), 3u);
  EXPECT_EQ(families[0].name, "vllm:num_requests_running");
  EXPECT_EQ(families[0].samples.size(), 1u);
  EXPECT_EQ(families[1].name, "vllm:prefix_cache_hits_total");
  EXPECT_EQ(families[2].name, "vllm:time_to_first_token_seconds");
  EXPECT_EQ(families[2].type, MetricType::kHistogram);
}

}  // namespace
}  // namespace modelmetrics
