// libFuzzer target for what a hostile Pod controls: its /metrics body, read as each exporter and
// merged twice (a baseline, then 30 s later the same body with every value halved and doubled in
// turn, so windows, resets and ratios all run), then rendered as the API's JSON.
//
// Invariants checked (abort on violation):
//   - parsing and merging terminate without memory or UB errors (ASan/UBSan);
//   - the JSON never carries NaN or Inf, and every cache-hit rate lies in [0, 1];
//   - `partial` is exactly "some reason outside the not-partial list";
//   - the JSON reads back with SnapshotFromJson, and is stable after one such trip.
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "aggregation/baseline_store.h"
#include "aggregation/exporter_registry.h"
#include "aggregation/merge.h"
#include "aggregation/metrics_parse.h"
#include "aggregation/snapshot.h"

namespace {

using namespace modelmetrics::deployment;

void Check(bool condition) {
  if (!condition) std::abort();
}

ModelDeployment MakeDeployment(bool vllm, bool pd, bool kv_cache, std::string_view router) {
  ModelDeployment md;
  md.metadata = {.name = "chat", .namespace_ = "team", .uid = "md-one"};
  md.engine = vllm ? "vllm" : "sglang";
  if (pd) {
    md.roles = {{.name = "prompt", .kind = "prefill"}, {.name = "generation", .kind = "decode"}};
  } else {
    md.roles = {{.name = "server", .kind = "server"}};
  }
  if (!router.empty()) md.router = Router{.name = std::string(router)};
  md.kv_cache = kv_cache;
  return md;
}

Pod MakePod(std::string_view component, bool router) {
  Pod pod;
  pod.metadata.name = router ? "chat-router-0" : "chat-" + std::string(component) + "-0";
  pod.metadata.uid = "pod-uid";
  if (router) {
    pod.metadata.labels[std::string(kLabelRouter)] = "router";
  } else {
    pod.metadata.labels[std::string(kLabelComponent)] = std::string(component);
  }
  pod.containers.push_back(
      {.name = "engine", .args = {"--kv-transfer-config", "{}", "--enable-hierarchical-cache"}});
  return pod;
}

// Merges `body` as a baseline and, 30 s later, the same read with every value doubled.
void MergeTwice(std::string_view body, const ExporterProfile* exporter, const ModelDeployment& md,
                const Pod& pod) {
  PodMetrics read;
  if (const Status parsed = ParsePodMetrics(body, exporter, &read); !parsed.ok()) {
    Check(parsed.message().rfind("parse Prometheus metrics: ", 0) == 0);
    return;
  }
  BaselineStore store;
  const WallTime t0 = WallTime(std::chrono::seconds(1'800'000'000));
  SnapshotBuilder first(md, &store);
  first.MergePod(pod, read, ReadTime::Replay(t0));
  first.Finish(t0);
  // The second read: every value doubled, so each delta equals the first value.
  PodMetrics later = read;
  for (auto& [key, value] : later.gauges) value *= 2;
  for (auto& [key, pair] : later.cache) pair = {pair.hits * 2, pair.queries * 2};
  for (auto& [key, window] : later.windows) window = {window.sum * 2, window.count * 2};
  SnapshotBuilder second(md, &store);
  second.MergePod(pod, later, ReadTime::Replay(t0 + std::chrono::seconds(30)));
  const Snapshot snapshot = second.Finish(t0 + std::chrono::seconds(30));
  bool partial = false;
  for (const Missing& m : snapshot.missing) partial = partial || !IsNotPartialReason(m.reason);
  Check(partial == snapshot.partial);
  for (const CacheHit& hit : snapshot.cache_hits) Check(hit.rate >= 0 && hit.rate <= 1);
  for (const auto* list : {&snapshot.latency, &snapshot.traffic, &snapshot.transfer}) {
    for (const Window& w : *list) Check(std::isfinite(w.value) && std::isfinite(w.samples));
  }
  const std::string json = SnapshotToJson(snapshot);
  for (std::string_view bad : {":nan", ":-nan", ":inf", ":-inf", ":NaN", ":+Inf", ":-Inf"}) {
    Check(json.find(bad) == std::string::npos);  // numbers are never spelled these ways
  }
  // A client of the API (SnapshotFromJson) reads every document back, and after one trip (which
  // turns \ufffd escapes into U+FFFD) the document is stable.
  Snapshot decoded;
  Check(SnapshotFromJson(json, &decoded).ok());
  const std::string once = SnapshotToJson(decoded);
  Check(SnapshotFromJson(once, &decoded).ok());
  Check(SnapshotToJson(decoded) == once);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  // The first byte picks the shape; the rest is the body.
  const uint8_t shape = data[0];
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  const bool vllm = shape & 1;
  const bool pd = shape & 2;
  const bool kv_cache = shape & 4;
  static constexpr std::string_view kRouters[] = {"llm-d-router", "vllm-router", "sglang-gateway",
                                                  ""};
  const std::string_view router = kRouters[(shape >> 3) & 3];
  const ModelDeployment md = MakeDeployment(vllm, pd, kv_cache, router);
  if (!router.empty() && (shape & 32)) {
    MergeTwice(body, SelectExporter(md, /*router=*/true), md, MakePod("", /*router=*/true));
  } else {
    const std::string_view component = pd ? ((shape & 64) ? "prompt" : "generation") : "server";
    MergeTwice(body, SelectExporter(md, /*router=*/false), md,
               MakePod(component, /*router=*/false));
  }
  return 0;
}
