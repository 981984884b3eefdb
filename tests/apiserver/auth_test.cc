// Authentication and authorisation of the aggregated API (deployment/auth.h) as units: the token
// file, client certificates, front-proxy headers, the policy file and the SubjectAccessReview
// authoriser with an injected review. The same pieces behind a real TLS server are in
// api_server_test.cc.
#include "apiserver/auth.h"

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "status_matchers.h"
#include "test_paths.h"

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

net::HttpRequest WithHeaders(std::vector<std::pair<std::string, std::string>> headers) {
  net::HttpRequest request;
  request.method = "GET";
  request.path = "/apis";
  for (auto& [name, value] : headers) request.headers.Add(name, value);
  return request;
}

std::unique_ptr<TokenFileAuthenticator> Tokens(std::string_view csv) {
  std::unique_ptr<TokenFileAuthenticator> tokens;
  EXPECT_OK(TokenFileAuthenticator::Parse(csv, &tokens));
  return tokens;
}

std::string TokenError(std::string_view csv) {
  std::string error;
  std::unique_ptr<TokenFileAuthenticator> tokens;
  EXPECT_FALSE(Ok(TokenFileAuthenticator::Parse(csv, &tokens), &error)) << csv;
  EXPECT_EQ(tokens, nullptr);
  return error;
}

// ---------------------------------------------------------------------------------------------
// Token file

TEST(TokenFileTest, ParsesKubernetesFormatWithQuotedGroups) {
  auto tokens = Tokens(
      "alice-token,alice,uid-1,\"team-readers,ops\"\n"
      "\n"
      "bob-token,bob,uid-2\r\n"
      "carol-token,carol,uid-3,solo\n");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->size(), 3u);
  UserInfo user;
  ASSERT_TRUE(tokens->Authenticate(WithHeaders({{"Authorization", "Bearer alice-token"}}), &user));
  EXPECT_EQ(user.name, "alice");
  EXPECT_EQ(user.uid, "uid-1");
  EXPECT_THAT(user.groups, ElementsAre("team-readers", "ops"));
  ASSERT_TRUE(tokens->Authenticate(WithHeaders({{"Authorization", "Bearer bob-token"}}), &user));
  EXPECT_EQ(user.name, "bob");
  EXPECT_EQ(user.uid, "uid-2");  // the CR of CRLF is not part of the field
  EXPECT_TRUE(user.groups.empty());
  ASSERT_TRUE(tokens->Authenticate(WithHeaders({{"Authorization", "Bearer carol-token"}}), &user));
  EXPECT_THAT(user.groups, ElementsAre("solo"));
}

TEST(TokenFileTest, QuotedFieldsMayHoldQuotesCommasAndNewlines) {
  auto tokens = Tokens("\"tok,en\",\"the \"\"user\"\"\",uid,\"a,\nb\"\n");
  ASSERT_NE(tokens, nullptr);
  UserInfo user;
  ASSERT_TRUE(tokens->Authenticate(WithHeaders({{"Authorization", "Bearer tok,en"}}), &user));
  EXPECT_EQ(user.name, "the \"user\"");
  EXPECT_THAT(user.groups, ElementsAre("a", "\nb"));
}

TEST(TokenFileTest, SkipsEmptyTokensKeepsTheLastOfARepeatAndDropsEmptyGroups) {
  auto tokens = Tokens(",nobody,uid-0\nt,first,1\nt,second,2,\",g,,\"\n");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->size(), 1u);
  UserInfo user;
  ASSERT_TRUE(tokens->Authenticate(WithHeaders({{"Authorization", "Bearer t"}}), &user));
  EXPECT_EQ(user.name, "second");
  EXPECT_THAT(user.groups, ElementsAre("g"));
}

