// The file ObjectSource and the JSON/YAML object decoding behind it; see object_file.h.
//
// YAML goes through yaml-cpp and is converted to nlohmann::json first, so both formats share one
// decoder (and one set of error messages). yaml-cpp marks quoted scalars with the non-specific
// tag "!" and plain ones with "?", which is what lets `"18001"` stay a string while `18001`
// becomes a number.
#include "deployment/object_file.h"

#include <sys/stat.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include <yaml-cpp/yaml.h>
#include <nlohmann/json.hpp>

#include "base/file.h"

namespace modelmetrics::deployment {
namespace {

using nlohmann::json;

// Deeper nesting than any Kubernetes object needs; bounds the recursion on hostile input.
constexpr int kMaxYamlDepth = 128;
// More nodes than any real objects file holds (a 1,000-Pod List has about 100,000). Aliases let a
// few kilobytes of YAML name billions of nodes; converting stops here instead of exhausting memory.
constexpr size_t kMaxYamlNodes = 1'000'000;

constexpr std::string_view kYamlIntTag = "tag:yaml.org,2002:int";
constexpr std::string_view kYamlFloatTag = "tag:yaml.org,2002:float";
constexpr std::string_view kYamlBoolTag = "tag:yaml.org,2002:bool";
constexpr std::string_view kYamlNullTag = "tag:yaml.org,2002:null";

bool IsDigits(std::string_view s, bool hex = false, bool octal = false) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = octal ? (c >= '0' && c <= '7')
                    : (c >= '0' && c <= '9') ||
                          (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
    if (!ok) return false;
  }
  return true;
}

// Resolves a YAML 1.2 core-schema integer; false when `text` is not one.
bool ResolveInt(std::string_view text, json* out) {
  std::string_view digits = text;
  bool negative = false;
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) {
    negative = digits.front() == '-';
    digits.remove_prefix(1);
  }
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'o')) {
    // The core schema has no sign on hex/octal; accepting one is harmless.
    base = digits[1] == 'x' ? 16 : 8;
    digits.remove_prefix(2);
  }
  if (!IsDigits(digits, base == 16, base == 8)) return false;
  uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    // Too big for 64 bits: still a number, as a float (what Go's yaml->json would give).
    *out = std::strtod(std::string(text).c_str(), nullptr);
    return true;
  }
  if (!negative) {
    *out = magnitude;
  } else if (magnitude <= uint64_t{1} << 63) {
    *out = static_cast<int64_t>(0 - magnitude);
  } else {
    *out = -static_cast<double>(magnitude);
  }
  return true;
}

// Resolves a YAML 1.2 core-schema float (finite only: JSON has no Inf/NaN, so `.inf` and `.nan`
// stay strings); false when `text` is not one.
bool ResolveFloat(std::string_view text, json* out) {
  std::string_view s = text;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  size_t i = 0;
  size_t int_digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++int_digits;
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (!IsDigits(s.substr(i))) return false;
    i = s.size();
  }
  if (i != s.size()) return false;
  *out = std::strtod(std::string(text).c_str(), nullptr);
  return true;
}

bool ResolveBool(std::string_view text, json* out) {
  if (text == "true" || text == "True" || text == "TRUE") {
    *out = true;
    return true;
  }
  if (text == "false" || text == "False" || text == "FALSE") {
    *out = false;
    return true;
  }
  return false;
}

std::string MarkText(const YAML::Mark& mark) {
  if (mark.is_null()) return "";
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1) +
         ": ";
}

bool ConvertScalar(const YAML::Node& node, json* out, std::string* error) {
  const std::string& text = node.Scalar();
  const std::string& tag = node.Tag();
  if (tag == "?") {  // a plain scalar: resolve its type
    if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
      *out = nullptr;
      return true;
    }
    if (ResolveBool(text, out) || ResolveInt(text, out) || ResolveFloat(text, out)) return true;
    *out = text;
    return true;
  }
  auto bad = [&](std::string_view what) {
    *error = MarkText(node.Mark()) + "`" + text + "` is not " + std::string(what);
    return false;
  };
  if (tag == kYamlIntTag) return ResolveInt(text, out) || bad("an integer");
  if (tag == kYamlFloatTag)
    return ResolveFloat(text, out) || ResolveInt(text, out) || bad("a float");
  if (tag == kYamlBoolTag) return ResolveBool(text, out) || bad("a boolean");
  if (tag == kYamlNullTag) {
    *out = nullptr;
    return true;
  }
  // Quoted ("!"), block literals, `!!str` and application tags: the text itself.
  *out = text;
  return true;
}

