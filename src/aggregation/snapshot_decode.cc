// SnapshotFromJson and ParseTime (see snapshot.h): the API's JSON read back by a client of it,
// such as `modelmetrics ui` reading through kube-apiserver. The answer comes from another process
// (and through a proxy), so every member's type is checked and a bad one is named.
#include <chrono>
#include <cstdint>
#include <limits>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "aggregation/snapshot.h"

namespace modelmetrics::deployment {
namespace {

using Json = nlohmann::json;

// Reads the members of one JSON object into a struct; the first problem is kept, with its path.
class Reader {
 public:
  Reader(const Json& object, std::string path, std::string* error)
      : object_(object), path_(std::move(path)), error_(error) {}

  void String(const char* key, std::string* out) {
    const Json* value = Member(key);
    if (value == nullptr) return;
    if (!value->is_string()) return Fail(key, "a string");
    *out = value->get<std::string>();
  }
  void Number(const char* key, double* out) {
    const Json* value = Member(key);
    if (value == nullptr) return;
    if (!value->is_number()) return Fail(key, "a number");
    *out = value->get<double>();
  }
  void Int32(const char* key, int32_t* out) {
    const Json* value = Member(key);
    if (value == nullptr) return;
    if (value->is_number_integer() &&
        !(value->is_number_unsigned() && value->get<uint64_t>() > uint64_t{INT32_MAX})) {
      const int64_t v = value->get<int64_t>();
      if (v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max()) {
        *out = static_cast<int32_t>(v);
        return;
      }
    }
    Fail(key, "a 32-bit integer");
  }
  void Bool(const char* key, bool* out) {
    const Json* value = Member(key);
    if (value == nullptr) return;
    if (!value->is_boolean()) return Fail(key, "true or false");
    *out = value->get<bool>();
  }
  void Time(const char* key, WallTime* out) {
    const Json* value = Member(key);
    if (value == nullptr) return;
    if (!value->is_string() || !ParseTime(value->get_ref<const std::string&>(), out)) {
      Fail(key, "an RFC 3339 time");
    }
  }
  // A list of objects, each read by `read(Reader&, T*)`.
  template <typename T, typename Read>
  void List(const char* key, std::vector<T>* out, Read read) {
    const Json* value = Member(key);
    if (value == nullptr) return;
    if (!value->is_array()) return Fail(key, "a list");
    out->clear();
    out->reserve(value->size());
    for (size_t i = 0; i < value->size() && ok(); ++i) {
      const std::string path = Path(key) + "[" + std::to_string(i) + "]";
      if (!(*value)[i].is_object()) {
        *error_ = path + ": not an object";
        return;
      }
      Reader item((*value)[i], path, error_);
      read(item, &out->emplace_back());
    }
  }

  bool ok() const { return error_->empty(); }

