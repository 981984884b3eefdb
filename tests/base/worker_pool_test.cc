// The bounded pool: its capacity, a source's share, and a shutdown that drops what is queued.
#include "base/worker_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <memory>

namespace modelmetrics::base {
namespace {

TEST(WorkerPool, RefusesPastItsCapacityAndPastASourcesShare) {
  WorkerPool pool(1, 4);
  std::promise<void> started, release;
  std::shared_future<void> gate = release.get_future().share();
  std::atomic<int> ran{0};
  auto job = [&] { ++ran; };
  ASSERT_TRUE(pool.TrySubmit(
      [&] {
        started.set_value();
        gate.wait();
      },
      "a", 2));
  started.get_future().wait();  // the one thread is busy: the rest queue
  EXPECT_TRUE(pool.TrySubmit(job, "a", 2));
  EXPECT_FALSE(pool.TrySubmit(job, "a", 2)) << "a's share is 2";
  EXPECT_TRUE(pool.TrySubmit(job, "b", 2));
  EXPECT_TRUE(pool.TrySubmit(job, "c", 2));
  EXPECT_FALSE(pool.TrySubmit(job, "d", 2)) << "the pool holds 4";
  EXPECT_EQ(pool.in_flight(), 4u);
  release.set_value();
  pool.Shutdown();  // the queued jobs ran meanwhile or are dropped
  EXPECT_LE(ran.load(), 3);
  EXPECT_FALSE(pool.TrySubmit(job)) << "shut down";
}

TEST(WorkerPool, ShutdownDropsQueuedJobsWithoutRunningThem) {
  WorkerPool pool(1, 8);
  std::promise<void> started, release;
  std::atomic<bool> second_ran{false};
  auto token = std::make_shared<int>(0);
  ASSERT_TRUE(pool.TrySubmit([&] {
    started.set_value();
    release.get_future().wait();
  }));
  ASSERT_TRUE(pool.TrySubmit([&second_ran, token] { second_ran = true; }));
  started.get_future().wait();
  std::thread stopper([&] { pool.Shutdown(); });
  while (token.use_count() > 1) std::this_thread::yield();  // the queued job's captures freed
  release.set_value();
  stopper.join();
  EXPECT_FALSE(second_ran.load());
}

}  // namespace
}  // namespace modelmetrics::base
