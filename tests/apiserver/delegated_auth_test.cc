// Delegated authentication's pieces on their own: the ConfigMap's encoding, the watcher's rules
// for failed and deleted reads, and the TokenReview cache.
#include "apiserver/delegated_auth.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "status_matchers.h"
#include "test_deadlines.h"

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::json;

constexpr const char* kPem = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";

std::string ConfigMap(Json data) {
  return Json{{"kind", "ConfigMap"}, {"data", std::move(data)}}.dump();
}

TEST(AuthenticationConfigMapTest, ReadsKubeApiserversEncoding) {
  AuthenticationConfig config;
  std::string error;
  ASSERT_OK(ParseAuthenticationConfigMap(
      ConfigMap({{"client-ca-file", kPem},
                 {"requestheader-client-ca-file", kPem},
                 {"requestheader-allowed-names", R"(["front-proxy-client"])"},
                 {"requestheader-username-headers", R"(["X-Remote-User"])"},
                 {"requestheader-group-headers", R"(["X-Remote-Group"])"},
                 {"requestheader-extra-headers-prefix", R"(["X-Remote-Extra-"])"},
                 {"requestheader-uid-headers", "[]"}}),
      &config));
  EXPECT_EQ(config.client_ca_pem, kPem);
  EXPECT_THAT(config.request_header.allowed_names, ElementsAre("front-proxy-client"));
  EXPECT_THAT(config.request_header.extra_header_prefixes, ElementsAre("X-Remote-Extra-"));
  // Older clusters: no request-header keys at all, an empty list allows any name.
  ASSERT_OK(ParseAuthenticationConfigMap(
      ConfigMap({{"client-ca-file", kPem}, {"requestheader-allowed-names", "[]"}}), &config));
  EXPECT_TRUE(config.requestheader_ca_pem.empty());
  EXPECT_TRUE(config.request_header.allowed_names.empty());
  EXPECT_THAT(config.request_header.username_headers, ElementsAre("X-Remote-User"));

  EXPECT_FALSE(Ok(ParseAuthenticationConfigMap(
                      ConfigMap({{"requestheader-allowed-names", "front-proxy-client"}}), &config),
                  &error));
  EXPECT_EQ(error, "requestheader-allowed-names: expected a JSON list of strings");
  EXPECT_FALSE(Ok(
      ParseAuthenticationConfigMap(ConfigMap({{"client-ca-file", "not a pem"}}), &config), &error));
  EXPECT_EQ(error, "client-ca-file: no PEM certificate");
  EXPECT_FALSE(Ok(ParseAuthenticationConfigMap("[1,", &config), &error));
}

TEST(AuthenticationConfigWatcherTest, KeepsTheLastGoodTrustAndFailsClosedWhenDeleted) {
  Status next = Status::Unavailable("connection refused");
  std::string body;
  AuthenticationConfigWatcher watcher(
      [&](std::string* out) {
        *out = body;
        return next;
      },
      std::chrono::hours(1));
  watcher.RefreshNow();
  EXPECT_THAT(watcher.Ready(), HasSubstr("connection refused"));

  next = Status::Ok();
  body = ConfigMap({{"client-ca-file", kPem}});
  watcher.RefreshNow();
  EXPECT_EQ(watcher.Ready(), "");
  const auto first = watcher.Current();
  EXPECT_EQ(first->client_ca_pem, kPem);

  // A failed read or a bad document keeps the trust; the status says why.
  next = {403, "Forbidden", "configmaps is forbidden"};
  watcher.RefreshNow();
  EXPECT_EQ(watcher.Current(), first);
  EXPECT_THAT(watcher.status(), HasSubstr("extension-apiserver-authentication-reader"));
  next = Status::Ok();
  body = "{";
  watcher.RefreshNow();
  EXPECT_EQ(watcher.Current(), first);
  EXPECT_EQ(watcher.Ready(), "");  // it was read once

  // Deleted: no CA at all.
  next = Status::NotFound("not found");
  watcher.RefreshNow();
  EXPECT_NE(watcher.Current(), first);
  EXPECT_TRUE(watcher.Current()->client_ca_pem.empty());
  EXPECT_TRUE(watcher.config()->client_ca_pem.empty());
}

