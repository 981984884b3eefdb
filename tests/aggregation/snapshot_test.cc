// The ModelDeploymentMetrics document (reference §1): Kubernetes shape and key order, omitted
// empty lists, `partial` and Missing.pod always present, Go's float and time formatting.
#include "aggregation/snapshot.h"

#include <chrono>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include <gtest/gtest.h>

#include "aggregation/test_builders.h"
#include "status_matchers.h"

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;
namespace {

using namespace std::chrono_literals;
using testing::T0;

constexpr char kT0[] = "2026-11-29T16:13:15Z";

std::string WindowJson(double value) {
  Snapshot snapshot;
  snapshot.timestamp = T0();
  snapshot.latency.push_back(Window{.name = "ttft",
                                    .pod = "p",
                                    .source = "s",
                                    .scope = "engine/server",
                                    .unit = "seconds",
                                    .value = value,
                                    .samples = 1,
                                    .window_seconds = 1,
                                    .observed_at = T0()});
  const std::string json = SnapshotToJson(snapshot);
  const std::string key = "\"value\":";
  const size_t start = json.find(key) + key.size();
  return json.substr(start, json.find(',', start) - start);
}

TEST(SnapshotJson, EmptySnapshotShape) {
  Snapshot snapshot;
  snapshot.name = "chat";
  snapshot.namespace_ = "team";
  snapshot.timestamp = T0() + 999ms;  // second precision, truncated
  EXPECT_EQ(SnapshotToJson(snapshot),
            "{\"kind\":\"ModelDeploymentMetrics\",\"apiVersion\":\"worker.gpustack.ai/v1\","
            "\"metadata\":{\"name\":\"chat\",\"namespace\":\"team\",\"creationTimestamp\":null},"
            "\"timestamp\":\"2026-11-29T16:13:15Z\",\"partial\":false}");
}

Snapshot FullSnapshot() {
  Snapshot snapshot;
  snapshot.name = "chat";
  snapshot.namespace_ = "team";
  snapshot.timestamp = T0() + 30s;
  snapshot.processing.push_back(Gauge{.name = "running",
                                      .source = "vllm:num_requests_running",
                                      .scope = "engine/server",
                                      .unit = "requests",
                                      .value = 4,
                                      .pod_count = 2,
                                      .observed_at = T0() + 29s + 500ms});
  snapshot.queueing.push_back(Gauge{.name = "waiting",
                                    .source = "vllm:num_requests_waiting",
                                    .scope = "engine/server",
                                    .unit = "requests",
                                    .value = 0,
                                    .pod_count = 2,
                                    .observed_at = T0() + 29s});
  snapshot.cache_hits.push_back(CacheHit{.pod = "server-0",
                                         .source = "vllm:prefix_cache",
                                         .scope = "local-prefix",
                                         .unit = "tokens",
                                         .hits = 26656,
                                         .queries = 37842,
                                         .rate = 26656.0 / 37842.0,
                                         .window_seconds = 30,
                                         .pod_count = 1,
                                         .observed_at = T0() + 30s});
  snapshot.missing.push_back(Missing{"", "engine/server", "1 of 2 owned metrics Pods present"});
  snapshot.missing.push_back(
      Missing{"server-1", "scrape", "Get \"http://10.0.0.2:8000/metrics\": <html> & more"});
  snapshot.partial = true;
  snapshot.latency.push_back(Window{.name = "ttft",
                                    .pod = "server-0",
                                    .source = "vllm:time_to_first_token_seconds",
                                    .scope = "engine/server",
                                    .unit = "seconds",
                                    .value = 0.01955626391563095,
                                    .samples = 238,
                                    .window_seconds = 30.25,
                                    .observed_at = T0() + 30s});
  snapshot.traffic.push_back(Window{.name = "requests",
                                    .pod = "chat-router",
                                    .source = "smg_router_requests_total",
                                    .scope = "router",
                                    .unit = "requests/second",
                                    .value = 8.2,
                                    .samples = 246,
                                    .window_seconds = 30,
                                    .observed_at = T0() + 30s});
  snapshot.transfer.push_back(Window{.name = "transfer-latency",
                                     .pod = "prompt-pod",
                                     .source = "sglang:kv_transfer_latency_ms",
                                     .scope = "engine/prompt",
                                     .unit = "milliseconds",
                                     .value = 1e-7,
                                     .samples = 1e21,
                                     .window_seconds = 0.5,
                                     .observed_at = T0() + 30s});
  return snapshot;
}

TEST(SnapshotJson, FullDocumentKeyOrder) {
  EXPECT_EQ(SnapshotToJson(FullSnapshot()),
            "{\"kind\":\"ModelDeploymentMetrics\",\"apiVersion\":\"worker.gpustack.ai/v1\","
            "\"metadata\":{\"name\":\"chat\",\"namespace\":\"team\",\"creationTimestamp\":null},"
            "\"timestamp\":\"2026-11-29T16:13:45Z\","
            "\"processing\":[{\"name\":\"running\",\"source\":\"vllm:num_requests_running\","
            "\"scope\":\"engine/server\",\"unit\":\"requests\",\"value\":4,\"podCount\":2,"
            "\"observedAt\":\"2026-11-29T16:13:44Z\"}],"
            "\"queueing\":[{\"name\":\"waiting\",\"source\":\"vllm:num_requests_waiting\","
            "\"scope\":\"engine/server\",\"unit\":\"requests\",\"value\":0,\"podCount\":2,"
            "\"observedAt\":\"2026-11-29T16:13:44Z\"}],"
            "\"cacheHits\":[{\"pod\":\"server-0\",\"source\":\"vllm:prefix_cache\","
            "\"scope\":\"local-prefix\",\"unit\":\"tokens\",\"hits\":26656,\"queries\":37842,"
            "\"rate\":0.7044025157232704,\"windowSeconds\":30,\"podCount\":1,"
            "\"observedAt\":\"2026-11-29T16:13:45Z\"}],"
            "\"missing\":[{\"pod\":\"\",\"source\":\"engine/server\","
            "\"reason\":\"1 of 2 owned metrics Pods present\"},"
            "{\"pod\":\"server-1\",\"source\":\"scrape\",\"reason\":\"Get "
            "\\\"http://10.0.0.2:8000/metrics\\\": \\u003chtml\\u003e \\u0026 more\"}],"
            "\"partial\":true,"
            "\"latency\":[{\"name\":\"ttft\",\"pod\":\"server-0\","
            "\"source\":\"vllm:time_to_first_token_seconds\",\"scope\":\"engine/server\","
            "\"unit\":\"seconds\",\"value\":0.01955626391563095,\"samples\":238,"
            "\"windowSeconds\":30.25,\"observedAt\":\"2026-11-29T16:13:45Z\"}],"
            "\"traffic\":[{\"name\":\"requests\",\"pod\":\"chat-router\","
            "\"source\":\"smg_router_requests_total\",\"scope\":\"router\","
            "\"unit\":\"requests/second\",\"value\":8.2,\"samples\":246,\"windowSeconds\":30,"
            "\"observedAt\":\"2026-11-29T16:13:45Z\"}],"
            "\"transfer\":[{\"name\":\"transfer-latency\",\"pod\":\"prompt-pod\","
            "\"source\":\"sglang:kv_transfer_latency_ms\",\"scope\":\"engine/prompt\","
            "\"unit\":\"milliseconds\",\"value\":1e-7,\"samples\":1e+21,\"windowSeconds\":0.5,"
            "\"observedAt\":\"2026-11-29T16:13:45Z\"}]}");
}

// A client of the API reads the document back: every field, every list, byte for byte again.
TEST(SnapshotFromJson, ReadsBackWhatTheWriterWrote) {
  for (const Snapshot& original : {FullSnapshot(), Snapshot{.name = "chat", .timestamp = T0()}}) {
    const std::string json = SnapshotToJson(original);
    Snapshot decoded;
    std::string error;
    ASSERT_OK(SnapshotFromJson(json, &decoded));
    EXPECT_EQ(SnapshotToJson(decoded), json);
  }
  Snapshot decoded;
  std::string error;
  ASSERT_OK(SnapshotFromJson(SnapshotToJson(FullSnapshot()), &decoded));
  EXPECT_EQ(decoded.name, "chat");
  EXPECT_EQ(decoded.namespace_, "team");
  EXPECT_EQ(decoded.timestamp, T0() + 30s);
  EXPECT_TRUE(decoded.partial);
  ASSERT_EQ(decoded.cache_hits.size(), 1u);
  EXPECT_EQ(decoded.cache_hits[0].queries, 37842);
  EXPECT_EQ(decoded.cache_hits[0].pod_count, 1);
  ASSERT_EQ(decoded.missing.size(), 2u);
  EXPECT_EQ(decoded.missing[1].reason, "Get \"http://10.0.0.2:8000/metrics\": <html> & more");
  ASSERT_EQ(decoded.transfer.size(), 1u);
  EXPECT_EQ(decoded.transfer[0].value, 1e-7);
  EXPECT_EQ(decoded.transfer[0].samples, 1e21);
}

// As a Go client: members it does not know are ignored, absent ones are zero values, and a
// member of the wrong type is an error that names it.
TEST(SnapshotFromJson, IgnoresTheUnknownAndNamesTheWrong) {
  Snapshot decoded;
  std::string error;
  ASSERT_OK(SnapshotFromJson(
      R"({"kind":"ModelDeploymentMetrics","apiVersion":"worker.gpustack.ai/v1",)"
      R"("metadata":{"name":"chat","namespace":"team","uid":"x"},"timestamp":"2026-11-29T16:13:15Z",)"
      R"("stages":[{"id":0}],"queueing":[{"name":"waiting","value":3}],"latency":null})",
      &decoded));
  EXPECT_EQ(decoded.timestamp, T0());
  ASSERT_EQ(decoded.queueing.size(), 1u);
  EXPECT_EQ(decoded.queueing[0].value, 3);
  EXPECT_EQ(decoded.queueing[0].pod_count, 0);
  EXPECT_TRUE(decoded.latency.empty());

  const std::string head =
      R"({"kind":"ModelDeploymentMetrics","apiVersion":"worker.gpustack.ai/v1","metadata":{},)";
  const std::pair<std::string, std::string> bad[] = {
      {"{", "not JSON"},
      {"[]", "not a JSON object"},
      {R"({"kind":"Status","apiVersion":"v1","metadata":{}})", "kind Status v1"},
      {R"({"kind":"ModelDeploymentMetrics","apiVersion":"worker.gpustack.ai/v1"})", "metadata"},
      {head + R"("partial":"yes"})", "partial: not true or false"},
      {head + R"("timestamp":"yesterday"})", "timestamp: not an RFC 3339 time"},
      {head + R"("processing":{}})", "processing: not a list"},
      {head + R"("processing":[1]})", "processing[0]: not an object"},
      {head + R"("latency":[{},{"value":"fast"}]})", "latency[1].value: not a number"},
      {head + R"("cacheHits":[{"podCount":4294967296}]})", "cacheHits[0].podCount: not a 32-bit"},
      {head + R"("cacheHits":[{"podCount":1.5}]})", "cacheHits[0].podCount: not a 32-bit"},
      {head + R"("missing":[{"reason":7}]})", "missing[0].reason: not a string"},
  };
  for (const auto& [json, want] : bad) {
    error.clear();
    EXPECT_FALSE(Ok(SnapshotFromJson(json, &decoded), &error)) << json;
    EXPECT_NE(error.find(want), std::string::npos) << json << " -> " << error;
  }
}

TEST(SnapshotFromJson, TimesAsMetav1ReadsThem) {
  WallTime t;
  ASSERT_TRUE(ParseTime("2026-11-29T16:13:15Z", &t));
  EXPECT_EQ(t, T0());
  ASSERT_TRUE(ParseTime("2026-11-29T17:13:15.123456+01:00", &t));
  EXPECT_EQ(t, T0());
  ASSERT_TRUE(ParseTime("2026-11-29T15:43:15-00:30", &t));
  EXPECT_EQ(t, T0());
  ASSERT_TRUE(ParseTime("2024-02-29T00:00:00Z", &t));
  for (const char* bad :
       {"", "2026-11-29", "2026-11-29T16:13:15", "2026-11-29 16:13:15Z", "2026-13-01T00:00:00Z",
        "2026-02-30T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T16:13:15.Z",
        "2026-11-29T16:13:15+1:00", "2026-11-29T16:13:15Zjunk", "+2026-11-29T16:13:15Z"}) {
    EXPECT_FALSE(ParseTime(bad, &t)) << bad;
  }
}

TEST(SnapshotJson, PartialAndMissingPodAlwaysPresent) {
  Snapshot snapshot;
  snapshot.timestamp = T0();
  snapshot.missing.push_back(Missing{"", "router", "no owned metrics Pod"});
  const std::string json = SnapshotToJson(snapshot);
  EXPECT_NE(json.find("\"missing\":[{\"pod\":\"\",\"source\":\"router\","
                      "\"reason\":\"no owned metrics Pod\"}],\"partial\":false}"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find("processing"), std::string::npos);
  EXPECT_EQ(json.find("cacheHits"), std::string::npos);
  EXPECT_EQ(json.find("latency"), std::string::npos);
}

// encoding/json's escaping: HTML-safe, line separators, and U+FFFD for every byte that is not
// valid UTF-8 (overlong forms and surrogates included), as a hostile Pod's text may carry. A
// reason is made valid where it is made (reason.h), so the writer sees U+FFFD itself there.
TEST(SnapshotJson, StringsAreEscapedAsGoDoes) {
  const std::string hostile =
      "<a&b> \"q\" \\ \t\x01 \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80 \xe2\x80\xa8\xe2\x80\xa9 "
      "\xff \xc0\xaf \xed\xa0\x80 \xe2\x82";
  Snapshot snapshot;
  snapshot.timestamp = T0();
  snapshot.missing.push_back(Missing{hostile, "scrape", hostile});
  const std::string json = SnapshotToJson(snapshot);
  const std::string escaped =
      "\\u003ca\\u0026b\\u003e \\\"q\\\" \\\\ \\t\\u0001 \xc3\xa9 \xe2\x82\xac "
      "\xf0\x9f\x98\x80 \\u2028\\u2029 ";
  EXPECT_NE(json.find("\"pod\":\"" + escaped +
                      "\\ufffd \\ufffd\\ufffd \\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\""),
            std::string::npos)
      << json;
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_NE(json.find("\"reason\":\"" + escaped + fffd + " " + fffd + fffd + " " + fffd + fffd +
                      fffd + " " + fffd + fffd + "\""),
            std::string::npos)
      << json;
}

// encoding/json: 'f' form inside [1e-6, 1e21), else 'e' with e-07 shortened to e-7; shortest
// round-trip digits.
TEST(SnapshotJson, GoFloatFormatting) {
  EXPECT_EQ(WindowJson(4), "4");
  EXPECT_EQ(WindowJson(0.5), "0.5");
  EXPECT_EQ(WindowJson(0), "0");
  EXPECT_EQ(WindowJson(-0.0), "-0");  // json.Marshal(math.Copysign(0, -1)) is "-0"
  EXPECT_EQ(WindowJson(1e-7), "1e-7");
  EXPECT_EQ(WindowJson(1.5e-7), "1.5e-7");
  EXPECT_EQ(WindowJson(0.000001), "0.000001");
  EXPECT_EQ(WindowJson(1e21), "1e+21");
  EXPECT_EQ(WindowJson(1e20), "100000000000000000000");
  EXPECT_EQ(WindowJson(2.5e300), "2.5e+300");
  EXPECT_EQ(WindowJson(1e-100), "1e-100");
  EXPECT_EQ(WindowJson(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(WindowJson(0.7044025157232704), "0.7044025157232704");
  EXPECT_EQ(WindowJson(8.2), "8.2");
  EXPECT_EQ(WindowJson(123456789.125), "123456789.125");
  EXPECT_EQ(WindowJson(-2.5), "-2.5");
  // Never NaN or Inf on the wire.
  EXPECT_EQ(WindowJson(std::numeric_limits<double>::quiet_NaN()), "0");
  EXPECT_EQ(WindowJson(std::numeric_limits<double>::infinity()), "0");
}

TEST(SnapshotJson, TimesAreSecondPrecisionUtc) {
  EXPECT_EQ(FormatTime(T0()), kT0);
  EXPECT_EQ(FormatTime(T0() + 999ms), kT0);
  EXPECT_EQ(FormatTime(T0() + 1s), "2026-11-29T16:13:16Z");
  EXPECT_EQ(FormatTime(WallTime{}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(FormatTime(T0() + std::chrono::hours(24 * 33)), "2027-01-01T16:13:15Z");
}

TEST(SnapshotRenderings, YamlAndTable) {
  Snapshot snapshot;
  snapshot.name = "chat";
  snapshot.namespace_ = "team";
  snapshot.timestamp = T0();
  snapshot.missing.push_back(Missing{"", "engine/server", "no owned metrics Pod"});
  snapshot.partial = true;
  const std::string yaml = SnapshotToYaml(snapshot);
  EXPECT_NE(yaml.find("apiVersion: worker.gpustack.ai/v1\n"), std::string::npos);
  EXPECT_NE(yaml.find("kind: ModelDeploymentMetrics\n"), std::string::npos);
  EXPECT_NE(yaml.find("timestamp: \"2026-11-29T16:13:15Z\"\n"), std::string::npos);
  EXPECT_NE(yaml.find("- pod: \"\"\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("partial: true\n"), std::string::npos);
  EXPECT_EQ(yaml.find("processing"), std::string::npos);
  const std::string table = SnapshotToTable(snapshot);
  EXPECT_NE(table.find("team/chat"), std::string::npos);
  EXPECT_NE(table.find("MISSING"), std::string::npos);
  EXPECT_NE(table.find("no owned metrics Pod"), std::string::npos);
  EXPECT_NE(table.find("PARTIAL"), std::string::npos);
}

}  // namespace
}  // namespace modelmetrics::deployment
