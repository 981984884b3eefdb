// An ObjectSource over a file of Kubernetes objects: the output of `kubectl get -o json` (a List,
// or one object) or YAML (a List, one object, or several `---` documents). Used offline, by tests
// and by the demo. Objects of other kinds are skipped; a known kind that fails to decode is an
// error naming the item (`items[3] (Pod chat-0): spec.containers: expected an array`).
//
// NotFound messages use Kubernetes' wording: `modeldeployments.worker.gpustack.ai "chat" not
// found`, `replicasets.apps "x" not found`, `deployments.apps "x" not found`. ListPods with an
// empty namespace lists every namespace, as the API does.
//
// Live file: after Load(path), every GetModelDeployment (the first call of each snapshot) checks
// the file's identity (device, inode, size, modification time) and re-reads it when that changed,
// so an atomic rename-replace, an edit in place and a simulator's rewrite after a Pod restart are
// all seen by the next read. A re-read that fails (a half-written file, a bad edit) keeps the last
// good objects and reports the error once per file version through the error log; the identity
// is taken before and after the read, and a file that changed while being read is read again on
// the next call rather than trusted.
//
// Thread-safety: concurrent calls are safe. Load() (again), Refresh() and Set() swap the objects
// under a mutex, so a simulator may rewrite the file while an aggregator reads.
#ifndef MODELMETRICS_KUBE_OBJECT_FILE_H_
#define MODELMETRICS_KUBE_OBJECT_FILE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "kube/objects.h"

namespace modelmetrics::deployment {

struct ObjectSet {
  std::vector<ModelDeployment> model_deployments;
  std::vector<Pod> pods;
  std::vector<ReplicaSet> replica_sets;
  std::vector<Deployment> deployments;
};

// The default cap on an objects file (base::ReadFile's): a 1,000-Pod List as YAML is well under
// it. `serve` (max_objects_bytes) and `snapshot` (--max-objects-bytes) can raise it.
inline constexpr size_t kDefaultMaxObjectsBytes = size_t{4} << 20;

// Decodes JSON or YAML text (detected by content: JSON when the first non-blank character is `{`
// or `[`) into `*out`. An empty text is an error; a List with no items is not. YAML is read by
// deployment/yaml.h ParseYaml (typing and bounds there); JSON under the same size (`max_bytes`),
// depth and node bounds. Errors start with "invalid JSON: " or "invalid YAML: ".
Status DecodeObjects(std::string_view text, ObjectSet* out,
                     size_t max_bytes = kDefaultMaxObjectsBytes);

class FileObjectSource : public ObjectSource {
 public:
  // Reads and decodes `path` (a regular file of at most `max_bytes`); an error ("<path>: ...")
  // on failure, leaving the objects served so far in place. Calling it again reloads
  // (atomically for concurrent readers).
  Status Load(const std::string& path, size_t max_bytes = kDefaultMaxObjectsBytes);
  // Serves `objects` directly (tests, in-process simulators); stops following a file.
  void Set(ObjectSet objects);
  // Re-reads the loaded file if its identity changed. True when the objects were replaced.
  bool Refresh();
  // Where reload errors go (default: stderr, one line). Set before concurrent use.
  void SetErrorLog(std::function<void(const std::string&)> log);
  // The last reload error, "" after a good read.
  std::string last_error() const;

  Status GetModelDeployment(std::string_view ns, std::string_view name,
                            ModelDeployment* out) override;
  Status ListModelDeployments(std::string_view ns, std::vector<ModelDeployment>* out) override;
  Status ListPods(std::string_view ns, std::string_view label_selector,
                  std::vector<Pod>* out) override;
  Status GetReplicaSet(std::string_view ns, std::string_view name, ReplicaSet* out) override;
  Status GetDeployment(std::string_view ns, std::string_view name, Deployment* out) override;

 private:
  // What identifies one version of a file.
  struct FileVersion {
    uint64_t device = 0, inode = 0, size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const FileVersion&) const = default;
  };
  static bool Stat(const std::string& path, FileVersion* out);
  // One read of a file: its objects or error, the version read (taken first), whether that
  // version held still through the read, and whether it is also old enough to trust.
  struct Attempt {
    bool ok = false;
    bool unchanged = false;
    bool stable = false;
    FileVersion version;
    ObjectSet objects;
    std::string error;
  };
  static Attempt ReadOnce(const std::string& path, size_t max_bytes);
  std::shared_ptr<const ObjectSet> Current() const;

  mutable base::Mutex mu_;
  std::shared_ptr<const ObjectSet> objects_ GUARDED_BY(mu_) = std::make_shared<ObjectSet>();
  base::Mutex reload_mu_ ACQUIRED_BEFORE(mu_);  // one reload at a time
  std::string path_ GUARDED_BY(mu_);            // followed file; "" after Set()
  size_t max_bytes_ GUARDED_BY(mu_) = 0;        // its cap, from Load()
  FileVersion version_ GUARDED_BY(mu_);  // of the objects served, or of the last failed attempt
  std::string last_error_ GUARDED_BY(mu_);
  std::function<void(const std::string&)> log_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_KUBE_OBJECT_FILE_H_
