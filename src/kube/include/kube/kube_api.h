// A small Kubernetes API client and the ObjectSource on top of it.
//
// KubeConfig comes from a kubeconfig file (the current context, or a named one: server,
// certificate-authority / -data, token / tokenFile, client-certificate / -key (+ -data)) or from
// the in-cluster service account (KUBERNETES_SERVICE_HOST/PORT, the token and ca.crt under
// /var/run/secrets/kubernetes.io/serviceaccount). Requests go through the foundation's HttpClient:
// verified TLS, no proxy, no redirects, a per-request timeout (2 s unless given), a body cap.
//
// Paths used (real Kubernetes API paths):
//   GET  /apis/worker.gpustack.ai/v1alpha1/namespaces/{ns}/modeldeployments/{name}
//   GET  /api/v1/namespaces/{ns}/pods?labelSelector={url-encoded selector}
//   GET  /apis/apps/v1/namespaces/{ns}/replicasets/{name}
//   GET  /apis/apps/v1/namespaces/{ns}/deployments/{name}
//   POST /apis/authorization.k8s.io/v1/subjectaccessreviews
// A non-2xx answer that carries a Kubernetes Status keeps its code, reason and message; any other
// failure is a 500 InternalError / 503 ServiceUnavailable naming what failed.
//
// Thread-safety: KubeApiClient and KubeApiSource are safe for concurrent use.
#ifndef MODELMETRICS_KUBE_KUBE_API_H_
#define MODELMETRICS_KUBE_KUBE_API_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/file.h"
#include "kube/objects.h"

namespace modelmetrics::net {
class HttpClient;
}

namespace modelmetrics::deployment {

struct KubeConfig {
  std::string server;            // https://host:port
  std::string token;             // bearer token, may be empty
  std::string ca_file;           // PEM file to trust; empty with empty ca_pem: system bundle
  std::string ca_pem;            // PEM text (certificate-authority-data, decoded)
  std::string client_cert_file;  // client certificate, optional
  std::string client_key_file;
  std::string client_cert_pem;  // client-certificate-data, decoded (written to a private file)
  std::string client_key_pem;
  // A file the token is (re-)read from: the in-cluster service-account token, or a kubeconfig
  // user's tokenFile. The client re-reads it once a minute, since projected tokens rotate.
  std::string token_file;
  std::string namespace_;  // the context's namespace (in-cluster: the Pod's); may be empty
};

// `context` empty: the kubeconfig's current-context. Relative file paths in the kubeconfig are
// relative to its directory. Credentials this client cannot use (exec and auth-provider plugins,
// insecure-skip-tls-verify) are an error rather than a silent anonymous request. The file must be
// regular and at most `max_bytes` (base/file.h).
Status LoadKubeconfig(const std::string& path, const std::string& context, KubeConfig* out,
                      size_t max_bytes = base::kDefaultMaxFileBytes);
// The service account of the Pod we run in:
// https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6 bracketed), and `token`,
// `ca.crt`, `namespace` under `service_account_dir`.
inline constexpr std::string_view kServiceAccountDir =
    "/var/run/secrets/kubernetes.io/serviceaccount";
Status LoadInClusterConfig(KubeConfig* out);
Status LoadInClusterConfig(const std::string& service_account_dir, KubeConfig* out);

inline constexpr std::chrono::milliseconds kDefaultKubeRequestTimeout{2000};

// `prefix` + /namespaces/{ns}/{resource}/{name}, `ns` and `name` percent-encoded:
// NamespacePath("/apis/apps/v1", "team", "deployments", "chat").
std::string NamespacePath(std::string_view prefix, std::string_view ns, std::string_view resource,
                          std::string_view name);

class KubeApiClient {
 public:
  explicit KubeApiClient(KubeConfig config,
                         std::chrono::milliseconds request_timeout = kDefaultKubeRequestTimeout);
  ~KubeApiClient();

  // One request; `body` is sent as application/json when non-empty. On a 2xx answer returns Ok
  // and the body in `*response`; otherwise the error status (see file comment). PEM data of the
  // config is written to private temporary files (0600, in $TMPDIR or /tmp) that the destructor
  // removes; if that fails, every Request returns 500 naming why.
  // It ends by `deadline` when that is sooner than the request timeout.
  Status Request(std::string_view method, std::string_view path, std::string_view body,
                 std::string* response,
                 std::optional<std::chrono::steady_clock::time_point> deadline = std::nullopt);

  // A streamed GET (a watch): `on_line` gets each line of the body as it arrives, without its
  // newline; returning false ends the stream. Ends Ok when the server closes the body or
  // `*stop` becomes true; a line over `max_line_bytes` is a 500 naming the limit; a non-2xx
  // answer is its Status; a transport failure is 503. Nothing arriving for `idle_timeout` (not
  // even a bookmark) ends it as a failure. Blocks the calling thread (net/http_stream.h).
  Status Stream(std::string_view path, const std::function<bool(std::string_view line)>& on_line,
                const std::atomic<bool>* stop, std::chrono::milliseconds timeout,
                std::chrono::milliseconds idle_timeout, size_t max_line_bytes);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

class KubeApiSource : public ObjectSource {
 public:
  explicit KubeApiSource(KubeApiClient* client) : client_(client) {}

  Status GetModelDeployment(std::string_view ns, std::string_view name,
                            ModelDeployment* out) override;
  Status ListModelDeployments(std::string_view ns, std::vector<ModelDeployment>* out) override;
  Status ListPods(std::string_view ns, std::string_view label_selector,
                  std::vector<Pod>* out) override;
  Status GetReplicaSet(std::string_view ns, std::string_view name, ReplicaSet* out) override;
  Status GetDeployment(std::string_view ns, std::string_view name, Deployment* out) override;

 private:
  KubeApiClient* client_;
};

// Asks the API server whether `user` (with `groups`) may `verb` the `resource`/`subresource` of
// `group` in `ns`. Sets `*allowed`; a failed review is a non-Ok status (callers deny).
// `path` set: a non-resource request (nonResourceAttributes {path, verb}); else resource
// attributes. `extra` is the user's extra, sent as is.
struct AccessRequest {
  std::string user;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
  std::string verb = "get";
  std::string group = "worker.gpustack.ai";
  std::string version;
  std::string resource = "modeldeployments";
  std::string subresource = "metrics";
  std::string ns;
  std::string name;
  std::string path;
};
Status SubjectAccessReview(KubeApiClient* client, const AccessRequest& request, bool* allowed);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_KUBE_KUBE_API_H_
