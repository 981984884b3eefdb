// Parser throughput: MB/s and ns per sample for a full parse and a filtered parse (5 families) of
// every shared fixture and of a generated ~500 KB vLLM V1-style scrape with 16 engines.
//
//   build/bench/parser_speed_test --benchmark_min_time=0.5
//
// "bytes_per_second" is the input rate; "ns_per_sample" is wall time per sample line.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "modelmetrics/parser.h"
#include "test_paths.h"

namespace modelmetrics {
namespace {

// The five families the deployment aggregator reads from a vLLM engine.
const std::vector<std::string> kFiveFamilies = {
    "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:prefix_cache_hits_total",
    "vllm:prefix_cache_queries_total", "vllm:time_to_first_token_seconds"};

// A vLLM V1 scrape of a 16-engine server: the families, label sets, HELP/TYPE habits and bucket
// lists of upstream vLLM (Python prometheus_client 0.0.4 output), with seeded values.
std::string GenerateVllmScrape(int engines, size_t target_bytes) {
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> uniform(0, 1);
  std::string out;
  auto labels = [](int engine) {
    return "engine=\"" + std::to_string(engine) + "\",model_name=\"Qwen/Qwen2.5-0.5B-Instruct\"";
  };
  auto value = [&](double scale) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", uniform(rng) * scale);
    return std::string(buf);
  };
  auto gauge = [&](const std::string& name, double scale) {
    out += "# HELP " + name + " Gauge " + name + ".\n# TYPE " + name + " gauge\n";
    for (int e = 0; e < engines; ++e) out += name + "{" + labels(e) + "} " + value(scale) + "\n";
  };
  auto counter = [&](const std::string& name) {
    out += "# HELP " + name + "_total Counter " + name + ".\n# TYPE " + name + "_total counter\n";
    for (int e = 0; e < engines; ++e) {
      out += name + "_total{" + labels(e) + "} " + std::to_string(rng() % 10000000) + ".0\n";
    }
    out += "# HELP " + name + "_created Counter " + name + ".\n# TYPE " + name + "_created gauge\n";
    for (int e = 0; e < engines; ++e) {
      out += name + "_created{" + labels(e) + "} 1.7840234492965055e+09\n";
    }
  };
  auto histogram = [&](const std::string& name, const std::vector<const char*>& bounds) {
    out += "# HELP " + name + " Histogram " + name + ".\n# TYPE " + name + " histogram\n";
    for (int e = 0; e < engines; ++e) {
      uint64_t cumulative = 0;
      for (const char* le : bounds) {
        cumulative += rng() % 100;
        out += name + "_bucket{" + labels(e) + ",le=\"" + le + "\"} " + std::to_string(cumulative) +
               ".0\n";
      }
      out += name + "_bucket{" + labels(e) + ",le=\"+Inf\"} " + std::to_string(cumulative) + ".0\n";
      out += name + "_count{" + labels(e) + "} " + std::to_string(cumulative) + ".0\n";
      out += name + "_sum{" + labels(e) + "} " + value(1000) + "\n";
    }
  };
  const std::vector<const char*> latency = {
      "0.001", "0.005", "0.01", "0.02", "0.04", "0.06", "0.08", "0.1",  "0.25",  "0.5",   "0.75",
      "1.0",   "2.5",   "5.0",  "7.5",  "10.0", "20.0", "40.0", "80.0", "160.0", "640.0", "2560.0"};
  const std::vector<const char*> tokens = {"1.0",    "2.0",    "5.0",    "10.0",  "20.0",
                                           "50.0",   "100.0",  "200.0",  "500.0", "1000.0",
                                           "2000.0", "5000.0", "10000.0"};
  int round = 0;
  while (out.size() < target_bytes) {
    const std::string suffix = round == 0 ? "" : "_" + std::to_string(round);
    gauge("vllm:num_requests_running" + suffix, 64);
    gauge("vllm:num_requests_waiting" + suffix, 64);
    gauge("vllm:kv_cache_usage_perc" + suffix, 1);
    counter("vllm:prefix_cache_queries" + suffix);
    counter("vllm:prefix_cache_hits" + suffix);
    counter("vllm:prompt_tokens" + suffix);
    counter("vllm:generation_tokens" + suffix);
    histogram("vllm:time_to_first_token_seconds" + suffix, latency);
    histogram("vllm:inter_token_latency_seconds" + suffix, latency);
    histogram("vllm:e2e_request_latency_seconds" + suffix, latency);
    histogram("vllm:request_queue_time_seconds" + suffix, latency);
    histogram("vllm:request_prompt_tokens" + suffix, tokens);
    histogram("vllm:request_generation_tokens" + suffix, tokens);
    ++round;
  }
  return out;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

void RunParse(benchmark::State& state, const std::string& text, bool filtered) {
  ParseOptions options;
  options.format = Format::kText;
  if (filtered) options.families = kFiveFamilies;
  size_t samples = 0;
  for (auto _ : state) {
    Parser parser(text, options);
    double sum = 0;
    size_t labels = 0;
    for (Event e = parser.Next(); e != Event::kEnd; e = parser.Next()) {
      if (e == Event::kSample) {
        sum += parser.sample().value;
        labels += parser.sample().labels.size();
      }
    }
    if (!parser.ok()) state.SkipWithError(parser.last_error().ToString().c_str());
    samples = parser.sample_count();
    benchmark::DoNotOptimize(sum);
    benchmark::DoNotOptimize(labels);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
  state.counters["samples"] = static_cast<double>(samples);
  state.counters["ns_per_sample"] = benchmark::Counter(
      static_cast<double>(samples) * 1e-9,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void RegisterAll() {
  static std::vector<std::pair<std::string, std::string>> inputs;
  inputs.emplace_back("generated_vllm_16_engines", GenerateVllmScrape(16, 500 * 1024));
  const std::filesystem::path fixtures =
      std::filesystem::path(modelmetrics::test_paths::Shared("fixtures"));
  std::vector<std::filesystem::path> files;
  if (std::filesystem::exists(fixtures)) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(fixtures)) {
      const auto ext = entry.path().extension();
      if (entry.is_regular_file() && (ext == ".txt" || ext == ".prom")) {
        files.push_back(entry.path());
      }
    }
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    if (path.filename() == "README.md") continue;
    inputs.emplace_back(path.parent_path().filename().string() + "/" + path.filename().string(),
                        ReadFile(path));
  }
  for (const auto& [name, text] : inputs) {
    const std::string* body = &text;
    benchmark::RegisterBenchmark(("full/" + name).c_str(),
                                 [body](benchmark::State& s) { RunParse(s, *body, false); });
    benchmark::RegisterBenchmark(("filtered5/" + name).c_str(),
                                 [body](benchmark::State& s) { RunParse(s, *body, true); });
  }
}

}  // namespace
}  // namespace modelmetrics

int main(int argc, char** argv) {
  modelmetrics::RegisterAll();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
