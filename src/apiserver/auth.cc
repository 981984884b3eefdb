// Authentication and authorisation for the aggregated API server (see auth.h).
#include "apiserver/auth.h"

#include <openssl/sha.h>

#include <algorithm>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/file.h"
#include "base/mutex.h"
#include "base/text.h"
#include "kube/yaml.h"

namespace modelmetrics::deployment {
namespace {

// Tokens are kept and looked up by their SHA-256: a lookup's timing then reveals nothing about
// the tokens themselves, and the process holds no token in the clear.
std::string TokenDigest(std::string_view token) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof(digest));
}

std::string_view TrimSpace(std::string_view text) {
  const auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
  };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  return text;
}

bool Contains(const std::vector<std::string>& list, std::string_view value) {
  return std::find(list.begin(), list.end(), value) != list.end();
}

// RFC 4180 CSV as Go's encoding/csv reads it (which Kubernetes uses for the token file): fields
// split on ',', a field that starts with '"' is quoted ("" is a quote inside it, and it may span
// lines), a quote inside an unquoted field is an error, CRLF ends a line like LF, empty lines are
// skipped. `line_numbers` receives the line each record starts on.
Status ParseCsv(std::string_view text, std::vector<std::vector<std::string>>* records,
                std::vector<int>* line_numbers) {
  size_t pos = 0;
  int line = 1;
  while (pos < text.size()) {
    // Skip empty lines.
    if (text[pos] == '\n') {
      ++pos;
      ++line;
      continue;
    }
    if (text[pos] == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') {
      pos += 2;
      ++line;
      continue;
    }
    const int record_line = line;
    std::vector<std::string> record;
    while (true) {
      std::string field;
      if (pos < text.size() && text[pos] == '"') {
        ++pos;
        bool closed = false;
        while (pos < text.size()) {
          const char c = text[pos];
          if (c == '"') {
            if (pos + 1 < text.size() && text[pos + 1] == '"') {
              field.push_back('"');
              pos += 2;
              continue;
            }
            ++pos;
            closed = true;
            break;
          }
          if (c == '\n') ++line;
          field.push_back(c);
          ++pos;
        }
        if (!closed) {
          return Status::InvalidArgument(
              fmt::format("line {}: unterminated quoted field", record_line));
        }
        const bool at_end = pos >= text.size() || text[pos] == ',' || text[pos] == '\n' ||
                            (text[pos] == '\r' && pos + 1 < text.size() && text[pos + 1] == '\n') ||
                            (text[pos] == '\r' && pos + 1 == text.size());
        if (!at_end) {
          return Status::InvalidArgument(
              fmt::format("line {}: extraneous or missing \" in quoted field", line));
        }
      } else {
        while (pos < text.size() && text[pos] != ',' && text[pos] != '\n') {
          if (text[pos] == '"') {
            return Status::InvalidArgument(
                fmt::format("line {}: bare \" in non-quoted field", line));
          }
          field.push_back(text[pos]);
          ++pos;
        }
        if (!field.empty() && field.back() == '\r' && (pos >= text.size() || text[pos] == '\n')) {
          field.pop_back();
        }
      }
      record.push_back(std::move(field));
      if (pos < text.size() && text[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < text.size() && text[pos] == '\r') ++pos;
      if (pos < text.size() && text[pos] == '\n') {
        ++pos;
        ++line;
      }
      break;
    }
    records->push_back(std::move(record));
    line_numbers->push_back(record_line);
  }
  return Status::Ok();
}

std::vector<std::string> SplitGroups(std::string_view text) {
  std::vector<std::string> groups;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    if (comma > start) groups.emplace_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return groups;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Authenticators

Status TokenFileAuthenticator::Parse(std::string_view csv,
                                     std::unique_ptr<TokenFileAuthenticator>* out) {
  std::vector<std::vector<std::string>> records;
  std::vector<int> lines;
  if (Status parsed = ParseCsv(csv, &records, &lines); !parsed.ok()) return parsed;
  auto authenticator = std::make_unique<TokenFileAuthenticator>();
  for (size_t i = 0; i < records.size(); ++i) {
    const std::vector<std::string>& record = records[i];
    if (record.size() < 3) {
      return Status::InvalidArgument(
          fmt::format("line {}: expected at least 3 columns (token, user name, user uid), found {}",
                      lines[i], record.size()));
    }
    if (record[0].empty()) continue;  // Kubernetes skips (and warns about) an empty token
    UserInfo user{.name = record[1], .uid = record[2]};
    if (record.size() >= 4) user.groups = SplitGroups(record[3]);
    authenticator->users_by_token_[TokenDigest(record[0])] = std::move(user);
  }
  *out = std::move(authenticator);
  return Status::Ok();
}

Status TokenFileAuthenticator::Load(const std::string& path,
                                    std::unique_ptr<TokenFileAuthenticator>* out) {
  std::string text;
  if (Status read = base::ReadFile(path, &text); !read.ok()) return read;
  return Parse(text, out).Prefixed(path + ": ");
}

std::string_view BearerToken(const net::HttpRequest& request) {
  const std::string_view header = TrimSpace(request.headers.Get("Authorization"));
  const size_t space = header.find(' ');
  if (space == std::string_view::npos) return {};
  if (!EqualsIgnoreCase(header.substr(0, space), "bearer")) return {};
  const std::string_view token = header.substr(space + 1);
  return token.substr(0, token.find(' '));
}

bool TokenFileAuthenticator::Authenticate(const net::HttpRequest& request, UserInfo* user) const {
  const std::string_view token = BearerToken(request);
  if (token.empty()) return false;
  const auto found = users_by_token_.find(TokenDigest(token));
  if (found == users_by_token_.end()) return false;
  *user = found->second;
  return true;
}

bool ClientCertAuthenticator::Authenticate(const net::HttpRequest& request, UserInfo* user) const {
  if (!request.peer.verified_by_client_ca || request.peer.subject_cn.empty()) return false;
  *user = UserInfo{.name = request.peer.subject_cn, .groups = request.peer.subject_organizations};
  return true;
}

bool RequestHeaderAuthenticator::Authenticate(const net::HttpRequest& request,
                                              UserInfo* user) const {
  // Only the front proxy may speak for someone else: its certificate must come from the
  // request-header CA and, when names are configured, carry one of them.
  if (!request.peer.verified_by_requestheader_ca) return false;
  if (!options_.allowed_names.empty() &&
      !Contains(options_.allowed_names, request.peer.subject_cn)) {
    return false;
  }
  std::string name;
  for (const std::string& header : options_.username_headers) {
    const std::string_view value = TrimSpace(request.headers.Get(header));
    if (!value.empty()) {
      name = value;
      break;
    }
  }
  if (name.empty()) return false;
  UserInfo result{.name = std::move(name)};
  for (const std::string& header : options_.group_headers) {
    for (std::string_view value : request.headers.GetAll(header)) {
      if (!value.empty()) result.groups.emplace_back(value);
    }
  }
  for (const auto& [header, value] : request.headers.entries()) {
    for (const std::string& prefix : options_.extra_header_prefixes) {
      if (header.size() <= prefix.size() ||
          !EqualsIgnoreCase(header.substr(0, prefix.size()), prefix)) {
        continue;
      }
      std::string key = base::AsciiLower(std::string_view(header).substr(prefix.size()));
      if (std::string decoded; base::PercentDecode(key, &decoded)) key = std::move(decoded);
      result.extra[key].push_back(value);
      break;
    }
  }
  *user = std::move(result);
  return true;
}

void UnionAuthenticator::Add(std::unique_ptr<Authenticator> authenticator) {
  authenticators_.push_back(std::move(authenticator));
}

std::optional<bool> UnionAuthenticator::AuthenticateLocally(const net::HttpRequest& request,
                                                            UserInfo* user) const {
  for (const auto& authenticator : authenticators_) {
    UserInfo candidate;
    const std::optional<bool> decided = authenticator->AuthenticateLocally(request, &candidate);
    if (!decided) return std::nullopt;
    if (!*decided) continue;
    if (!Contains(candidate.groups, kGroupAuthenticated)) {
      candidate.groups.emplace_back(kGroupAuthenticated);
    }
    *user = std::move(candidate);
    return true;
  }
  return false;
}

bool UnionAuthenticator::Authenticate(const net::HttpRequest& request, UserInfo* user) const {
  for (const auto& authenticator : authenticators_) {
    UserInfo candidate;
    if (!authenticator->Authenticate(request, &candidate)) continue;
    if (!Contains(candidate.groups, kGroupAuthenticated)) {
      candidate.groups.emplace_back(kGroupAuthenticated);
    }
    *user = std::move(candidate);
    return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------
// Policy file

namespace {

bool ListMatches(const std::vector<std::string>& list, std::string_view value) {
  return Contains(list, "*") || Contains(list, value);
}

// RBAC's resource matching: "*", the exact "resource/subresource", or "*/subresource".
bool ResourceMatches(const std::vector<std::string>& list, const AuthorizationRequest& request) {
  const std::string combined =
      request.subresource.empty() ? request.resource : request.resource + "/" + request.subresource;
  for (const std::string& rule : list) {
    if (rule == "*" || rule == combined) return true;
    if (!request.subresource.empty() && rule == "*/" + request.subresource) return true;
  }
  return false;
}

Status ReadStringList(const nlohmann::json& node, const std::string& where,
                      std::vector<std::string>* out) {
  const auto fail = [&] {
    return Status::InvalidArgument(fmt::format("{}: expected a list of strings", where));
  };
  std::string text;
  if (YamlScalarText(node, &text)) {
    out->push_back(std::move(text));
    return Status::Ok();
  }
  if (!node.is_array()) return fail();
  for (const nlohmann::json& item : node) {
    if (!YamlScalarText(item, &text)) return fail();
    out->push_back(std::move(text));
  }
  return Status::Ok();
}

}  // namespace

bool PolicyRule::Matches(const AuthorizationRequest& request) const {
  const bool subject =
      ListMatches(users, request.user.name) || Contains(groups, "*") ||
      std::any_of(request.user.groups.begin(), request.user.groups.end(),
                  [this](const std::string& group) { return Contains(groups, group); });
  if (request.non_resource() || !non_resource_urls.empty()) {
    return subject && request.non_resource() && ListMatches(verbs, request.verb) &&
           std::any_of(non_resource_urls.begin(), non_resource_urls.end(),
                       [&request](const std::string& url) {
                         return url == "*" || url == request.path ||
                                (url.ends_with('*') &&
                                 request.path.starts_with(url.substr(0, url.size() - 1)));
                       });
  }
  return subject && ListMatches(namespaces, request.ns) && ListMatches(verbs, request.verb) &&
         ResourceMatches(resources, request) &&
         (api_groups.empty() || ListMatches(api_groups, request.api_group)) &&
         (names.empty() || ListMatches(names, request.name));
}

Status ParsePolicy(std::string_view yaml, std::vector<PolicyRule>* rules) {
  std::vector<nlohmann::json> docs;
  if (const Status parsed = ParseYaml(yaml, &docs); !parsed.ok()) {
    return Status::InvalidArgument("invalid YAML: " + parsed.message());
  }
  if (docs.size() != 1 || !docs.front().is_object()) {
    return Status::InvalidArgument("expected a mapping with `rules`");
  }
  const nlohmann::json& root = docs.front();
  for (const auto& [key, value] : root.items()) {
    if (key != "rules") {
      return Status::InvalidArgument(fmt::format("unknown key `{}` (expected `rules`)", key));
    }
  }
  const auto list = root.find("rules");
  if (list == root.end()) {
    return Status::InvalidArgument("missing `rules`");
  }
  if (list->is_null()) {  // `rules:` with nothing: no rule, deny all
    rules->clear();
    return Status::Ok();
  }
  if (!list->is_array()) {
    return Status::InvalidArgument("rules: expected a list of rules");
  }
  std::vector<PolicyRule> parsed;
  size_t index = 0;
  for (const nlohmann::json& node : *list) {
    const std::string where = fmt::format("rules[{}]", index++);
    if (!node.is_object()) {
      return Status::InvalidArgument(fmt::format("{}: expected a mapping", where));
    }
    PolicyRule rule;
    const std::pair<const char*, std::vector<std::string>*> fields[] = {
        {"users", &rule.users},           {"groups", &rule.groups},
        {"namespaces", &rule.namespaces}, {"verbs", &rule.verbs},
        {"resources", &rule.resources},   {"apiGroups", &rule.api_groups},
        {"names", &rule.names},           {"nonResourceURLs", &rule.non_resource_urls},
    };
    for (const auto& item : node.items()) {
      // Not a structured binding: clang 14 cannot capture one in the lambda below.
      const std::string& key = item.key();
      const nlohmann::json& value = item.value();
      auto field = std::find_if(std::begin(fields), std::end(fields),
                                [&](const auto& f) { return key == f.first; });
      if (field == std::end(fields)) {
        return Status::InvalidArgument(fmt::format(
            "{}: unknown key `{}` (expected users, groups, namespaces, verbs, resources, "
            "apiGroups, names, nonResourceURLs)",
            where, key));
      }
      if (Status read = ReadStringList(value, where + "." + key, field->second); !read.ok()) {
        return read;
      }
    }
    if (rule.users.empty() && rule.groups.empty()) {
      return Status::InvalidArgument(fmt::format("{}: needs `users` or `groups`", where));
    }
    const bool non_resource = !rule.non_resource_urls.empty();
    if (non_resource && (!rule.namespaces.empty() || !rule.resources.empty() ||
                         !rule.api_groups.empty() || !rule.names.empty())) {
      return Status::InvalidArgument(fmt::format(
          "{}: nonResourceURLs cannot be mixed with namespaces, resources, apiGroups or names",
          where));
    }
    using Required = std::pair<const char*, const std::vector<std::string>*>;
    const std::vector<Required> required =
        non_resource ? std::vector<Required>{{"verbs", &rule.verbs}}
                     : std::vector<Required>{{"namespaces", &rule.namespaces},
                                             {"verbs", &rule.verbs},
                                             {"resources", &rule.resources}};
    for (const auto& [name, list] : required) {
      if (list->empty()) {
        return Status::InvalidArgument(fmt::format("{}: needs a non-empty `{}`", where, name));
      }
    }
    parsed.push_back(std::move(rule));
  }
  *rules = std::move(parsed);
  return Status::Ok();
}

Status PolicyAuthorizer::Load(const std::string& path, std::unique_ptr<PolicyAuthorizer>* out) {
  std::string text;
  if (Status read = base::ReadFile(path, &text); !read.ok()) return read;
  std::vector<PolicyRule> rules;
  if (Status parsed = ParsePolicy(text, &rules); !parsed.ok()) return parsed.Prefixed(path + ": ");
  *out = std::make_unique<PolicyAuthorizer>(std::move(rules));
  return Status::Ok();
}

namespace {

// What Kubernetes' system:discovery and system:public-info-viewer roles grant every user.
bool IsDiscoveryPath(std::string_view path) {
  return path == "/apis" || path.starts_with("/apis/") || path == "/openapi" ||
         path.starts_with("/openapi/") || path == "/version";
}

}  // namespace

AuthorizationDecision PolicyAuthorizer::Authorize(const AuthorizationRequest& request) const {
  if (request.non_resource() && request.verb == "get" && IsDiscoveryPath(request.path)) {
    return AuthorizationDecision::Allow();
  }
  for (const PolicyRule& rule : rules_) {
    if (rule.Matches(request)) return AuthorizationDecision::Allow();
  }
  return AuthorizationDecision::Deny();
}

// ---------------------------------------------------------------------------------------------
// SubjectAccessReview

SubjectAccessReviewAuthorizer::SubjectAccessReviewAuthorizer(KubeApiClient* client)
    : SubjectAccessReviewAuthorizer(client, Options{}) {}

SubjectAccessReviewAuthorizer::SubjectAccessReviewAuthorizer(KubeApiClient* client, Options options)
    : SubjectAccessReviewAuthorizer(
          [client](const AccessRequest& request, bool* allowed) {
            return SubjectAccessReview(client, request, allowed);
          },
          options) {}

SubjectAccessReviewAuthorizer::SubjectAccessReviewAuthorizer(ReviewFunction review, Options options)
    : review_(std::move(review)), options_(options) {}

std::string SubjectAccessReviewAuthorizer::Key(const AuthorizationRequest& request) {
  // Every field the review sends, each with its length in front, so no two requests share a key
  // whatever bytes their fields hold.
  std::string key;
  auto add = [&key](std::string_view part) {
    key += std::to_string(part.size());
    key += ':';
    key += part;
  };
  for (const std::string* part :
       {&request.user.name, &request.user.uid, &request.verb, &request.api_group,
        &request.api_version, &request.resource, &request.subresource, &request.ns, &request.name,
        &request.path}) {
    add(*part);
  }
  add(std::to_string(request.user.groups.size()));
  for (const std::string& group : request.user.groups) add(group);
  for (const auto& [extra_key, values] : request.user.extra) {
    add(extra_key);
    add(std::to_string(values.size()));
    for (const std::string& value : values) add(value);
  }
  return key;
}

std::optional<AuthorizationDecision> SubjectAccessReviewAuthorizer::Cached(
    const std::string& key, std::chrono::steady_clock::time_point now) const {
  base::MutexLock lock(&mu_);
  const auto found = cache_.find(key);
  if (found == cache_.end()) return std::nullopt;
  if (found->second.expires <= now) {
    cache_.erase(found);
    return std::nullopt;
  }
  if (options_.on_cache) options_.on_cache(true);
  return found->second.allowed ? AuthorizationDecision::Allow() : AuthorizationDecision::Deny();
}

std::optional<AuthorizationDecision> SubjectAccessReviewAuthorizer::AuthorizeLocally(
    const AuthorizationRequest& request) const {
  for (const std::string& group : request.user.groups) {
    if (Contains(options_.always_allow_groups, group)) return AuthorizationDecision::Allow();
  }
  return Cached(Key(request), std::chrono::steady_clock::now());
}

AuthorizationDecision SubjectAccessReviewAuthorizer::Authorize(
    const AuthorizationRequest& request) const {
  for (const std::string& group : request.user.groups) {
    if (Contains(options_.always_allow_groups, group)) return AuthorizationDecision::Allow();
  }
  const std::string key = Key(request);
  const auto now = std::chrono::steady_clock::now();
  if (std::optional<AuthorizationDecision> cached = Cached(key, now)) return *cached;
  if (options_.on_cache) options_.on_cache(false);
  AccessRequest review{.user = request.user.name,
                       .uid = request.user.uid,
                       .groups = request.user.groups,
                       .extra = request.user.extra,
                       .verb = request.verb,
                       .group = request.api_group,
                       .version = request.api_version,
                       .resource = request.resource,
                       .subresource = request.subresource,
                       .ns = request.ns,
                       .name = request.name,
                       .path = request.path};
  bool allowed = false;
  Status status = review_(review, &allowed);
  if (!status.ok()) {
    AuthorizationDecision failed;
    failed.error = std::move(status);
    return failed;
  }
  {
    base::MutexLock lock(&mu_);
    if (cache_.size() >= options_.max_cached) cache_.clear();
    cache_[key] =
        CachedAnswer{allowed, now + (allowed ? options_.allowed_ttl : options_.denied_ttl)};
  }
  return allowed ? AuthorizationDecision::Allow() : AuthorizationDecision::Deny();
}

}  // namespace modelmetrics::deployment
