// Renderings of a Snapshot. The JSON writer is hand-rolled because the document must match Go's
// encoding/json byte for byte: struct field order, `4` rather than `4.0`, exponent form outside
// [1e-6, 1e21), HTML-safe escaping.
#include "aggregation/snapshot.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <ctime>
#include <string>

#include <fmt/format.h>

#include "base/text.h"

namespace modelmetrics::deployment {
namespace {

// Go's strconv.FormatFloat(f, 'f' or 'e', -1, 64) as encoding/json picks it.
void AppendGoFloat(std::string* out, double value) {
  if (!std::isfinite(value)) value = 0;  // never NaN or Inf on the wire
  // -0 stays -0: Go's encoder hands it to strconv.AppendFloat, which writes "-0".
  char buffer[64];
  const double magnitude = std::fabs(value);
  const bool exponent = magnitude != 0 && (magnitude < 1e-6 || magnitude >= 1e21);
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value,
                              exponent ? std::chars_format::scientific : std::chars_format::fixed);
  std::string_view text(buffer, result.ptr - buffer);
  if (!exponent) {
    out->append(text);
    return;
  }
  // Go writes e-07 as e-7 and e+21 as e+21.
  const size_t e = text.find('e');
  out->append(text.substr(0, e + 2));  // mantissa, 'e', sign
  std::string_view digits = text.substr(e + 2);
  while (digits.size() > 1 && digits.front() == '0') digits.remove_prefix(1);
  out->append(digits);
}

// encoding/json's string escaping, including its HTML-safe \u003c, \u003e, \u0026, the line
// separators U+2028/U+2029, and \ufffd for each byte that is not valid UTF-8 (reasons can carry
// a hostile Pod's bytes).
void AppendJsonString(std::string* out, std::string_view text) {
  out->push_back('"');
  for (size_t i = 0; i < text.size();) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c >= 0x80) {
      const size_t length = base::Utf8SequenceLength(text.substr(i));
      if (length == 0) {
        out->append("\\ufffd");
        ++i;
      } else if (length == 3 && c == 0xE2 && static_cast<unsigned char>(text[i + 1]) == 0x80 &&
                 (static_cast<unsigned char>(text[i + 2]) & 0xFE) == 0xA8) {
        out->append(static_cast<unsigned char>(text[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029");
        i += 3;
      } else {
        out->append(text.substr(i, length));
        i += length;
      }
      continue;
    }
    ++i;
    switch (c) {
      case '"':
        out->append("\\\"");
        continue;
      case '\\':
        out->append("\\\\");
        continue;
      case '\n':
        out->append("\\n");
        continue;
      case '\r':
        out->append("\\r");
        continue;
      case '\t':
        out->append("\\t");
        continue;
      default:
        break;
    }
    if (c < 0x20 || c == '<' || c == '>' || c == '&') {
      out->append(fmt::format("\\u{:04x}", c));
    } else {
      out->push_back(static_cast<char>(c));
    }
  }
  out->push_back('"');
}

// Writes `"key":value` members with the commas between them.
class JsonObject {
 public:
  explicit JsonObject(std::string* out) : out_(out) { out_->push_back('{'); }
  void String(std::string_view key, std::string_view value) {
    Key(key);
    AppendJsonString(out_, value);
  }
  void Number(std::string_view key, double value) {
    Key(key);
    AppendGoFloat(out_, value);
  }
  void Integer(std::string_view key, int64_t value) {
    Key(key);
    out_->append(std::to_string(value));
  }
  void Bool(std::string_view key, bool value) {
    Key(key);
    out_->append(value ? "true" : "false");
  }
  void Time(std::string_view key, WallTime value) { String(key, FormatTime(value)); }
  void Raw(std::string_view key, std::string_view json) {
    Key(key);
    out_->append(json);
  }
  void Key(std::string_view key) {
    if (!first_) out_->push_back(',');
    first_ = false;
    AppendJsonString(out_, key);
    out_->push_back(':');
  }
  void Close() { out_->push_back('}'); }

 private:
  std::string* out_;
  bool first_ = true;
};

void AppendGauge(std::string* out, const Gauge& gauge) {
  JsonObject object(out);
  object.String("name", gauge.name);
  object.String("source", gauge.source);
  object.String("scope", gauge.scope);
  object.String("unit", gauge.unit);
  object.Number("value", gauge.value);
  object.Integer("podCount", gauge.pod_count);
  object.Time("observedAt", gauge.observed_at);
  object.Close();
}

void AppendUtilization(std::string* out, const Utilization& u) {
  JsonObject object(out);
  object.String("name", u.name);
  object.String("source", u.source);
  object.String("scope", u.scope);
  object.String("unit", u.unit);
  object.Number("mean", u.mean);
  object.Number("max", u.max);
  object.Integer("podCount", u.pod_count);
  object.Time("observedAt", u.observed_at);
  object.Close();
}

void AppendWindow(std::string* out, const Window& window) {
  JsonObject object(out);
  object.String("name", window.name);
  object.String("pod", window.pod);
  object.String("source", window.source);
  object.String("scope", window.scope);
  object.String("unit", window.unit);
  object.Number("value", window.value);
  object.Number("samples", window.samples);
  object.Number("windowSeconds", window.window_seconds);
  object.Time("observedAt", window.observed_at);
  object.Close();
}

void AppendCacheHit(std::string* out, const CacheHit& hit) {
  JsonObject object(out);
  object.String("pod", hit.pod);
  object.String("source", hit.source);
  object.String("scope", hit.scope);
  object.String("unit", hit.unit);
  object.Number("hits", hit.hits);
  object.Number("queries", hit.queries);
  object.Number("rate", hit.rate);
  object.Number("windowSeconds", hit.window_seconds);
  object.Integer("podCount", hit.pod_count);
  object.Time("observedAt", hit.observed_at);
  object.Close();
}

void AppendMissing(std::string* out, const Missing& missing) {
  JsonObject object(out);
  object.String("pod", missing.pod);
  object.String("source", missing.source);
  object.String("reason", missing.reason);
  object.Close();
}

// An omitempty list member.
template <typename T, typename AppendItem>
void AppendList(JsonObject* object, std::string* out, std::string_view key,
                const std::vector<T>& items, AppendItem append_item) {
  if (items.empty()) return;
  object->Key(key);
  out->push_back('[');
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out->push_back(',');
    append_item(out, items[i]);
  }
  out->push_back(']');
}

std::string FormatNumber(double value) {
  std::string text;
  AppendGoFloat(&text, value);
  return text;
}

// A YAML scalar: plain when unambiguous, else JSON-quoted (JSON strings are valid YAML).
std::string YamlString(std::string_view text) {
  bool plain = !text.empty();
  for (char c : text) {
    const bool safe = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '-' || c == '_' || c == '/' || c == '.' || c == '+';
    if (!safe) plain = false;
  }
  if (plain) {
    // Words YAML would read as another type.
    static constexpr std::string_view kReserved[] = {"true", "false", "null", "yes", "no",
                                                     "on",   "off",   "~",    "y",   "n"};
    for (std::string_view word : kReserved) {
      if (text.size() == word.size() &&
          std::equal(text.begin(), text.end(), word.begin(), [](char a, char b) {
            return std::tolower(static_cast<unsigned char>(a)) == b;
          })) {
        plain = false;
      }
    }
    const char first = text.front();
    if ((first >= '0' && first <= '9') || first == '-' || first == '+' || first == '.') {
      plain = false;
    }
  }
  if (plain) return std::string(text);
  std::string quoted;
  AppendJsonString(&quoted, text);
  return quoted;
}

void AppendYamlItem(std::string* out, const std::vector<std::pair<std::string, std::string>>& f) {
  for (size_t i = 0; i < f.size(); ++i) {
    out->append(i == 0 ? "- " : "  ");
    out->append(f[i].first);
    out->append(": ");
    out->append(f[i].second);
    out->push_back('\n');
  }
}

template <typename T, typename Fields>
void AppendYamlList(std::string* out, std::string_view key, const std::vector<T>& items,
                    Fields fields) {
  if (items.empty()) return;
  out->append(key);
  out->append(":\n");
  for (const T& item : items) AppendYamlItem(out, fields(item));
}

std::vector<std::pair<std::string, std::string>> GaugeFields(const Gauge& g) {
  return {{"name", YamlString(g.name)},
          {"source", YamlString(g.source)},
          {"scope", YamlString(g.scope)},
          {"unit", YamlString(g.unit)},
          {"value", FormatNumber(g.value)},
          {"podCount", std::to_string(g.pod_count)},
          {"observedAt", "\"" + FormatTime(g.observed_at) + "\""}};
}

std::vector<std::pair<std::string, std::string>> UtilizationFields(const Utilization& u) {
  return {{"name", YamlString(u.name)},
          {"source", YamlString(u.source)},
          {"scope", YamlString(u.scope)},
          {"unit", YamlString(u.unit)},
          {"mean", FormatNumber(u.mean)},
          {"max", FormatNumber(u.max)},
          {"podCount", std::to_string(u.pod_count)},
          {"observedAt", "\"" + FormatTime(u.observed_at) + "\""}};
}

std::vector<std::pair<std::string, std::string>> WindowFields(const Window& w) {
  return {{"name", YamlString(w.name)},
          {"pod", YamlString(w.pod)},
          {"source", YamlString(w.source)},
          {"scope", YamlString(w.scope)},
          {"unit", YamlString(w.unit)},
          {"value", FormatNumber(w.value)},
          {"samples", FormatNumber(w.samples)},
          {"windowSeconds", FormatNumber(w.window_seconds)},
          {"observedAt", "\"" + FormatTime(w.observed_at) + "\""}};
}

// Table helpers: columns padded to their widest cell, three spaces apart, as kubectl prints.
using Row = std::vector<std::string>;

void AppendTable(std::string* out, std::string_view title, const std::vector<Row>& rows) {
  if (rows.size() <= 1) return;  // header only
  std::vector<size_t> widths(rows.front().size(), 0);
  for (const Row& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  out->append(title);
  out->push_back('\n');
  for (const Row& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line.append(widths[i] - row[i].size() + 3, ' ');
    }
    out->append(line);
    out->push_back('\n');
  }
  out->push_back('\n');
}

// A human number: integers as integers, others with up to 4 significant decimals.
std::string Human(double value) {
  if (!std::isfinite(value)) return "0";
  if (value == std::floor(value) && std::fabs(value) < 1e15) return fmt::format("{:.0f}", value);
  if (std::fabs(value) >= 100) return fmt::format("{:.1f}", value);
  return fmt::format("{:.4g}", value);
}

// Latency in the unit people read it in.
std::string HumanSeconds(double seconds) {
  if (seconds < 1) return fmt::format("{:.1f}ms", seconds * 1000);
  return fmt::format("{:.3f}s", seconds);
}

std::string HumanAge(double seconds) { return fmt::format("{:.1f}s", seconds); }

void AppendGaugeTable(std::string* out, std::string_view title, const std::vector<Gauge>& gauges) {
  std::vector<Row> rows{{"NAME", "SCOPE", "VALUE", "UNIT", "PODS", "SOURCE"}};
  for (const Gauge& g : gauges) {
    rows.push_back(
        {g.name, g.scope, Human(g.value), g.unit, std::to_string(g.pod_count), g.source});
  }
  AppendTable(out, title, rows);
}

void AppendWindowTable(std::string* out, std::string_view title,
                       const std::vector<Window>& windows) {
  std::vector<Row> rows{{"POD", "NAME", "SCOPE", "VALUE", "UNIT", "SAMPLES", "WINDOW", "SOURCE"}};
  for (const Window& w : windows) {
    rows.push_back({w.pod, w.name, w.scope,
                    w.unit == "seconds" ? HumanSeconds(w.value) : Human(w.value),
                    w.unit == "seconds" ? "" : w.unit, Human(w.samples), HumanAge(w.window_seconds),
                    w.source});
  }
  AppendTable(out, title, rows);
}

}  // namespace