TEST(TokenFileTest, RejectsMalformedFilesNamingTheLine) {
  EXPECT_EQ(TokenError("a,b,c\nshort,row\n"),
            "line 2: expected at least 3 columns (token, user name, user uid), found 2");
  EXPECT_THAT(TokenError("a,b,c\n\"open,b,c\n"), HasSubstr("line 2: unterminated quoted field"));
  EXPECT_THAT(TokenError("a,b\"x,c\n"), HasSubstr("line 1: bare \" in non-quoted field"));
  EXPECT_THAT(TokenError("\"a\"x,b,c\n"), HasSubstr("line 1: extraneous or missing \""));
}

TEST(TokenFileTest, LoadNamesThePath) {
  std::string error;
  std::unique_ptr<TokenFileAuthenticator> tokens;
  EXPECT_FALSE(Ok(TokenFileAuthenticator::Load("/no/such/tokens.csv", &tokens), &error));
  EXPECT_THAT(error, HasSubstr("/no/such/tokens.csv"));
  const std::string path = test_paths::ScratchFile("auth_test_tokens.csv");
  std::ofstream(path) << "x,y\n";
  EXPECT_FALSE(Ok(TokenFileAuthenticator::Load(path, &tokens), &error));
  EXPECT_EQ(tokens, nullptr);
  EXPECT_THAT(error, HasSubstr(path + ": line 1"));
  std::filesystem::remove(path);
}

TEST(TokenFileTest, ReadsBearerHeaderLikeKubernetes) {
  auto tokens = Tokens("secret,alice,1\n");
  UserInfo user;
  const auto accepts = [&](std::string header) {
    return tokens->Authenticate(WithHeaders({{"Authorization", header}}), &user);
  };
  EXPECT_TRUE(accepts("Bearer secret"));
  EXPECT_TRUE(accepts("bearer secret"));
  EXPECT_TRUE(accepts("BEARER secret"));
  EXPECT_TRUE(accepts("  Bearer secret  "));
  EXPECT_TRUE(accepts("Bearer secret trailing"));
  EXPECT_FALSE(accepts("Bearer wrong"));
  EXPECT_FALSE(accepts("Bearer  secret"));  // an empty token, then junk
  EXPECT_FALSE(accepts("Basic secret"));
  EXPECT_FALSE(accepts("Bearer"));
  EXPECT_FALSE(accepts("secret"));
  EXPECT_FALSE(accepts("Bearer secre"));
  EXPECT_FALSE(tokens->Authenticate(WithHeaders({}), &user));
}

// ---------------------------------------------------------------------------------------------
// Certificates and the front proxy

net::HttpRequest FromPeer(bool client_ca, bool requestheader_ca, std::string cn,
                          std::vector<std::string> organizations = {},
                          std::vector<std::pair<std::string, std::string>> headers = {}) {
  net::HttpRequest request = WithHeaders(std::move(headers));
  request.peer.tls = true;
  request.peer.cert_presented = true;
  request.peer.cert_verified = client_ca || requestheader_ca;
  request.peer.verified_by_client_ca = client_ca;
  request.peer.verified_by_requestheader_ca = requestheader_ca;
  request.peer.subject_cn = std::move(cn);
  request.peer.subject_organizations = std::move(organizations);
  return request;
}

TEST(ClientCertTest, UserIsTheCnAndGroupsTheOrganizations) {
  ClientCertAuthenticator certs;
  UserInfo user;
  ASSERT_TRUE(certs.Authenticate(FromPeer(true, false, "alice", {"team-readers", "ops"}), &user));
  EXPECT_EQ(user.name, "alice");
  EXPECT_THAT(user.groups, ElementsAre("team-readers", "ops"));
  // Only the client CA counts; an empty CN is nobody.
  EXPECT_FALSE(certs.Authenticate(FromPeer(false, true, "front-proxy"), &user));
  EXPECT_FALSE(certs.Authenticate(FromPeer(true, false, ""), &user));
  EXPECT_FALSE(certs.Authenticate(WithHeaders({}), &user));
}

