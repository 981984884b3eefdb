// Authentication and authorisation for the aggregated API server, after Kubernetes' own.
//
// Authentication (Authenticator) turns a request into a user or fails; there is no anonymous
// user. Three methods, tried in Kubernetes' order by UnionAuthenticator (the first that succeeds
// wins; a failed one does not stop the next):
//   1. front proxy (RequestHeaderAuthenticator): only a client certificate verified by the
//      request-header CA whose CN is allowed (an empty list allows any CN signed by that CA) may
//      name the user in X-Remote-User and its groups in X-Remote-Group (each header line is one
//      group). From anyone else these headers are ignored.
//   2. client certificate (ClientCertAuthenticator): a certificate verified by the client CA;
//      user = subject CN, groups = subject O's.
//   3. bearer token (TokenFileAuthenticator): Kubernetes' static token file, CSV lines
//      `token,user,uid[,"group1,group2"]`.
// Every authenticated user also gets the group `system:authenticated`, as in Kubernetes.
//
// Authorisation (Authorizer) decides one resource request: allow, deny (with an optional reason)
// or error (the decision could not be made: the server answers 500 and does not serve).
//   - PolicyAuthorizer: a small RBAC-style YAML policy file (format at ParsePolicy).
//   - SubjectAccessReviewAuthorizer: asks the Kubernetes API (kube_api.h) and caches answers
//     briefly, like Kubernetes' webhook authoriser.
//
// Thread-safety: every Authenticator and Authorizer here is immutable after construction (the
// review cache is guarded by a mutex) and safe for concurrent calls.
#ifndef MODELMETRICS_APISERVER_AUTH_H_
#define MODELMETRICS_APISERVER_AUTH_H_

#include <chrono>
#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/mutex.h"
#include "kube/kube_api.h"
#include "kube/objects.h"
#include "net/http_server.h"

namespace modelmetrics::deployment {

inline constexpr std::string_view kGroupAuthenticated = "system:authenticated";

struct UserInfo {
  std::string name;
  std::string uid;
  std::vector<std::string> groups;
  // Kubernetes' user extra (e.g. `authentication.kubernetes.io/credential-id`): from the front
  // proxy's X-Remote-Extra-* headers or a TokenReview; passed on in SubjectAccessReviews.
  std::map<std::string, std::vector<std::string>> extra;

  bool operator==(const UserInfo&) const = default;
};

class Authenticator {
 public:
  virtual ~Authenticator() = default;
  // True and `*user` when the request proves who sent it; false leaves `*user` unspecified.
  virtual bool Authenticate(const net::HttpRequest& request, UserInfo* user) const = 0;
  // Authenticate's answer when it can be given without asking another server (a TokenReview
  // not in the cache); nullopt when it cannot. The server answers these requests without
  // queueing them behind reviews. Authenticators that ask nobody: Authenticate itself.
  virtual std::optional<bool> AuthenticateLocally(const net::HttpRequest& request,
                                                  UserInfo* user) const {
    return Authenticate(request, user);
  }
};

// The bearer token of `Authorization: Bearer <token>[ anything]` (scheme in any case), as
// Kubernetes reads it; empty when there is none.
std::string_view BearerToken(const net::HttpRequest& request);

// Kubernetes' `--token-auth-file`. Parse errors name the line: `line 3: expected at least 3
// columns (token, user name, user uid), found 2`. Empty lines are skipped, so are lines with an
// empty token; a repeated token keeps its last line. Empty group names are dropped.
class TokenFileAuthenticator : public Authenticator {
 public:
  static Status Parse(std::string_view csv, std::unique_ptr<TokenFileAuthenticator>* out);
  // As Parse; errors are prefixed with the path.
  static Status Load(const std::string& path, std::unique_ptr<TokenFileAuthenticator>* out);

  bool Authenticate(const net::HttpRequest& request, UserInfo* user) const override;
  size_t size() const { return users_by_token_.size(); }

