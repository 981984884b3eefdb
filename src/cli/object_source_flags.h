// Where a command reads Kubernetes objects from: --objects FILE (a `kubectl get -o json` List or
// YAML), --kubeconfig FILE [--context NAME], or the in-cluster service account (--in-cluster, or
// by default when KUBERNETES_SERVICE_HOST is set).
#ifndef MODELMETRICS_CLI_OBJECT_SOURCE_FLAGS_H_
#define MODELMETRICS_CLI_OBJECT_SOURCE_FLAGS_H_

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "deployment/kube_api.h"
#include "deployment/object_file.h"

namespace modelmetrics::cli {

struct ObjectSourceFlags {
  std::string objects_file;
  std::string kubeconfig;
  std::string context;
  bool in_cluster = false;
};

void AddObjectSourceFlags(CLI::App* command, ObjectSourceFlags* flags);

// Owns the source and whatever it needs (the API client).
class ObjectSourceHandle {
 public:
  virtual ~ObjectSourceHandle() = default;
  virtual deployment::ObjectSource* get() = 0;
};

// The source the flags name; null with `*error` when it cannot be opened.
std::unique_ptr<ObjectSourceHandle> OpenObjectSource(const ObjectSourceFlags& flags,
                                                     std::string* error);

}  // namespace modelmetrics::cli

#endif  // MODELMETRICS_CLI_OBJECT_SOURCE_FLAGS_H_