std::string FormatTime(WallTime time) {
  // Second precision, truncated toward the past as Go's metav1.Time does.
  const std::time_t seconds = static_cast<std::time_t>(
      std::chrono::floor<std::chrono::seconds>(time.time_since_epoch()).count());
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char buffer[32];
  std::strftime(buffer, sizeof(buffer), "%Y-%m-%dT%H:%M:%SZ", &utc);
  return buffer;
}

std::string SnapshotToJson(const Snapshot& snapshot, std::string_view api_version) {
  std::string out;
  out.reserve(1024 + 256 * (snapshot.processing.size() + snapshot.queueing.size() +
                            snapshot.cache_hits.size() + snapshot.missing.size() +
                            snapshot.latency.size() + snapshot.traffic.size() +
                            snapshot.transfer.size() + snapshot.utilization.size()));
  JsonObject root(&out);
  root.String("kind", "ModelDeploymentMetrics");
  root.String("apiVersion", api_version);
  root.Key("metadata");
  {
    JsonObject metadata(&out);
    metadata.String("name", snapshot.name);
    metadata.String("namespace", snapshot.namespace_);
    metadata.Raw("creationTimestamp", "null");
    metadata.Close();
  }
  root.Time("timestamp", snapshot.timestamp);
  AppendList(&root, &out, "processing", snapshot.processing, AppendGauge);
  AppendList(&root, &out, "queueing", snapshot.queueing, AppendGauge);
  AppendList(&root, &out, "cacheHits", snapshot.cache_hits, AppendCacheHit);
  AppendList(&root, &out, "missing", snapshot.missing, AppendMissing);
  root.Bool("partial", snapshot.partial);
  AppendList(&root, &out, "latency", snapshot.latency, AppendWindow);
  AppendList(&root, &out, "traffic", snapshot.traffic, AppendWindow);
  AppendList(&root, &out, "transfer", snapshot.transfer, AppendWindow);
  AppendList(&root, &out, "utilization", snapshot.utilization, AppendUtilization);
  root.Close();
  return out;
}