// `*budget` counts down the nodes still allowed (see kMaxYamlNodes).
bool ConvertNode(const YAML::Node& node, int depth, size_t* budget, json* out, std::string* error) {
  if (depth > kMaxYamlDepth) {
    *error = MarkText(node.Mark()) + "nested deeper than " + std::to_string(kMaxYamlDepth);
    return false;
  }
  if (*budget == 0) {
    *error = MarkText(node.Mark()) + "more than " + std::to_string(kMaxYamlNodes) +
             " nodes once aliases are expanded";
    return false;
  }
  --*budget;
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      *out = nullptr;
      return true;
    case YAML::NodeType::Scalar:
      return ConvertScalar(node, out, error);
    case YAML::NodeType::Sequence: {
      *out = json::array();
      for (const YAML::Node& item : node) {
        json converted;
        if (!ConvertNode(item, depth + 1, budget, &converted, error)) return false;
        out->push_back(std::move(converted));
      }
      return true;
    }
    case YAML::NodeType::Map: {
      *out = json::object();
      for (const auto& entry : node) {
        const YAML::Node& key = entry.first;
        std::string name;
        if (key.IsScalar()) {
          name = key.Scalar();
        } else if (key.IsNull()) {
          name = "null";
        } else {
          *error = MarkText(key.Mark()) + "a mapping key must be a scalar";
          return false;
        }
        json value;
        if (!ConvertNode(entry.second, depth + 1, budget, &value, error)) return false;
        (*out)[name] = std::move(value);  // a repeated key: the last one wins
      }
      return true;
    }
  }
  *out = nullptr;
  return true;
}

std::string_view StripBom(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  return text;
}

bool LooksLikeJson(std::string_view text) {
  size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string_view::npos && (text[first] == '{' || text[first] == '[');
}

// Sorts decoded objects into an ObjectSet, naming the item in every error.
class ObjectCollector {
 public:
  ObjectCollector(ObjectSet* out, std::string* error) : out_(out), error_(error) {}

  // `where` names the document ("document 2: ") or is empty for a single one.
  bool AddDocument(const json& doc, const std::string& where) {
    if (doc.is_array()) return AddItems(doc, where);
    if (!doc.is_object()) return Fail(where, "expected an object or a List");
    if (IsList(doc)) {
      auto items = doc.find("items");
      if (items == doc.end() || items->is_null()) return true;  // an empty List
      if (!items->is_array()) return Fail(where, "items: expected an array");
      return AddItems(*items, where);
    }
    return AddObject(doc, where);
  }

 private:
  static bool IsList(const json& doc) {
    auto kind = doc.find("kind");
    if (kind == doc.end() || !kind->is_string()) return false;
    std::string_view name = kind->get_ref<const std::string&>();
    // "List" from `kubectl get a,b -o json`; "PodList" etc. from `kubectl get pods -o json`.
    return name.size() >= 4 && name.substr(name.size() - 4) == "List";
  }

  bool AddItems(const json& items, const std::string& where) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (!AddObject(items[i], where + "items[" + std::to_string(i) + "]")) return false;
    }
    return true;
  }

  // `label` is "items[3]", "document 2: items[3]", "document 2: " or "".
  bool AddObject(const json& object, std::string label) {
    while (!label.empty() && (label.back() == ' ' || label.back() == ':')) label.pop_back();
    if (!object.is_object()) return Fail(Prefix(label), "expected an object");
    auto kind_it = object.find("kind");
    if (kind_it == object.end() || kind_it->is_null()) return Fail(Prefix(label), "missing kind");
    if (!kind_it->is_string()) return Fail(Prefix(label), "kind: expected a string");
    const std::string& kind = kind_it->get_ref<const std::string&>();

    std::string name;
    if (auto meta = object.find("metadata"); meta != object.end() && meta->is_object()) {
      if (auto n = meta->find("name"); n != meta->end() && n->is_string()) name = *n;
    }
    std::string what = kind + (name.empty() ? "" : " " + name);
    std::string named = label.empty() ? what : label + " (" + what + ")";

    std::string problem;
    bool ok = true;
    if (kind == "ModelDeployment") {
      ok = DecodeModelDeployment(object, &out_->model_deployments.emplace_back(), &problem);
    } else if (kind == "Pod") {
      ok = DecodePod(object, &out_->pods.emplace_back(), &problem);
    } else if (kind == "ReplicaSet") {
      ok = DecodeReplicaSet(object, &out_->replica_sets.emplace_back(), &problem);
    } else if (kind == "Deployment") {
      ok = DecodeDeployment(object, &out_->deployments.emplace_back(), &problem);
    }  // other kinds (Services, ConfigMaps, ...) are not ours
    if (!ok) return Fail(named + ": ", problem);
    return true;
  }

  static std::string Prefix(const std::string& label) {
    return label.empty() ? std::string() : label + ": ";
  }

  bool Fail(const std::string& prefix, const std::string& what) {
    *error_ = prefix + what;
    return false;
  }

  ObjectSet* out_;
  std::string* error_;
};

