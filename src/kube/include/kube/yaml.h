// The one YAML reader: YAML text (every `---` document) to nlohmann::json values under the YAML
// 1.2 core schema, under hard bounds (Kubernetes' go-yaml also takes 1.1 forms such as `yes` and
// merge keys `<<`; those are ordinary strings and keys here). Objects files, kubeconfigs, the serve
// configuration and the policy file all go through it.
//
// Typing: quoted scalars, block scalars and `!!str` stay strings; plain scalars are null (`~`,
// `null`/`Null`/`NULL`, empty), booleans (`true`/`True`/`TRUE`, `false`/`False`/`FALSE`),
// integers (decimal, `0x`, `0o`) or floats (YAML 1.2 core schema, finite only: `1e400` is a
// string) and otherwise strings; `!!int`, `!!float`,
// `!!bool`, `!!null` force a type (an error when the text is not one); other tags are ignored.
// Mapping keys are always strings (their text; a null key is "null"); a collection as a key is an
// error; a repeated key keeps the last value. Documents whose root is null are dropped. An alias
// expands to a copy of its anchor's value (anchors are per document; an alias to a node that is
// still open is an error, so a cycle cannot be built).
//
// Bounds (YamlLimits; each breach is an error, never a partial result): the text's size; nesting
// depth (alias copies included); the nodes built across all documents, where keys, alias copies
// and the copies kept for anchors all count; the scalar bytes built, on the same terms; the
// number of anchors. Parsing is libyaml's event parser (fuzzed upstream), so memory and time are
// linear in the text up to these bounds.
//
// Errors are one line: "line L, column C: what" (1-based), or a sentence for a size limit.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_KUBE_YAML_H_
#define MODELMETRICS_KUBE_YAML_H_

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"

namespace modelmetrics::deployment {

struct YamlLimits {
  // The text itself (the files feeding this are capped at read time too; see base/file.h).
  size_t max_bytes = size_t{4} << 20;
  // Collections inside collections; deeper than any Kubernetes object needs.
  int max_depth = 128;
  // More nodes than any real objects file holds (a 1,000-Pod List has about 150,000 with keys).
  // Aliases let a few kilobytes name billions of nodes; building stops here instead.
  size_t max_nodes = 1'000'000;
  // Scalar bytes built: an alias to a long string repeated would otherwise multiply it.
  size_t max_scalar_bytes = size_t{64} << 20;
  size_t max_anchors = 10'000;
};

// Parses `text` into `*docs` (cleared first). InvalidArgument on a syntax error or a bound.
base::Status ParseYaml(std::string_view text, std::vector<nlohmann::json>* docs,
                       const YamlLimits& limits = {});

// The text of a scalar setting: a string as it is, an integer or a boolean as YAML would spell it
// (`1`, `true`), so a name that happens to look like a number is still a name. False for null,
// floats (their spelling is lost), arrays and objects.
bool YamlScalarText(const nlohmann::json& value, std::string* out);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_KUBE_YAML_H_