TEST(RequestHeaderTest, TrustsHeadersOnlyFromAnAllowedRequestHeaderCaCert) {
  RequestHeaderAuthenticator proxy({.allowed_names = {"front-proxy"}});
  const std::vector<std::pair<std::string, std::string>> headers = {
      {"X-Remote-User", "alice"},
      {"X-Remote-Group", "team-readers"},
      {"x-remote-group", "a,b"},
      {"X-Remote-Group", ""}};
  UserInfo user;
  ASSERT_TRUE(proxy.Authenticate(FromPeer(false, true, "front-proxy", {}, headers), &user));
  EXPECT_EQ(user.name, "alice");
  EXPECT_THAT(user.groups, ElementsAre("team-readers", "a,b"));  // one group per header line

  // Another CN of the same CA, a client-CA certificate, or no certificate: ignored.
  EXPECT_FALSE(proxy.Authenticate(FromPeer(false, true, "other-proxy", {}, headers), &user));
  EXPECT_FALSE(proxy.Authenticate(FromPeer(true, false, "front-proxy", {}, headers), &user));
  EXPECT_FALSE(proxy.Authenticate(WithHeaders(headers), &user));
  // The proxy itself, naming nobody, is nobody.
  EXPECT_FALSE(proxy.Authenticate(FromPeer(false, true, "front-proxy"), &user));
  EXPECT_FALSE(proxy.Authenticate(
      FromPeer(false, true, "front-proxy", {}, {{"X-Remote-User", " "}}), &user));
}

TEST(RequestHeaderTest, ExtraHeadersBecomeTheUsersExtraAsKubernetesReadsThem) {
  RequestHeaderAuthenticator proxy({.allowed_names = {"front-proxy"}});
  UserInfo user;
  // Keys are lower-cased and percent-decoded (Go canonicalises header case on the wire); one
  // value per header line; a key that does not decode is kept as sent, lower-cased.
  ASSERT_TRUE(proxy.Authenticate(
      FromPeer(false, true, "front-proxy", {},
               {{"X-Remote-User", "alice"},
                {"X-Remote-Extra-Scopes", "view"},
                {"x-remote-extra-scopes", "edit"},
                {"X-Remote-Extra-Authentication.kubernetes.io%2Fcredential-Id", "JTI=1"},
                {"X-Remote-Extra-Bad%zz", "v"},
                {"X-Remote-Extra-", "no key"}}),
      &user));
  EXPECT_EQ(user.extra, (std::map<std::string, std::vector<std::string>>{
                            {"scopes", {"view", "edit"}},
                            {"authentication.kubernetes.io/credential-id", {"JTI=1"}},
                            {"bad%zz", {"v"}}}));
  // From anyone but the front proxy the headers mean nothing.
  EXPECT_FALSE(proxy.Authenticate(
      WithHeaders({{"X-Remote-User", "alice"}, {"X-Remote-Extra-Scopes", "admin"}}), &user));
}

TEST(RequestHeaderTest, EmptyAllowedNamesTrustAnyCnOfTheCa) {
  RequestHeaderAuthenticator proxy({});
  UserInfo user;
  EXPECT_TRUE(
      proxy.Authenticate(FromPeer(false, true, "anyone", {}, {{"X-Remote-User", "bob"}}), &user));
  EXPECT_EQ(user.name, "bob");
  EXPECT_FALSE(
      proxy.Authenticate(FromPeer(true, false, "anyone", {}, {{"X-Remote-User", "bob"}}), &user));
}

TEST(UnionAuthenticatorTest, FirstSuccessWinsAndEveryoneIsAuthenticated) {
  UnionAuthenticator all;
  all.Add(std::make_unique<RequestHeaderAuthenticator>(
      RequestHeaderOptions{.allowed_names = {"front-proxy"}}));
  all.Add(std::make_unique<ClientCertAuthenticator>());
  all.Add(Tokens("tok,token-user,1,g\n"));
  UserInfo user;
  // A client certificate beats a token; its sender cannot name another user by header.
  ASSERT_TRUE(
      all.Authenticate(FromPeer(true, false, "cert-user", {},
                                {{"Authorization", "Bearer tok"}, {"X-Remote-User", "alice"}}),
                       &user));
  EXPECT_EQ(user.name, "cert-user");
  EXPECT_THAT(user.groups, ElementsAre("system:authenticated"));
  ASSERT_TRUE(all.Authenticate(WithHeaders({{"Authorization", "Bearer tok"}}), &user));
  EXPECT_EQ(user.name, "token-user");
  EXPECT_THAT(user.groups, ElementsAre("g", "system:authenticated"));
  // A request-header certificate that names no one falls through to its token.
  ASSERT_TRUE(all.Authenticate(
      FromPeer(false, true, "front-proxy", {}, {{"Authorization", "Bearer tok"}}), &user));
  EXPECT_EQ(user.name, "token-user");
  EXPECT_FALSE(all.Authenticate(WithHeaders({{"X-Remote-User", "alice"}}), &user));
  EXPECT_FALSE(all.Authenticate(WithHeaders({}), &user));
}

