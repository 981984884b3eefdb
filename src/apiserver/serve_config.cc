// The serve configuration: one table of settings (kSettings) drives the parser and the reference.
#include "apiserver/serve_config.h"

#include <charconv>
#include <filesystem>
#include <functional>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/duration.h"
#include "kube/yaml.h"

namespace modelmetrics::deployment {
namespace {

using Json = nlohmann::json;
using std::chrono::milliseconds;

// What a setting's parser has beside its node: where relative paths start, and where an error
// goes (the parser returns false after Fail).
struct Context {
  const std::string& base_dir;
  std::string* error;

  bool Fail(std::string message) const {
    *error = std::move(message);
    return false;
  }
  std::string Resolve(const std::string& path) const {
    if (path.empty() || base_dir.empty() || std::filesystem::path(path).is_absolute()) return path;
    return (std::filesystem::path(base_dir) / path).lexically_normal().string();
  }
};

// Parses `node`, the value of `key`, into the configuration.
using Parse =
    std::function<bool(const std::string& key, const Json& node, const Context&, ServeConfig*)>;
// The node a setting reads from a command-line value: its own kind's reading of the text (no
// YAML between), so a flag and the file give the same errors.
using FromText = Json (*)(std::string_view text);

Json TextNode(std::string_view text) { return Json(std::string(text)); }

// An integer when the whole text is one (else the text, which the reader refuses by name).
Json IntegerNode(std::string_view text) {
  int64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && end == text.data() + text.size() && !text.empty()) return Json(value);
  return TextNode(text);
}

Json FlagNode(std::string_view text) {
  if (text == "true") return Json(true);
  if (text == "false") return Json(false);
  return TextNode(text);
}

// Comma-separated items.
Json ListNode(std::string_view text) {
  Json list = Json::array();
  while (!text.empty()) {
    const size_t comma = text.find(',');
    list.push_back(std::string(text.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return list;
}

// How a setting is read: from the file's node, and from a command-line text.
struct Reader {
  Parse parse;
  FromText from_text;
};

struct Setting {
  ServeConfigKey doc;
  Reader read;
};

// ---- value readers, with the error texts every setting of a type shares ----------------------

bool ReadText(const std::string& key, const Json& node, const Context& ctx, std::string* out) {
  if (!YamlScalarText(node, out)) return ctx.Fail(fmt::format("{}: expected a string", key));
  return true;
}

bool ReadInteger(const std::string& key, const Json& node, const Context& ctx, int64_t min,
                 int64_t max, int64_t* out) {
  if (!node.is_number_integer()) return ctx.Fail(fmt::format("{}: expected an integer", key));
  if (node.is_number_unsigned() && node.get<uint64_t>() > static_cast<uint64_t>(max)) {
    return ctx.Fail(
        fmt::format("{}: {} is out of range [{}, {}]", key, node.get<uint64_t>(), min, max));
  }
  *out = node.get<int64_t>();
  if (*out < min || *out > max) {
    return ctx.Fail(fmt::format("{}: {} is out of range [{}, {}]", key, *out, min, max));
  }
  return true;
}

// A list of non-empty scalars; `what` names them in the error. `null_is_empty`: `key:` alone is
// an empty list.
bool ReadList(const std::string& key, const Json& node, const Context& ctx, std::string_view what,
              bool null_is_empty, std::vector<std::string>* out) {
  if (node.is_null() && null_is_empty) return true;
  if (!node.is_array()) return ctx.Fail(fmt::format("{}: expected a list of {}", key, what));
  out->clear();
  for (const Json& item : node) {
    std::string text;
    if (!YamlScalarText(item, &text) || text.empty()) {
      return ctx.Fail(fmt::format("{}: expected a list of {}", key, what));
    }
    out->push_back(std::move(text));
  }
  return true;
}

// ---- typed setting parsers: `field` maps the configuration to the member a row sets -----------

template <typename F>
Reader Text(F field) {
  return Reader{[field](const std::string& key, const Json& node, const Context& ctx,
                        ServeConfig* c) { return ReadText(key, node, ctx, &field(*c)); },
                &TextNode};
}

template <typename F>
Reader Path(F field) {
  return Reader{
      [field](const std::string& key, const Json& node, const Context& ctx, ServeConfig* c) {
        std::string& value = field(*c);
        if (!ReadText(key, node, ctx, &value)) return false;
        value = ctx.Resolve(value);
        return true;
      },
      &TextNode};
}

template <typename F>
Reader Flag(F field) {
  return Reader{
      [field](const std::string& key, const Json& node, const Context& ctx, ServeConfig* c) {
        if (!node.is_boolean()) return ctx.Fail(fmt::format("{}: expected true or false", key));
        field(*c) = node.get<bool>();
        return true;
      },
      &FlagNode};
}

template <typename F>
Reader Integer(F field, int64_t min, int64_t max) {
  return Reader{[=](const std::string& key, const Json& node, const Context& ctx, ServeConfig* c) {
                  int64_t number = 0;
                  if (!ReadInteger(key, node, ctx, min, max, &number)) return false;
                  using T = std::remove_reference_t<decltype(field(*c))>;
                  field(*c) = static_cast<T>(number);
                  return true;
                },
                &IntegerNode};
}

// A duration in [min, max]; `expected` completes "is not ..." in the error.
template <typename F>
Reader Duration(F field, milliseconds min, milliseconds max, std::string_view expected) {
  return Reader{[=](const std::string& key, const Json& node, const Context& ctx, ServeConfig* c) {
                  std::string text;
                  milliseconds value{};
                  if (!ReadText(key, node, ctx, &text)) return false;
                  if (!base::ParseDuration(text, &value) || value < min || value > max) {
                    return ctx.Fail(fmt::format("{}: `{}` is not {}", key, text, expected));
                  }
                  field(*c) = value;
                  return true;
                },
                &TextNode};
}

template <typename F>
Reader List(F field, std::string_view what, bool null_is_empty) {
  return Reader{[=](const std::string& key, const Json& node, const Context& ctx, ServeConfig* c) {
                  return ReadList(key, node, ctx, what, null_is_empty, &field(*c));
                },
                &ListNode};
}

// The self-signed certificate's names: at least one, none with a comma (a SAN list separator).
template <typename F>
Reader Hosts(F field) {
  return Reader{
      [=](const std::string& key, const Json& node, const Context& ctx, ServeConfig* c) {
        std::vector<std::string> hosts;
        bool ok = ReadList(key, node, ctx, "host names", false, &hosts) && !hosts.empty();
        for (const std::string& host : hosts) ok = ok && host.find(',') == std::string::npos;
        if (!ok) {
          return ctx.Fail(fmt::format("{}: expected a non-empty list of host names", key));
        }
        field(*c) = std::move(hosts);
        return true;
      },
      &ListNode};
}

// One of a few words, each naming a value.
template <typename F, typename T>
Reader Choice(F field, std::vector<std::pair<std::string_view, T>> words) {
  return Reader{[=](const std::string& key, const Json& node, const Context& ctx, ServeConfig* c) {
                  std::string text;
                  if (!ReadText(key, node, ctx, &text)) return false;
                  for (const auto& [word, value] : words) {
                    if (text == word) {
                      field(*c) = value;
                      return true;
                    }
                  }
                  std::string choices;
                  for (size_t i = 0; i < words.size(); ++i) {
                    choices += fmt::format("{}`{}`", i == 0 ? "" : " nor ", words[i].first);
                  }
                  return ctx.Fail(fmt::format("{}: `{}` is neither {}", key, text, choices));
                },
                &TextNode};
}

// The member a row sets, by a name the compiler checks.
#define MM_FIELD(member) \
  [](ServeConfig & c) -> auto& { return c.member; }

constexpr milliseconds kHour = std::chrono::hours(1);
constexpr milliseconds kNoMax = milliseconds::max();
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr std::string_view kPositiveDuration = "a positive duration (e.g. 90s, 2m)";

// The server's own settings: address, TLS, authentication, authorisation, objects, admission.
std::vector<Setting> ServerSettings() {
  using Authorization = ServeConfig::Authorization;
  return {
      {{"address", "127.0.0.1", "IP literal to bind"}, Text(MM_FIELD(server.address))},
      {{"port", "8443", "0: any free port"}, Integer(MM_FIELD(server.port), 0, 65535)},
      {{"api_group", "worker.gpustack.ai", "the API's group (metrics_api.h) ..."},
       Text(MM_FIELD(api.group))},
      {{"api_version", "v1", "    and version; the APIService must name the same"},
       Text(MM_FIELD(api.version))},
      {{"tls_cert_file", "server.pem", "required (tokens never travel in the clear) ..."},
       Path(MM_FIELD(tls.cert_file))},
      {{"tls_key_file", "server-key.pem", "    ... unless tls_self_signed"},
       Path(MM_FIELD(tls.key_file))},
      {{"tls_self_signed", "false", "true: a P-256 certificate made at start (net/certificate.h)"},
       Flag(MM_FIELD(tls.self_signed))},
      {{"tls_self_signed_hosts", "[localhost, 127.0.0.1]", "    for these names"},
       Hosts(MM_FIELD(tls.self_signed_hosts))},
      {{"client_ca_file", "ca.pem", "client certificates: user = CN, groups = O"},
       Path(MM_FIELD(authn.client_ca_file))},
      {{"requestheader_ca_file", "front-proxy-ca.pem", "front-proxy mode (X-Remote-User/-Group)"},
       Path(MM_FIELD(authn.requestheader_ca_file))},
      {{"requestheader_allowed_names", "[front-proxy-client]",
        "empty or absent: any CN of that CA"},
       List(MM_FIELD(authn.requestheader_allowed_names), "names", true)},
      {{"token_file", "tokens.csv", "Kubernetes static tokens: token,user,uid,\"g1,g2\""},
       Path(MM_FIELD(authn.token_file))},
      {{"delegated_authentication", "false",
        "true: CAs from kube-system/extension-apiserver-authentication, tokens by TokenReview"},
       Flag(MM_FIELD(authn.delegated))},
      {{"authentication_refresh", "10s", "how often that ConfigMap is re-read (100ms .. 1h)"},
       Duration(MM_FIELD(authn.refresh), milliseconds(100), kHour,
                "a duration between 100ms and 1h (e.g. 10s)")},
      {{"token_review_cache_ttl", "10s", "how long a TokenReview's answer is kept (100ms .. 10m)"},
       Duration(MM_FIELD(authn.token_review_cache_ttl), milliseconds(100), std::chrono::minutes(10),
                "a duration between 100ms and 10m (e.g. 10s)")},
      {{"authorization", "policy", "policy | subjectaccessreview"},
       Choice(MM_FIELD(authz.mode),
              std::vector<std::pair<std::string_view, Authorization>>{
                  {"policy", Authorization::kPolicy},
                  {"subjectaccessreview", Authorization::kSubjectAccessReview}})},
      {{"policy_file", "policy.yaml", "with `policy`: the rules (auth.h ParsePolicy)"},
       Path(MM_FIELD(authz.policy_file))},
      {{"objects_file", "objects.json", "objects from this file (kubectl get -o json List) ..."},
       Path(MM_FIELD(kube.objects_file))},
      {{"max_objects_bytes", "4194304", "    its size cap (1 .. 1 GiB)"},
       Integer(MM_FIELD(kube.max_objects_bytes), 1, kMaxObjectsBytesSetting)},
      {{"kubeconfig", "~/.kube/config", "... else from the Kubernetes API via a kubeconfig"},
       Path(MM_FIELD(kube.kubeconfig))},
      {{"context", "\"\"", "    (its current context unless named here)"},
       Text(MM_FIELD(kube.context))},
      {{"in_cluster", "false", "... or via the in-cluster service account"},
       Flag(MM_FIELD(kube.in_cluster))},
      {{"watch_objects", "true", "with either: list+watch caches; false: read per snapshot"},
       Flag(MM_FIELD(kube.watch_objects))},
      {{"pod_ca_file", "cluster-ca.pem", "trust for HTTPS Pods; default the system bundle"},
       Path(MM_FIELD(reads.pod_ca_file))},
      {{"max_in_flight", "32", "deployments read or queued at once (then 429)"},
       Integer(MM_FIELD(server.max_in_flight), 1, 100000)},
      {{"workers", "8", "threads reading deployments"}, Integer(MM_FIELD(server.workers), 1, 256)},
      {{"snapshot_reuse_ms", "1000", "a finished read answers requests this long after it"},
       Integer(MM_FIELD(server.snapshot_reuse_ms), 0, 60000)},
      {{"max_connections_per_address", "0", "0: none (behind kube-apiserver all comes from one)"},
       Integer(MM_FIELD(server.max_connections_per_address), 0, 100000)},
      {{"custom_metrics_api", "false",
        "true: also serve custom.metrics.k8s.io (docs/autoscaling.md; one owner per cluster)"},
       Flag(MM_FIELD(autoscaling.custom_metrics))},
      {{"metrics_reuse_ms", "5000", "    a metric call accepts a read this old (Pods read once)"},
       Integer(MM_FIELD(autoscaling.metrics_reuse_ms), 0, 60000)},
  };
}

// How deployments are read: the spec's limits, and the sample source. A mapping's settings are
// "mapping.key".
std::vector<Setting> ReadSettings() {
  return {
      {{"request_timeout", "8s", "each request's budget, from its arrival (1s .. 5m)"},
       Duration(MM_FIELD(reads.request_timeout), std::chrono::seconds(1), std::chrono::minutes(5),
                "a duration between 1s and 5m (e.g. 8s)")},
      {{"scrape.pod_limit", "64", "direct scraping: Pods read per snapshot (1 .. 100000)"},
       Integer(MM_FIELD(reads.pod_limit), 1, 100000)},
      {{"scrape.max_in_flight", "32", "fetches at once per read (1 .. 256)"},
       Integer(MM_FIELD(reads.scrape_max_in_flight), 1, 256)},
      {{"scrape.fetch_timeout", "2s", "each Pod's fetch (100ms .. 1m)"},
       Duration(MM_FIELD(reads.fetch_timeout), milliseconds(100), std::chrono::minutes(1),
                "a duration between 100ms and 1m (e.g. 2s)")},
      {{"scrape.max_body_bytes", "1048576", "decoded bytes per Pod (1 .. 1 GiB)"},
       Integer(MM_FIELD(reads.max_body_bytes), 1, kGiB)},
      {{"source", "scrape", "scrape | prometheus (a Prometheus-compatible store, below)"},
       Choice(MM_FIELD(reads.source),
              std::vector<std::pair<std::string_view, SampleSource>>{
                  {kSampleSourceScrape, SampleSource::kScrape},
                  {kSampleSourcePrometheus, SampleSource::kPrometheus}})},
      {{"prometheus.url", "https://prometheus.monitoring:9090", "the store's API root"},
       Text(MM_FIELD(reads.prometheus.url))},
      {{"prometheus.window", "2m", "the range of samples read"},
       Duration(MM_FIELD(reads.prometheus.window), milliseconds(1), kNoMax, kPositiveDuration)},
      {{"prometheus.stale_after", "90s", "a Pod whose newest sample is older is missing"},
       Duration(MM_FIELD(reads.prometheus.stale_after), milliseconds(1), kNoMax,
                kPositiveDuration)},
      {{"prometheus.settle", "0s", "read the store as of this long ago (remote write)"},
       Duration(MM_FIELD(reads.prometheus.settle), milliseconds(0), kNoMax,
                "a duration (e.g. 5s)")},
      {{"prometheus.query_timeout", "5s", "each query's timeout"},
       Duration(MM_FIELD(reads.prometheus.query_timeout), milliseconds(1), kNoMax,
                kPositiveDuration)},
      {{"prometheus.namespace_label", "namespace", "the store's label naming the namespace"},
       Text(MM_FIELD(reads.prometheus.namespace_label))},
      {{"prometheus.pod_label", "pod", "    and the Pod"},
       Text(MM_FIELD(reads.prometheus.pod_label))},
      {{"prometheus.selector", "'job=\"vllm\"'", "extra matchers, when two jobs scrape a Pod"},
       Text(MM_FIELD(reads.prometheus.selector))},
      {{"prometheus.replica_labels", "[prometheus_replica, replica, __replica__]",
        "HA copies: one replica is read"},
       List(MM_FIELD(reads.prometheus.replica_labels), "label names", true)},
      {{"prometheus.pod_limit", "1000", "Pods per snapshot (1 .. 100000)"},
       Integer(MM_FIELD(reads.prometheus.pod_limit), 1, 100000)},
      {{"prometheus.max_in_flight", "4", "queries at once; 100 Pods per query (1 .. 256)"},
       Integer(MM_FIELD(reads.prometheus.max_in_flight), 1, 256)},
      {{"prometheus.max_response_bytes", "33554432", "decoded bytes per answer (1 .. 1 GiB)"},
       Integer(MM_FIELD(reads.prometheus.max_response_bytes), 1, kGiB)},
      {{"prometheus.ca_file", "store-ca.pem", "verified TLS"},
       Path(MM_FIELD(reads.prometheus.ca_file))},
      {{"prometheus.bearer_token_file", "token", "read at start-up ..."},
       Path(MM_FIELD(reads.prometheus_bearer_token_file))},
      {{"prometheus.basic_auth_username", "reader", "    or basic authentication"},
       Text(MM_FIELD(reads.prometheus.basic_user))},
      {{"prometheus.basic_auth_password_file", "password", "    with this password"},
       Path(MM_FIELD(reads.prometheus_basic_password_file))},
  };
}

// Every setting, in the order the reference lists them.
const std::vector<Setting>& Settings() {
  static const std::vector<Setting> kSettings = [] {
    std::vector<Setting> all = ServerSettings();
    for (Setting& s : ReadSettings()) all.push_back(std::move(s));
    return all;
  }();
  return kSettings;
}

#undef MM_FIELD

const Setting* FindSetting(std::string_view key) {
  for (const Setting& s : Settings()) {
    if (s.doc.key == key) return &s;
  }
  return nullptr;
}

// `key` names a mapping of settings ("prometheus" for "prometheus.url", ...).
bool IsMapping(std::string_view key) {
  for (const Setting& s : Settings()) {
    const std::string_view k = s.doc.key;
    if (k.size() > key.size() && k.substr(0, key.size()) == key && k[key.size()] == '.') {
      return true;
    }
  }
  return false;
}

// `name` is a key of the mapping `prefix` ("" at the top).
bool ApplySetting(const std::string& prefix, const std::string& name, const Json& node,
                  const Context& ctx, ServeConfig* c) {
  const std::string key = prefix.empty() ? name : prefix + "." + name;
  if (name.find('.') != std::string::npos) {  // "prometheus.url" is a key only inside the mapping
    return ctx.Fail(fmt::format("unknown setting `{}`", key));
  }
  if (prefix.empty() && IsMapping(key)) {
    if (!node.is_object()) return ctx.Fail(fmt::format("{}: expected a mapping", key));
    for (const auto& item : node.items()) {
      if (!ApplySetting(key, item.key(), item.value(), ctx, c)) return false;
    }
    return true;
  }
  const Setting* setting = FindSetting(key);
  if (setting == nullptr) return ctx.Fail(fmt::format("unknown setting `{}`", key));
  return setting->read.parse(key, node, ctx, c);
}

// The settings that depend on each other; "" when they fit.
std::string CheckCombination(const ServeConfig& c) {
  using Authorization = ServeConfig::Authorization;
  if (std::string why = c.api.Validate(); !why.empty()) return why;
  if (c.tls.self_signed && (!c.tls.cert_file.empty() || !c.tls.key_file.empty())) {
    return "tls_self_signed makes its own certificate: remove tls_cert_file and tls_key_file";
  }
  if (!c.tls.self_signed && (c.tls.cert_file.empty() || c.tls.key_file.empty())) {
    return "tls_cert_file and tls_key_file are required (tokens never travel in the clear), or "
           "tls_self_signed: true";
  }
  if (c.authn.token_file.empty() && c.authn.client_ca_file.empty() &&
      c.authn.requestheader_ca_file.empty() && !c.authn.delegated) {
    return "no authentication: set token_file, client_ca_file, requestheader_ca_file and/or "
           "delegated_authentication";
  }
  if (c.authn.delegated &&
      (!c.authn.client_ca_file.empty() || !c.authn.requestheader_ca_file.empty())) {
    return "delegated_authentication takes the CAs from kube-system/extension-apiserver-"
           "authentication: remove client_ca_file and requestheader_ca_file";
  }
  if (c.authn.delegated && !c.UsesKubeApi()) {
    return "delegated_authentication needs kubeconfig or in_cluster: true";
  }
  if (!c.authn.requestheader_allowed_names.empty() && c.authn.requestheader_ca_file.empty()) {
    return "requestheader_allowed_names needs requestheader_ca_file";
  }
  if (!c.kube.kubeconfig.empty() && c.kube.in_cluster)
    return "kubeconfig and in_cluster: true exclude each other";
  if (c.kube.objects_file.empty() && !c.UsesKubeApi()) {
    return "no object source: set objects_file, kubeconfig or in_cluster: true";
  }
  if (c.authz.mode == Authorization::kPolicy && c.authz.policy_file.empty()) {
    return "authorization: policy needs policy_file";
  }
  if (c.authz.mode == Authorization::kSubjectAccessReview && !c.authz.policy_file.empty()) {
    return "policy_file is for authorization: policy, not subjectaccessreview";
  }
  if (c.authz.mode == Authorization::kSubjectAccessReview && !c.UsesKubeApi()) {
    return "authorization: subjectaccessreview needs kubeconfig or in_cluster: true";
  }
  if (!c.kube.context.empty() && c.kube.kubeconfig.empty()) return "context needs kubeconfig";
  if (c.reads.source == SampleSource::kPrometheus) {
    if (const std::string why = ValidatePrometheusSourceOptions(c.reads.prometheus); !why.empty()) {
      return "prometheus: " + why;
    }
    if (!c.reads.prometheus_bearer_token_file.empty() && !c.reads.prometheus.basic_user.empty()) {
      return "prometheus: bearer_token_file and basic_auth_username exclude each other";
    }
  }
  return "";
}

// Every file the configuration names is a regular file; the ones OpenSSL or a small reader takes
// are within base::kDefaultMaxFileBytes. "" when they are.
std::string CheckFiles(const ServeConfig& c) {
  const std::pair<const char*, const std::string*> files[] = {
      {"tls_cert_file", &c.tls.cert_file},
      {"tls_key_file", &c.tls.key_file},
      {"client_ca_file", &c.authn.client_ca_file},
      {"requestheader_ca_file", &c.authn.requestheader_ca_file},
      {"token_file", &c.authn.token_file},
      {"policy_file", &c.authz.policy_file},
      {"objects_file", &c.kube.objects_file},
      {"kubeconfig", &c.kube.kubeconfig},
      {"pod_ca_file", &c.reads.pod_ca_file},
      {"prometheus.ca_file", &c.reads.prometheus.ca_file},
      {"prometheus.bearer_token_file", &c.reads.prometheus_bearer_token_file},
      {"prometheus.basic_auth_password_file", &c.reads.prometheus_basic_password_file}};
  for (const auto& [key, path] : files) {
    std::error_code ignored;
    if (!path->empty() && !std::filesystem::is_regular_file(*path, ignored)) {
      // A device or FIFO named by mistake would block or never end when read.
      const bool exists = std::filesystem::exists(*path, ignored);
      return fmt::format("{}: {}: {}", key, exists ? "not a regular file" : "no such file", *path);
    }
    // Certificates and keys are read by OpenSSL, not base::ReadFile: bound them here too. The
    // objects file and the kubeconfig have caps of their own, checked when they are loaded.
    const uintmax_t size = path->empty() ? 0 : std::filesystem::file_size(*path, ignored);
    const bool own_cap = path == &c.kube.objects_file || path == &c.kube.kubeconfig;
    if (!own_cap && !ignored && size > base::kDefaultMaxFileBytes) {
      return fmt::format("{}: {}: file is {} bytes, over the {}-byte limit", key, *path, size,
                         base::kDefaultMaxFileBytes);
    }
  }
  return "";
}

}  // namespace

void ServeConfig::ApplyReadLimits(AggregatorOptions* options) const {
  options->request_timeout = reads.request_timeout;
  options->pod_limit = reads.pod_limit;
  options->max_in_flight = reads.scrape_max_in_flight;
  options->fetch_timeout = reads.fetch_timeout;
  options->max_body_bytes = reads.max_body_bytes;
}

Status ParseServeConfig(std::string_view yaml, const std::string& base_dir, ServeConfig* out) {
  std::vector<Json> docs;
  if (const Status parsed = ParseYaml(yaml, &docs); !parsed.ok()) {
    return Status::InvalidArgument("invalid YAML: " + parsed.message());
  }
  if (docs.size() > 1) {
    return Status::InvalidArgument(
        fmt::format("expected one YAML document, found {}", docs.size()));
  }
  if (docs.empty() || !docs.front().is_object()) {
    return Status::InvalidArgument("expected a YAML mapping of settings");
  }
  std::string error;
  const Context ctx{base_dir, &error};
  ServeConfig config;
  for (const auto& [key, node] : docs.front().items()) {
    if (!ApplySetting("", key, node, ctx, &config)) return Status::InvalidArgument(error);
  }
  if (std::string why = CheckCombination(config); !why.empty()) {
    return Status::InvalidArgument(std::move(why));
  }
  if (std::string why = CheckFiles(config); !why.empty()) {
    return Status::InvalidArgument(std::move(why));
  }
  *out = std::move(config);
  return Status::Ok();
}

Status LoadServeConfig(const std::string& path, ServeConfig* out, size_t max_bytes) {
  std::string text;
  if (Status read = base::ReadFile(path, &text, max_bytes); !read.ok()) return read;
  const std::string base_dir = std::filesystem::path(path).parent_path().string();
  return ParseServeConfig(text, base_dir, out).Prefixed(path + ": ");
}

Status SetServeConfigValue(std::string_view key, std::string_view text, ServeConfig* config) {
  const Setting* setting = FindSetting(key);
  if (setting == nullptr) return Status::InvalidArgument(fmt::format("unknown setting `{}`", key));
  const std::string name(key);
  const std::string no_base_dir;
  std::string error;
  if (!setting->read.parse(name, setting->read.from_text(text), Context{no_base_dir, &error},
                           config)) {
    return Status::InvalidArgument(std::move(error));
  }
  return Status::Ok();
}

const std::vector<ServeConfigKey>& ServeConfigKeys() {
  static const std::vector<ServeConfigKey> keys = [] {
    std::vector<ServeConfigKey> all;
    for (const Setting& s : Settings()) all.push_back(s.doc);
    return all;
  }();
  return keys;
}

std::string ServeConfigReference() {
  std::string out;
  std::string_view mapping;  // the mapping whose settings are being listed
  for (const ServeConfigKey& k : ServeConfigKeys()) {
    std::string_view key = k.key;
    std::string indent;
    if (const size_t dot = key.find('.'); dot != std::string_view::npos) {
      if (key.substr(0, dot) != mapping) {
        mapping = key.substr(0, dot);
        out += fmt::format("{}:\n", mapping);
      }
      key = key.substr(dot + 1);
      indent = "  ";
    } else {
      mapping = {};
    }
    const std::string line = fmt::format("{}{}: {}", indent, key, k.shown);
    out += fmt::format("{:<44} # {}\n", line, k.doc);
  }
  return out;
}

}  // namespace modelmetrics::deployment