 private:
  std::map<std::string, UserInfo, std::less<>> users_by_token_;  // by the token's SHA-256
};

// A client certificate verified by the client CA (TlsPeer::verified_by_client_ca) with a
// non-empty CN. Certificates verified only by the request-header CA do not count.
class ClientCertAuthenticator : public Authenticator {
 public:
  bool Authenticate(const net::HttpRequest& request, UserInfo* user) const override;
};

struct RequestHeaderOptions {
  // CNs a request-header CA certificate may carry to be trusted; empty: any.
  std::vector<std::string> allowed_names;
  // The first of these headers with a non-empty (trimmed) value names the user.
  std::vector<std::string> username_headers = {"X-Remote-User"};
  // Every non-empty value of these headers is a group, in arrival order.
  std::vector<std::string> group_headers = {"X-Remote-Group"};
  // A header starting with one of these (any case) is an extra: its key is the rest, lower-cased
  // and percent-decoded (kept lower-cased as sent when it does not decode), as k8s.io/apiserver
  // reads them; each header line is one value.
  std::vector<std::string> extra_header_prefixes = {"X-Remote-Extra-"};
};

class RequestHeaderAuthenticator : public Authenticator {
 public:
  explicit RequestHeaderAuthenticator(RequestHeaderOptions options)
      : options_(std::move(options)) {}
  bool Authenticate(const net::HttpRequest& request, UserInfo* user) const override;

 private:
  RequestHeaderOptions options_;
};

// Tries each authenticator in order; the first success wins and gains `system:authenticated`.
class UnionAuthenticator : public Authenticator {
 public:
  void Add(std::unique_ptr<Authenticator> authenticator);
  bool empty() const { return authenticators_.empty(); }
  bool Authenticate(const net::HttpRequest& request, UserInfo* user) const override;
  // In order, as Authenticate: nullopt as soon as one member would have to ask another server.
  std::optional<bool> AuthenticateLocally(const net::HttpRequest& request,
                                          UserInfo* user) const override;

 private:
  std::vector<std::unique_ptr<Authenticator>> authenticators_;
};

// What is being asked: `verb` on `resource`/`subresource` of `api_group`/`api_version`, object
// `name` in `ns`; or, when `path` is set, `verb` on that non-resource path (`/metrics`,
// `/openapi/v2`, `/apis`), where the resource fields are unused.
struct AuthorizationRequest {
  UserInfo user;
  std::string verb = "get";
  std::string api_group = "worker.gpustack.ai";
  std::string api_version = "v1";
  std::string resource = "modeldeployments";
  std::string subresource = "metrics";
  std::string ns;
  std::string name;
  std::string path;

  bool non_resource() const { return !path.empty(); }
};

struct AuthorizationDecision {
  bool allowed = false;
  std::string reason;  // why, when the authoriser says; appended to the 403 message
  Status error;        // not ok: no decision could be made (the request is not served)

  static AuthorizationDecision Allow() { return {true, "", {}}; }
  static AuthorizationDecision Deny(std::string reason = "") {
    return {false, std::move(reason), {}};
  }
};

class Authorizer {
 public:
  virtual ~Authorizer() = default;
  virtual AuthorizationDecision Authorize(const AuthorizationRequest& request) const = 0;
  // The decision when it needs no other server (a policy, a cached answer); nullopt when
  // Authorize() would have to ask one. The API server decides such requests at once and sends
  // the rest to its review pool, so they never wait behind a slow review.
  virtual std::optional<AuthorizationDecision> AuthorizeLocally(
      const AuthorizationRequest& /*request*/) const {
    return std::nullopt;
  }
};

// One rule of a policy file: it allows a request when the user is in `users` or one of the
// user's groups is in `groups`, and the namespace, verb, resource (`resource/subresource`), API
// group and name each match. "*" matches anything in every list; a resource `*/metrics`
// matches the metrics subresource of any resource. Empty `api_groups` or `names` match any.
// A rule with `non_resource_urls` matches non-resource requests only: the path equals one, or
// starts with one that ends in `*` (RBAC's nonResourceURLs).
struct PolicyRule {
  std::vector<std::string> users;
  std::vector<std::string> groups;
  std::vector<std::string> namespaces;
  std::vector<std::string> verbs;
  std::vector<std::string> resources;
  std::vector<std::string> api_groups;
  std::vector<std::string> names;
  std::vector<std::string> non_resource_urls;

