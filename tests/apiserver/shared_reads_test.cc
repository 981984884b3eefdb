// SharedReads: single flight per deployment, reuse window, admission limits and deadlines.
#include "apiserver/shared_reads.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "test_deadlines.h"

namespace modelmetrics::deployment {
namespace {

using namespace std::chrono_literals;
using Result = SharedReads::Result;

// A read function whose reads block until released; counts reads per deployment.
class GatedReads {
 public:
  Result Read(const std::string& ns, const std::string& name, SteadyTime deadline) {
    std::unique_lock lock(mu_);
    ++reads_[ns + "/" + name];
    ++running_;
    deadlines_.push_back(deadline);
    cv_.notify_all();
    cv_.wait(lock, [this] { return open_; });
    --running_;
    return {.status = Status::Ok(),
            .body = std::make_shared<const std::string>(name + "#" +
                                                        std::to_string(reads_[ns + "/" + name]))};
  }
  void Open() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool WaitRunning(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return running_ >= n; });
  }
  int Reads(const std::string& key) {
    std::lock_guard lock(mu_);
    return reads_[key];
  }
  std::vector<SteadyTime> Deadlines() {
    std::lock_guard lock(mu_);
    return deadlines_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> reads_;
  std::vector<SteadyTime> deadlines_;
  int running_ = 0;
  bool open_ = false;
};

// Collects callback results.
class Answers {
 public:
  SharedReads::Callback Add() {
    return [this](const Result& r) {
      std::lock_guard lock(mu_);
      results_.push_back(r);
      cv_.notify_all();
    };
  }
  bool Wait(size_t n, std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return results_.size() >= n; });
  }
  std::vector<Result> Get() {
    std::lock_guard lock(mu_);
    return results_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Result> results_;
};

SharedReads::Options Options() {
  SharedReads::Options options;
  options.threads = 2;
  options.max_reads = 4;
  options.max_waiters = 100;
  options.reuse_for = 0ms;
  options.min_read_budget = 100ms;
  return options;
}

SteadyTime In(std::chrono::milliseconds d) { return SteadyClock::now() + d; }

TEST(SharedReads, ConcurrentRequestsShareOneRead) {
  GatedReads gated;
  SharedReads reads(Options(),
                    [&](auto& ns, auto& name, SteadyTime d) { return gated.Read(ns, name, d); });
  Answers answers;
  const SteadyTime first_deadline = In(8s);
  ASSERT_EQ(reads.Submit("team", "chat", first_deadline, answers.Add()),
            SharedReads::Admission::kStarted);
  ASSERT_TRUE(gated.WaitRunning(1));
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(reads.Submit("team", "chat", In(8s), answers.Add()), SharedReads::Admission::kJoined);
  }
  gated.Open();
  ASSERT_TRUE(answers.Wait(21));
  EXPECT_EQ(gated.Reads("team/chat"), 1);
  for (const Result& r : answers.Get()) {
    ASSERT_TRUE(r.status.ok());
    EXPECT_EQ(*r.body, "chat#1");
  }
  // The read was given its first request's deadline.
  ASSERT_EQ(gated.Deadlines().size(), 1u);
  EXPECT_EQ(gated.Deadlines()[0], first_deadline);
  // With reuse off, the next request reads again.
  Answers later;
  reads.Submit("team", "chat", In(8s), later.Add());
  ASSERT_TRUE(later.Wait(1));
  EXPECT_EQ(*later.Get()[0].body, "chat#2");
}

TEST(SharedReads, ResultIsReusedWithinTheWindowOnly) {
  GatedReads gated;
  gated.Open();
  SharedReads::Options options = Options();
  // 1 s: the second ask must come within it, which a test thread stalled by a loaded machine
  // still does (tens of ms); the third comes after it on purpose.
  options.reuse_for = 1s;
  SharedReads reads(options,
                    [&](auto& ns, auto& name, SteadyTime d) { return gated.Read(ns, name, d); });
  Answers answers;
  reads.Submit("team", "chat", In(8s), answers.Add());
  ASSERT_TRUE(answers.Wait(1));
  EXPECT_EQ(reads.Submit("team", "chat", In(8s), answers.Add()), SharedReads::Admission::kReused);
  ASSERT_TRUE(answers.Wait(2));
  EXPECT_EQ(*answers.Get()[1].body, "chat#1");
  EXPECT_EQ(gated.Reads("team/chat"), 1);
  modelmetrics::testing::LetTimePass(options.reuse_for + 50ms);
  reads.Submit("team", "chat", In(8s), answers.Add());
  ASSERT_TRUE(answers.Wait(3));
  EXPECT_EQ(*answers.Get()[2].body, "chat#2");
}