std::string SnapshotToYaml(const Snapshot& snapshot) {
  std::string out;
  out += "apiVersion: worker.gpustack.ai/v1\n";
  out += "kind: ModelDeploymentMetrics\n";
  out += "metadata:\n";
  out += "  creationTimestamp: null\n";
  out += "  name: " + YamlString(snapshot.name) + "\n";
  out += "  namespace: " + YamlString(snapshot.namespace_) + "\n";
  out += "timestamp: \"" + FormatTime(snapshot.timestamp) + "\"\n";
  AppendYamlList(&out, "processing", snapshot.processing, GaugeFields);
  AppendYamlList(&out, "queueing", snapshot.queueing, GaugeFields);
  AppendYamlList(&out, "cacheHits", snapshot.cache_hits, [](const CacheHit& h) {
    return std::vector<std::pair<std::string, std::string>>{
        {"pod", YamlString(h.pod)},
        {"source", YamlString(h.source)},
        {"scope", YamlString(h.scope)},
        {"unit", YamlString(h.unit)},
        {"hits", FormatNumber(h.hits)},
        {"queries", FormatNumber(h.queries)},
        {"rate", FormatNumber(h.rate)},
        {"windowSeconds", FormatNumber(h.window_seconds)},
        {"podCount", std::to_string(h.pod_count)},
        {"observedAt", "\"" + FormatTime(h.observed_at) + "\""}};
  });
  AppendYamlList(&out, "missing", snapshot.missing, [](const Missing& m) {
    return std::vector<std::pair<std::string, std::string>>{
        {"pod", m.pod.empty() ? "\"\"" : YamlString(m.pod)},
        {"source", YamlString(m.source)},
        {"reason", YamlString(m.reason)}};
  });
  out += std::string("partial: ") + (snapshot.partial ? "true" : "false") + "\n";
  AppendYamlList(&out, "latency", snapshot.latency, WindowFields);
  AppendYamlList(&out, "traffic", snapshot.traffic, WindowFields);
  AppendYamlList(&out, "transfer", snapshot.transfer, WindowFields);
  AppendYamlList(&out, "utilization", snapshot.utilization, UtilizationFields);
  return out;
}

