// Decoders from Kubernetes JSON and the small helpers of the object model; see objects.h.
//
// Decoding follows Go's encoding/json as the operator's types would see it: an absent or null
// field leaves the zero value, a field of the wrong JSON type is an error, integers must be
// integral JSON numbers that fit their Go type (int32). Errors name the field by its JSON path.
//
// Thread-safety: pure functions.
#include "kube/objects.h"

#include <algorithm>
#include <limits>

#include <nlohmann/json.hpp>

#include "kube/label_selector.h"

namespace modelmetrics::deployment {
namespace {

using nlohmann::json;

// The JSON path of `key` under `parent` ("" at the root).
std::string Join(const std::string& parent, std::string_view key) {
  if (parent.empty()) return std::string(key);
  return parent + "." + std::string(key);
}

std::string Index(const std::string& parent, size_t i) {
  return parent + "[" + std::to_string(i) + "]";
}

// Reads fields of JSON objects, recording the first error with the field's path. Every getter
// treats an absent or null field as "leave the default" and returns false only on a type error.
class FieldReader {
 public:
  explicit FieldReader(std::string* error) : error_(error) {}

  bool Fail(const std::string& path, std::string_view what) {
    if (error_ != nullptr)
      *error_ = path.empty() ? std::string(what) : path + ": " + std::string(what);
    return false;
  }

  // The field's value, or null when absent or null.
  static const json* Find(const json& object, std::string_view key) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return nullptr;
    return &*it;
  }

  // The field as an object; null when absent. `*ok` false on a type error.
  const json* Object(const json& parent, std::string_view key, const std::string& path, bool* ok) {
    const json* value = Find(parent, key);
    if (value != nullptr && !value->is_object()) {
      *ok = Fail(path, "expected an object");
      return nullptr;
    }
    return value;
  }

  const json* Array(const json& parent, std::string_view key, const std::string& path, bool* ok) {
    const json* value = Find(parent, key);
    if (value != nullptr && !value->is_array()) {
      *ok = Fail(path, "expected an array");
      return nullptr;
    }
    return value;
  }

  bool String(const json& parent, std::string_view key, const std::string& path, std::string* out) {
    const json* value = Find(parent, key);
    if (value == nullptr) return true;
    if (!value->is_string()) return Fail(path, "expected a string");
    *out = value->get<std::string>();
    return true;
  }

  bool Bool(const json& parent, std::string_view key, const std::string& path, bool* out) {
    const json* value = Find(parent, key);
    if (value == nullptr) return true;
    if (!value->is_boolean()) return Fail(path, "expected a boolean");
    *out = value->get<bool>();
    return true;
  }

  // An integral JSON number within int32 (Go's json rejects 1.5 and 1.0 for an int32 alike).
  bool Int32(const json& value, const std::string& path, int32_t* out) {
    constexpr int64_t kMin = std::numeric_limits<int32_t>::min();
    constexpr int64_t kMax = std::numeric_limits<int32_t>::max();
    if (value.is_number_unsigned()) {
      if (value.get<uint64_t>() > static_cast<uint64_t>(kMax)) {
        return Fail(path, "integer out of 32-bit range");
      }
      *out = static_cast<int32_t>(value.get<uint64_t>());
      return true;
    }
    if (!value.is_number_integer()) return Fail(path, "expected an integer");
    int64_t v = value.get<int64_t>();
    if (v < kMin || v > kMax) return Fail(path, "integer out of 32-bit range");
    *out = static_cast<int32_t>(v);
    return true;
  }

  bool Int32(const json& parent, std::string_view key, const std::string& path, int32_t* out) {
    const json* value = Find(parent, key);
    if (value == nullptr) return true;
    return Int32(*value, path, out);
  }

  bool StringList(const json& parent, std::string_view key, const std::string& path,
                  std::vector<std::string>* out) {
    bool ok = true;
    const json* array = Array(parent, key, path, &ok);
    if (array == nullptr) return ok;
    out->clear();
    for (size_t i = 0; i < array->size(); ++i) {
      const json& item = (*array)[i];
      if (!item.is_string()) return Fail(Index(path, i), "expected a string");
      out->push_back(item.get<std::string>());
    }
    return true;
  }

  // A map[string]string such as labels or annotations.
  bool StringMap(const json& parent, std::string_view key, const std::string& path,
                 std::map<std::string, std::string>* out) {
    bool ok = true;
    const json* object = Object(parent, key, path, &ok);
    if (object == nullptr) return ok;
    out->clear();
    for (const auto& [name, value] : object->items()) {
      if (!value.is_string()) return Fail(path + "[\"" + name + "\"]", "expected a string");
      (*out)[name] = value.get<std::string>();
    }
    return true;
  }

