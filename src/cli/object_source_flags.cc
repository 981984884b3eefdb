#include "object_source_flags.h"

#include <cstdlib>

namespace modelmetrics::cli {
namespace {

class FileHandle : public ObjectSourceHandle {
 public:
  deployment::ObjectSource* get() override { return &source_; }
  deployment::FileObjectSource source_;
};

class KubeHandle : public ObjectSourceHandle {
 public:
  explicit KubeHandle(deployment::KubeConfig config)
      : config_(config), client_(std::move(config)), source_(&client_) {}
  deployment::ObjectSource* get() override { return &source_; }
  const deployment::KubeConfig* kube_config() const override { return &config_; }

 private:
  deployment::KubeConfig config_;
  deployment::KubeApiClient client_;
  deployment::KubeApiSource source_;
};

}  // namespace

std::unique_ptr<ObjectSourceHandle> OpenObjectSource(const ObjectSourceFlags& flags,
                                                     std::string* error) {
  const int chosen =
      !flags.objects_file.empty() + !flags.kubeconfig.empty() + (flags.in_cluster ? 1 : 0);
  if (chosen > 1) {
    *error = "choose one of --objects, --kubeconfig and --in-cluster";
    return nullptr;
  }
  if (!flags.objects_file.empty()) {
    auto handle = std::make_unique<FileHandle>();
    if (!handle->source_.Load(flags.objects_file, error, flags.max_objects_bytes)) return nullptr;
    return handle;
  }
  deployment::KubeConfig config;
  if (!flags.kubeconfig.empty()) {
    if (!deployment::LoadKubeconfig(flags.kubeconfig, flags.context, &config, error,
                                    flags.max_config_bytes)) {
      return nullptr;
    }
    return std::make_unique<KubeHandle>(std::move(config));
  }
  if (flags.in_cluster || std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) {
    if (!deployment::LoadInClusterConfig(&config, error)) return nullptr;
    return std::make_unique<KubeHandle>(std::move(config));
  }
  *error = "no object source: pass --objects FILE, --kubeconfig FILE or --in-cluster";
  return nullptr;
}

}  // namespace modelmetrics::cli