// ---------------------------------------------------------------------------------------------
// Policy file

AuthorizationRequest Ask(std::string user, std::vector<std::string> groups, std::string ns,
                         std::string name = "chat") {
  AuthorizationRequest request;
  request.user = UserInfo{.name = std::move(user), .groups = std::move(groups)};
  request.ns = std::move(ns);
  request.name = std::move(name);
  return request;
}

std::vector<PolicyRule> Policy(std::string_view yaml) {
  std::vector<PolicyRule> rules;
  std::string error;
  EXPECT_OK(ParsePolicy(yaml, &rules));
  return rules;
}

std::string PolicyError(std::string_view yaml) {
  std::vector<PolicyRule> rules;
  std::string error;
  EXPECT_FALSE(Ok(ParsePolicy(yaml, &rules), &error)) << yaml;
  return error;
}

TEST(PolicyTest, ParsesRulesAndMatchesUsersGroupsAndNamespaces) {
  PolicyAuthorizer policy(Policy(R"(
rules:
  - users: [alice]
    namespaces: ["team"]
    verbs: [get]
    resources: ["modeldeployments/metrics"]
  - groups: [ops]
    namespaces: "*"
    verbs: get
    resources: ["*/metrics"]
    apiGroups: ["worker.gpustack.ai"]
  - users: [carol]
    namespaces: [team]
    verbs: ["*"]
    resources: ["*"]
    names: [chat]
)"));
  ASSERT_EQ(policy.rules().size(), 3u);
  EXPECT_THAT(policy.rules()[1].verbs, ElementsAre("get"));  // a single string is a list of one
  const auto allowed = [&](AuthorizationRequest request) {
    return policy.Authorize(request).allowed;
  };
  EXPECT_TRUE(allowed(Ask("alice", {}, "team")));
  EXPECT_FALSE(allowed(Ask("alice", {}, "other")));
  EXPECT_FALSE(allowed(Ask("bob", {"system:authenticated"}, "team")));
  EXPECT_TRUE(allowed(Ask("bob", {"system:authenticated", "ops"}, "anywhere")));
  EXPECT_TRUE(allowed(Ask("carol", {}, "team", "chat")));
  EXPECT_FALSE(allowed(Ask("carol", {}, "team", "other")));
  AuthorizationRequest list = Ask("alice", {}, "team");
  list.verb = "list";
  EXPECT_FALSE(allowed(list));
  AuthorizationRequest parent = Ask("alice", {}, "team");
  parent.subresource.clear();  // the parent resource is not the subresource
  EXPECT_FALSE(allowed(parent));
  AuthorizationRequest other_group = Ask("bob", {"ops"}, "team");
  other_group.api_group = "apps";
  EXPECT_FALSE(allowed(other_group));
  EXPECT_TRUE(policy.Authorize(Ask("alice", {}, "team")).reason.empty());
}

TEST(PolicyTest, WildcardSubjects) {
  PolicyAuthorizer any_user(
      Policy("rules:\n- users: ['*']\n  namespaces: [team]\n  verbs: [get]\n  resources: ['*']\n"));
  EXPECT_TRUE(any_user.Authorize(Ask("x", {}, "team")).allowed);
  PolicyAuthorizer any_group(Policy(
      "rules:\n- groups: ['*']\n  namespaces: [team]\n  verbs: [get]\n  resources: ['*']\n"));
  EXPECT_TRUE(any_group.Authorize(Ask("x", {}, "team")).allowed);
}

TEST(PolicyTest, EmptyRulesDenyEverything) {
  EXPECT_TRUE(Policy("rules: []\n").empty());
  EXPECT_TRUE(Policy("rules:\n").empty());
  PolicyAuthorizer none({});
  EXPECT_FALSE(none.Authorize(Ask("alice", {}, "team")).allowed);
}

TEST(PolicyTest, RejectsBadFilesNamingThePlace) {
  EXPECT_THAT(PolicyError("rules: [\n"), HasSubstr("invalid YAML"));
  EXPECT_EQ(PolicyError("- users: [a]\n"), "expected a mapping with `rules`");
  EXPECT_EQ(PolicyError(""), "expected a mapping with `rules`");
  EXPECT_EQ(PolicyError("rule: []\n"), "unknown key `rule` (expected `rules`)");
  EXPECT_EQ(PolicyError("rules: {users: [a]}\n"), "rules: expected a list of rules");
  EXPECT_EQ(PolicyError("rules: [alice]\n"), "rules[0]: expected a mapping");
  const std::string good =
      "  - users: [a]\n    namespaces: [team]\n    verbs: [get]\n    resources: ['*']\n";
  EXPECT_THAT(PolicyError("rules:\n" + good + "  - user: [a]\n"),
              HasSubstr("rules[1]: unknown key `user`"));
  EXPECT_EQ(PolicyError("rules:\n" + good +
                        "  - users: [a]\n    namespaces: [team]\n    verbs: {get: 1}\n"
                        "    resources: ['*']\n"),
            "rules[1].verbs: expected a list of strings");
  EXPECT_EQ(PolicyError("rules:\n- users: [[a]]\n  namespaces: [t]\n  verbs: [get]\n"
                        "  resources: ['*']\n"),
            "rules[0].users: expected a list of strings");
  EXPECT_EQ(PolicyError("rules:\n- namespaces: [t]\n  verbs: [get]\n  resources: ['*']\n"),
            "rules[0]: needs `users` or `groups`");
  EXPECT_EQ(PolicyError("rules:\n- users: [a]\n  verbs: [get]\n  resources: ['*']\n"),
            "rules[0]: needs a non-empty `namespaces`");
  EXPECT_EQ(PolicyError("rules:\n- users: [a]\n  namespaces: []\n  verbs: [get]\n"
                        "  resources: ['*']\n"),
            "rules[0]: needs a non-empty `namespaces`");
  EXPECT_EQ(PolicyError("rules:\n- users: [a]\n  namespaces: [t]\n  resources: ['*']\n"),
            "rules[0]: needs a non-empty `verbs`");
  EXPECT_EQ(PolicyError("rules:\n- users: [a]\n  namespaces: [t]\n  verbs: [get]\n"),
            "rules[0]: needs a non-empty `resources`");
}

TEST(PolicyTest, ScalarsThatReadAsNumbersAreStillNames) {
  const std::vector<PolicyRule> rules = Policy(
      "rules:\n- users: [1234, true]\n  namespaces: [2024]\n  verbs: get\n  resources: ['*']\n");
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_THAT(rules[0].users, ElementsAre("1234", "true"));
  EXPECT_THAT(rules[0].namespaces, ElementsAre("2024"));
  EXPECT_EQ(PolicyError("rules:\n- users: [~]\n  namespaces: [t]\n  verbs: [get]\n"
                        "  resources: ['*']\n"),
            "rules[0].users: expected a list of strings");
  EXPECT_EQ(PolicyError("rules: []\n---\nrules: []\n"), "expected a mapping with `rules`");
}

TEST(PolicyTest, LoadNamesThePath) {
  std::string error;
  std::unique_ptr<PolicyAuthorizer> policy;
  EXPECT_FALSE(Ok(PolicyAuthorizer::Load("/no/such/policy.yaml", &policy), &error));
  EXPECT_THAT(error, HasSubstr("/no/such/policy.yaml"));
  const std::string path = test_paths::ScratchFile("auth_test_policy.yaml");
  std::ofstream(path) << "rules: 3\n";
  EXPECT_FALSE(Ok(PolicyAuthorizer::Load(path, &policy), &error));
  EXPECT_EQ(error, path + ": rules: expected a list of rules");
  std::ofstream(path) << "rules:\n- users: [a]\n  namespaces: [t]\n  verbs: [get]\n"
                         "  resources: ['*']\n";
  ASSERT_OK(PolicyAuthorizer::Load(path, &policy));
  ASSERT_NE(policy, nullptr);
  EXPECT_TRUE(policy->Authorize(Ask("a", {}, "t")).allowed);
  std::filesystem::remove(path);
}

// ---------------------------------------------------------------------------------------------
// SubjectAccessReview

TEST(SubjectAccessReviewTest, SendsTheRequestAndCachesAnswers) {
  std::atomic<int> reviews{0};
  std::vector<AccessRequest> seen;
  SubjectAccessReviewAuthorizer::Options options;
  options.allowed_ttl = std::chrono::hours(1);
  options.denied_ttl = std::chrono::hours(1);
  SubjectAccessReviewAuthorizer sar(
      [&](const AccessRequest& request, bool* allowed) {
        ++reviews;
        seen.push_back(request);
        *allowed = request.user == "alice";
        return Status::Ok();
      },
      options);
  EXPECT_TRUE(sar.Authorize(Ask("alice", {"g1", "system:authenticated"}, "team")).allowed);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].user, "alice");
  EXPECT_THAT(seen[0].groups, ElementsAre("g1", "system:authenticated"));
  EXPECT_EQ(seen[0].verb, "get");
  EXPECT_EQ(seen[0].group, "worker.gpustack.ai");
  EXPECT_EQ(seen[0].resource, "modeldeployments");
  EXPECT_EQ(seen[0].subresource, "metrics");
  EXPECT_EQ(seen[0].ns, "team");
  EXPECT_EQ(seen[0].name, "chat");

  EXPECT_TRUE(sar.Authorize(Ask("alice", {"g1", "system:authenticated"}, "team")).allowed);
  EXPECT_EQ(reviews, 1);  // cached
  EXPECT_FALSE(sar.Authorize(Ask("bob", {}, "team")).allowed);
  EXPECT_FALSE(sar.Authorize(Ask("bob", {}, "team")).allowed);
  EXPECT_EQ(reviews, 2);
  // Any difference in the request is a different question.
  EXPECT_TRUE(sar.Authorize(Ask("alice", {"g1"}, "team")).allowed);
  EXPECT_TRUE(sar.Authorize(Ask("alice", {"g1", "system:authenticated"}, "team2")).allowed);
  EXPECT_TRUE(sar.Authorize(Ask("alice", {"g1", "system:authenticated"}, "team", "x")).allowed);
  EXPECT_EQ(reviews, 5);
}