 private:
  std::string* error_;
};

bool DecodeOwnerReference(FieldReader& r, const json& json, const std::string& path,
                          OwnerReference* out) {
  if (!json.is_object()) return r.Fail(path, "expected an object");
  return r.String(json, "apiVersion", Join(path, "apiVersion"), &out->api_version) &&
         r.String(json, "kind", Join(path, "kind"), &out->kind) &&
         r.String(json, "name", Join(path, "name"), &out->name) &&
         r.String(json, "uid", Join(path, "uid"), &out->uid) &&
         r.Bool(json, "controller", Join(path, "controller"), &out->controller);
}

bool DecodeMetadata(FieldReader& r, const json& object, ObjectMeta* out) {
  bool ok = true;
  const json* meta = r.Object(object, "metadata", "metadata", &ok);
  if (meta == nullptr) return ok;
  if (!r.String(*meta, "name", "metadata.name", &out->name) ||
      !r.String(*meta, "namespace", "metadata.namespace", &out->namespace_) ||
      !r.String(*meta, "uid", "metadata.uid", &out->uid) ||
      !r.StringMap(*meta, "labels", "metadata.labels", &out->labels) ||
      !r.StringMap(*meta, "annotations", "metadata.annotations", &out->annotations)) {
    return false;
  }
  const json* owners = r.Array(*meta, "ownerReferences", "metadata.ownerReferences", &ok);
  if (owners == nullptr) return ok;
  out->owner_references.clear();
  for (size_t i = 0; i < owners->size(); ++i) {
    OwnerReference owner;
    if (!DecodeOwnerReference(r, (*owners)[i], Index("metadata.ownerReferences", i), &owner)) {
      return false;
    }
    out->owner_references.push_back(std::move(owner));
  }
  return true;
}

bool DecodeContainers(FieldReader& r, const json& spec, std::string_view key,
                      const std::string& path, std::vector<Container>* out) {
  bool ok = true;
  const json* containers = r.Array(spec, key, path, &ok);
  if (containers == nullptr) return ok;
  out->clear();
  for (size_t i = 0; i < containers->size(); ++i) {
    const json& item = (*containers)[i];
    const std::string item_path = Index(path, i);
    if (!item.is_object()) return r.Fail(item_path, "expected an object");
    Container container;
    if (!r.String(item, "name", Join(item_path, "name"), &container.name) ||
        !r.StringList(item, "command", Join(item_path, "command"), &container.command) ||
        !r.StringList(item, "args", Join(item_path, "args"), &container.args)) {
      return false;
    }
    const std::string ports_path = Join(item_path, "ports");
    const json* ports = r.Array(item, "ports", ports_path, &ok);
    if (!ok) return false;
    if (ports != nullptr) {
      for (size_t j = 0; j < ports->size(); ++j) {
        const json& port_json = (*ports)[j];
        const std::string port_path = Index(ports_path, j);
        if (!port_json.is_object()) return r.Fail(port_path, "expected an object");
        ContainerPort port;
        if (!r.Int32(port_json, "containerPort", Join(port_path, "containerPort"),
                     &port.container_port) ||
            !r.String(port_json, "name", Join(port_path, "name"), &port.name) ||
            !r.String(port_json, "protocol", Join(port_path, "protocol"), &port.protocol)) {
          return false;
        }
        container.ports.push_back(std::move(port));
      }
    }
    out->push_back(std::move(container));
  }
  return true;
}

bool DecodeRoles(FieldReader& r, const json& spec, std::vector<Role>* out) {
  bool ok = true;
  const json* roles = r.Array(spec, "roles", "spec.roles", &ok);
  if (roles == nullptr) return ok;
  for (size_t i = 0; i < roles->size(); ++i) {
    const json& item = (*roles)[i];
    const std::string path = Index("spec.roles", i);
    if (!item.is_object()) return r.Fail(path, "expected an object");
    Role role;
    if (!r.String(item, "name", Join(path, "name"), &role.name) ||
        !r.String(item, "kind", Join(path, "kind"), &role.kind) ||
        !r.Int32(item, "replicas", Join(path, "replicas"), &role.replicas) ||
        !r.StringList(item, "command", Join(path, "command"), &role.command)) {
      return false;
    }
    // `size` is the field's JSON name; some API revisions spell it `replicaSize`.
    const bool has_size = FieldReader::Find(item, "size") != nullptr;
    if (!r.Int32(item, has_size ? "size" : "replicaSize",
                 Join(path, has_size ? "size" : "replicaSize"), &role.size)) {
      return false;
    }
    out->push_back(std::move(role));
  }
  return true;
}

bool RequireObject(FieldReader& r, const json& json) {
  if (!json.is_object()) return r.Fail("", "expected an object");
  return true;
}

}  // namespace

const OwnerReference* ObjectMeta::Controller() const {
  for (const OwnerReference& owner : owner_references) {
    if (owner.controller) return &owner;
  }
  return nullptr;
}

