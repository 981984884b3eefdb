// An ObjectSource over a file of Kubernetes objects: the output of `kubectl get -o json` (a List,
// or one object) or YAML (a List, one object, or several `---` documents). Used offline, by tests
// and by the demo. Objects of other kinds are skipped; a known kind that fails to decode is an
// error naming the item (`items[3] (Pod chat-0): spec.containers: expected an array`).
//
// Thread-safety: immutable after Load(); concurrent calls are safe. Reload() swaps the objects
// under a mutex so a simulator may rewrite the file while an aggregator reads.
#ifndef MODELMETRICS_DEPLOYMENT_OBJECT_FILE_H_
#define MODELMETRICS_DEPLOYMENT_OBJECT_FILE_H_

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

// Decodes JSON or YAML text (detected by content) into `*out`.
bool DecodeObjects(std::string_view text, ObjectSet* out, std::string* error);

class FileObjectSource : public ObjectSource {
 public:
  // Reads and decodes `path`; false with `*error` ("<path>: ...") on failure.
  bool Load(const std::string& path, std::string* error);
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
