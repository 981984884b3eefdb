// The Kubernetes API client, its configuration loaders and the API ObjectSource; see kube_api.h.
//
// Every request is one HttpClient transfer (2 s, verified TLS, no proxy, no redirects). PEM data
// from a kubeconfig is written to private temporary files because libcurl's OpenSSL backend takes
// certificates and keys by file name.
#include "kube/kube_api.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <span>
#include <sstream>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/base64.h"
#include "base/file.h"
#include "base/mutex.h"
#include "base/text.h"
#include "kube/yaml.h"
#include "net/http_client.h"
#include "net/http_stream.h"

namespace modelmetrics::deployment {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Slack on top of the transfer timeout for the batch deadline, so the transfer's own timeout
// (with its clearer message) fires first.
constexpr std::chrono::milliseconds kDeadlineSlack{1000};
// A Pod list of a large deployment is a few MiB at most; anything bigger is not an answer to us.
constexpr size_t kMaxResponseBytes = size_t{32} << 20;
// How long a token read from a file is used before the file is read again (client-go's period).
constexpr std::chrono::seconds kTokenRefresh{60};
// How much of a non-Status error body goes into a message.
constexpr size_t kBodySnippetBytes = 256;

std::string TrimSpace(std::string s) {
  const char* space = " \t\r\n";
  size_t first = s.find_first_not_of(space);
  if (first == std::string::npos) return "";
  size_t last = s.find_last_not_of(space);
  return s.substr(first, last - first + 1);
}

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string ResolvePath(const std::string& dir, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  return dir + "/" + path;
}

// Reads kubeconfig fields (all optional strings), naming the field in errors.
class KubeconfigReader {
 public:
  KubeconfigReader(std::string file, std::string* error) : file_(std::move(file)), error_(error) {}

  bool Fail(const std::string& what) {
    *error_ = file_ + ": " + what;
    return false;
  }

  bool String(const json& object, std::string_view key, const std::string& path, std::string* out) {
    auto it = object.find(key);
    if (it == object.end() || it->is_null()) return true;
    // A YAML plain scalar may have come out as a number or bool; a name `1` is still a name.
    if (it->is_number() || it->is_boolean()) {
      *out = it->dump();
      return true;
    }
    if (!it->is_string()) return Fail(Field(path, key) + ": expected a string");
    *out = it->get<std::string>();
    return true;
  }

  // The `field` object (cluster/user/context) of the entry named `name` in the list `list`.
  bool FindNamed(const json& root, std::string_view list, std::string_view field,
                 const std::string& name, const json** out) {
    *out = nullptr;
    auto entries = root.find(list);
    if (entries == root.end() || entries->is_null()) return true;
    if (!entries->is_array()) return Fail(std::string(list) + ": expected a list");
    for (size_t i = 0; i < entries->size(); ++i) {
      const json& entry = (*entries)[i];
      std::string path = std::string(list) + "[" + std::to_string(i) + "]";
      if (!entry.is_object()) return Fail(path + ": expected a mapping");
      std::string entry_name;
      if (!String(entry, "name", path, &entry_name)) return false;
      if (entry_name != name) continue;
      auto value = entry.find(field);
      if (value == entry.end() || value->is_null()) {
        static const json kEmpty = json::object();
        *out = &kEmpty;
        return true;
      }
      if (!value->is_object()) return Fail(Field(path, field) + ": expected a mapping");
      *out = &*value;
      return true;
    }
    return true;
  }

  bool Base64(const json& object, std::string_view key, const std::string& path, std::string* out) {
    std::string encoded;
    if (!String(object, key, path, &encoded)) return false;
    if (encoded.empty()) return true;
    if (!base::DecodeBase64(encoded, out)) {
      return Fail(Field(path, key) + ": invalid base64");
    }
    return true;
  }

 private:
  // `cluster "k": certificate-authority-data`, `contexts[0]: name`, or just the key at the top.
  static std::string Field(const std::string& path, std::string_view key) {
    return path.empty() ? std::string(key) : path + ": " + std::string(key);
  }