net::HttpRequest WithBearer(const std::string& token) {
  net::HttpRequest request;
  request.headers.Add("Authorization", "Bearer " + token);
  return request;
}

TEST(TokenReviewAuthenticatorTest, CachesAnswersLongAndFailuresBriefly) {
  int reviews = 0;
  bool fail = false;
  int hits = 0;
  TokenReviewAuthenticator::Options options;
  options.ttl = std::chrono::milliseconds(2000);
  options.failure_ttl = std::chrono::milliseconds(300);
  options.on_cache = [&hits](bool hit) { hits += hit ? 1 : 0; };
  TokenReviewAuthenticator tokens(
      [&](std::string_view token, bool* authenticated, UserInfo* user) {
        ++reviews;
        if (fail) return Status::Unavailable("kube-apiserver is down");
        *authenticated = token == "good";
        user->name = "system:serviceaccount:team:reader";
        return Status::Ok();
      },
      options);
  UserInfo user;
  EXPECT_TRUE(tokens.Authenticate(WithBearer("good"), &user));
  EXPECT_EQ(user.name, "system:serviceaccount:team:reader");
  EXPECT_TRUE(tokens.Authenticate(WithBearer("good"), &user));
  EXPECT_FALSE(tokens.Authenticate(WithBearer("bad"), &user));
  EXPECT_FALSE(tokens.Authenticate(WithBearer("bad"), &user));
  EXPECT_EQ(reviews, 2);
  EXPECT_EQ(hits, 2);
  EXPECT_FALSE(tokens.Authenticate(net::HttpRequest(), &user));  // no token: no review
  EXPECT_EQ(reviews, 2);

  fail = true;
  EXPECT_FALSE(tokens.Authenticate(WithBearer("other"), &user));
  EXPECT_FALSE(tokens.Authenticate(WithBearer("other"), &user));
  EXPECT_EQ(reviews, 3);  // a failure is remembered for failure_ttl...
  modelmetrics::testing::LetTimePass(std::chrono::milliseconds(400));
  EXPECT_FALSE(tokens.Authenticate(WithBearer("other"), &user));
  EXPECT_EQ(reviews, 4);  // ...then asked again
  // After the TTL (past it whatever the load) the answer is asked again, and now fails.
  modelmetrics::testing::LetTimePass(std::chrono::milliseconds(1700));
  EXPECT_FALSE(tokens.Authenticate(WithBearer("good"), &user));
  EXPECT_EQ(reviews, 5);
}

// A review that throws lands its flight as a failure: nobody waits for it forever.
TEST(TokenReviewAuthenticatorTest, AReviewThatThrowsFailsAndStrandsNoWaiter) {
  int reviews = 0;
  TokenReviewAuthenticator tokens(
      [&](std::string_view, bool*, UserInfo*) -> Status {
        ++reviews;
        throw std::runtime_error("malformed TokenReview status");
      },
      {});
  UserInfo user;
  EXPECT_FALSE(tokens.Authenticate(WithBearer("x"), &user));
  EXPECT_FALSE(tokens.Authenticate(WithBearer("x"), &user));  // within failure_ttl: remembered
  EXPECT_EQ(reviews, 1);
}

// Requests for one token while its review is under way wait for it: one review, one answer.
TEST(TokenReviewAuthenticatorTest, ConcurrentRequestsForOneTokenShareOneReview) {
  std::atomic<int> reviews{0};
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  TokenReviewAuthenticator tokens(
      [&](std::string_view, bool* authenticated, UserInfo* user) {
        ++reviews;
        std::unique_lock lock(mu);
        cv.wait(lock, [&] { return release; });
        *authenticated = true;
        user->name = "alice";
        return Status::Ok();
      },
      {});
  std::atomic<int> answered{0};
  std::vector<std::thread> callers;
  for (int i = 0; i < 8; ++i) {
    callers.emplace_back([&] {
      UserInfo user;
      if (tokens.Authenticate(WithBearer("same"), &user) && user.name == "alice") ++answered;
    });
  }
  while (reviews.load() == 0) std::this_thread::yield();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the others are waiting by now
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  for (std::thread& t : callers) t.join();
  EXPECT_EQ(reviews.load(), 1);
  EXPECT_EQ(answered.load(), 8);
}

}  // namespace
}  // namespace modelmetrics::deployment