 private:
  // Null when absent (or JSON null, as encoding/json treats it) or after an earlier failure.
  const Json* Member(const char* key) const {
    if (!ok()) return nullptr;
    const auto it = object_.find(key);
    if (it == object_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  std::string Path(const char* key) const { return path_.empty() ? key : path_ + "." + key; }
  void Fail(const char* key, const char* expected) { *error_ = Path(key) + ": not " + expected; }

  const Json& object_;
  std::string path_;
  std::string* error_;
};

void ReadGauge(Reader& r, Gauge* g) {
  r.String("name", &g->name);
  r.String("source", &g->source);
  r.String("scope", &g->scope);
  r.String("unit", &g->unit);
  r.Number("value", &g->value);
  r.Int32("podCount", &g->pod_count);
  r.Time("observedAt", &g->observed_at);
}

void ReadUtilization(Reader& r, Utilization* u) {
  r.String("name", &u->name);
  r.String("source", &u->source);
  r.String("scope", &u->scope);
  r.String("unit", &u->unit);
  r.Number("mean", &u->mean);
  r.Number("max", &u->max);
  r.Int32("podCount", &u->pod_count);
  r.Time("observedAt", &u->observed_at);
}

void ReadWindow(Reader& r, Window* w) {
  r.String("name", &w->name);
  r.String("pod", &w->pod);
  r.String("source", &w->source);
  r.String("scope", &w->scope);
  r.String("unit", &w->unit);
  r.Number("value", &w->value);
  r.Number("samples", &w->samples);
  r.Number("windowSeconds", &w->window_seconds);
  r.Time("observedAt", &w->observed_at);
}

void ReadCacheHit(Reader& r, CacheHit* h) {
  h->unit.clear();  // the zero value when absent, not the writer's default
  h->pod_count = 0;
  r.String("pod", &h->pod);
  r.String("source", &h->source);
  r.String("scope", &h->scope);
  r.String("unit", &h->unit);
  r.Number("hits", &h->hits);
  r.Number("queries", &h->queries);
  r.Number("rate", &h->rate);
  r.Number("windowSeconds", &h->window_seconds);
  r.Int32("podCount", &h->pod_count);
  r.Time("observedAt", &h->observed_at);
}

void ReadMissing(Reader& r, Missing* m) {
  r.String("pod", &m->pod);
  r.String("source", &m->source);
  std::string reason;
  r.String("reason", &reason);
  m->reason = reason;  // bounded and made valid UTF-8, as every reason
}

// Reads exactly `n` digits at `*p` as a number.
bool Digits(std::string_view text, size_t* p, size_t n, int* out) {
  if (*p + n > text.size()) return false;
  int value = 0;
  for (size_t i = 0; i < n; ++i) {
    const char c = text[*p + i];
    if (c < '0' || c > '9') return false;
    value = value * 10 + (c - '0');
  }
  *p += n;
  *out = value;
  return true;
}

bool Expect(std::string_view text, size_t* p, char c) {
  if (*p >= text.size() || text[*p] != c) return false;
  ++*p;
  return true;
}

}  // namespace

bool ParseTime(std::string_view text, WallTime* out) {
  size_t p = 0;
  int year, month, day, hour, minute, second;
  if (!Digits(text, &p, 4, &year) || !Expect(text, &p, '-') || !Digits(text, &p, 2, &month) ||
      !Expect(text, &p, '-') || !Digits(text, &p, 2, &day) ||
      !(Expect(text, &p, 'T') || Expect(text, &p, 't')) || !Digits(text, &p, 2, &hour) ||
      !Expect(text, &p, ':') || !Digits(text, &p, 2, &minute) || !Expect(text, &p, ':') ||
      !Digits(text, &p, 2, &second)) {
    return false;
  }
  if (p < text.size() && text[p] == '.') {
    const size_t start = ++p;
    while (p < text.size() && text[p] >= '0' && text[p] <= '9') ++p;
    if (p == start) return false;
  }
  int offset_seconds = 0;
  if (p < text.size() && (text[p] == 'Z' || text[p] == 'z')) {
    ++p;
  } else if (p < text.size() && (text[p] == '+' || text[p] == '-')) {
    const int sign = text[p++] == '-' ? -1 : 1;
    int oh, om;
    if (!Digits(text, &p, 2, &oh) || !Expect(text, &p, ':') || !Digits(text, &p, 2, &om) ||
        oh > 23 || om > 59) {
      return false;
    }
    offset_seconds = sign * (oh * 3600 + om * 60);
  } else {
    return false;
  }
  if (p != text.size()) return false;
  if (month < 1 || month > 12 || hour > 23 || minute > 59 || second > 59) return false;
  const std::chrono::year_month_day date{std::chrono::year(year),
                                         std::chrono::month(static_cast<unsigned>(month)),
                                         std::chrono::day(static_cast<unsigned>(day))};
  if (!date.ok()) return false;
  const auto seconds = std::chrono::sys_days(date).time_since_epoch() + std::chrono::hours(hour) +
                       std::chrono::minutes(minute) + std::chrono::seconds(second) -
                       std::chrono::seconds(offset_seconds);
  *out = WallTime(std::chrono::duration_cast<WallTime::duration>(seconds));
  return true;
}

Status SnapshotFromJson(std::string_view json, Snapshot* out,
                        std::string_view expected_api_version) {
  std::string problem;
  const Json root = Json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Status::InvalidArgument("not JSON");
  if (!root.is_object()) return Status::InvalidArgument("not a JSON object");
  Snapshot snapshot;
  Reader top(root, "", &problem);
  std::string kind;
  std::string api_version;
  top.String("kind", &kind);
  top.String("apiVersion", &api_version);
  if (problem.empty() && (kind != kMetricsKind || api_version != expected_api_version)) {
    problem =
        fmt::format("kind {} {}, not {} {}", kind, api_version, kMetricsKind, expected_api_version);
  }
  if (problem.empty()) {
    const auto metadata = root.find("metadata");
    if (metadata == root.end() || !metadata->is_object()) {
      problem = "metadata: not an object";
    } else {
      Reader m(*metadata, "metadata", &problem);
      m.String("name", &snapshot.name);
      m.String("namespace", &snapshot.namespace_);
    }
  }
  top.Time("timestamp", &snapshot.timestamp);
  top.List("processing", &snapshot.processing, ReadGauge);
  top.List("queueing", &snapshot.queueing, ReadGauge);
  top.List("cacheHits", &snapshot.cache_hits, ReadCacheHit);
  top.List("missing", &snapshot.missing, ReadMissing);
  top.Bool("partial", &snapshot.partial);
  top.List("latency", &snapshot.latency, ReadWindow);
  top.List("traffic", &snapshot.traffic, ReadWindow);
  top.List("transfer", &snapshot.transfer, ReadWindow);
  top.List("utilization", &snapshot.utilization, ReadUtilization);
  if (!problem.empty()) {
    return Status::InvalidArgument(std::move(problem));
  }
  *out = std::move(snapshot);
  return Status::Ok();
}

}  // namespace modelmetrics::deployment
