// The `modelmetrics serve` configuration: one YAML mapping of settings, parsed from one table of
// keys (serve_config.cc) that gives each its type, bounds, default and doc line. The same table
// prints the documented key list (ServeConfigReference, `modelmetrics serve --config-keys`), so
// the list cannot drift from the parser.
//
// Relative paths are relative to the file's folder. At least one of token_file, client_ca_file,
// requestheader_ca_file, delegated_authentication is needed. `kubeconfig` and `in_cluster`
// exclude each other; objects need `objects_file` or one of them, and `subjectaccessreview`
// needs one of them. Unknown keys are errors (a typo must not silently drop a security setting).
// Files named here are checked to exist at load time. The configuration itself, the policy,
// token and kubeconfig files are read only if they are regular files of at most 4 MiB
// (base/file.h); the objects file up to max_objects_bytes.
//
// Thread-safety: plain data and pure functions.
#ifndef MODELMETRICS_APISERVER_SERVE_CONFIG_H_
#define MODELMETRICS_APISERVER_SERVE_CONFIG_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "aggregation/aggregator.h"
#include "aggregation/metrics_api.h"
#include "aggregation/pod_source.h"
#include "aggregation/prometheus_source.h"
#include "base/file.h"

namespace modelmetrics::deployment {

inline constexpr int64_t kMaxObjectsBytesSetting = int64_t{1} << 30;

// The settings in sections by concern; the YAML keys stay flat (`tls_cert_file`, not
// `tls: {cert_file}`), as the reference and every deployed file have them (kSettings in
// serve_config.cc maps each key to its member).
struct ServeConfig {
  enum class Authorization { kPolicy, kSubjectAccessReview };

  // Where it listens and how much it takes on.
  struct Server {
    std::string address = "127.0.0.1";
    uint16_t port = 8443;
    size_t max_in_flight = 32;
    int workers = 8;
    int snapshot_reuse_ms = 1000;
    size_t max_connections_per_address = 0;
  };
  struct Tls {
    std::string cert_file;
    std::string key_file;
    bool self_signed = false;
    std::vector<std::string> self_signed_hosts = {"localhost", "127.0.0.1"};
  };
  // Who the caller is: client certificates, the front proxy, static tokens, or delegated.
  struct Authentication {
    std::string client_ca_file;
    std::string requestheader_ca_file;
    std::vector<std::string> requestheader_allowed_names;
    std::string token_file;
    bool delegated = false;
    std::chrono::milliseconds refresh{10000};
    std::chrono::milliseconds token_review_cache_ttl{10000};
  };
  // What the caller may read.
  struct Access {
    Authorization mode = Authorization::kPolicy;
    std::string policy_file;
  };
  // Where the objects come from: a file, or the Kubernetes API (also used for reviews and the
  // authentication ConfigMap).
  struct Kube {
    std::string objects_file;
    size_t max_objects_bytes = size_t{4} << 20;  // object_file.h kDefaultMaxObjectsBytes
    std::string kubeconfig;
    std::string context;
    bool in_cluster = false;
    bool watch_objects = true;
  };
  // How deployments are read: the spec's read limits (`request_timeout`, and the `scrape:`
  // mapping for direct scraping; the defaults are AggregatorOptions', which hold the spec's
  // numbers) and the sample source: the Pods (default) or a Prometheus-compatible store
  // (`source: prometheus` with a `prometheus:` mapping; its credential files are read at
  // start-up).
  struct Reads {
    std::chrono::milliseconds request_timeout = AggregatorOptions{}.request_timeout;
    size_t pod_limit = AggregatorOptions{}.pod_limit;
    size_t scrape_max_in_flight = AggregatorOptions{}.max_in_flight;
    std::chrono::milliseconds fetch_timeout = AggregatorOptions{}.fetch_timeout;
    size_t max_body_bytes = AggregatorOptions{}.max_body_bytes;
    std::string pod_ca_file;
    SampleSource source = SampleSource::kScrape;
    PrometheusSourceOptions prometheus;
    std::string prometheus_bearer_token_file;
    std::string prometheus_basic_password_file;
  };

  // The custom metrics API (custom.metrics.k8s.io) beside the snapshot's: off by default, as a
  // cluster has one APIService for that group (KEDA's or prometheus-adapter's may hold it).
  struct Autoscaling {
    bool custom_metrics = false;
    int metrics_reuse_ms = 5000;  // a metric call accepts a read this old
  };

  Server server;
  MetricsApi api;
  Autoscaling autoscaling;
  Tls tls;
  Authentication authn;
  Access authz;
  Kube kube;
  Reads reads;

  // The Kubernetes API is needed (for objects, reviews or the authentication ConfigMap).
  bool UsesKubeApi() const { return !kube.kubeconfig.empty() || kube.in_cluster; }
  // Copies the read limits into `options` (the rest of it is the caller's).
  void ApplyReadLimits(AggregatorOptions* options) const;
};

// Parses the YAML text; relative paths are resolved against `base_dir` ("" keeps them).
Status ParseServeConfig(std::string_view yaml, const std::string& base_dir, ServeConfig* out);
// Reads and parses `path`, a regular file of at most `max_bytes` (base/file.h); errors start with
// the path.
Status LoadServeConfig(const std::string& path, ServeConfig* out,
                       size_t max_bytes = base::kDefaultMaxFileBytes);

// Sets one setting from its text (`key` as in ServeConfigKeys, e.g. "scrape.fetch_timeout";
// `text` as the setting's kind reads it: "3s", "128", "true", "a,b" for a list, any text for a
// text setting), with the file's bounds and error texts. Cross-setting checks are
// ParseServeConfig's. The CLI's flags use it.
Status SetServeConfigValue(std::string_view key, std::string_view text, ServeConfig* config);

// One documented setting: `key` ("prometheus.url" inside a mapping), the value the reference
// shows (the default, or an example) and its doc line.
struct ServeConfigKey {
  std::string_view key;
  std::string_view shown;
  std::string_view doc;
};
const std::vector<ServeConfigKey>& ServeConfigKeys();
// Every key as an annotated YAML file, in the table's order.
std::string ServeConfigReference();

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_SERVE_CONFIG_H_