  bool Matches(const AuthorizationRequest& request) const;
};

// Parses a policy file:
//   rules:
//     - users: [alice]            # and/or groups: [team-readers]; at least one of the two
//       namespaces: ["team"]      # "*" for any
//       verbs: [get]
//       resources: ["modeldeployments/metrics"]
//       apiGroups: ["worker.gpustack.ai"]   # optional
//       names: ["chat"]                     # optional
//     - groups: [monitoring]
//       nonResourceURLs: ["/metrics"]       # instead of namespaces and resources
//       verbs: [get]
// Each list may also be a single string. Unknown keys, a missing required list, or a value that is
// not a string list are errors naming the place, e.g. `rules[1].verbs: expected a list of strings`.
// `rules: []` is valid and denies everything.
Status ParsePolicy(std::string_view yaml, std::vector<PolicyRule>* rules);

// Allows a request when any rule matches; denies otherwise (no reason given, like RBAC).
// Discovery and the API's documents (`/apis`, `/apis/*`, `/openapi/*`, `/version`) are allowed to
// every authenticated user without a rule, as Kubernetes' default system:discovery binding
// does; `/metrics` needs a rule.
class PolicyAuthorizer : public Authorizer {
 public:
  explicit PolicyAuthorizer(std::vector<PolicyRule> rules) : rules_(std::move(rules)) {}
  // Reads and parses `path`; errors start with "<path>: ".
  static Status Load(const std::string& path, std::unique_ptr<PolicyAuthorizer>* out);

  AuthorizationDecision Authorize(const AuthorizationRequest& request) const override;
  std::optional<AuthorizationDecision> AuthorizeLocally(
      const AuthorizationRequest& request) const override {
    return Authorize(request);
  }
  const std::vector<PolicyRule>& rules() const { return rules_; }

 private:
  std::vector<PolicyRule> rules_;
};

// Asks the Kubernetes API with a SubjectAccessReview. A failed review is an error decision (the
// server answers 500), never an allow. Answers are cached per (user, groups, request) for
// `allowed_ttl` / `denied_ttl` (Kubernetes' webhook defaults for aggregated servers: 10 s each);
// failures are not cached.
class SubjectAccessReviewAuthorizer : public Authorizer {
 public:
  using ReviewFunction = std::function<Status(const AccessRequest& request, bool* allowed)>;
  struct Options {
    std::chrono::milliseconds allowed_ttl{10000};
    std::chrono::milliseconds denied_ttl{10000};
    size_t max_cached = 4096;  // the cache is emptied when it would grow past this
    // Allowed without a review (k8s.io/apiserver's delegated default: system:masters).
    std::vector<std::string> always_allow_groups = {"system:masters"};
    // Told whether each review was answered from the cache (the server's own metrics).
    std::function<void(bool hit)> on_cache;
  };

  // Reviews through `client` (not owned; must outlive the authoriser).
  explicit SubjectAccessReviewAuthorizer(KubeApiClient* client);
  SubjectAccessReviewAuthorizer(KubeApiClient* client, Options options);
  // Reviews through `review` (tests inject one).
  SubjectAccessReviewAuthorizer(ReviewFunction review, Options options);

  AuthorizationDecision Authorize(const AuthorizationRequest& request) const override;
  // An always-allowed group or a cached answer; nullopt when a review is needed.
  std::optional<AuthorizationDecision> AuthorizeLocally(
      const AuthorizationRequest& request) const override;

 private:
  struct CachedAnswer {
    bool allowed = false;
    std::chrono::steady_clock::time_point expires;
  };

  // The cache key: every field the review sends.
  static std::string Key(const AuthorizationRequest& request);
  std::optional<AuthorizationDecision> Cached(const std::string& key,
                                              std::chrono::steady_clock::time_point now) const;

  ReviewFunction review_;
  Options options_;
  mutable base::Mutex mu_;
  mutable std::map<std::string, CachedAnswer, std::less<>> cache_ GUARDED_BY(mu_);
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_AUTH_H_
