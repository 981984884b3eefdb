// Delegated authentication, as k8s.io/apiserver does it for an aggregated API server: the trust
// kube-apiserver publishes in the `kube-system/extension-apiserver-authentication` ConfigMap, and
// bearer tokens checked by a TokenReview.
//
// The ConfigMap (kube-apiserver writes it; the server reads it with the
// extension-apiserver-authentication-reader Role):
//   client-ca-file                      PEM: client certificates (user = CN, groups = O)
//   requestheader-client-ca-file        PEM: the front proxy's certificates
//   requestheader-allowed-names         JSON list of CNs the front proxy may have ([]: any)
//   requestheader-username-headers      JSON list, e.g. ["X-Remote-User"]
//   requestheader-group-headers         JSON list, e.g. ["X-Remote-Group"]
//   requestheader-extra-headers-prefix  JSON list, e.g. ["X-Remote-Extra-"]
// (an absent or empty value is unset; requestheader-uid-headers is read and ignored).
// AuthenticationConfigWatcher reads it at Start() and every `refresh` after (k8s.io/apiserver
// re-reads once a minute besides its informer; 10 s here), so a rotated CA or a changed name list
// applies to the next connection without a restart. A ConfigMap that disappears (404) clears the
// trust: certificates then authenticate nobody (fail closed, as Kubernetes). A read that fails
// otherwise, or a ConfigMap that does not decode, keeps the last good trust and says why in
// status(). Until the first good read, Ready() says why not (a readiness check).
//
// TokenReviewAuthenticator posts `authentication.k8s.io/v1` TokenReviews for bearer tokens and
// caches each answer (authenticated or not) for `ttl` (10 s, the apiserver library's default) in
// a bounded map keyed by the token's SHA-256. A failed review (kube-apiserver unreachable, an
// error) authenticates nobody and is remembered for `failure_ttl` (1 s), as k8s.io/apiserver's
// token cache can remember errors, so a burst of one token is not a burst of reviews; requests
// for a token whose review is under way wait for that review instead of starting another (one
// flight per token, as the library's singleflight group). It blocks on the network: the server
// calls authenticators off its IO threads.
//
// Thread-safety: all classes here are safe for concurrent use.
#ifndef MODELMETRICS_APISERVER_DELEGATED_AUTH_H_
#define MODELMETRICS_APISERVER_DELEGATED_AUTH_H_

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "apiserver/auth.h"
#include "base/mutex.h"
#include "kube/kube_api.h"
#include "net/http_server.h"

namespace modelmetrics::deployment {

inline constexpr std::string_view kAuthenticationConfigMapPath =
    "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication";

struct AuthenticationConfig {
  std::string client_ca_pem;
  std::string requestheader_ca_pem;
  RequestHeaderOptions request_header;
};

// Decodes the ConfigMap object (JSON). Errors name the key: `requestheader-allowed-names: expected
// a JSON list of strings`. A CA value must hold at least one PEM certificate.
Status ParseAuthenticationConfigMap(std::string_view json, AuthenticationConfig* out);

class AuthenticationConfigWatcher : public net::ClientCaSource {
 public:
  // `fetch` reads the ConfigMap's JSON (tests inject one); see the other constructor.
  using Fetch = std::function<Status(std::string* json)>;
  AuthenticationConfigWatcher(Fetch fetch, std::chrono::milliseconds refresh);
  // Reads through `client` (not owned; must outlive the watcher).
  AuthenticationConfigWatcher(KubeApiClient* client, std::chrono::milliseconds refresh);
  ~AuthenticationConfigWatcher() override;  // Stop()s

  // Reads once now, then every `refresh` on a thread of its own. Once only.
  void Start();
  void Stop();

  std::shared_ptr<const Bundles> Current() const override;
  // The trust now (never null: empty before the first read).
  std::shared_ptr<const AuthenticationConfig> config() const;
  // "" once a read succeeded; else why not (for /readyz).
  std::string Ready() const;
  // The last read's problem, or "" when it was good.
  std::string status() const;
  // Reads now (what the thread does every `refresh`).
  void RefreshNow();

 private:
  Fetch fetch_;
  std::chrono::milliseconds refresh_;
  mutable base::Mutex mu_;
  std::shared_ptr<const AuthenticationConfig> config_ GUARDED_BY(mu_);
  std::shared_ptr<const Bundles> bundles_ GUARDED_BY(mu_);
  bool loaded_ GUARDED_BY(mu_) = false;
  std::string status_ GUARDED_BY(mu_) = "not read yet";
  bool stopping_ GUARDED_BY(mu_) = false;
  std::condition_variable cv_;
  std::thread thread_;
};

// The front proxy as the ConfigMap describes it now (RequestHeaderAuthenticator, re-read per
// request).
class DelegatedRequestHeaderAuthenticator : public Authenticator {
 public:
  explicit DelegatedRequestHeaderAuthenticator(
      std::shared_ptr<const AuthenticationConfigWatcher> watcher)
      : watcher_(std::move(watcher)) {}
  bool Authenticate(const net::HttpRequest& request, UserInfo* user) const override;

 private:
  std::shared_ptr<const AuthenticationConfigWatcher> watcher_;
};

class TokenReviewAuthenticator : public Authenticator {
 public:
  // Answers one review: sets `*authenticated` and `*user`; a non-Ok status is a failed review.
  using Review = std::function<Status(std::string_view token, bool* authenticated, UserInfo* user)>;
  struct Options {
    std::chrono::milliseconds ttl{10000};
    std::chrono::milliseconds failure_ttl{1000};
    size_t max_cached = 8192;  // the cache is emptied when it would grow past this
    std::function<void(bool hit)> on_cache;
  };
  TokenReviewAuthenticator(Review review, Options options);
  // Reviews through `client` (not owned; must outlive the authenticator).
  TokenReviewAuthenticator(KubeApiClient* client, Options options);

  bool Authenticate(const net::HttpRequest& request, UserInfo* user) const override;
  // No bearer token: false; a token whose answer is cached: that answer; else nullopt.
  std::optional<bool> AuthenticateLocally(const net::HttpRequest& request,
                                          UserInfo* user) const override;

 private:
  struct Cached {
    bool authenticated = false;
    UserInfo user;
    std::chrono::steady_clock::time_point expires;
  };
  // The answer, under mu_, once `done`.
  struct Flight {
    bool done = false;
    Cached answer;
  };
  Review review_;
  Options options_;
  mutable base::Mutex mu_;
  mutable std::condition_variable landed_;  // a flight is done
  mutable std::map<std::string, Cached, std::less<>> cache_ GUARDED_BY(mu_);
  mutable std::map<std::string, std::shared_ptr<Flight>, std::less<>> flights_ GUARDED_BY(mu_);
};

// POST /apis/authentication.k8s.io/v1/tokenreviews for `token`: `*authenticated` and `*user`
// (username, uid, groups, extra) from its status. A status.error with authenticated false is
// a failed review (non-Ok).
Status TokenReview(KubeApiClient* client, std::string_view token, bool* authenticated,
                   UserInfo* user);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_DELEGATED_AUTH_H_