TEST(SharedReads, DeploymentsDoNotWaitForEachOther) {
  GatedReads slow;
  SharedReads reads(Options(), [&](auto& ns, auto& name, SteadyTime d) -> Result {
    if (name == "hung") return slow.Read(ns, name, d);
    return {.status = Status::Ok(), .body = std::make_shared<const std::string>(name)};
  });
  Answers hung;
  for (int i = 0; i < 50; ++i) reads.Submit("team", "hung", In(8s), hung.Add());
  ASSERT_TRUE(slow.WaitRunning(1));
  // Fifty requests for the hung deployment hold one worker; the other keeps answering.
  for (int i = 0; i < 10; ++i) {
    Answers healthy;
    ASSERT_NE(reads.Submit("team", "healthy", In(8s), healthy.Add()),
              SharedReads::Admission::kBusy);
    ASSERT_TRUE(healthy.Wait(1, 2s));
    EXPECT_EQ(*healthy.Get()[0].body, "healthy");
  }
  slow.Open();
  ASSERT_TRUE(hung.Wait(50));
  EXPECT_EQ(slow.Reads("team/hung"), 1);
}

TEST(SharedReads, LimitsRefuseAtOnce) {
  GatedReads gated;
  SharedReads::Options options = Options();
  options.max_reads = 2;
  options.max_waiters = 3;
  SharedReads reads(options,
                    [&](auto& ns, auto& name, SteadyTime d) { return gated.Read(ns, name, d); });
  Answers answers;
  EXPECT_EQ(reads.Submit("a", "x", In(8s), answers.Add()), SharedReads::Admission::kStarted);
  EXPECT_EQ(reads.Submit("b", "x", In(8s), answers.Add()), SharedReads::Admission::kStarted);
  // A third deployment needs a third read.
  EXPECT_EQ(reads.Submit("c", "x", In(8s), answers.Add()), SharedReads::Admission::kBusy);
  // Joining an existing read is fine, up to the waiter limit.
  EXPECT_EQ(reads.Submit("a", "x", In(8s), answers.Add()), SharedReads::Admission::kJoined);
  EXPECT_EQ(reads.Submit("a", "x", In(8s), answers.Add()), SharedReads::Admission::kBusy);
  gated.Open();
  ASSERT_TRUE(answers.Wait(3));
}

TEST(SharedReads, QueuedRequestsAreAnsweredBeforeTheirBudgetRunsOut) {
  GatedReads gated;
  SharedReads::Options options = Options();
  options.threads = 1;
  options.min_read_budget = 200ms;
  SharedReads reads(options,
                    [&](auto& ns, auto& name, SteadyTime d) { return gated.Read(ns, name, d); });
  Answers busy;
  reads.Submit("team", "first", In(8s), busy.Add());
  ASSERT_TRUE(gated.WaitRunning(1));
  // The only worker is taken; this one cannot start while it has 200 ms left.
  Answers late;
  const SteadyTime deadline = In(500ms);
  reads.Submit("team", "second", deadline, late.Add());
  ASSERT_TRUE(late.Wait(1, 5s));
  const SteadyTime answered = SteadyClock::now();
  EXPECT_LE(answered, deadline);
  EXPECT_GE(answered, deadline - 250ms);
  const Result r = late.Get()[0];
  EXPECT_EQ(r.status.code(), 503);
  EXPECT_TRUE(r.retry);
  EXPECT_EQ(r.status.message(), SharedReads::NotStartedInTime().message());
  gated.Open();
  ASSERT_TRUE(busy.Wait(1));
  EXPECT_EQ(gated.Reads("team/second"), 0);
}

TEST(SharedReads, LateJoinerWithAnEarlierDeadlineIsAnsweredAtItsDeadline) {
  GatedReads gated;
  SharedReads reads(Options(),
                    [&](auto& ns, auto& name, SteadyTime d) { return gated.Read(ns, name, d); });
  Answers first;
  reads.Submit("team", "chat", In(8s), first.Add());
  ASSERT_TRUE(gated.WaitRunning(1));
  // Authorised slowly: joins the running read with less time left than the read has.
  Answers late;
  const SteadyTime deadline = In(300ms);
  reads.Submit("team", "chat", deadline, late.Add());
  ASSERT_TRUE(late.Wait(1, 5s));
  const SteadyTime answered = SteadyClock::now();
  EXPECT_GE(answered, deadline);
  EXPECT_LT(answered, deadline + 200ms);
  EXPECT_EQ(late.Get()[0].status.code(), 504);
  EXPECT_TRUE(late.Get()[0].retry);
  gated.Open();
  ASSERT_TRUE(first.Wait(1));
  EXPECT_TRUE(first.Get()[0].status.ok());
}

TEST(SharedReads, ExceptionsBecomeInternalErrors) {
  SharedReads reads(Options(),
                    [](auto&, auto&, SteadyTime) -> Result { throw std::runtime_error("boom"); });
  Answers answers;
  reads.Submit("team", "chat", In(8s), answers.Add());
  ASSERT_TRUE(answers.Wait(1));
  EXPECT_EQ(answers.Get()[0].status.code(), 500);
  EXPECT_EQ(answers.Get()[0].status.message(), "boom");
}

}  // namespace
}  // namespace modelmetrics::deployment