std::string_view ObjectMeta::Label(std::string_view key) const {
  auto it = labels.find(std::string(key));
  return it == labels.end() ? std::string_view() : std::string_view(it->second);
}

const Role* ModelDeployment::FindRole(std::string_view name) const {
  for (const Role& role : roles) {
    if (role.name == name) return &role;
  }
  return nullptr;
}

bool ModelDeployment::IsPrefillDecode() const {
  bool prefill = false;
  bool decode = false;
  for (const Role& role : roles) {
    prefill = prefill || role.IsPrefill();
    decode = decode || role.IsDecode();
  }
  return prefill && decode;
}

static bool ReadModelDeployment(const json& json, ModelDeployment* out, std::string* error) {
  FieldReader r(error);
  ModelDeployment md;
  if (!RequireObject(r, json) || !DecodeMetadata(r, json, &md.metadata)) return false;
  bool ok = true;
  const nlohmann::json* spec = r.Object(json, "spec", "spec", &ok);
  if (!ok) return false;
  if (spec != nullptr) {
    const nlohmann::json* engine = r.Object(*spec, "engine", "spec.engine", &ok);
    if (!ok) return false;
    if (engine != nullptr && !r.String(*engine, "name", "spec.engine.name", &md.engine)) {
      return false;
    }
    if (!DecodeRoles(r, *spec, &md.roles)) return false;
    const nlohmann::json* router = r.Object(*spec, "router", "spec.router", &ok);
    if (!ok) return false;
    if (router != nullptr) {
      Router decoded;
      if (!r.String(*router, "name", "spec.router.name", &decoded.name)) return false;
      if (const nlohmann::json* replicas = FieldReader::Find(*router, "replicas")) {
        int32_t value = 0;
        if (!r.Int32(*replicas, "spec.router.replicas", &value)) return false;
        decoded.replicas = value;
      }
      md.router = std::move(decoded);
    }
    // Only presence matters (a pool is attached); the pool's own shape is not ours to check.
    md.kv_cache = FieldReader::Find(*spec, "kvCache") != nullptr;
  }
  *out = std::move(md);
  return true;
}

static bool ReadPod(const json& json, Pod* out, std::string* error) {
  FieldReader r(error);
  Pod pod;
  if (!RequireObject(r, json) || !DecodeMetadata(r, json, &pod.metadata)) return false;
  bool ok = true;
  const nlohmann::json* spec = r.Object(json, "spec", "spec", &ok);
  if (!ok) return false;
  if (spec != nullptr &&
      (!DecodeContainers(r, *spec, "containers", "spec.containers", &pod.containers) ||
       !DecodeContainers(r, *spec, "initContainers", "spec.initContainers",
                         &pod.init_containers))) {
    return false;
  }
  const nlohmann::json* status = r.Object(json, "status", "status", &ok);
  if (!ok) return false;
  if (status != nullptr && (!r.String(*status, "podIP", "status.podIP", &pod.pod_ip) ||
                            !r.String(*status, "phase", "status.phase", &pod.phase))) {
    return false;
  }
  *out = std::move(pod);
  return true;
}

static bool ReadReplicaSet(const json& json, ReplicaSet* out, std::string* error) {
  FieldReader r(error);
  ReplicaSet rs;
  if (!RequireObject(r, json) || !DecodeMetadata(r, json, &rs.metadata)) return false;
  *out = std::move(rs);
  return true;
}

static bool ReadDeployment(const json& json, Deployment* out, std::string* error) {
  FieldReader r(error);
  Deployment deployment;
  if (!RequireObject(r, json) || !DecodeMetadata(r, json, &deployment.metadata)) return false;
  *out = std::move(deployment);
  return true;
}

bool MatchesSelector(const ObjectMeta& meta, std::string_view selector) {
  LabelSelector parsed;
  return LabelSelector::Parse(selector, &parsed).ok() && parsed.Matches(meta);
}

// The decoders' Status: FieldReader's message (it names the field) as InvalidArgument.
template <typename T>
static Status Decoded(bool (*read)(const json&, T*, std::string*), const json& json, T* out) {
  std::string error;
  if (!read(json, out, &error)) return Status::InvalidArgument(std::move(error));
  return Status::Ok();
}

Status DecodeModelDeployment(const json& json, ModelDeployment* out) {
  return Decoded(ReadModelDeployment, json, out);
}
Status DecodePod(const json& json, Pod* out) { return Decoded(ReadPod, json, out); }
Status DecodeReplicaSet(const json& json, ReplicaSet* out) {
  return Decoded(ReadReplicaSet, json, out);
}
Status DecodeDeployment(const json& json, Deployment* out) {
  return Decoded(ReadDeployment, json, out);
}

}  // namespace modelmetrics::deployment
