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

base::Status OpenObjectSource(const ObjectSourceFlags& flags,
                              std::unique_ptr<ObjectSourceHandle>* out) {
  using base::Status;
  const int chosen =
      !flags.objects_file.empty() + !flags.kubeconfig.empty() + (flags.in_cluster ? 1 : 0);
  if (chosen > 1) {
    return Status::InvalidArgument("choose one of --objects, --kubeconfig and --in-cluster");
  }
  if (!flags.objects_file.empty()) {
    auto handle = std::make_unique<FileHandle>();
    if (Status loaded = handle->source_.Load(flags.objects_file, flags.max_objects_bytes);
        !loaded.ok()) {
      return loaded;
    }
    *out = std::move(handle);
    return Status::Ok();
  }
  deployment::KubeConfig config;
  if (!flags.kubeconfig.empty()) {
    if (Status loaded = deployment::LoadKubeconfig(flags.kubeconfig, flags.context, &config,
                                                   flags.max_config_bytes);
        !loaded.ok()) {
      return loaded;
    }
    *out = std::make_unique<KubeHandle>(std::move(config));
    return Status::Ok();
  }
  if (flags.in_cluster || std::getenv("KUBERNETES_SERVICE_HOST") != nullptr) {
    if (Status loaded = deployment::LoadInClusterConfig(&config); !loaded.ok()) return loaded;
    *out = std::make_unique<KubeHandle>(std::move(config));
    return Status::Ok();
  }
  return Status::InvalidArgument(
      "no object source: pass --objects FILE, --kubeconfig FILE or --in-cluster");
}

}  // namespace modelmetrics::cli