  std::string file_;
  std::string* error_;
};

// A Kubernetes Status from an error body, or nullopt when the body is not one.
std::optional<Status> DecodeStatus(const std::string& body, int http_status) {
  json status = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!status.is_object()) return std::nullopt;
  auto kind = status.find("kind");
  if (kind == status.end() || *kind != "Status") return std::nullopt;
  int code = http_status;
  if (auto c = status.find("code"); c != status.end() && c->is_number_integer()) {
    const int value = c->get<int>();
    if (value > 0) code = value;
  }
  // A Status never means success here: a 2xx code in a non-2xx answer is a broken server.
  if (code >= 200 && code < 300) code = http_status;
  std::string reason;
  if (auto r = status.find("reason"); r != status.end() && r->is_string()) {
    reason = r->get<std::string>();
  }
  std::string message;
  if (auto m = status.find("message"); m != status.end() && m->is_string()) {
    message = m->get<std::string>();
  }
  if (message.empty()) message = "the server responded with HTTP " + std::to_string(code);
  return Status(code, std::move(reason), std::move(message));
}

// LoadKubeconfig's reading, with KubeconfigReader's error (the reader names the place).
bool ReadKubeconfig(const std::string& path, const std::string& text, const std::string& context,
                    KubeConfig* out, std::string* error) {
  std::vector<json> docs;
  if (const Status parsed = ParseYaml(text, &docs); !parsed.ok()) {
    *error = path + ": invalid YAML: " + parsed.message();
    return false;
  }
  KubeconfigReader reader(path, error);
  if (docs.empty() || !docs.front().is_object()) return reader.Fail("not a kubeconfig mapping");
  const json& root = docs.front();

  std::string context_name = context;
  if (context_name.empty() && !reader.String(root, "current-context", "", &context_name)) {
    return false;
  }
  if (context_name.empty()) return reader.Fail("current-context is not set");
  const json* ctx = nullptr;
  if (!reader.FindNamed(root, "contexts", "context", context_name, &ctx)) return false;
  if (ctx == nullptr) return reader.Fail("context \"" + context_name + "\" does not exist");

  const std::string ctx_path = "context \"" + context_name + "\"";
  std::string cluster_name;
  std::string user_name;
  KubeConfig config;
  if (!reader.String(*ctx, "cluster", ctx_path, &cluster_name) ||
      !reader.String(*ctx, "user", ctx_path, &user_name) ||
      !reader.String(*ctx, "namespace", ctx_path, &config.namespace_)) {
    return false;
  }
  const std::string dir = DirectoryOf(path);

  const json* cluster = nullptr;
  if (!reader.FindNamed(root, "clusters", "cluster", cluster_name, &cluster)) return false;
  if (cluster == nullptr) {
    return reader.Fail("cluster \"" + cluster_name + "\" of " + ctx_path + " does not exist");
  }
  const std::string cluster_path = "cluster \"" + cluster_name + "\"";
  if (!reader.String(*cluster, "server", cluster_path, &config.server) ||
      !reader.String(*cluster, "certificate-authority", cluster_path, &config.ca_file) ||
      !reader.Base64(*cluster, "certificate-authority-data", cluster_path, &config.ca_pem)) {
    return false;
  }
  if (config.server.empty()) return reader.Fail(cluster_path + " has no server");
  while (config.server.size() > 1 && config.server.back() == '/') config.server.pop_back();
  if (auto skip = cluster->find("insecure-skip-tls-verify");
      skip != cluster->end() && *skip == true) {
    return reader.Fail(cluster_path +
                       " sets insecure-skip-tls-verify, which this client refuses: give it "
                       "certificate-authority or certificate-authority-data instead");
  }
  config.ca_file = ResolvePath(dir, config.ca_file);
  // As in client-go, inline data wins over a file name.
  if (!config.ca_pem.empty()) config.ca_file.clear();

  if (!user_name.empty()) {
    const json* user = nullptr;
    if (!reader.FindNamed(root, "users", "user", user_name, &user)) return false;
    if (user == nullptr) {
      return reader.Fail("user \"" + user_name + "\" of " + ctx_path + " does not exist");
    }
    const std::string user_path = "user \"" + user_name + "\"";
    for (const char* unsupported : {"exec", "auth-provider", "username", "password"}) {
      if (auto it = user->find(unsupported); it != user->end() && !it->is_null()) {
        return reader.Fail(user_path + " uses `" + unsupported +
                           "`, which this client does not support: use a token, tokenFile or "
                           "client certificate");
      }
    }
    if (!reader.String(*user, "token", user_path, &config.token) ||
        !reader.String(*user, "tokenFile", user_path, &config.token_file) ||
        !reader.String(*user, "client-certificate", user_path, &config.client_cert_file) ||
        !reader.String(*user, "client-key", user_path, &config.client_key_file) ||
        !reader.Base64(*user, "client-certificate-data", user_path, &config.client_cert_pem) ||
        !reader.Base64(*user, "client-key-data", user_path, &config.client_key_pem)) {
      return false;
    }
    config.token_file = ResolvePath(dir, config.token_file);
    config.client_cert_file = ResolvePath(dir, config.client_cert_file);
    config.client_key_file = ResolvePath(dir, config.client_key_file);
    if (!config.client_cert_pem.empty()) config.client_cert_file.clear();
    if (!config.client_key_pem.empty()) config.client_key_file.clear();
    if (!config.token_file.empty()) {
      // Read now, so a bad path fails at start-up; the client re-reads it later.
      std::string token;
      if (const Status read = base::ReadFile(config.token_file, &token); !read.ok()) {
        return reader.Fail(user_path + " tokenFile: " + read.message());
      }
      config.token = TrimSpace(std::move(token));
    }
  }
  *out = std::move(config);
  return true;
}

}  // namespace

