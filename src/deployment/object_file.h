// An ObjectSource over a file of Kubernetes objects: the output of `kubectl get -o json` (a List,
// or one object) or YAML (a List, one object, or several `---` documents). Used offline, by tests
// and by the demo. Objects of other kinds are skipped; a known kind that fails to decode is an
// error naming the item (`items[3] (Pod chat-0): spec.containers: expected an array`).
//
// NotFound messages use Kubernetes' wording: `modeldeployments.worker.gpustack.ai "chat" not
// found`, `replicasets.apps "x" not found`, `deployments.apps "x" not found`. ListPods with an
// empty namespace lists every namespace, as the API does.
//
// Thread-safety: concurrent calls are safe. Load() (again) and Set() swap the objects under a
// mutex, so a simulator may rewrite the file and reload while an aggregator reads.
#ifndef MODELMETRICS_DEPLOYMENT_OBJECT_FILE_H_
#define MODELMETRICS_DEPLOYMENT_OBJECT_FILE_H_

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "deployment/objects.h"

namespace modelmetrics::deployment {

struct ObjectSet {
  std::vector<ModelDeployment> model_deployments;
  std::vector<Pod> pods;
  std::vector<ReplicaSet> replica_sets;
  std::vector<Deployment> deployments;
};

// The default cap on an objects file (base::ReadFile's): a 1,000-Pod List as YAML is well under
// it. `serve` (max_objects_bytes) and `snapshot` (--max-objects-bytes) can raise it.
inline constexpr size_t kDefaultMaxObjectsBytes = size_t{4} << 20;

// Decodes JSON or YAML text (detected by content: JSON when the first non-blank character is `{`
// or `[`) into `*out`. An empty text is an error; a List with no items is not. YAML is read by
// deployment/yaml.h ParseYaml (typing and bounds there); JSON under the same size (`max_bytes`),
// depth and node bounds. Errors start with "invalid JSON: " or "invalid YAML: ".
bool DecodeObjects(std::string_view text, ObjectSet* out, std::string* error,
                   size_t max_bytes = kDefaultMaxObjectsBytes);

class FileObjectSource : public ObjectSource {
 public:
  // Reads and decodes `path` (a regular file of at most `max_bytes`); false with `*error`
  // ("<path>: ...") on failure, leaving the objects served so far in place. Calling it again
  // reloads (atomically for concurrent readers).
  bool Load(const std::string& path, std::string* error,
            size_t max_bytes = kDefaultMaxObjectsBytes);
  // Serves `objects` directly (tests, in-process simulators).
  void Set(ObjectSet objects);

  ApiStatus GetModelDeployment(std::string_view ns, std::string_view name,
                               ModelDeployment* out) override;
  ApiStatus ListPods(std::string_view ns, std::string_view label_selector,
                     std::vector<Pod>* out) override;
  ApiStatus GetReplicaSet(std::string_view ns, std::string_view name, ReplicaSet* out) override;
  ApiStatus GetDeployment(std::string_view ns, std::string_view name, Deployment* out) override;

 private:
  std::shared_ptr<const ObjectSet> Current() const;

  mutable std::mutex mu_;
  std::shared_ptr<const ObjectSet> objects_ = std::make_shared<ObjectSet>();
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_DEPLOYMENT_OBJECT_FILE_H_
