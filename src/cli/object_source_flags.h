// Where a command reads Kubernetes objects from: --objects FILE (a `kubectl get -o json` List or
// YAML, a regular file of at most --max-objects-bytes, default 4 MiB), --kubeconfig FILE (a
// regular file of at most --max-config-bytes, default 4 MiB) [--context NAME], or the in-cluster
// service account (--in-cluster, or by default when KUBERNETES_SERVICE_HOST is set).
//
// The flags themselves are declared in main.cc. Thread-safety: call from one thread.
#ifndef MODELMETRICS_CLI_OBJECT_SOURCE_FLAGS_H_
#define MODELMETRICS_CLI_OBJECT_SOURCE_FLAGS_H_

#include <cstddef>
#include <memory>
#include <string>

#include "base/file.h"
#include "kube/kube_api.h"
#include "kube/object_file.h"

namespace modelmetrics::cli {

struct ObjectSourceFlags {
  std::string objects_file;
  size_t max_objects_bytes = deployment::kDefaultMaxObjectsBytes;
  std::string kubeconfig;
  size_t max_config_bytes = base::kDefaultMaxFileBytes;
  std::string context;
  bool in_cluster = false;
};

// Owns the source and whatever it needs (the API client).
class ObjectSourceHandle {
 public:
  virtual ~ObjectSourceHandle() = default;
  virtual deployment::ObjectSource* get() = 0;
  // The API server and credentials, for a source that reads the Kubernetes API; else null.
  virtual const deployment::KubeConfig* kube_config() const { return nullptr; }
};

// The source the flags name, into `*out`; an error when it cannot be opened.
base::Status OpenObjectSource(const ObjectSourceFlags& flags,
                              std::unique_ptr<ObjectSourceHandle>* out);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_OBJECT_SOURCE_FLAGS_H_