Status LoadKubeconfig(const std::string& path, const std::string& context, KubeConfig* out,
                      size_t max_bytes) {
  std::string text;
  if (Status read = base::ReadFile(path, &text, max_bytes); !read.ok()) return read;
  std::string error;
  if (!ReadKubeconfig(path, text, context, out, &error)) return Status::InvalidArgument(error);
  return Status::Ok();
}

Status LoadInClusterConfig(KubeConfig* out) {
  return LoadInClusterConfig(std::string(kServiceAccountDir), out);
}

Status LoadInClusterConfig(const std::string& service_account_dir, KubeConfig* out) {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || host[0] == '\0' || port == nullptr || port[0] == '\0') {
    return Status::InvalidArgument(
        "unable to load in-cluster configuration, KUBERNETES_SERVICE_HOST and "
        "KUBERNETES_SERVICE_PORT must be defined");
  }
  KubeConfig config;
  std::string host_part = host;
  if (host_part.find(':') != std::string::npos) host_part = "[" + host_part + "]";  // IPv6
  config.server = "https://" + host_part + ":" + port;
  config.token_file = service_account_dir + "/token";
  std::string token;
  if (Status read = base::ReadFile(config.token_file, &token); !read.ok()) {
    return read.Prefixed("in-cluster service account token: ");
  }
  config.token = TrimSpace(std::move(token));
  config.ca_file = service_account_dir + "/ca.crt";
  if (access(config.ca_file.c_str(), R_OK) != 0) {
    return Status::InvalidArgument("in-cluster CA " + config.ca_file + ": " + std::strerror(errno));
  }
  std::string ns;
  if (base::ReadFile(service_account_dir + "/namespace", &ns).ok()) {
    config.namespace_ = TrimSpace(std::move(ns));
  }
  *out = std::move(config);
  return Status::Ok();
}

struct KubeApiClient::Impl {
  Impl(KubeConfig config, std::chrono::milliseconds request_timeout);
  ~Impl();

  std::string Token();

  KubeConfig config;
  std::chrono::milliseconds request_timeout;
  std::string setup_error;              // non-empty: every request fails with it
  std::vector<std::string> temp_files;  // removed in the destructor
  net::ClientOptions files;             // the CA and client certificate files, for streams
  std::unique_ptr<net::HttpClient> http;

  base::Mutex token_mu;
  std::string token GUARDED_BY(token_mu);
  std::optional<Clock::time_point> token_read GUARDED_BY(token_mu);  // empty: read it now
};

