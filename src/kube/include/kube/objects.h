// The Kubernetes objects the deployment aggregator reads, reduced to the fields it uses, and the
// one interface both object sources (a file, the Kubernetes API) implement.
//
// Field names follow Kubernetes' JSON (a role's Pod count per replica is `size`). Engine names and
// role kinds are compared against named constants case-insensitively (`vllm`/`vLLM`,
// `prefill`/`Prefill`); router kinds are lowercase in every API revision.
//
// Thread-safety: the structs are plain values. An ObjectSource must be safe for concurrent calls.
#ifndef MODELMETRICS_KUBE_OBJECTS_H_
#define MODELMETRICS_KUBE_OBJECTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/status.h"
#include "base/text.h"

namespace modelmetrics::deployment {

// API outcomes are base::Status (code 200 is success; otherwise the Kubernetes reason and
// message), the project's one error idiom.
using base::ReasonForCode;
using base::Status;

// Named constants (see file comment for the comparison rules).
inline constexpr std::string_view kEngineVllm = "vllm";
inline constexpr std::string_view kEngineSglang = "sglang";
inline constexpr std::string_view kEngineVllmOmni = "vllm-omni";
inline constexpr std::string_view kRoleKindServer = "server";
inline constexpr std::string_view kRoleKindPrefill = "prefill";
inline constexpr std::string_view kRoleKindDecode = "decode";
inline constexpr std::string_view kRouterLlmd = "llm-d-router";
inline constexpr std::string_view kRouterVllm = "vllm-router";
inline constexpr std::string_view kRouterSglangGateway = "sglang-gateway";

// Labels the operator puts on every Pod of a deployment.
inline constexpr std::string_view kLabelName = "app.kubernetes.io/name";
inline constexpr std::string_view kLabelNameValue = "model-deployment";
inline constexpr std::string_view kLabelInstance = "app.kubernetes.io/instance";
inline constexpr std::string_view kLabelComponent = "app.kubernetes.io/component";
inline constexpr std::string_view kLabelRouter = "modeldeployment.gpustack.ai/router";

using base::EqualsIgnoreCase;

// A role's kind, typed (the simulator and the CLI build roles from it).
enum class RoleKind { kServer, kPrefill, kDecode };
inline std::string_view RoleKindName(RoleKind kind) {
  switch (kind) {
    case RoleKind::kServer:
      return kRoleKindServer;
    case RoleKind::kPrefill:
      return kRoleKindPrefill;
    case RoleKind::kDecode:
      return kRoleKindDecode;
  }
  return kRoleKindServer;
}
inline bool IsVllmEngine(std::string_view engine) { return EqualsIgnoreCase(engine, kEngineVllm); }
inline bool IsSglangEngine(std::string_view engine) {
  return EqualsIgnoreCase(engine, kEngineSglang);
}

struct OwnerReference {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;

  friend bool operator==(const OwnerReference&, const OwnerReference&) = default;
};

struct ObjectMeta {
  std::string name;
  std::string namespace_;
  std::string uid;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::vector<OwnerReference> owner_references;

  friend bool operator==(const ObjectMeta&, const ObjectMeta&) = default;

  // The owner reference with controller=true, or null.
  const OwnerReference* Controller() const;
  // The label's value, or "" when absent.
  std::string_view Label(std::string_view key) const;
};

struct ContainerPort {
  int32_t container_port = 0;
  std::string name;
  std::string protocol;

  friend bool operator==(const ContainerPort&, const ContainerPort&) = default;
};

struct Container {
  std::string name;
  std::vector<std::string> command;
  std::vector<std::string> args;
  std::vector<ContainerPort> ports;

  friend bool operator==(const Container&, const Container&) = default;
};

struct Pod {
  ObjectMeta metadata;
  std::vector<Container> containers;
  std::vector<Container> init_containers;
  std::string pod_ip;  // status.podIP
  std::string phase;   // status.phase

  friend bool operator==(const Pod&, const Pod&) = default;
};

struct Role {
  std::string name;
  std::string kind;                  // server | prefill | decode (any case)
  int32_t replicas = 0;              // unset reads as 0; coverage uses max(replicas, 1)
  int32_t size = 0;                  // Pods per replica (`size`, or `replicaSize` when absent);
                                     // coverage uses max(size, 1)
  std::vector<std::string> command;  // non-empty: the user owns the endpoint; not scraped

  bool IsPrefill() const { return EqualsIgnoreCase(kind, kRoleKindPrefill); }
  bool IsDecode() const { return EqualsIgnoreCase(kind, kRoleKindDecode); }

  friend bool operator==(const Role&, const Role&) = default;
};

struct Router {
  std::string name;  // llm-d-router | vllm-router | sglang-gateway
  std::optional<int32_t> replicas;

  friend bool operator==(const Router&, const Router&) = default;
};

struct ModelDeployment {
  ObjectMeta metadata;
  std::string engine;  // spec.engine.name
  std::vector<Role> roles;
  std::optional<Router> router;
  bool kv_cache = false;  // spec.kvCache is set: a KV cache pool is attached

  // The role named `name`, or null.
  const Role* FindRole(std::string_view name) const;
  // The roles include both a prefill kind and a decode kind.
  bool IsPrefillDecode() const;

  friend bool operator==(const ModelDeployment&, const ModelDeployment&) = default;
};

struct ReplicaSet {
  ObjectMeta metadata;

  friend bool operator==(const ReplicaSet&, const ReplicaSet&) = default;
};

struct Deployment {
  ObjectMeta metadata;

  friend bool operator==(const Deployment&, const Deployment&) = default;
};

// Decoders from Kubernetes JSON. Unknown fields are ignored; a field of the wrong JSON type is an
// error naming it (e.g. `spec.roles[0].replicas: expected an integer`).
Status DecodeModelDeployment(const nlohmann::json& json, ModelDeployment* out);
Status DecodePod(const nlohmann::json& json, Pod* out);
Status DecodeReplicaSet(const nlohmann::json& json, ReplicaSet* out);
Status DecodeDeployment(const nlohmann::json& json, Deployment* out);

// Whether `meta` matches the label selector `selector` (kube/label_selector.h); a malformed
// selector matches nothing. Callers that match many objects parse a LabelSelector once instead.
bool MatchesSelector(const ObjectMeta& meta, std::string_view selector);

// Where the aggregator reads objects from. Every call returns Status; a missing object is
// NotFound (404) with Kubernetes' message, e.g. `modeldeployments.worker.gpustack.ai "chat" not
// found`; any other failure is a non-404 status whose message says why.
class ObjectSource {
 public:
  virtual ~ObjectSource() = default;

  virtual Status GetModelDeployment(std::string_view ns, std::string_view name,
                                    ModelDeployment* out) = 0;
  // Pods in `ns` matching the equality selector, in any order.
  virtual Status ListPods(std::string_view ns, std::string_view label_selector,
                          std::vector<Pod>* out) = 0;
  virtual Status GetReplicaSet(std::string_view ns, std::string_view name, ReplicaSet* out) = 0;
  // ModelDeployments in `ns` ("": every namespace), in any order (the web page's list). Sources
  // that cannot list answer 501.
  virtual Status ListModelDeployments(std::string_view ns, std::vector<ModelDeployment>* out) {
    (void)ns;
    out->clear();
    return {501, "NotImplemented", "this object source cannot list ModelDeployments"};
  }
  virtual Status GetDeployment(std::string_view ns, std::string_view name, Deployment* out) = 0;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_KUBE_OBJECTS_H_