std::string SnapshotToTable(const Snapshot& snapshot) {
  std::string out =
      fmt::format("MODELDEPLOYMENT {}/{}   AT {}{}\n\n", snapshot.namespace_, snapshot.name,
                  FormatTime(snapshot.timestamp), snapshot.partial ? "   PARTIAL" : "");
  AppendGaugeTable(&out, "PROCESSING", snapshot.processing);
  AppendGaugeTable(&out, "QUEUEING", snapshot.queueing);
  std::vector<Row> used{{"NAME", "SCOPE", "MEAN", "MAX", "PODS", "SOURCE"}};
  for (const Utilization& u : snapshot.utilization) {
    used.push_back({u.name, u.scope, fmt::format("{:.1f}%", u.mean * 100),
                    fmt::format("{:.1f}%", u.max * 100), std::to_string(u.pod_count), u.source});
  }
  AppendTable(&out, "UTILIZATION", used);
  std::vector<Row> hits{{"POD", "SCOPE", "RATE", "HITS", "QUERIES", "WINDOW"}};
  for (const CacheHit& h : snapshot.cache_hits) {
    hits.push_back({h.pod, h.scope, fmt::format("{:.1f}%", h.rate * 100), Human(h.hits),
                    Human(h.queries), HumanAge(h.window_seconds)});
  }
  AppendTable(&out, "CACHE HITS (tokens)", hits);
  AppendWindowTable(&out, "LATENCY (mean of new observations)", snapshot.latency);
  AppendWindowTable(&out, "TRAFFIC", snapshot.traffic);
  AppendWindowTable(&out, "TRANSFER", snapshot.transfer);
  std::vector<Row> missing{{"POD", "SOURCE", "REASON"}};
  for (const Missing& m : snapshot.missing) {
    missing.push_back({m.pod.empty() ? "-" : m.pod, m.source, m.reason});
  }
  AppendTable(&out, "MISSING", missing);
  if (snapshot.partial) out += "PARTIAL: at least one required source did not contribute\n";
  return out;
}

}  // namespace modelmetrics::deployment