KubeApiClient::Impl::Impl(KubeConfig cfg, std::chrono::milliseconds timeout)
    : config(std::move(cfg)), request_timeout(timeout), token(config.token) {
  // With a token from LoadKubeconfig/LoadInClusterConfig the file was just read; otherwise read
  // it on the first request.
  if (!token.empty()) token_read = Clock::now();

  net::ClientOptions options;
  options.max_in_flight = 8;
  options.fetch_timeout = request_timeout;
  options.max_body_bytes = kMaxResponseBytes;
  options.ca_file = config.ca_file;
  options.client_cert_file = config.client_cert_file;
  options.client_key_file = config.client_key_file;
  auto to_file = [&](const std::string& pem, const char* what, std::string* file) {
    if (pem.empty() || !setup_error.empty()) return;
    std::string path;
    const Status written = base::WritePrivateTempFile("modelmetrics-kube", pem, &path);
    if (!path.empty()) temp_files.push_back(path);
    if (written.ok()) {
      *file = path;
    } else {
      setup_error = std::string(what) + ": " + written.message();
    }
  };
  to_file(config.ca_pem, "certificate-authority-data", &options.ca_file);
  to_file(config.client_cert_pem, "client-certificate-data", &options.client_cert_file);
  to_file(config.client_key_pem, "client-key-data", &options.client_key_file);
  if (config.server.empty() && setup_error.empty()) setup_error = "no Kubernetes API server set";
  if (!setup_error.empty()) return;
  files = options;
  try {
    http = std::make_unique<net::HttpClient>(std::move(options));
  } catch (const std::exception& e) {
    setup_error = e.what();
  }
}

KubeApiClient::Impl::~Impl() {
  http.reset();  // no transfer may still read a certificate file
  for (const std::string& file : temp_files) unlink(file.c_str());
}

std::string KubeApiClient::Impl::Token() {
  base::MutexLock lock(&token_mu);
  if (!config.token_file.empty() && (!token_read || Clock::now() - *token_read >= kTokenRefresh)) {
    std::string fresh;
    // A failed read keeps the last token: a rotation in progress should not log us out.
    if (base::ReadFile(config.token_file, &fresh).ok()) token = TrimSpace(std::move(fresh));
    token_read = Clock::now();
  }
  return token;
}

KubeApiClient::KubeApiClient(KubeConfig config, std::chrono::milliseconds request_timeout)
    : impl_(std::make_unique<Impl>(std::move(config), request_timeout)) {}

KubeApiClient::~KubeApiClient() = default;

Status KubeApiClient::Stream(std::string_view path,
                             const std::function<bool(std::string_view line)>& on_line,
                             const std::atomic<bool>* stop, std::chrono::milliseconds timeout,
                             std::chrono::milliseconds idle_timeout, size_t max_line_bytes) {
  if (!impl_->setup_error.empty()) return Status::Internal(impl_->setup_error);
  net::StreamOptions options;
  options.url = impl_->config.server + std::string(path);
  options.headers.emplace_back("Accept", "application/json");
  if (std::string token = impl_->Token(); !token.empty()) {
    options.headers.emplace_back("Authorization", "Bearer " + token);
  }
  options.ca_file = impl_->files.ca_file;
  options.client_cert_file = impl_->files.client_cert_file;
  options.client_key_file = impl_->files.client_key_file;
  options.timeout = timeout;
  options.idle_timeout = idle_timeout;
  std::string pending;
  bool too_long = false;
  const auto on_data = [&](std::string_view data) {
    while (!data.empty()) {
      const size_t newline = data.find('\n');
      pending.append(data.substr(0, newline));
      if (pending.size() > max_line_bytes) {
        too_long = true;
        return false;
      }
      if (newline == std::string_view::npos) return true;
      data.remove_prefix(newline + 1);
      if (!pending.empty() && !on_line(pending)) return false;
      pending.clear();
    }
    return true;
  };
  const net::StreamResult result = net::Stream(options, on_data, stop);
  const std::string what = "GET " + options.url;
  if (too_long) {
    return Status::Internal(
        fmt::format("{}: a line of the stream is over {} bytes", what, max_line_bytes));
  }
  if (result.stopped || result.completed) return Status::Ok();
  if (result.status >= 300) {
    if (std::optional<Status> status = DecodeStatus(result.error_body, result.status)) {
      return *status;
    }
    return {result.status, "", what + ": HTTP " + std::to_string(result.status)};
  }
  return Status::Unavailable(what + ": " + result.error);
}

