// The process registry. See process_registry.h.
#include "process_registry.h"

#include <cstdint>
#include <vector>

namespace modelmetrics::python {
namespace {

std::vector<void*>& Families() {
  static auto* families = new std::vector<void*>(pipeline::OmniFamilies().size(), nullptr);
  return *families;
}

}  // namespace

Registry& ProcessRegistry() {
  static auto* registry = new Registry(RegistryOptions{.enabled = true});  // never destroyed
  return *registry;
}

bool RegisterGroup(pipeline::Group group, std::string* error) {
  const auto rows = pipeline::OmniFamilies();
  std::vector<void*>& families = Families();
  for (size_t i = 0; i < rows.size(); ++i) {
    const pipeline::FamilySpec& spec = rows[i];
    if (spec.group != group || families[i] != nullptr) continue;
    void* family = pipeline::RegisterFamily(ProcessRegistry(), spec, error);
    if (family == nullptr) return false;
    families[i] = family;
  }
  return true;
}

void* OmniFamily(size_t index) {
  std::vector<void*>& families = Families();
  return index < families.size() ? families[index] : nullptr;
}

size_t OmniFamilyIndex(std::string_view name) {
  const auto rows = pipeline::OmniFamilies();
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].name == name) return i;
  }
  return SIZE_MAX;
}

}  // namespace modelmetrics::python
