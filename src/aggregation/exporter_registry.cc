// See exporter_registry.h.
#include "exporter_registry.h"

#include <algorithm>
#include <mutex>
#include <vector>

#include "base/mutex.h"
#include "exporters/builtin.h"
#include "kube/objects.h"

namespace modelmetrics::deployment {
namespace {

// The built-in profiles, in the order their names are listed in reasons.
const ExporterProfile* const kBuiltin[] = {
    &exporters::kVllm,          &exporters::kSglang,     &exporters::kVllmOmni,
    &exporters::kLlmdRouter,    &exporters::kVllmRouter, &exporters::kVllmRouterPd,
    &exporters::kSglangGateway,
};

struct Registry {
  base::Mutex mu;
  std::vector<const ExporterProfile*> added GUARDED_BY(mu);

  template <typename F>
  void ForEach(F&& f) {
    base::MutexLock lock(&mu);
    for (const ExporterProfile* profile : added) f(*profile);
    for (const ExporterProfile* profile : kBuiltin) f(*profile);
  }
};

Registry& TheRegistry() {
  static Registry registry;
  return registry;
}

bool NameMatches(const ExporterProfile& profile, std::string_view name) {
  return profile.role == PodRole::kEngine ? EqualsIgnoreCase(profile.name, name)
                                          : profile.name == name;
}

bool ShapeMatches(DeploymentShape shape, bool prefill_decode) {
  switch (shape) {
    case DeploymentShape::kAny:
      return true;
    case DeploymentShape::kAggregated:
      return !prefill_decode;
    case DeploymentShape::kPrefillDecode:
      return prefill_decode;
  }
  return false;
}

}  // namespace

std::span<const ExporterProfile* const> BuiltinExporters() { return kBuiltin; }

const ExporterProfile* SelectExporter(PodRole role, std::string_view name, bool prefill_decode) {
  const ExporterProfile* found = nullptr;
  TheRegistry().ForEach([&](const ExporterProfile& profile) {
    if (found == nullptr && profile.role == role && NameMatches(profile, name) &&
        ShapeMatches(profile.shape, prefill_decode)) {
      found = &profile;
    }
  });
  return found;
}

const ExporterProfile* SelectExporter(const ModelDeployment& md, bool router) {
  if (router) {
    return SelectExporter(PodRole::kRouter, md.router ? std::string_view(md.router->name) : "",
                          md.IsPrefillDecode());
  }
  return SelectExporter(PodRole::kEngine, md.engine, md.IsPrefillDecode());
}

std::string ExporterNames(PodRole role) {
  std::vector<std::string_view> names;
  TheRegistry().ForEach([&](const ExporterProfile& profile) {
    if (profile.role == role &&
        std::find(names.begin(), names.end(), profile.name) == names.end()) {
      names.push_back(profile.name);
    }
  });
  std::string out;
  for (std::string_view name : names) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

void RegisterExporter(const ExporterProfile* profile) {
  Registry& registry = TheRegistry();
  base::MutexLock lock(&registry.mu);
  registry.added.insert(registry.added.begin(), profile);
}

void UnregisterExporter(const ExporterProfile* profile) {
  Registry& registry = TheRegistry();
  base::MutexLock lock(&registry.mu);
  std::erase(registry.added, profile);
}

}  // namespace modelmetrics::deployment
