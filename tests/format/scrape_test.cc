// Tests for the scrape model (modelmetrics/scrape.h) on the shared deployment fixtures and on
// inline expositions.
//
// Every expected number below was read off the fixture text by hand (file and line are named next
// to it); the deltas and means are then checked against the golden values in
// shared/spec/reference/deployment-metrics-behaviour.md §4.2 ("Expected values derived from the
// fixtures"), computed the way the reference handler does (Δsum/Δcount in double).
#include "modelmetrics/scrape.h"
#include "format/test_numbers.h"
#include "test_paths.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <vector>

namespace modelmetrics {
namespace {

using ::modelmetrics::testing::kInf;

std::string ReadDeployment(const std::string& name) {
  const std::string path = test_paths::Shared("fixtures/deployment/") + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// Parses a fixture with no family filter; fails the test on a parse error.
Scrape Load(const std::string& name, std::vector<std::string> families = {}) {
  Scrape scrape;
  ScrapeOptions options;
  options.families = std::move(families);
  std::string error;
  EXPECT_TRUE(scrape.Parse(ReadDeployment(name), options, &error)) << name << ": " << error;
  return scrape;
}

Scrape ParseInline(std::string_view body, std::optional<Format> format = std::nullopt,
                   std::vector<std::string> families = {}) {
  Scrape scrape;
  ScrapeOptions options;
  options.format = format;
  options.families = std::move(families);
  std::string error;
  EXPECT_TRUE(scrape.Parse(body, options, &error)) << error << "\n" << body;
  return scrape;
}

double SumOr(const Scrape& s, std::string_view name, std::vector<LabelMatch> match = {},
             double missing = -12345) {
  return s.Sum(name, match).value_or(missing);
}

// --- vLLM server ---------------------------------------------------------------------------

TEST(ScrapeVllmTest, GaugesAndCountersOfBothReads) {
  const Scrape first = Load("vllm_server_busy_first.prom");
  const Scrape second = Load("vllm_server_busy_second.prom");
  // vllm_server_busy_first.prom lines 2, 4, 6, 8, 10, 12.
  EXPECT_EQ(SumOr(first, "vllm:num_requests_running"), 1.0);
  EXPECT_EQ(SumOr(first, "vllm:num_requests_waiting"), 0.0);
  EXPECT_EQ(SumOr(first, "vllm:prefix_cache_hits"), 12880.0);
  EXPECT_EQ(SumOr(first, "vllm:prefix_cache_queries"), 18228.0);
  EXPECT_EQ(SumOr(first, "vllm:external_prefix_cache_hits"), 0.0);  // a measured zero
  EXPECT_EQ(SumOr(first, "vllm:external_prefix_cache_queries"), 0.0);
  // vllm_server_busy_second.prom, same lines.
  EXPECT_EQ(SumOr(second, "vllm:num_requests_running"), 0.0);
  EXPECT_EQ(SumOr(second, "vllm:num_requests_waiting"), 0.0);
  EXPECT_EQ(SumOr(second, "vllm:prefix_cache_hits"), 39536.0);
  EXPECT_EQ(SumOr(second, "vllm:prefix_cache_queries"), 56070.0);
}

TEST(ScrapeVllmTest, CountersResolveThroughTotal) {
  const Scrape s = Load("vllm_server_busy_first.prom");
  // The text family is named `vllm:prefix_cache_hits_total`; both spellings find it.
  ASSERT_NE(s.Find("vllm:prefix_cache_hits"), nullptr);
  EXPECT_EQ(s.Find("vllm:prefix_cache_hits")->name, "vllm:prefix_cache_hits_total");
  EXPECT_EQ(s.Find("vllm:prefix_cache_hits_total"), s.Find("vllm:prefix_cache_hits"));
  EXPECT_EQ(SumOr(s, "vllm:prefix_cache_hits_total"), 12880.0);
  EXPECT_EQ(s.Find("vllm:prefix_cache"), nullptr);
  EXPECT_EQ(s.Sum("vllm:no_such_metric"), std::nullopt);
  EXPECT_EQ(s.Sum("prefix_cache_hits"), std::nullopt);
  EXPECT_EQ(s.Sum("vllm:prefix_cache_hit"), std::nullopt);
}

TEST(ScrapeVllmTest, HistogramsAndTheReferenceDeltas) {
  const Scrape first = Load("vllm_server_busy_first.prom");
  const Scrape second = Load("vllm_server_busy_second.prom");
  struct Expect {
    const char* name;
    double count1, sum1, count2, sum2;  // read off the two files
    double samples, mean;               // deployment-metrics-behaviour.md §4.2
  };
  for (const Expect& e : std::vector<Expect>{
           {"vllm:time_to_first_token_seconds", 116, 2.8345773220062256, 354, 7.488968133926392,
            238, 0.01955626391563095},
           {"vllm:request_time_per_output_token_seconds", 115, 0.6588608722976982, 354,
            2.0319823054466366, 239, 0.005745277962966269},
           {"vllm:inter_token_latency_seconds", 5428, 31.09642936099135, 16638, 95.50316835599187,
            11210, 0.005745471810437156},
       }) {
    SCOPED_TRACE(e.name);
    const std::optional<HistogramTotals> h1 = first.Histogram(e.name);
    const std::optional<HistogramTotals> h2 = second.Histogram(e.name);
    ASSERT_TRUE(h1.has_value());
    ASSERT_TRUE(h2.has_value());
    EXPECT_EQ(h1->count, e.count1);
    EXPECT_EQ(h1->sum, e.sum1);
    EXPECT_EQ(h2->count, e.count2);
    EXPECT_EQ(h2->sum, e.sum2);
    EXPECT_TRUE(h1->buckets.empty());  // the trimmed fixtures carry no `_bucket` lines
    EXPECT_EQ(h2->count - h1->count, e.samples);
    EXPECT_DOUBLE_EQ((h2->sum - h1->sum) / (h2->count - h1->count), e.mean);
  }
  // local-prefix: hits 26656 of 37842 queries, rate 0.7044025157232704.
  const double hits =
      SumOr(second, "vllm:prefix_cache_hits") - SumOr(first, "vllm:prefix_cache_hits");
  const double queries =
      SumOr(second, "vllm:prefix_cache_queries") - SumOr(first, "vllm:prefix_cache_queries");
  EXPECT_EQ(hits, 26656);
  EXPECT_EQ(queries, 37842);
  EXPECT_DOUBLE_EQ(hits / queries, 0.7044025157232704);
}

TEST(ScrapeVllmTest, NonHistogramAskedAsHistogramIsNullopt) {
  const Scrape s = Load("vllm_server_busy_first.prom");
  EXPECT_EQ(s.Histogram("vllm:num_requests_running"), std::nullopt);     // gauge
  EXPECT_EQ(s.Histogram("vllm:prefix_cache_hits_total"), std::nullopt);  // counter
  EXPECT_EQ(s.Histogram("vllm:no_such_histogram"), std::nullopt);
  // And a histogram is not a gauge.
  EXPECT_EQ(s.Sum("vllm:time_to_first_token_seconds"), std::nullopt);
}

TEST(ScrapeVllmTest, FamilyFilterMaterialisesOnlyWantedFamilies) {
  const Scrape s = Load(
      "vllm_server_busy_first.prom",
      {"vllm:num_requests_running", "vllm:prefix_cache_hits", "vllm:time_to_first_token_seconds"});
  std::set<std::string> names;
  for (const MetricFamily& f : s.families()) names.insert(f.name);
  EXPECT_EQ(names,
            (std::set<std::string>{"vllm:num_requests_running", "vllm:prefix_cache_hits_total",
                                   "vllm:time_to_first_token_seconds"}));
  EXPECT_EQ(s.families().size(), 3u);  // of 9 families in the file
  EXPECT_EQ(SumOr(s, "vllm:num_requests_running"), 1.0);
  EXPECT_EQ(SumOr(s, "vllm:prefix_cache_hits"), 12880.0);
  EXPECT_EQ(s.Histogram("vllm:time_to_first_token_seconds")->count, 116);
  // Present in the body, but not wanted.
  EXPECT_EQ(s.Sum("vllm:num_requests_waiting"), std::nullopt);
  EXPECT_EQ(s.Sum("vllm:prefix_cache_queries"), std::nullopt);

  const Scrape all = Load("vllm_server_busy_first.prom");
  EXPECT_EQ(all.families().size(), 9u);  // 9 `# TYPE` lines
}

// --- SGLang server -------------------------------------------------------------------------

// A histogram read over the label sets a matcher selects: SGLang's TTFT by is_streaming
// (sglang_server_busy_first.prom lines 11-14: 59 non-streaming, 58 streaming requests).
TEST(ScrapeSglangTest, HistogramOfSelectedLabelSets) {
  const Scrape s = Load("sglang_server_busy_first.prom");
  const std::string ttft = "sglang:time_to_first_token_seconds";
  EXPECT_EQ(s.Histogram(ttft)->count, 117);
  const LabelMatch streaming[] = {{"is_streaming", "true"}};
  EXPECT_EQ(s.Histogram(ttft, streaming)->count, 58);
  EXPECT_DOUBLE_EQ(s.Histogram(ttft, streaming)->sum, 1.3266321940018315);
  const LabelMatch not_streaming[] = {{.name = "is_streaming", .value = "true", .negate = true}};
  EXPECT_EQ(s.Histogram(ttft, not_streaming)->count, 59);
  // Nothing selected: absent, as a family that was not there.
  const LabelMatch none[] = {{"is_streaming", "maybe"}};
  EXPECT_EQ(s.Histogram(ttft, none), std::nullopt);
}

TEST(ScrapeSglangTest, GaugesAndLabelSubsetMatching) {
  const Scrape s = Load("sglang_server_busy_first.prom");
  const std::string tokens = "sglang:prefill_effective_tokens_total";
  // sglang_server_busy_first.prom lines 2, 4 and 6-9.
  EXPECT_EQ(SumOr(s, "sglang:num_running_reqs"), 1.0);
  EXPECT_EQ(SumOr(s, "sglang:num_queue_reqs"), 0.0);
  EXPECT_EQ(SumOr(s, tokens, {{"mode", "input"}}), 4180.0);
  EXPECT_EQ(SumOr(s, tokens, {{"mode", "device_hit"}}), 14153.0);
  EXPECT_EQ(SumOr(s, tokens, {{"mode", "host_hit"}}), 0.0);
  EXPECT_EQ(SumOr(s, tokens, {{"mode", "storage_hit"}}), 0.0);
  // Every wanted pair must be present; extra labels on the series do not matter.
  EXPECT_EQ(SumOr(s, tokens, {{"mode", "input"}, {"tp_rank", "0"}}), 4180.0);
  EXPECT_EQ(SumOr(s, tokens, {{"tp_rank", "0"}, {"mode", "device_hit"}}), 14153.0);
  EXPECT_EQ(s.Sum(tokens, std::vector<LabelMatch>{{"mode", "input"}, {"tp_rank", "1"}}),
            std::nullopt);
  EXPECT_EQ(s.Sum(tokens, std::vector<LabelMatch>{{"mode", "INPUT"}}), std::nullopt);
  // PromQL's meaning: a series without the label reads it as "" (SGLang's queue gauges carry
  // priority="" only with priority scheduling on; {priority=""} reads both kinds of Pod).
  EXPECT_EQ(SumOr(s, tokens, {{"no_such_label", ""}}), 4180.0 + 14153.0);
  EXPECT_EQ(s.Sum(tokens, std::vector<LabelMatch>{{"tp_rank", ""}}), std::nullopt);
  // Negated: every series whose value differs, those without the label included.
  EXPECT_EQ(SumOr(s, tokens, {{.name = "mode", .value = "input", .negate = true}}), 14153.0);
  EXPECT_EQ(SumOr(s, tokens, {{.name = "no_such_label", .value = "x", .negate = true}}),
            4180.0 + 14153.0);
  EXPECT_EQ(
      s.Sum(tokens, std::vector<LabelMatch>{{.name = "tp_rank", .value = "0", .negate = true}}),
      std::nullopt);
  // No match: all four modes.
  EXPECT_EQ(SumOr(s, tokens), 4180.0 + 14153.0);
  // The `_total`-less spelling finds the same family.
  EXPECT_EQ(SumOr(s, "sglang:prefill_effective_tokens", {{"mode", "input"}}), 4180.0);
}

TEST(ScrapeSglangTest, HistogramSummedOverLabelSetsAndTheReferenceDeltas) {
  const Scrape first = Load("sglang_server_busy_first.prom");
  const Scrape second = Load("sglang_server_busy_second.prom");
  const std::optional<HistogramTotals> ttft1 =
      first.Histogram("sglang:time_to_first_token_seconds");
  const std::optional<HistogramTotals> ttft2 =
      second.Histogram("sglang:time_to_first_token_seconds");
  ASSERT_TRUE(ttft1 && ttft2);
  // Two `is_streaming` series each (first: lines 11-14; second: lines 11-14).
  EXPECT_EQ(ttft1->count, 59.0 + 58.0);
  EXPECT_EQ(ttft1->sum, 27.006403835998753 + 1.3266321940018315);
  EXPECT_EQ(ttft2->count, 204.0 + 203.0);
  EXPECT_EQ(ttft2->sum, 68.66017680099685 + 4.392058683006326);
  // §4.2: ttft samples 290 (both series), mean 0.1542041360482848.
  EXPECT_EQ(ttft2->count - ttft1->count, 290);
  EXPECT_DOUBLE_EQ((ttft2->sum - ttft1->sum) / (ttft2->count - ttft1->count), 0.1542041360482848);

  const std::optional<HistogramTotals> itl1 = first.Histogram("sglang:inter_token_latency_seconds");
  const std::optional<HistogramTotals> itl2 =
      second.Histogram("sglang:inter_token_latency_seconds");
  ASSERT_TRUE(itl1 && itl2);
  EXPECT_EQ(itl1->count, 2699);
  EXPECT_EQ(itl1->sum, 15.15720793402943);
  EXPECT_EQ(itl2->count, 9534);
  EXPECT_EQ(itl2->sum, 53.688668071985376);
  // §4.2: itl samples 6835, mean 0.005637375294507088.
  EXPECT_EQ(itl2->count - itl1->count, 6835);
  EXPECT_DOUBLE_EQ((itl2->sum - itl1->sum) / (itl2->count - itl1->count), 0.005637375294507088);

  // §4.2: device-prefix hits 35928 of 46111 queries (input + device + host + storage deltas).
  const std::string tokens = "sglang:prefill_effective_tokens_total";
  auto delta = [&](const char* mode) {
    return SumOr(second, tokens, {{"mode", mode}}) - SumOr(first, tokens, {{"mode", mode}});
  };
  const double device = delta("device_hit");
  const double queries = delta("input") + device + delta("host_hit") + delta("storage_hit");
  EXPECT_EQ(device, 35928);
  EXPECT_EQ(delta("input"), 10183);
  EXPECT_EQ(queries, 46111);
  EXPECT_DOUBLE_EQ(device / queries, 0.7791633232851164);
  EXPECT_EQ(delta("host_hit"), 0);
  EXPECT_EQ(delta("storage_hit"), 0);
}

// --- Routers -------------------------------------------------------------------------------

TEST(ScrapeRouterTest, SglangGatewayNoWorkers) {
  const Scrape s = Load("sglang_gateway_no_workers.prom");
  // Lines 2, 4, 5.
  EXPECT_EQ(SumOr(s, "smg_router_requests_total"), 1.0);
  EXPECT_EQ(SumOr(s, "smg_router_requests"), 1.0);
  EXPECT_EQ(SumOr(s, "smg_http_responses_total", {{"status_code", "503"}}), 1.0);
  EXPECT_EQ(SumOr(s, "smg_http_responses_total", {{"status_code", "200"}}), 1.0);
  EXPECT_EQ(SumOr(s, "smg_http_responses_total", {{"error_code", ""}}), 1.0);  // empty value
  EXPECT_EQ(SumOr(s, "smg_http_responses_total", {{"error_code", "no_available_workers"}}), 1.0);
  EXPECT_EQ(SumOr(s, "smg_http_responses_total"), 2.0);
  EXPECT_EQ(s.Sum("smg_http_responses_total", std::vector<LabelMatch>{{"status_code", "500"}}),
            std::nullopt);
  // No error counter and no worker gauges in this scrape.
  EXPECT_EQ(s.Sum("smg_router_request_errors_total"), std::nullopt);
  EXPECT_EQ(s.Sum("smg_worker_pool_size"), std::nullopt);
}

TEST(ScrapeRouterTest, VllmRouterTwoReads) {
  const Scrape first = Load("vllm_router_server_first.prom");
  const Scrape second = Load("vllm_router_server_second.prom");
  // vllm_router_server_first.prom lines 2, 4, 6; _second.prom the same lines.
  EXPECT_EQ(SumOr(first, "vllm_router_requests_total"), 108);
  EXPECT_EQ(SumOr(first, "vllm_router_requests"), 108);
  EXPECT_EQ(SumOr(first, "vllm_router_running_requests"), 1);
  EXPECT_EQ(SumOr(first, "vllm_router_active_workers"), 2);
  EXPECT_EQ(SumOr(second, "vllm_router_requests_total"), 354);
  EXPECT_EQ(SumOr(second, "vllm_router_running_requests"), 0);
  EXPECT_EQ(SumOr(second, "vllm_router_active_workers"), 2);
  // §4.2: over 30 s, successful-requests 246 samples, 8.2 requests/second.
  const double delta =
      SumOr(second, "vllm_router_requests_total") - SumOr(first, "vllm_router_requests_total");
  EXPECT_EQ(delta, 246);
  EXPECT_DOUBLE_EQ(delta / 30, 8.2);
  EXPECT_EQ(first.Sum("vllm_router_request_errors_total"), std::nullopt);
  EXPECT_EQ(first.Sum("vllm_router_retries_exhausted_total"), std::nullopt);
}

// --- Inline expositions --------------------------------------------------------------------

TEST(ScrapeInlineTest, UntypedFamiliesAreIgnored) {
  const Scrape s = ParseInline(
      "no_type 3\n"
      "no_type_total 4\n"
      "# HELP helped Has HELP but no TYPE.\n"
      "helped 5\n"
      "# TYPE explicit untyped\n"
      "explicit 6\n"
      "# TYPE h_untyped untyped\n"
      "h_untyped_sum 1\n");
  ASSERT_NE(s.Find("no_type"), nullptr);
  EXPECT_EQ(s.Find("no_type")->type, MetricType::kUntyped);
  EXPECT_EQ(s.Sum("no_type"), std::nullopt);
  EXPECT_EQ(s.Sum("no_type_total"), std::nullopt);
  EXPECT_EQ(s.Sum("helped"), std::nullopt);
  EXPECT_EQ(s.Sum("explicit"), std::nullopt);
  EXPECT_EQ(s.Histogram("h_untyped"), std::nullopt);
}

// One series twice (labels in any order) fails the whole scrape, as in Prometheus; the same
// labels under another sample name, or another label value, are different series.
TEST(ScrapeInlineTest, DuplicateSeriesFailTheScrape) {
  ScrapeOptions options;
  options.families = {"vllm:num_requests_running"};
  std::string error;
  Scrape scrape;
  EXPECT_FALSE(
      scrape.Parse("# TYPE vllm:num_requests_running gauge\n"
                   "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 1\n"
                   "vllm:num_requests_running{model_name=\"m\",engine=\"0\"} 1\n",
                   options, &error));
  EXPECT_EQ(error, "duplicate series vllm:num_requests_running{model_name=\"m\",engine=\"0\"}");
  EXPECT_EQ(scrape.Find("vllm:num_requests_running"), nullptr);  // nothing half-read
  EXPECT_FALSE(
      scrape.Parse("vllm:num_requests_running 1\nvllm:num_requests_running 1\n", options, &error));
  // Distinct series are fine, and a duplicate in a family nobody asked for is not read at all.
  const Scrape fine = ParseInline(
      "# TYPE h histogram\n"
      "h_bucket{le=\"1\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 3\nh_count 2\n"
      "# TYPE other gauge\nother 1\nother 1\n",
      std::nullopt, {"h"});
  EXPECT_TRUE(fine.Histogram("h").has_value());
}

TEST(ScrapeInlineTest, InvalidValuesAreSkipped) {
  const Scrape s = ParseInline(
      "# TYPE g gauge\n"
      "g{i=\"1\"} 1\n"
      "g{i=\"2\"} NaN\n"
      "g{i=\"3\"} +Inf\n"
      "g{i=\"4\"} -2\n"
      "g{i=\"5\"} 3.5\n"
      "g{i=\"6\"} -Inf\n"
      "g{i=\"7\"} -0\n"
      "# TYPE bad gauge\n"
      "bad{i=\"1\"} NaN\n"
      "bad{i=\"2\"} -1\n"
      "bad{i=\"3\"} +Inf\n"
      "# TYPE zero gauge\n"
      "zero 0\n");
  EXPECT_EQ(SumOr(s, "g"), 4.5);
  EXPECT_EQ(s.Sum("g", std::vector<LabelMatch>{{"i", "2"}}), std::nullopt);  // NaN only
  EXPECT_EQ(s.Sum("g", std::vector<LabelMatch>{{"i", "4"}}), std::nullopt);  // negative only
  EXPECT_EQ(s.Sum("bad"), std::nullopt);  // no valid sample at all
  EXPECT_EQ(s.Sum("zero"), 0.0);          // zero is a valid value
}

TEST(ScrapeInlineTest, NameThenNameTotalTakesTheFirstWithAValidSample) {
  const Scrape s = ParseInline(
      "# TYPE x gauge\n"
      "x NaN\n"
      "# TYPE x_total counter\n"
      "x_total 5\n"
      "# TYPE y gauge\n"
      "y 2\n"
      "# TYPE y_total counter\n"
      "y_total 7\n");
  EXPECT_EQ(SumOr(s, "x"), 5.0);  // `x` has no valid sample: `x_total` is read
  EXPECT_EQ(SumOr(s, "y"), 2.0);  // `y` has one: `y_total` is not read
  EXPECT_EQ(SumOr(s, "y_total"), 7.0);
}

TEST(ScrapeInlineTest, HistogramSumsLabelSetsAndBucketsPerBound) {
  const Scrape s = ParseInline(
      "# TYPE h histogram\n"
      "h_bucket{a=\"1\",le=\"0.5\"} 1\n"
      "h_bucket{a=\"1\",le=\"1\"} 2\n"
      "h_bucket{a=\"1\",le=\"+Inf\"} 3\n"
      "h_sum{a=\"1\"} 1.5\n"
      "h_count{a=\"1\"} 3\n"
      "h_sum{a=\"2\"} 2.25\n"  // `_sum` first, `le` first, bounds out of order
      "h_bucket{le=\"1.0\",a=\"2\"} 4\n"
      "h_bucket{le=\"0.5\",a=\"2\"} 0\n"
      "h_bucket{le=\"+Inf\",a=\"2\"} 5\n"
      "h_count{a=\"2\"} 5\n"
      "# TYPE g gauge\n"
      "g 1\n");
  const std::optional<HistogramTotals> h = s.Histogram("h");
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->sum, 3.75);
  EXPECT_EQ(h->count, 8);
  // `1` and `1.0` are one bound; by increasing bound.
  const std::vector<std::pair<double, double>> want = {{0.5, 1}, {1, 6}, {kInf, 8}};
  EXPECT_EQ(h->buckets, want);
  EXPECT_EQ(s.Histogram("g"), std::nullopt);
}

TEST(ScrapeInlineTest, HistogramNeedsSumAndCountFiniteAndNonNegative) {
  const Scrape s = ParseInline(
      "# TYPE no_sum histogram\n"
      "no_sum_count 1\n"
      "# TYPE no_count histogram\n"
      "no_count_sum 1\n"
      "# TYPE nan_sum histogram\n"
      "nan_sum_sum NaN\n"
      "nan_sum_count 1\n"
      "# TYPE neg_count histogram\n"
      "neg_count_sum 1\n"
      "neg_count_count -1\n"
      "# TYPE inf_sum histogram\n"
      "inf_sum_sum{a=\"1\"} 1\n"
      "inf_sum_sum{a=\"2\"} +Inf\n"
      "inf_sum_count 2\n"
      "# TYPE zero histogram\n"
      "zero_sum 0\n"
      "zero_count 0\n"
      "# TYPE s summary\n"
      "s_sum 1\n"
      "s_count 1\n");
  for (const char* name : {"no_sum", "no_count", "nan_sum", "neg_count", "inf_sum", "s"}) {
    EXPECT_EQ(s.Histogram(name), std::nullopt) << name;
  }
  ASSERT_TRUE(s.Histogram("zero").has_value());
  EXPECT_EQ(s.Histogram("zero")->count, 0);
}

constexpr std::string_view kOpenMetricsCounter =
    "# TYPE x counter\n"
    "x_total{a=\"1\"} 5\n"
    "x_created{a=\"1\"} 1700000000\n"
    "x_total{a=\"2\"} 7 # {trace_id=\"t\"} 1\n"
    "x_created{a=\"2\"} 1700000001\n"
    "# TYPE gh gaugehistogram\n"
    "gh_bucket{le=\"+Inf\"} 1\n"
    "gh_gsum 1\n"
    "gh_gcount 1\n"
    "# EOF\n";

TEST(ScrapeOpenMetricsTest, CounterReadsOnlyTotalSamples) {
  const Scrape s = ParseInline(kOpenMetricsCounter);  // detected from `# EOF`
  ASSERT_NE(s.Find("x"), nullptr);
  EXPECT_EQ(s.Find("x")->samples.size(), 4u);  // `_created` samples are in the family...
  EXPECT_EQ(s.Find("x_total"), s.Find("x"));
  EXPECT_EQ(SumOr(s, "x"), 12.0);  // ...but never summed
  EXPECT_EQ(SumOr(s, "x_total"), 12.0);
  EXPECT_EQ(SumOr(s, "x_total", {{"a", "2"}}), 7.0);
  EXPECT_EQ(s.Histogram("gh"), std::nullopt);  // a gauge histogram is not a histogram
}

TEST(ScrapeOpenMetricsTest, FilterByEitherCounterSpelling) {
  for (const char* wanted : {"x", "x_total"}) {
    const Scrape s = ParseInline(kOpenMetricsCounter, Format::kOpenMetrics, {wanted});
    ASSERT_EQ(s.families().size(), 1u) << wanted;
    EXPECT_EQ(s.families()[0].name, "x");
    EXPECT_EQ(SumOr(s, wanted), 12.0);
  }
}

TEST(ScrapeErrorTest, StrictErrorsReturnFalseWithLineAndColumn) {
  Scrape s;
  std::string error;
  ASSERT_TRUE(s.Parse("# TYPE a gauge\na 1\n", {}, &error));
  ASSERT_EQ(s.families().size(), 1u);

  // `zz` starts at column 10 of line 2.
  EXPECT_FALSE(s.Parse("# TYPE a gauge\nb{x=\"y\"} zz\n", {}, &error));
  EXPECT_EQ(error, "2:10: invalid value \"zz\"");
  EXPECT_TRUE(s.families().empty());  // the model is left empty
  EXPECT_EQ(s.Sum("a"), std::nullopt);
  EXPECT_EQ(s.Find("a"), nullptr);

  // The deployment reference's own case: `broken{` is a parse error.
  error.clear();
  EXPECT_FALSE(s.Parse("broken{", {}, &error));
  EXPECT_EQ(error.rfind("1:8: ", 0), 0u) << error;

  // OpenMetrics without `# EOF`.
  ScrapeOptions om;
  om.format = Format::kOpenMetrics;
  error.clear();
  EXPECT_FALSE(s.Parse("a_total 1\n", om, &error));
  EXPECT_EQ(error.rfind("2:1: ", 0), 0u) << error;

  // A good parse after a failed one works again, and a null error pointer is allowed.
  EXPECT_TRUE(s.Parse("# TYPE a gauge\na 2\n", {}, nullptr));
  EXPECT_EQ(SumOr(s, "a"), 2.0);
  EXPECT_FALSE(s.Parse("a{", {}, nullptr));
}

// A label outside the known ones that splits the selected series is named; one with a single
// value everywhere, `le`, and the series the match leaves out are not.
TEST(ScrapeUnknownSplit, NamesTheFirstLabelWithTwoValues) {
  Scrape s;
  std::string error;
  ASSERT_TRUE(
      s.Parse("# TYPE q gauge\n"
              "q{model=\"m\",cluster=\"a\",priority=\"\",cp_rank=\"0\"} 3\n"
              "q{model=\"m\",cluster=\"a\",priority=\"\",cp_rank=\"1\"} 3\n"
              "q{model=\"m\",cluster=\"a\",priority=\"5\",cp_rank=\"0\"} 2\n"
              "# TYPE h histogram\n"
              "h_bucket{model=\"m\",le=\"1\"} 1\nh_bucket{model=\"m\",le=\"+Inf\"} 2\n"
              "h_sum{model=\"m\"} 1\nh_count{model=\"m\"} 2\n"
              "h_sum{model=\"m\",tier=\"x\"} 1\nh_count{model=\"m\",tier=\"x\"} 2\n",
              {}, &error))
      << error;
  const std::string_view known[] = {"model", "priority"};
  const LabelMatch total[] = {{"priority", ""}};
  EXPECT_EQ(s.UnknownSplit("q", total, known), "cp_rank");
  const LabelMatch one_rank[] = {{"cp_rank", "0"}};
  EXPECT_EQ(s.UnknownSplit("q", one_rank, known), std::nullopt);  // cluster: one value
  const std::string_view all[] = {"model", "priority", "cp_rank"};
  EXPECT_EQ(s.UnknownSplit("q", {}, all), std::nullopt);
  // A label some series lack reads "" there: two values.
  EXPECT_EQ(s.UnknownSplit("h", {}, known), "tier");
  const LabelMatch no_tier[] = {{"tier", ""}};
  EXPECT_EQ(s.UnknownSplit("h", no_tier, known), std::nullopt);
  EXPECT_EQ(s.UnknownSplit("absent", {}, known), std::nullopt);
}

// A body with many values of an unknown label, and many label names, is one pass (a hostile Pod
// cannot make the check quadratic); the first label that splits is still the one named.
TEST(ScrapeUnknownSplit, ManyValuesAndLabelNamesAreOnePass) {
  std::string body = "# TYPE q gauge\n";
  for (int i = 0; i < 20000; ++i) {
    body +=
        "q{model=\"m\",rank=\"" + std::to_string(i) + "\",l" + std::to_string(i) + "=\"x\"} 1\n";
  }
  Scrape s;
  std::string error;
  ASSERT_TRUE(s.Parse(body, {}, &error)) << error;
  const std::string_view known[] = {"model"};
  EXPECT_EQ(s.UnknownSplit("q", {}, known), "rank");
}

}  // namespace
}  // namespace modelmetrics