Status KubeApiClient::Request(std::string_view method, std::string_view path, std::string_view body,
                              std::string* response, std::optional<Clock::time_point> deadline) {
  response->clear();
  if (!impl_->setup_error.empty()) return Status::Internal(impl_->setup_error);

  net::FetchRequest request;
  request.url = impl_->config.server + std::string(path);
  request.method = std::string(method);
  request.body = std::string(body);
  request.headers.emplace_back("Accept", "application/json");
  if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
  if (std::string token = impl_->Token(); !token.empty()) {
    request.headers.emplace_back("Authorization", "Bearer " + token);
  }
  const std::string what = request.method + " " + request.url;

  Clock::time_point until = Clock::now() + impl_->request_timeout + kDeadlineSlack;
  if (deadline) until = std::min(until, *deadline);
  std::vector<net::FetchResult> results =
      impl_->http->FetchAll(std::span<const net::FetchRequest>(&request, 1), until);
  net::FetchResult& result = results.at(0);
  if (result.ok()) {
    *response = std::move(result.body);
    return Status::Ok();
  }
  if (result.error == net::FetchError::kHttpStatus) {
    if (std::optional<Status> status = DecodeStatus(result.body, result.status)) {
      return *status;
    }
    std::string message = what + ": HTTP " + std::to_string(result.status);
    if (!result.body.empty()) {
      message += ": " + result.body.substr(0, kBodySnippetBytes);
      while (!message.empty() && (message.back() == '\n' || message.back() == '\r')) {
        message.pop_back();
      }
    }
    if (result.status == 502 || result.status == 503 || result.status == 504) {
      return Status::Unavailable(std::move(message));
    }
    return Status::Internal(std::move(message));
  }
  std::string message =
      what + ": " + result.message + " (" + std::string(net::FetchErrorName(result.error)) + ")";
  switch (result.error) {
    case net::FetchError::kTimeout:
    case net::FetchError::kDeadline:
    case net::FetchError::kConnectionRefused:
    case net::FetchError::kResolve:
    case net::FetchError::kProtocol:
      return Status::Unavailable(std::move(message));
    default:  // TLS, a bad URL, an oversized answer: not going to get better by itself
      return Status::Internal(std::move(message));
  }
}

namespace {

// GETs `path` and parses the answer as a JSON object.
Status GetJson(KubeApiClient* client, const std::string& path, std::string_view what, json* out) {
  std::string body;
  Status status = client->Request("GET", path, "", &body);
  if (!status.ok()) return status;
  *out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!out->is_object()) {
    return Status::Internal("decode " + std::string(what) + ": the answer is not a JSON object");
  }
  return Status::Ok();
}

template <class T>
Status GetObject(KubeApiClient* client, const std::string& path, std::string_view kind,
                 std::string_view ns, std::string_view name, Status (*decode)(const json&, T*),
                 T* out) {
  const std::string what = std::string(kind) + " " + std::string(ns) + "/" + std::string(name);
  json object;
  Status status = GetJson(client, path, what, &object);
  if (!status.ok()) return status;
  if (const Status decoded = decode(object, out); !decoded.ok()) {
    return Status::Internal("decode " + what + ": " + decoded.message());
  }
  return Status::Ok();
}

}  // namespace

std::string NamespacePath(std::string_view prefix, std::string_view ns, std::string_view resource,
                          std::string_view name) {
  return std::string(prefix) + "/namespaces/" + base::PercentEncode(ns) + "/" +
         std::string(resource) + "/" + base::PercentEncode(name);
}

Status KubeApiSource::GetModelDeployment(std::string_view ns, std::string_view name,
                                         ModelDeployment* out) {
  return GetObject(client_,
                   NamespacePath("/apis/worker.gpustack.ai/v1alpha1", ns, "modeldeployments", name),
                   "ModelDeployment", ns, name, &DecodeModelDeployment, out);
}

Status KubeApiSource::ListModelDeployments(std::string_view ns, std::vector<ModelDeployment>* out) {
  const std::string path = ns.empty() ? "/apis/worker.gpustack.ai/v1alpha1/modeldeployments"
                                      : "/apis/worker.gpustack.ai/v1alpha1/namespaces/" +
                                            base::PercentEncode(ns) + "/modeldeployments";
  json list;
  Status status = GetJson(client_, path, "ModelDeploymentList", &list);
  if (!status.ok()) return status;
  out->clear();
  auto items = list.find("items");
  if (items == list.end() || items->is_null()) return Status::Ok();
  if (!items->is_array()) {
    return Status::Internal("decode ModelDeploymentList: items: expected an array");
  }
  for (size_t i = 0; i < items->size(); ++i) {
    ModelDeployment md;
    if (const Status decoded = DecodeModelDeployment((*items)[i], &md); !decoded.ok()) {
      return Status::Internal("decode ModelDeploymentList: items[" + std::to_string(i) +
                              "]: " + decoded.message());
    }
    out->push_back(std::move(md));
  }
  return Status::Ok();
}