std::string NotFoundMessage(std::string_view resource, std::string_view name) {
  return std::string(resource) + " \"" + std::string(name) + "\" not found";
}

}  // namespace

bool ParseYamlDocuments(std::string_view text, std::vector<json>* out, std::string* error) {
  std::vector<YAML::Node> docs;
  try {
    docs = YAML::LoadAll(std::string(StripBom(text)));
  } catch (const YAML::Exception& e) {
    *error = "invalid YAML: " + MarkText(e.mark) + e.msg;
    return false;
  }
  out->clear();
  size_t budget = kMaxYamlNodes;  // over every document of the text
  for (const YAML::Node& doc : docs) {
    if (doc.IsNull()) continue;  // `---` with nothing after it
    json converted;
    if (!ConvertNode(doc, 0, &budget, &converted, error)) {
      *error = "invalid YAML: " + *error;
      return false;
    }
    out->push_back(std::move(converted));
  }
  return true;
}

bool DecodeObjects(std::string_view text, ObjectSet* out, std::string* error) {
  text = StripBom(text);
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    *error = "no objects: the text is empty";
    return false;
  }
  std::vector<json> docs;
  if (LooksLikeJson(text)) {
    try {
      docs.push_back(json::parse(text));
    } catch (const json::parse_error& e) {
      // Drop nlohmann's "[json.exception.parse_error.101] " prefix; keep its line and column.
      std::string what = e.what();
      size_t bracket = what.find("] ");
      *error = "invalid JSON: " + (bracket == std::string::npos ? what : what.substr(bracket + 2));
      return false;
    }
  } else if (!ParseYamlDocuments(text, &docs, error)) {
    return false;
  }

  ObjectSet objects;
  ObjectCollector collector(&objects, error);
  for (size_t i = 0; i < docs.size(); ++i) {
    std::string where = docs.size() > 1 ? "document " + std::to_string(i + 1) + ": " : "";
    if (!collector.AddDocument(docs[i], where)) return false;
  }
  *out = std::move(objects);
  return true;
}

bool FileObjectSource::Stat(const std::string& path, FileVersion* out) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return false;
  out->device = static_cast<uint64_t>(st.st_dev);
  out->inode = static_cast<uint64_t>(st.st_ino);
  out->size = static_cast<uint64_t>(st.st_size);
  out->mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  return true;
}

bool FileObjectSource::Load(const std::string& path, std::string* error) {
  std::lock_guard reload(reload_mu_);  // never install an older read over a newer one
  FileVersion before;
  const bool stated = Stat(path, &before);
  std::string text;
  if (!base::ReadFile(path, &text, error)) return false;
  ObjectSet objects;
  std::string problem;
  if (!DecodeObjects(text, &objects, &problem)) {
    *error = path + ": " + problem;
    return false;
  }
  FileVersion after;
  // A file that changed while it was read is served, but read again on the next Refresh().
  const bool stable = stated && Stat(path, &after) && after == before;
  auto fresh = std::make_shared<const ObjectSet>(std::move(objects));
  std::lock_guard lock(mu_);
  objects_ = std::move(fresh);
  path_ = path;
  version_ = stable ? before : FileVersion{};
  last_error_.clear();
  return true;
}

