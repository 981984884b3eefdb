// The file ObjectSource and the JSON/YAML object decoding behind it; see object_file.h.
//
// YAML is read into nlohmann::json first (deployment/yaml.h), so both formats share one decoder
// (and one set of error messages).
#include "kube/object_file.h"

#include <sys/stat.h>

#include <cstdint>
#include <cstdio>
#include <utility>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/mutex.h"
#include "kube/label_selector.h"
#include "kube/yaml.h"

namespace modelmetrics::deployment {
namespace {

using nlohmann::json;

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

    Status decoded;
    if (kind == "ModelDeployment") {
      decoded = DecodeModelDeployment(object, &out_->model_deployments.emplace_back());
    } else if (kind == "Pod") {
      decoded = DecodePod(object, &out_->pods.emplace_back());
    } else if (kind == "ReplicaSet") {
      decoded = DecodeReplicaSet(object, &out_->replica_sets.emplace_back());
    } else if (kind == "Deployment") {
      decoded = DecodeDeployment(object, &out_->deployments.emplace_back());
    }  // other kinds (Services, ConfigMaps, ...) are not ours
    if (!decoded.ok()) return Fail(named + ": ", decoded.message());
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

// DecodeObjects' reading, with the collector's error.
static bool ReadObjects(std::string_view text, ObjectSet* out, std::string* error,
                        size_t max_bytes) {
  text = StripBom(text);
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    *error = "no objects: the text is empty";
    return false;
  }
  std::vector<json> docs;
  YamlLimits limits;
  limits.max_bytes = max_bytes;
  if (LooksLikeJson(text)) {
    if (text.size() > max_bytes) {
      *error = "invalid JSON: the text is " + std::to_string(text.size()) + " bytes, over the " +
               std::to_string(max_bytes) + "-byte limit";
      return false;
    }
    // The YAML reader's depth and node bounds hold for JSON too: a few megabytes of `[` would
    // otherwise build millions of nested arrays. Past a bound the parser keeps scanning but
    // stores nothing (the callback's false), and the result is an error.
    std::string bound;
    size_t nodes = 0;
    const json::parser_callback_t callback = [&](int depth, json::parse_event_t event, json&) {
      if (!bound.empty()) return false;
      if ((event == json::parse_event_t::object_start ||
           event == json::parse_event_t::array_start) &&
          depth >= limits.max_depth) {
        bound = "nested deeper than " + std::to_string(limits.max_depth);
        return false;
      }
      if (event != json::parse_event_t::object_end && event != json::parse_event_t::array_end &&
          ++nodes > limits.max_nodes) {
        bound = "more than " + std::to_string(limits.max_nodes) + " nodes";
        return false;
      }
      return true;
    };
    try {
      docs.push_back(json::parse(text, callback));
    } catch (const json::exception& e) {
      // A syntax error, or a number out of double's range (`1E400`: out_of_range.406).
      if (!bound.empty()) {  // met before the syntax error, so the first problem
        *error = "invalid JSON: " + bound;
        return false;
      }
      // Drop nlohmann's "[json.exception.parse_error.101] " prefix; keep its line and column.
      std::string what = e.what();
      size_t bracket = what.find("] ");
      if (bracket != std::string::npos) what = what.substr(bracket + 2);
      if (what.size() > 200) what = what.substr(0, 200) + "...";  // it may echo the input
      *error = "invalid JSON: " + what;
      return false;
    }
    if (!bound.empty()) {
      *error = "invalid JSON: " + bound;
      return false;
    }
  } else {
    if (const Status parsed = ParseYaml(text, &docs, limits); !parsed.ok()) {
      *error = "invalid YAML: " + parsed.message();
      return false;
    }
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

Status DecodeObjects(std::string_view text, ObjectSet* out, size_t max_bytes) {
  std::string error;
  if (!ReadObjects(text, out, &error, max_bytes)) return Status::InvalidArgument(std::move(error));
  return Status::Ok();
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

namespace {

// Modification times tick coarsely (a few ms, a second on some filesystems): a same-size rewrite
// within one tick of the read would look unchanged. A version this fresh is therefore not
// trusted, and read again on the next call until it has aged (git's "racy" rule).
constexpr std::chrono::seconds kRacyAge{1};

bool Racy(int64_t mtime_ns) {
  const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  return now_ns - mtime_ns < std::chrono::nanoseconds(kRacyAge).count();
}

}  // namespace

FileObjectSource::Attempt FileObjectSource::ReadOnce(const std::string& path, size_t max_bytes) {
  Attempt attempt;
  const bool stated = Stat(path, &attempt.version);
  std::string text;
  Status read = base::ReadFile(path, &text, max_bytes);
  if (read.ok()) read = DecodeObjects(text, &attempt.objects, max_bytes).Prefixed(path + ": ");
  attempt.ok = read.ok();
  attempt.error = read.message();
  FileVersion after;
  attempt.unchanged = stated && Stat(path, &after) && after == attempt.version;
  attempt.stable = attempt.unchanged && !Racy(attempt.version.mtime_ns);
  return attempt;
}

Status FileObjectSource::Load(const std::string& path, size_t max_bytes) {
  base::MutexLock reload(&reload_mu_);  // never install an older read over a newer one
  Attempt attempt = ReadOnce(path, max_bytes);
  if (!attempt.ok) return Status::InvalidArgument(std::move(attempt.error));
  // A file that changed while it was read is served, but read again on the next Refresh().
  auto fresh = std::make_shared<const ObjectSet>(std::move(attempt.objects));
  base::MutexLock lock(&mu_);
  objects_ = std::move(fresh);
  path_ = path;
  max_bytes_ = max_bytes;
  version_ = attempt.stable ? attempt.version : FileVersion{};
  last_error_.clear();
  return Status::Ok();
}

bool FileObjectSource::Refresh() {
  std::string path;
  FileVersion served;
  size_t max_bytes = 0;
  {
    base::MutexLock lock(&mu_);
    if (path_.empty()) return false;
    path = path_;
    served = version_;
    max_bytes = max_bytes_;
  }
  FileVersion now;
  if (Stat(path, &now) && now == served) return false;  // the common case: one stat
  base::MutexLock reload(&reload_mu_);
  FileVersion before;
  if (!Stat(path, &before)) {
    // Gone (mid rename-replace, or deleted): keep serving what we have.
    return false;
  }
  {
    base::MutexLock lock(&mu_);
    if (before == version_ || path_ != path) return false;  // another thread got there first
  }
  Attempt attempt = ReadOnce(path, max_bytes);
  if (!attempt.ok && !attempt.unchanged) return false;  // still being written: look again
  std::function<void(const std::string&)> log;
  {
    base::MutexLock lock(&mu_);
    if (path_ != path) return false;
    version_ = attempt.stable ? attempt.version : FileVersion{};
    if (!attempt.ok) {
      // Reported once per error: a racy version is read again, but says the same thing.
      if (attempt.error != last_error_)
        log = log_ ? log_ : [](const std::string& line) {
          std::fprintf(stderr, "objects file: %s\n", line.c_str());
        };
      last_error_ = attempt.error;
    } else {
      objects_ = std::make_shared<const ObjectSet>(std::move(attempt.objects));
      last_error_.clear();
    }
  }
  if (log) log(attempt.error + " (still serving the last good objects)");
  return attempt.ok;
}

void FileObjectSource::SetErrorLog(std::function<void(const std::string&)> log) {
  base::MutexLock lock(&mu_);
  log_ = std::move(log);
}

std::string FileObjectSource::last_error() const {
  base::MutexLock lock(&mu_);
  return last_error_;
}

void FileObjectSource::Set(ObjectSet objects) {
  auto fresh = std::make_shared<const ObjectSet>(std::move(objects));
  base::MutexLock lock(&mu_);
  objects_ = std::move(fresh);
  path_.clear();
  last_error_.clear();
}

std::shared_ptr<const ObjectSet> FileObjectSource::Current() const {
  base::MutexLock lock(&mu_);
  return objects_;
}

Status FileObjectSource::GetModelDeployment(std::string_view ns, std::string_view name,
                                            ModelDeployment* out) {
  Refresh();  // each snapshot starts here: see the file as it is now
  auto objects = Current();
  for (const ModelDeployment& md : objects->model_deployments) {
    if (md.metadata.namespace_ == ns && md.metadata.name == name) {
      *out = md;
      return Status::Ok();
    }
  }
  return Status::NotFound(NotFoundMessage("modeldeployments.worker.gpustack.ai", name));
}

Status FileObjectSource::ListModelDeployments(std::string_view ns,
                                              std::vector<ModelDeployment>* out) {
  Refresh();
  auto objects = Current();
  out->clear();
  for (const ModelDeployment& md : objects->model_deployments) {
    if (ns.empty() || md.metadata.namespace_ == ns) out->push_back(md);
  }
  return Status::Ok();
}

Status FileObjectSource::ListPods(std::string_view ns, std::string_view label_selector,
                                  std::vector<Pod>* out) {
  LabelSelector selector;
  if (Status parsed = LabelSelector::Parse(label_selector, &selector); !parsed.ok()) return parsed;
  auto objects = Current();
  out->clear();
  for (const Pod& pod : objects->pods) {
    if ((ns.empty() || pod.metadata.namespace_ == ns) && selector.Matches(pod.metadata)) {
      out->push_back(pod);
    }
  }
  return Status::Ok();
}

Status FileObjectSource::GetReplicaSet(std::string_view ns, std::string_view name,
                                       ReplicaSet* out) {
  auto objects = Current();
  for (const ReplicaSet& rs : objects->replica_sets) {
    if (rs.metadata.namespace_ == ns && rs.metadata.name == name) {
      *out = rs;
      return Status::Ok();
    }
  }
  return Status::NotFound(NotFoundMessage("replicasets.apps", name));
}

Status FileObjectSource::GetDeployment(std::string_view ns, std::string_view name,
                                       Deployment* out) {
  auto objects = Current();
  for (const Deployment& deployment : objects->deployments) {
    if (deployment.metadata.namespace_ == ns && deployment.metadata.name == name) {
      *out = deployment;
      return Status::Ok();
    }
  }
  return Status::NotFound(NotFoundMessage("deployments.apps", name));
}

}  // namespace modelmetrics::deployment