TEST(PolicyTest, NonResourceUrlsAndDiscoveryForEveryone) {
  PolicyAuthorizer policy(Policy(R"(rules:
  - groups: [monitoring]
    nonResourceURLs: ["/metrics", "/debug/*"]
    verbs: [get]
)"));
  const auto path = [](std::string user, std::vector<std::string> groups, std::string path) {
    AuthorizationRequest request = Ask(std::move(user), std::move(groups), "");
    request.path = std::move(path);
    return request;
  };
  EXPECT_TRUE(policy.Authorize(path("prom", {"monitoring"}, "/metrics")).allowed);
  EXPECT_TRUE(policy.Authorize(path("prom", {"monitoring"}, "/debug/pprof")).allowed);
  EXPECT_FALSE(policy.Authorize(path("prom", {"monitoring"}, "/metricsx")).allowed);
  EXPECT_FALSE(policy.Authorize(path("alice", {"system:authenticated"}, "/metrics")).allowed);
  // A non-resource rule never grants a resource, and discovery needs no rule.
  EXPECT_FALSE(policy.Authorize(Ask("prom", {"monitoring"}, "team")).allowed);
  for (const char* documents :
       {"/apis", "/apis/worker.gpustack.ai/v1", "/openapi/v2", "/version"}) {
    EXPECT_TRUE(policy.Authorize(path("anyone", {}, documents)).allowed) << documents;
  }
  std::vector<PolicyRule> rules;
  std::string error;
  EXPECT_FALSE(Ok(ParsePolicy("rules:\n  - users: [a]\n    nonResourceURLs: [/metrics]\n"
                              "    verbs: [get]\n    namespaces: [x]\n",
                              &rules),
                  &error));
  EXPECT_EQ(error,
            "rules[0]: nonResourceURLs cannot be mixed with namespaces, resources, apiGroups or "
            "names");
}

TEST(SubjectAccessReviewTest, ExtraNonResourcePathsMastersAndCacheCounts) {
  std::vector<AccessRequest> seen;
  int hits = 0, misses = 0;
  SubjectAccessReviewAuthorizer::Options options;
  options.on_cache = [&](bool hit) { ++(hit ? hits : misses); };
  SubjectAccessReviewAuthorizer sar(
      [&](const AccessRequest& request, bool* allowed) {
        seen.push_back(request);
        *allowed = true;
        return Status::Ok();
      },
      options);
  // system:masters is allowed without asking (k8s.io/apiserver's delegated default).
  EXPECT_TRUE(sar.Authorize(Ask("system:kube-aggregator", {"system:masters"}, "team")).allowed);
  EXPECT_TRUE(seen.empty());

  AuthorizationRequest metrics = Ask("prom", {"system:authenticated"}, "");
  metrics.path = "/metrics";
  metrics.user.extra = {{"scopes", {"a", "b"}}};
  metrics.user.uid = "uid-prom";
  EXPECT_TRUE(sar.Authorize(metrics).allowed);
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].path, "/metrics");
  EXPECT_EQ(seen[0].uid, "uid-prom");
  EXPECT_EQ(seen[0].extra, metrics.user.extra);
  EXPECT_TRUE(sar.Authorize(metrics).allowed);
  // Another extra is another question.
  metrics.user.extra = {{"scopes", {"a"}}};
  EXPECT_TRUE(sar.Authorize(metrics).allowed);
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_EQ(hits, 1);
  EXPECT_EQ(misses, 2);
}