bool FileObjectSource::Refresh() {
  std::string path;
  FileVersion served;
  {
    std::lock_guard lock(mu_);
    if (path_.empty()) return false;
    path = path_;
    served = version_;
  }
  FileVersion now;
  if (Stat(path, &now) && now == served) return false;  // the common case: one stat
  std::lock_guard reload(reload_mu_);
  FileVersion before;
  if (!Stat(path, &before)) {
    // Gone (mid rename-replace, or deleted): keep serving what we have.
    return false;
  }
  {
    std::lock_guard lock(mu_);
    if (before == version_ || path_ != path) return false;  // another thread got there first
  }
  std::string text;
  std::string error;
  ObjectSet objects;
  bool ok = base::ReadFile(path, &text, &error);
  if (ok) {
    std::string problem;
    ok = DecodeObjects(text, &objects, &problem);
    if (!ok) error = path + ": " + problem;
  }
  FileVersion after;
  const bool stable = Stat(path, &after) && after == before;
  if (!ok && !stable) return false;  // still being written: look again next time
  std::function<void(const std::string&)> log;
  {
    std::lock_guard lock(mu_);
    if (path_ != path) return false;
    if (!ok) {
      version_ = before;  // report this version's error once
      last_error_ = error;
      log = log_;
    } else {
      objects_ = std::make_shared<const ObjectSet>(std::move(objects));
      version_ = stable ? before : FileVersion{};
      last_error_.clear();
    }
  }
  if (!ok) {
    const std::string message = error + " (still serving the last good objects)";
    if (log) {
      log(message);
    } else {
      std::fprintf(stderr, "objects file: %s\n", message.c_str());
    }
  }
  return ok;
}

void FileObjectSource::SetErrorLog(std::function<void(const std::string&)> log) {
  std::lock_guard lock(mu_);
  log_ = std::move(log);
}

std::string FileObjectSource::last_error() const {
  std::lock_guard lock(mu_);
  return last_error_;
}

void FileObjectSource::Set(ObjectSet objects) {
  auto fresh = std::make_shared<const ObjectSet>(std::move(objects));
  std::lock_guard lock(mu_);
  objects_ = std::move(fresh);
  path_.clear();
  last_error_.clear();
}

std::shared_ptr<const ObjectSet> FileObjectSource::Current() const {
  std::lock_guard lock(mu_);
  return objects_;
}

ApiStatus FileObjectSource::GetModelDeployment(std::string_view ns, std::string_view name,
                                               ModelDeployment* out) {
  Refresh();  // each snapshot starts here: see the file as it is now
  auto objects = Current();
  for (const ModelDeployment& md : objects->model_deployments) {
    if (md.metadata.namespace_ == ns && md.metadata.name == name) {
      *out = md;
      return ApiStatus::Ok();
    }
  }
  return ApiStatus::NotFound(NotFoundMessage("modeldeployments.worker.gpustack.ai", name));
}

ApiStatus FileObjectSource::ListPods(std::string_view ns, std::string_view label_selector,
                                     std::vector<Pod>* out) {
  auto objects = Current();
  out->clear();
  for (const Pod& pod : objects->pods) {
    if ((ns.empty() || pod.metadata.namespace_ == ns) &&
        MatchesSelector(pod.metadata, label_selector)) {
      out->push_back(pod);
    }
  }
  return ApiStatus::Ok();
}

ApiStatus FileObjectSource::GetReplicaSet(std::string_view ns, std::string_view name,
                                          ReplicaSet* out) {
  auto objects = Current();
  for (const ReplicaSet& rs : objects->replica_sets) {
    if (rs.metadata.namespace_ == ns && rs.metadata.name == name) {
      *out = rs;
      return ApiStatus::Ok();
    }
  }
  return ApiStatus::NotFound(NotFoundMessage("replicasets.apps", name));
}

ApiStatus FileObjectSource::GetDeployment(std::string_view ns, std::string_view name,
                                          Deployment* out) {
  auto objects = Current();
  for (const Deployment& deployment : objects->deployments) {
    if (deployment.metadata.namespace_ == ns && deployment.metadata.name == name) {
      *out = deployment;
      return ApiStatus::Ok();
    }
  }
  return ApiStatus::NotFound(NotFoundMessage("deployments.apps", name));
}

}  // namespace modelmetrics::deployment
