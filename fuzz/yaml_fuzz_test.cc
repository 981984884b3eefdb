// libFuzzer target for the YAML reader (deployment/yaml.h) and the objects decoder behind it:
// ParseYaml on arbitrary text under reduced bounds (so an alias bomb stays inside the fuzzer's
// -rss_limit_mb under ASan), then DecodeObjects on whatever parsed.
//
// Invariants checked (abort on violation): parsing terminates without memory or UB errors and
// never throws; a failure says why in one line and returns no documents; a success returns
// non-null documents within the depth and node bounds, finite numbers only, whose strings are valid
// UTF-8 (JSON can carry them); a failed decode always says why.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kube/object_file.h"
#include "kube/yaml.h"

namespace {

using nlohmann::json;

void Check(bool condition) {
  if (!condition) std::abort();
}

// Nodes as yaml.h counts them (keys included) and the nesting depth of collections.
void Measure(const json& value, int depth, size_t* nodes, int* max_depth) {
  ++*nodes;
  // JSON has no Inf or NaN: an out-of-range number must have stayed a string.
  if (value.is_number_float()) Check(std::isfinite(value.get<double>()));
  if (value.is_array() || value.is_object()) {
    ++depth;
    if (depth > *max_depth) *max_depth = depth;
  }
  if (value.is_object()) {
    for (const json& item : value) {  // the values; one node more for each key
      ++*nodes;
      Measure(item, depth, nodes, max_depth);
    }
  } else if (value.is_array()) {
    for (const json& item : value) Measure(item, depth, nodes, max_depth);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace modelmetrics::deployment;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  YamlLimits limits;
  limits.max_nodes = 100'000;
  limits.max_scalar_bytes = size_t{4} << 20;
  limits.max_depth = 64;
  std::vector<json> docs;
  if (const modelmetrics::base::Status parsed = ParseYaml(text, &docs, limits); !parsed.ok()) {
    Check(!parsed.message().empty());
    Check(parsed.message().find('\n') == std::string::npos);
    Check(docs.empty());
    return 0;
  }
  size_t nodes = 0;
  for (const json& doc : docs) {
    Check(!doc.is_null());
    int depth = 0;
    Measure(doc, 0, &nodes, &depth);
    Check(depth <= limits.max_depth);
    try {
      (void)doc.dump();  // strict: throws on invalid UTF-8
    } catch (const json::exception&) {
      Check(false);
    }
  }
  Check(nodes <= limits.max_nodes);

  // Within these bounds the default ones hold too, so the objects decoder sees the same text.
  ObjectSet objects;
  const size_t first = text.find_first_not_of(" \t\r\n");
  const bool json_text =
      first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
  if (!json_text) {
    const modelmetrics::base::Status decoded = DecodeObjects(text, &objects);
    if (!decoded.ok()) Check(!decoded.message().empty());
  }
  return 0;
}