TEST(SubjectAccessReviewTest, FailuresAreErrorsAndNotCached) {
  int reviews = 0;
  SubjectAccessReviewAuthorizer sar(
      [&](const AccessRequest&, bool* allowed) {
        ++reviews;
        *allowed = true;  // must be ignored on failure
        return Status::Unavailable("connection refused");
      },
      {});
  for (int i = 0; i < 2; ++i) {
    AuthorizationDecision decision = sar.Authorize(Ask("alice", {}, "team"));
    EXPECT_FALSE(decision.allowed);
    EXPECT_EQ(decision.error.code(), 503);
    EXPECT_EQ(decision.error.message(), "connection refused");
  }
  EXPECT_EQ(reviews, 2);
}

TEST(SubjectAccessReviewTest, ExpiredAnswersAreAskedAgain) {
  int reviews = 0;
  SubjectAccessReviewAuthorizer::Options options;
  options.allowed_ttl = std::chrono::milliseconds(0);
  options.denied_ttl = std::chrono::milliseconds(0);
  SubjectAccessReviewAuthorizer sar(
      [&](const AccessRequest&, bool* allowed) {
        ++reviews;
        *allowed = true;
        return Status::Ok();
      },
      options);
  EXPECT_TRUE(sar.Authorize(Ask("alice", {}, "team")).allowed);
  EXPECT_TRUE(sar.Authorize(Ask("alice", {}, "team")).allowed);
  EXPECT_EQ(reviews, 2);
}

}  // namespace
}  // namespace modelmetrics::deployment