Status KubeApiSource::ListPods(std::string_view ns, std::string_view label_selector,
                               std::vector<Pod>* out) {
  std::string path =
      ns.empty() ? "/api/v1/pods" : "/api/v1/namespaces/" + base::PercentEncode(ns) + "/pods";
  if (!label_selector.empty()) path += "?labelSelector=" + base::PercentEncode(label_selector);
  json list;
  Status status = GetJson(client_, path, "PodList", &list);
  if (!status.ok()) return status;
  out->clear();
  auto items = list.find("items");
  if (items == list.end() || items->is_null()) return Status::Ok();
  if (!items->is_array()) return Status::Internal("decode PodList: items: expected an array");
  for (size_t i = 0; i < items->size(); ++i) {
    Pod pod;
    if (const Status decoded = DecodePod((*items)[i], &pod); !decoded.ok()) {
      std::string label = "items[" + std::to_string(i) + "]";
      const json& item = (*items)[i];
      if (item.is_object() && item.contains("metadata") && item["metadata"].is_object() &&
          item["metadata"].contains("name") && item["metadata"]["name"].is_string()) {
        label += " (Pod " + item["metadata"]["name"].get<std::string>() + ")";
      }
      return Status::Internal("decode PodList: " + label + ": " + decoded.message());
    }
    out->push_back(std::move(pod));
  }
  return Status::Ok();
}

Status KubeApiSource::GetReplicaSet(std::string_view ns, std::string_view name, ReplicaSet* out) {
  return GetObject(client_, NamespacePath("/apis/apps/v1", ns, "replicasets", name), "ReplicaSet",
                   ns, name, &DecodeReplicaSet, out);
}

Status KubeApiSource::GetDeployment(std::string_view ns, std::string_view name, Deployment* out) {
  return GetObject(client_, NamespacePath("/apis/apps/v1", ns, "deployments", name), "Deployment",
                   ns, name, &DecodeDeployment, out);
}

Status SubjectAccessReview(KubeApiClient* client, const AccessRequest& request, bool* allowed) {
  *allowed = false;
  // Empty fields are left out, as Go's omitempty would.
  json attributes = json::object();
  auto put = [&](const char* key, const std::string& value) {
    if (!value.empty()) attributes[key] = value;
  };
  json spec = {{"user", request.user}};
  if (request.path.empty()) {
    put("namespace", request.ns);
    put("verb", request.verb);
    put("group", request.group);
    put("version", request.version);
    put("resource", request.resource);
    put("subresource", request.subresource);
    put("name", request.name);
    spec["resourceAttributes"] = std::move(attributes);
  } else {
    put("path", request.path);
    put("verb", request.verb);
    spec["nonResourceAttributes"] = std::move(attributes);
  }
  if (!request.uid.empty()) spec["uid"] = request.uid;
  if (!request.groups.empty()) spec["groups"] = request.groups;
  if (!request.extra.empty()) spec["extra"] = request.extra;
  json review = {{"apiVersion", "authorization.k8s.io/v1"},
                 {"kind", "SubjectAccessReview"},
                 {"spec", std::move(spec)}};

  std::string body;
  Status status = client->Request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
                                  review.dump(), &body);
  if (!status.ok()) return status;
  json answer = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (!answer.is_object()) {
    return Status::Internal("decode SubjectAccessReview: the answer is not a JSON object");
  }
  auto review_status = answer.find("status");
  if (review_status == answer.end() || review_status->is_null()) return Status::Ok();
  if (!review_status->is_object()) {
    return Status::Internal("decode SubjectAccessReview: status: expected an object");
  }
  auto allowed_field = review_status->find("allowed");
  if (allowed_field != review_status->end() && !allowed_field->is_null()) {
    if (!allowed_field->is_boolean()) {
      return Status::Internal("decode SubjectAccessReview: status.allowed: expected a boolean");
    }
    *allowed = allowed_field->get<bool>();
  }
  // `denied` is advisory and implies allowed=false; an allowed answer never sets it.
  return Status::Ok();
}

}  // namespace modelmetrics::deployment
