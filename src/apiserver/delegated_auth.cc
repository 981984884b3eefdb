// See delegated_auth.h.
#include "apiserver/delegated_auth.h"

#include <openssl/sha.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/mutex.h"
#include "base/text.h"

namespace modelmetrics::deployment {
namespace {

using json = nlohmann::json;

std::string TokenKey(std::string_view token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

// A `requestheader-*` value: a JSON list of strings kept as a string; empty or `null`: unset.
bool ReadList(const json& data, const char* key, std::vector<std::string>* out,
              std::string* error) {
  const auto it = data.find(key);
  if (it == data.end() || !it->is_string() || it->get<std::string>().empty()) return true;
  const json list = json::parse(it->get<std::string>(), nullptr, /*allow_exceptions=*/false);
  if (list.is_null()) return true;
  if (!list.is_array() ||
      !std::all_of(list.begin(), list.end(), [](const json& item) { return item.is_string(); })) {
    *error = fmt::format("{}: expected a JSON list of strings", key);
    return false;
  }
  out->clear();
  for (const json& item : list) out->push_back(item.get<std::string>());
  return true;
}

bool ReadPem(const json& data, const char* key, std::string* out, std::string* error) {
  const auto it = data.find(key);
  if (it == data.end() || !it->is_string()) return true;
  *out = it->get<std::string>();
  if (!out->empty() && out->find("-----BEGIN CERTIFICATE-----") == std::string::npos) {
    *error = fmt::format("{}: no PEM certificate", key);
    return false;
  }
  return true;
}

}  // namespace

Status ParseAuthenticationConfigMap(std::string_view text, AuthenticationConfig* out) {
  const json object = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (!object.is_object()) return Status::InvalidArgument("not a JSON object");
  AuthenticationConfig config;
  const auto data = object.find("data");
  if (data == object.end() || data->is_null()) {
    *out = std::move(config);
    return Status::Ok();
  }
  if (!data->is_object()) return Status::InvalidArgument("data: expected an object");
  RequestHeaderOptions& headers = config.request_header;
  std::string error;  // the key readers' message
  if (!ReadPem(*data, "client-ca-file", &config.client_ca_pem, &error) ||
      !ReadPem(*data, "requestheader-client-ca-file", &config.requestheader_ca_pem, &error) ||
      !ReadList(*data, "requestheader-allowed-names", &headers.allowed_names, &error) ||
      !ReadList(*data, "requestheader-username-headers", &headers.username_headers, &error) ||
      !ReadList(*data, "requestheader-group-headers", &headers.group_headers, &error) ||
      !ReadList(*data, "requestheader-extra-headers-prefix", &headers.extra_header_prefixes,
                &error)) {
    return Status::InvalidArgument(std::move(error));
  }
  *out = std::move(config);
  return Status::Ok();
}

// ---------------------------------------------------------------------------------------------
// AuthenticationConfigWatcher

AuthenticationConfigWatcher::AuthenticationConfigWatcher(Fetch fetch,
                                                         std::chrono::milliseconds refresh)
    : fetch_(std::move(fetch)),
      refresh_(refresh),
      config_(std::make_shared<AuthenticationConfig>()),
      bundles_(std::make_shared<Bundles>()) {}

AuthenticationConfigWatcher::AuthenticationConfigWatcher(KubeApiClient* client,
                                                         std::chrono::milliseconds refresh)
    : AuthenticationConfigWatcher(
          [client](std::string* body) {
            return client->Request("GET", kAuthenticationConfigMapPath, "", body);
          },
          refresh) {}

AuthenticationConfigWatcher::~AuthenticationConfigWatcher() { Stop(); }

void AuthenticationConfigWatcher::Start() {
  RefreshNow();
  thread_ = std::thread([this] {
    base::MutexLock lock(&mu_);
    while (!cv_.wait_for(lock.native(), refresh_, [this]() REQUIRES(mu_) { return stopping_; })) {
      lock.Unlock();
      RefreshNow();
      lock.Lock();
    }
  });
}

void AuthenticationConfigWatcher::Stop() {
  {
    base::MutexLock lock(&mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void AuthenticationConfigWatcher::RefreshNow() {
  std::string body;
  const Status status = fetch_(&body);
  AuthenticationConfig parsed;
  std::string problem;
  if (status.code() == 404) {
    problem = "the ConfigMap kube-system/extension-apiserver-authentication does not exist";
  } else if (!status.ok()) {
    problem = fmt::format("cannot read kube-system/extension-apiserver-authentication: {}{}",
                          base::Excerpt(status.message(), 512),
                          status.code() == 403 ? " (bind the Role "
                                                 "extension-apiserver-authentication-reader in "
                                                 "kube-system to this server's ServiceAccount)"
                                               : "");
  } else if (Status decoded = ParseAuthenticationConfigMap(body, &parsed); !decoded.ok()) {
    problem =
        "kube-system/extension-apiserver-authentication: " + base::Excerpt(decoded.message(), 512);
  }
  base::MutexLock lock(&mu_);
  status_ = problem;
  if (problem.empty() || status.code() == 404) {
    // A deleted ConfigMap clears the trust (fail closed); a failed read keeps the last good one.
    auto bundles = std::make_shared<Bundles>();
    bundles->client_ca_pem = parsed.client_ca_pem;
    bundles->requestheader_ca_pem = parsed.requestheader_ca_pem;
    bundles_ = std::move(bundles);
    config_ = std::make_shared<const AuthenticationConfig>(std::move(parsed));
  }
  if (problem.empty()) loaded_ = true;
}

std::shared_ptr<const net::ClientCaSource::Bundles> AuthenticationConfigWatcher::Current() const {
  base::MutexLock lock(&mu_);
  return bundles_;
}

std::shared_ptr<const AuthenticationConfig> AuthenticationConfigWatcher::config() const {
  base::MutexLock lock(&mu_);
  return config_;
}

std::string AuthenticationConfigWatcher::Ready() const {
  base::MutexLock lock(&mu_);
  return loaded_ ? std::string() : status_;
}

std::string AuthenticationConfigWatcher::status() const {
  base::MutexLock lock(&mu_);
  return status_;
}

bool DelegatedRequestHeaderAuthenticator::Authenticate(const net::HttpRequest& request,
                                                       UserInfo* user) const {
  const std::shared_ptr<const AuthenticationConfig> config = watcher_->config();
  // No request-header CA: nothing the front proxy says is believed.
  if (config->requestheader_ca_pem.empty()) return false;
  return RequestHeaderAuthenticator(config->request_header).Authenticate(request, user);
}

// ---------------------------------------------------------------------------------------------
// TokenReview

Status TokenReview(KubeApiClient* client, std::string_view token, bool* authenticated,
                   UserInfo* user) {
  *authenticated = false;
  const json review = {{"apiVersion", "authentication.k8s.io/v1"},
                       {"kind", "TokenReview"},
                       {"spec", {{"token", token}}}};
  std::string body;
  Status status =
      client->Request("POST", "/apis/authentication.k8s.io/v1/tokenreviews", review.dump(), &body);
  if (!status.ok()) return status;
  const json answer = json::parse(body, nullptr, /*allow_exceptions=*/false);
  const auto fail = [](std::string why) { return Status::Internal("decode TokenReview: " + why); };
  if (!answer.is_object()) return fail("the answer is not a JSON object");
  const json review_status = answer.value("status", json::object());
  if (!review_status.is_object()) return fail("status: expected an object");
  const bool yes = review_status.value("authenticated", false);
  const std::string error = review_status.value("error", "");
  if (!yes) {
    if (!error.empty()) return Status::Internal("TokenReview: " + base::Excerpt(error, 512));
    return Status::Ok();
  }
  const json who = review_status.value("user", json::object());
  try {
    UserInfo result{.name = who.value("username", ""), .uid = who.value("uid", "")};
    result.groups = who.value("groups", std::vector<std::string>{});
    result.extra = who.value("extra", std::map<std::string, std::vector<std::string>>{});
    if (result.name.empty()) return fail("status.user.username is empty");
    *user = std::move(result);
  } catch (const json::exception& e) {
    return fail(std::string("status.user: ") + e.what());
  }
  *authenticated = true;
  return Status::Ok();
}

TokenReviewAuthenticator::TokenReviewAuthenticator(Review review, Options options)
    : review_(std::move(review)), options_(std::move(options)) {}

TokenReviewAuthenticator::TokenReviewAuthenticator(KubeApiClient* client, Options options)
    : TokenReviewAuthenticator(
          [client](std::string_view token, bool* authenticated, UserInfo* user) {
            return TokenReview(client, token, authenticated, user);
          },
          std::move(options)) {}

std::optional<bool> TokenReviewAuthenticator::AuthenticateLocally(const net::HttpRequest& request,
                                                                  UserInfo* user) const {
  const std::string_view token = BearerToken(request);
  if (token.empty()) return false;
  const std::string key = TokenKey(token);
  base::MutexLock lock(&mu_);
  const auto found = cache_.find(key);
  if (found == cache_.end() || found->second.expires <= std::chrono::steady_clock::now()) {
    return std::nullopt;
  }
  if (options_.on_cache) options_.on_cache(true);
  if (found->second.authenticated) *user = found->second.user;
  return found->second.authenticated;
}

bool TokenReviewAuthenticator::Authenticate(const net::HttpRequest& request, UserInfo* user) const {
  const std::string_view token = BearerToken(request);
  if (token.empty()) return false;
  const std::string key = TokenKey(token);
  base::MutexLock lock(&mu_);
  const auto now = std::chrono::steady_clock::now();
  if (const auto found = cache_.find(key); found != cache_.end() && found->second.expires > now) {
    if (options_.on_cache) options_.on_cache(true);
    if (found->second.authenticated) *user = found->second.user;
    return found->second.authenticated;
  }
  if (options_.on_cache) options_.on_cache(false);
  Cached answer;
  if (const auto flying = flights_.find(key); flying != flights_.end()) {
    const std::shared_ptr<Flight> flight = flying->second;  // another request's review
    landed_.wait(lock.native(), [&]() REQUIRES(mu_) { return flight->done; });
    answer = flight->answer;
  } else {
    auto flight = std::make_shared<Flight>();
    flights_.emplace(key, flight);
    lock.Unlock();
    bool authenticated = false;
    UserInfo reviewed;
    bool reviewed_ok = false;
    try {  // the flight must land however the review ends, or its waiters wait forever
      reviewed_ok = review_(token, &authenticated, &reviewed).ok();
    } catch (...) {
      reviewed_ok = false;
    }
    lock.Lock();
    const auto until =
        std::chrono::steady_clock::now() + (reviewed_ok ? options_.ttl : options_.failure_ttl);
    answer = Cached{reviewed_ok && authenticated, std::move(reviewed), until};
    if (cache_.size() >= options_.max_cached) cache_.clear();
    cache_[key] = answer;
    flight->answer = answer;
    flight->done = true;
    flights_.erase(key);
    landed_.notify_all();
  }
  if (answer.authenticated) *user = std::move(answer.user);
  return answer.authenticated;
}

}  // namespace modelmetrics::deployment
