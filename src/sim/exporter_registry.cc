// See sim/exporter_registry.h.
#include "sim/exporter_registry.h"

#include <algorithm>

#include "base/mutex.h"
#include "base/text.h"
#include "exporters/builtin.h"
#include "sim_exporter.h"

namespace modelmetrics::sim {
namespace {

const SimExporter* const kBuiltin[] = {
    &exporters::kVllm,       &exporters::kSglang,     &exporters::kVllmOmni,
    &exporters::kLlmdRouter, &exporters::kVllmRouter, &exporters::kSglangGateway,
};

struct Registry {
  base::Mutex mu;
  std::vector<const SimExporter*> added GUARDED_BY(mu);

  std::vector<const SimExporter*> All() {
    base::MutexLock lock(&mu);
    std::vector<const SimExporter*> all = added;
    all.insert(all.end(), std::begin(kBuiltin), std::end(kBuiltin));
    return all;
  }
};

Registry& TheRegistry() {
  static Registry registry;
  return registry;
}

const SimExporter* Find(std::string_view name, bool router) {
  for (const SimExporter* exporter : TheRegistry().All()) {
    if (exporter->router != router) continue;
    if (router ? exporter->name == name : base::EqualsIgnoreCase(exporter->name, name)) {
      return exporter;
    }
  }
  return nullptr;
}

std::vector<std::string> Names(bool router) {
  std::vector<std::string> names;
  for (const SimExporter* exporter : TheRegistry().All()) {
    if (exporter->router == router &&
        std::find(names.begin(), names.end(), exporter->name) == names.end()) {
      names.emplace_back(exporter->name);
    }
  }
  return names;
}

}  // namespace

const SimExporter* FindSimEngine(std::string_view name) { return Find(name, false); }
const SimExporter* FindSimRouter(std::string_view name) { return Find(name, true); }
std::vector<std::string> SimEngineNames() { return Names(false); }
std::vector<std::string> SimRouterNames() { return Names(true); }

void RegisterSimExporter(const SimExporter* exporter) {
  Registry& registry = TheRegistry();
  base::MutexLock lock(&registry.mu);
  registry.added.insert(registry.added.begin(), exporter);
}

void UnregisterSimExporter(const SimExporter* exporter) {
  Registry& registry = TheRegistry();
  base::MutexLock lock(&registry.mu);
  std::erase(registry.added, exporter);
}

}  // namespace modelmetrics::sim
