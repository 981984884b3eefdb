// The process registry. See process_registry.h.
#include "process_registry.h"

#include <array>
#include <variant>

#include "fork_gate.h"
#include "process_segment.h"

namespace modelmetrics::python {
namespace {

// By pipeline::OmniFamily; monostate while the family's group is unregistered.
std::array<pipeline::AnyFamily, pipeline::kOmniFamilyCount>& Families() {
  static auto* families = new std::array<pipeline::AnyFamily, pipeline::kOmniFamilyCount>();
  return *families;
}

}  // namespace

Registry& ProcessRegistry() {
  // Never destroyed; in the service's shared segment when it runs as several processes.
  static auto* registry =
      new Registry(RegistryOptions{.enabled = true, .shared = ProcessSegment()});
  return *registry;
}

base::Status RegisterGroup(pipeline::Group group) {
  auto& families = Families();
  for (size_t i = 0; i < families.size(); ++i) {
    const pipeline::FamilySpec& spec = pipeline::OmniSpec(static_cast<pipeline::OmniFamily>(i));
    if (spec.group != group || !std::holds_alternative<std::monostate>(families[i])) continue;
    // Registering in the shared segment may wait for its directory lock: without the GIL.
    pipeline::AnyFamily family;
    const base::Status registered = WithoutGilIf(ProcessSegment() != nullptr, [&] {
      return pipeline::RegisterFamily(ProcessRegistry(), spec, &family);
    });
    if (!registered.ok()) return registered;
    families[i] = family;
  }
  return base::Status::Ok();
}

const pipeline::AnyFamily& RegisteredFamily(pipeline::OmniFamily family) {
  return Families()[static_cast<size_t>(family)];
}

}  // namespace modelmetrics::python
