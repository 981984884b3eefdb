// libFuzzer target for the objects file and the Kubernetes API's JSON: DecodeObjects on arbitrary
// JSON text, and each decoder on whatever JSON parses.
//
// YAML text has its own target (yaml_fuzz_test.cc), which also runs DecodeObjects on it.
//
// Invariants checked (abort on violation): decoding terminates without memory or UB errors and
// never throws; a failed decode always says why.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kube/object_file.h"
#include "kube/objects.h"

namespace {

void Check(bool condition) {
  if (!condition) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace modelmetrics::deployment;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ObjectSet objects;
  // A refusal always says why.
  const auto refused_with_reason = [](const modelmetrics::base::Status& s) {
    if (!s.ok()) Check(!s.message().empty());
  };
  const size_t first = text.find_first_not_of(" \t\r\n");
  const bool json_text =
      first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
  if (json_text) refused_with_reason(DecodeObjects(text, &objects));

  const nlohmann::json json = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (json.is_discarded()) return 0;
  ModelDeployment md;
  Pod pod;
  ReplicaSet rs;
  Deployment deployment;
  refused_with_reason(DecodeModelDeployment(json, &md));
  refused_with_reason(DecodePod(json, &pod));
  refused_with_reason(DecodeReplicaSet(json, &rs));
  refused_with_reason(DecodeDeployment(json, &deployment));
  if (!pod.metadata.labels.empty()) MatchesSelector(pod.metadata, "a=b,c==d,e!=f,g,!h");
  return 0;
}
