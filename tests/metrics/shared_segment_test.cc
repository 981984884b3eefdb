// SharedSegment: real processes (fork) recording into one segment, merged by a scrape; gauge
// modes and liveness; SIGKILL mid-write; fork after use; slot reuse; bounds; stale segments and
// the last process removing the name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <sys/resource.h>

#include <cstring>

#include "metrics/pending_shares.h"
#include "metrics/segment_layout.h"
#include "modelmetrics/metrics.h"
#include "modelmetrics/parser.h"
#include "modelmetrics/shared_segment.h"
#include "segment_test_util.h"
#include "test_deadlines.h"

namespace modelmetrics {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

using segment_testing::Attach;
using segment_testing::Child;
using segment_testing::CounterTotal;
using segment_testing::Find;
using segment_testing::ShmExists;
using segment_testing::Skipped;
using segment_testing::StrictParse;
using segment_testing::Tamper;
using segment_testing::UniqueName;
using segment_testing::Wait;

TEST(SharedSegment, ProcessesSumIntoOneScrape) {
  const std::string name = UniqueName("sum");
  auto segment = Attach(name);
  Registry registry(RegistryOptions{.shared = segment});
  auto* requests = registry.AddCounter({.name = "requests", .help = "Requests.", .labels = {"m"}});
  auto* latency = registry.AddHistogram(
      {.name = "latency_seconds", .help = "Latency.", .labels = {"m"}, .buckets = {0.1, 1}});
  ASSERT_NE(requests, nullptr);
  ASSERT_NE(latency, nullptr);
  requests->Labels({"a"}).Add(uint64_t{5});
  latency->Labels({"a"}).Observe(0.05);
  std::vector<pid_t> children;
  for (int i = 0; i < 4; ++i) {
    children.push_back(Child([&] {
      auto mine = SharedSegment::Attach({.name = name}, nullptr);  // its own process's view
      if (mine == nullptr) return 1;
      Registry own(RegistryOptions{.shared = mine});
      own.AddCounter({.name = "requests", .help = "Requests.", .labels = {"m"}})
          ->Labels({"a"})
          .Add(uint64_t{10});
      auto* h = own.AddHistogram(
          {.name = "latency_seconds", .help = "Latency.", .labels = {"m"}, .buckets = {0.1, 1}});
      h->Labels({"a"}).Observe(0.5);
      h->Labels({"a"}).Observe(5);
      return 0;
    }));
  }
  for (pid_t pid : children) EXPECT_EQ(Wait(pid), 0);
  EXPECT_EQ(CounterTotal(*segment, "requests"), 45);
  EXPECT_EQ(requests->Labels({"a"}).Value(), 5);  // this process's own value
  const std::string text = segment->Render(Format::kText);
  EXPECT_THAT(text, HasSubstr("# HELP requests_total Requests.\n# TYPE requests_total counter\n"
                              "requests_total{m=\"a\"} 45.0\n"));
  EXPECT_THAT(text, HasSubstr("latency_seconds_bucket{le=\"0.1\",m=\"a\"} 1.0\n"
                              "latency_seconds_bucket{le=\"1.0\",m=\"a\"} 5.0\n"
                              "latency_seconds_bucket{le=\"+Inf\",m=\"a\"} 9.0\n"
                              "latency_seconds_count{m=\"a\"} 9.0\n"
                              "latency_seconds_sum{m=\"a\"} 22.05\n"));
  EXPECT_THAT(text, Not(HasSubstr("_created")));
}

// Gauges of a parent and a child that stays alive until told, then exits: every mode.
TEST(SharedSegment, GaugeModesFollowPrometheusClient) {
  const std::string name = UniqueName("modes");
  auto segment = Attach(name);
  Registry registry(RegistryOptions{.shared = segment});
  std::map<std::string, Family<Gauge>*> gauges;
  for (const char* mode : {"all", "liveall", "min", "livemin", "max", "livemax", "sum", "livesum",
                           "mostrecent", "livemostrecent"}) {
    gauges[mode] = registry.AddGauge(
        {.name = std::string("g_") + mode, .multiprocess_mode = *ParseMultiprocessMode(mode)});
    ASSERT_NE(gauges[mode], nullptr);
    gauges[mode]->Labels({}).Set(1);
  }
  int go[2], done[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(done), 0);
  const pid_t child = Child([&] {
    // A later stamp than the parent's: a sleep is at least as long as asked, whatever the load.
    modelmetrics::testing::LetTimePass(std::chrono::milliseconds(5));
    for (auto& [mode, family] : gauges) family->Labels({}).Set(4);
    char c = 'x';
    if (write(done[1], &c, 1) != 1) return 1;
    return read(go[0], &c, 1) == 1 ? 0 : 2;
  });
  char c;
  ASSERT_EQ(read(done[0], &c, 1), 1);
  auto values = [&](const char* mode) {
    std::vector<double> out;
    const auto families = segment->Collect();
    for (const MergedChild& ch : Find(families, std::string("g_") + mode)->children) {
      out.push_back(ch.value);
    }
    return out;
  };
  using V = std::vector<double>;
  EXPECT_EQ(values("all"), (V{1, 4}));
  EXPECT_EQ(values("liveall"), (V{1, 4}));
  EXPECT_EQ(values("min"), (V{1}));
  EXPECT_EQ(values("max"), (V{4}));
  EXPECT_EQ(values("sum"), (V{5}));
  EXPECT_EQ(values("livesum"), (V{5}));
  EXPECT_EQ(values("mostrecent"), (V{4}));
  const std::string text = segment->Render(Format::kText);
  EXPECT_THAT(text, HasSubstr("g_all{pid=\"" + std::to_string(getpid()) + "\"} 1.0\n"));
  EXPECT_THAT(text, HasSubstr("g_all{pid=\"" + std::to_string(child) + "\"} 4.0\n"));

  ASSERT_EQ(write(go[1], "x", 1), 1);
  ASSERT_EQ(Wait(child), 0);
  EXPECT_EQ(values("all"), (V{1, 4})) << "a dead process's gauges stay in non-live modes";
  EXPECT_EQ(values("liveall"), (V{1}));
  EXPECT_EQ(values("livemin"), (V{1}));
  EXPECT_EQ(values("livemax"), (V{1}));
  EXPECT_EQ(values("livesum"), (V{1}));
  EXPECT_EQ(values("livemostrecent"), (V{1}));
  EXPECT_EQ(values("max"), (V{4}));
  EXPECT_EQ(values("mostrecent"), (V{4}));
  EXPECT_EQ(segment->MarkProcessDead(child), 1u);
  EXPECT_EQ(segment->MarkProcessDead(getpid()), 0u) << "a running process is not marked";
}

// A fork after use: the child's handles write its own slot, starting from zero.
TEST(SharedSegment, ForkGivesTheChildItsOwnSlot) {
  const std::string name = UniqueName("fork");
  auto segment = Attach(name);
  Registry registry(RegistryOptions{.shared = segment});
  Counter counter = registry.AddCounter({.name = "c"})->Labels({});
  Gauge gauge =
      registry.AddGauge({.name = "g", .multiprocess_mode = MultiprocessMode::kSum})->Labels({});
  counter.Add(uint64_t{7});
  gauge.Set(2);
  const int parent_slot = segment->slot();
  const pid_t child = Child([&] {
    if (segment->slot() == parent_slot) return 1;
    if (counter.Value() != 0 || gauge.Value() != 0) return 2;  // a fresh slot
    counter.Add(uint64_t{3});
    gauge.Set(5);
    return 0;
  });
  EXPECT_EQ(Wait(child), 0);
  EXPECT_EQ(counter.Value(), 7);
  EXPECT_EQ(CounterTotal(*segment, "c"), 10);
  EXPECT_EQ(Find(segment->Collect(), "g")->children.at(0).value, 7);
}

// A writer killed with SIGKILL while observing and counting: every scrape meanwhile and after
// has `_count` equal to the +Inf bucket, and no counter ever goes down.
TEST(SharedSegment, SigkillMidWriteKeepsEveryScrapeConsistent) {
  const std::string name = UniqueName("kill");
  auto segment = Attach(name);
  Registry registry(RegistryOptions{.shared = segment});
  auto* h = registry.AddHistogram({.name = "h", .buckets = {1, 2, 3}});
  auto* c = registry.AddCounter({.name = "n"});
  Histogram hist = h->Labels({});
  Counter count = c->Labels({});
  std::vector<pid_t> writers;
  for (int i = 0; i < 2; ++i) {
    writers.push_back(Child([&] {
      for (uint64_t k = 0;; ++k) {
        hist.Observe(static_cast<double>(k % 5));
        count.Inc();
      }
      return 0;
    }));
  }
  double last_count = 0, last_counter = 0;
  auto check = [&] {
    const auto families = segment->Collect();
    const MergedChild& child = Find(families, "h")->children.at(0);
    uint64_t buckets = 0;
    for (uint64_t b : child.buckets) buckets += b;
    EXPECT_EQ(child.count, buckets);
    EXPECT_GE(static_cast<double>(child.count), last_count);
    const double counter = Find(families, "n")->children.at(0).value;
    EXPECT_GE(counter, last_counter);
    last_count = static_cast<double>(child.count);
    last_counter = counter;
  };
  for (int i = 0; i < 50; ++i) {
    check();  // reads spread over the writers' run; how many fall where does not matter
    modelmetrics::testing::LetTimePass(std::chrono::milliseconds(1));
  }
  for (pid_t pid : writers) kill(pid, SIGKILL);
  for (pid_t pid : writers) Wait(pid);
  for (int i = 0; i < 5; ++i) check();
  EXPECT_GT(last_count, 0);
  // The dead writers' slots are reused by the next processes, which go on counting.
  const double before = last_counter;
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(Wait(Child([&] {
                hist.Observe(1);
                count.Inc();
                return 0;
              })),
              0);
  }
  check();
  EXPECT_EQ(last_counter, before + 2);
}

TEST(SharedSegment, DeadSlotsAreReusedWithCountersKeptAndGaugesCleared) {
  const std::string name = UniqueName("reuse");
  auto segment = Attach(name, /*slots=*/2);
  Registry registry(RegistryOptions{.shared = segment});
  Counter counter = registry.AddCounter({.name = "c"})->Labels({});
  Gauge gauge = registry.AddGauge({.name = "g"})->Labels({});
  for (int round = 0; round < 5; ++round) {  // five processes through one spare slot
    EXPECT_EQ(Wait(Child([&] {
                counter.Inc();
                if (gauge.Value() != 0) return 1;  // the last owner's gauge is not inherited
                gauge.Set(round + 10);
                return 0;
              })),
              0);
  }
  EXPECT_EQ(CounterTotal(*segment, "c"), 5);
  const auto families = segment->Collect();
  const MergedFamily* g = Find(families, "g");
  // This process made the child (0, as prometheus_client writes a value it creates) and the
  // slot's last owner set it; the earlier owners' values went with their slot.
  ASSERT_EQ(g->children.size(), 2u);
  EXPECT_EQ(g->children[0].value, 0);
  EXPECT_EQ(g->children[1].value, 14);
  // With every slot held by a running process, a new one is refused with a clear error.
  int go[2], ready[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(ready), 0);
  const pid_t holder = Child([&] {
    char c = 'r';  // its slot is taken in fork() itself, before this runs
    if (write(ready[1], &c, 1) != 1) return 2;
    return read(go[0], &c, 1) == 1 ? 0 : 1;
  });
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  std::string error;
  EXPECT_EQ(SharedSegment::Attach({.name = name, .process_slots = 2}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("all 2 process slots"));
  ASSERT_EQ(write(go[1], "x", 1), 1);
  EXPECT_EQ(Wait(holder), 0);
}

TEST(SharedSegment, AFullSegmentIsOneClearErrorAndKeepsWhatItHas) {
  const std::string name = UniqueName("full");
  auto segment = Attach(name, /*slots=*/64, /*bytes=*/size_t{1} << 20);
  Registry registry(RegistryOptions{.shared = segment});
  auto* family = registry.AddHistogram({.name = "h", .labels = {"k"}, .buckets = {1, 2, 3, 4}});
  ASSERT_NE(family, nullptr);
  family->Labels({"first"}).Observe(1);
  std::string refused;
  int made = 0;
  for (int i = 0; i < 100000; ++i) {
    const std::string value = std::to_string(i);
    const std::string_view values[] = {value};
    if (!family->Labels(values, Family<Histogram>::kNow, &refused).live()) break;
    ++made;
  }
  EXPECT_THAT(refused, HasSubstr("is full (cells per process)"));
  EXPECT_THAT(refused, HasSubstr("MODELMETRICS_MULTIPROC_BYTES"));
  EXPECT_GT(made, 10);
  const auto families = segment->Collect();
  EXPECT_EQ(Find(families, "h")->children.size(), static_cast<size_t>(made) + 1);
  EXPECT_EQ(Find(families, "h")->children.at(0).count, 1u);
}

TEST(SharedSegment, ConflictingDefinitionsAcrossProcessesAreRefused) {
  const std::string name = UniqueName("conflict");
  auto one = Attach(name);
  auto two = Attach(name);  // a second process's view (another slot)
  Registry a(RegistryOptions{.shared = one});
  Registry b(RegistryOptions{.shared = two});
  ASSERT_NE(a.AddGauge({.name = "x", .multiprocess_mode = MultiprocessMode::kMax}), nullptr);
  std::string error;
  EXPECT_EQ(b.AddCounter({.name = "x"}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("another type"));
  EXPECT_EQ(b.AddGauge({.name = "x"}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("multiprocess_mode max"));
  EXPECT_NE(b.AddGauge({.name = "x", .multiprocess_mode = MultiprocessMode::kMax}), nullptr);
}

TEST(SharedSegment, TheLastProcessRemovesItAndAStaleOneStartsAfresh) {
  const std::string name = UniqueName("life");
  {
    auto segment = Attach(name);
    EXPECT_TRUE(ShmExists(name));
    // A process that ends without leaving (os._exit, SIGKILL) leaves the name behind...
    EXPECT_EQ(Wait(Child([&] {
                auto other = SharedSegment::Attach({.name = name}, nullptr);
                Registry r(RegistryOptions{.shared = other});
                r.AddCounter({.name = "c"})->Labels({}).Inc();
                return 0;
              })),
              0);
    EXPECT_EQ(CounterTotal(*segment, "c"), 1);
    segment->Leave();
    EXPECT_FALSE(ShmExists(name)) << "the last process to leave removes the name";
  }
  EXPECT_EQ(Wait(Child([&]() -> int {
              auto other = SharedSegment::Attach({.name = name}, nullptr);
              Registry r(RegistryOptions{.shared = other});
              r.AddCounter({.name = "c"})->Labels({}).Add(uint64_t{5});
              _exit(0);  // no destructor, so no Leave()
            })),
            0);
  EXPECT_TRUE(ShmExists(name));
  auto fresh = Attach(name);
  EXPECT_EQ(CounterTotal(*fresh, "c"), 0) << "a stale segment's values do not carry over";
  fresh.reset();
  EXPECT_FALSE(ShmExists(name));
}

TEST(SharedSegment, OptionsComeFromTheEnvironment) {
  std::string error;
  unsetenv("MODELMETRICS_MULTIPROC");
  unsetenv("PROMETHEUS_MULTIPROC_DIR");
  unsetenv("prometheus_multiproc_dir");
  EXPECT_FALSE(SegmentOptionsFromEnvironment(&error).has_value());
  setenv("PROMETHEUS_MULTIPROC_DIR", "/tmp/no-such-dir-of-modelmetrics/", 1);
  EXPECT_FALSE(SegmentOptionsFromEnvironment(&error).has_value());
  EXPECT_THAT(error, HasSubstr("is not a directory: create it before the service starts"));
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / UniqueName("env");
  std::filesystem::create_directory(dir);
  setenv("PROMETHEUS_MULTIPROC_DIR", (dir.string() + "/").c_str(), 1);
  auto options = SegmentOptionsFromEnvironment(&error);
  ASSERT_TRUE(options.has_value()) << error;
  EXPECT_EQ(options->name, RecordedSegmentName(dir.string(), false, &error));
  EXPECT_THAT(options->name, ::testing::StartsWith("modelmetrics-"));
  std::filesystem::remove_all(dir);
  setenv("MODELMETRICS_MULTIPROC", "svc", 1);
  setenv("MODELMETRICS_MULTIPROC_BYTES", "8M", 1);
  setenv("MODELMETRICS_MULTIPROC_PROCESSES", "32", 1);
  options = SegmentOptionsFromEnvironment(&error);
  ASSERT_TRUE(options.has_value());
  EXPECT_EQ(options->name, "svc");
  EXPECT_EQ(options->bytes, size_t{8} << 20);
  EXPECT_EQ(options->process_slots, 32u);
  setenv("MODELMETRICS_MULTIPROC_BYTES", "lots", 1);
  EXPECT_FALSE(SegmentOptionsFromEnvironment(&error).has_value());
  EXPECT_THAT(error, HasSubstr("MODELMETRICS_MULTIPROC_BYTES: 'lots'"));
  setenv("MODELMETRICS_MULTIPROC_BYTES", "8M", 1);
  setenv("MODELMETRICS_MULTIPROC_PROCESSES", "0", 1);
  EXPECT_FALSE(SegmentOptionsFromEnvironment(&error).has_value());
  for (const char* v : {"MODELMETRICS_MULTIPROC", "MODELMETRICS_MULTIPROC_BYTES",
                        "MODELMETRICS_MULTIPROC_PROCESSES", "PROMETHEUS_MULTIPROC_DIR"}) {
    unsetenv(v);
  }
  EXPECT_EQ(SharedSegment::Attach({.name = "../etc"}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("invalid segment name"));
  EXPECT_EQ(SharedSegment::Attach({.name = "x", .bytes = 1000}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("1 MiB"));
}

TEST(SharedSegment, AnObjectThatIsNotASegmentIsRefusedNotReplaced) {
  const std::string name = UniqueName("alien");
  const std::string path = "/dev/shm/" + name;
  {
    // Another program's shared memory under the name.
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    std::fputs(std::string(size_t{2} << 20, 'x').c_str(), f);
    std::fclose(f);
  }
  chmod(path.c_str(), 0600);
  std::string error;
  EXPECT_EQ(SharedSegment::Attach({.name = name}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("exists and is not a modelmetrics segment"));
  EXPECT_TRUE(ShmExists(name)) << "never removed";
  // One open to other users is refused too, whatever it holds.
  chmod(path.c_str(), 0666);
  EXPECT_EQ(SharedSegment::Attach({.name = name}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("open to others"));
  std::remove(path.c_str());
}

TEST(SharedSegment, AReadOnlyViewScrapesWithoutASlotAndCreatesNothing) {
  const std::string name = UniqueName("view");
  std::string error;
  EXPECT_EQ(SharedSegment::Attach({.name = name, .observe_only = true}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("no process of the service has attached"));
  EXPECT_FALSE(ShmExists(name));
  auto segment = Attach(name);
  Registry registry(RegistryOptions{.shared = segment});
  registry.AddCounter({.name = "c"})->Labels({}).Add(uint64_t{4});
  auto view = SharedSegment::Attach({.name = name, .observe_only = true}, &error);
  ASSERT_NE(view, nullptr) << error;
  EXPECT_EQ(view->slot(), -1);
  EXPECT_EQ(CounterTotal(*view, "c"), 4);
  EXPECT_EQ(view->Stats().slots_used, 1u);
  Registry refused(RegistryOptions{.shared = view});
  EXPECT_EQ(refused.AddCounter({.name = "d"}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("read-only view"));
  segment->Leave();  // the service ends: the view sees its name gone
  EXPECT_TRUE(view->Removed());
  EXPECT_FALSE(ShmExists(name));
}

// Another process of the same user scribbles on the directory: a scrape skips what points
// outside the segment, and neither it nor a registration reads or writes out of bounds.
TEST(SharedSegment, ACorruptDirectoryIsSkippedNotFollowed) {
  const std::string name = UniqueName("corrupt");
  auto segment = Attach(name);
  Registry registry(RegistryOptions{.shared = segment});
  auto* good = registry.AddCounter({.name = "good", .labels = {"k"}});
  good->Labels({"a"}).Add(uint64_t{3});
  auto* victim = registry.AddHistogram({.name = "victim", .labels = {"k"}, .buckets = {1}});
  victim->Labels({"b"}).Observe(0.5);
  auto other = Attach(name);  // another process's view, not yet scraped
  const int fd = shm_open(("/" + name).c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  const size_t bytes = size_t{4} << 20;
  auto* map =
      static_cast<uint8_t*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
  close(fd);
  ASSERT_NE(map, MAP_FAILED);
  auto* header = reinterpret_cast<segment::SegmentHeader*>(map);
  auto* families = reinterpret_cast<segment::FamilyRecord*>(map + header->layout.families_offset);
  auto* series = reinterpret_cast<segment::SeriesRecord*>(map + header->layout.series_offset);
  series[1].cell = 0xfffffff0u;           // the victim's cells, far outside a slot
  families[1].bounds = 0x7fffffffu;       // and its bucket count
  families[0].help.offset = 0xfffff000u;  // nothing of `good` changes: its copy was taken...
  header->series.store(0xffffffffu);      // ...and a count past the region
  header->families.store(0xffffffffu);
  header->words_used = ~uint64_t{0};
  header->arena_used = ~uint64_t{0};
  header->layout.words_per_slot = ~uint64_t{0};  // this process keeps its own plan
  // It sees only what is in bounds.
  const auto merged = other->Collect();
  EXPECT_EQ(Find(merged, "victim"), nullptr);
  EXPECT_EQ(Find(merged, "good"), nullptr) << "its help text now points outside the arena";
  EXPECT_NO_FATAL_FAILURE(other->Render(Format::kText));
  // Registering more is refused with the full-segment error, not a write out of bounds.
  Registry more(RegistryOptions{.shared = other});
  std::string error;
  EXPECT_EQ(more.AddCounter({.name = "later", .help = "H."}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("is full"));
  munmap(map, bytes);
}

// Sanitizer builds (GCC's macros, clang's __has_feature).
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MM_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MM_SANITIZED 1
#endif
#endif
#ifndef MM_SANITIZED
#define MM_SANITIZED 0
#endif

long MaxRssKiB() {
  struct rusage usage = {};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

// The record of issue 38's probe: a histogram claiming 57,144 bounds (here even increasing ones,
// the worst case) and every series record the segment can hold claiming its cells. The scrape
// answers the valid families, skips all but one of the claims, and stays small.
TEST(SharedSegment, AHugeCorruptRecordCostsABoundedScrape) {
  const std::string name = UniqueName("huge");
  const size_t bytes = size_t{64} << 20;
  auto segment = Attach(name, 16, bytes);
  Registry registry(RegistryOptions{.shared = segment});
  registry.AddCounter({.name = "good", .labels = {"k"}})->Labels({"a"}).Add(uint64_t{3});
  auto* gauge = registry.AddGauge({.name = "level", .multiprocess_mode = MultiprocessMode::kMax});
  gauge->Labels({}).Set(7);
  Tamper t(name, bytes);
  std::vector<double> bounds(57144);
  for (size_t i = 0; i < bounds.size(); ++i) bounds[i] = static_cast<double>(i + 1);
  const segment::ArenaText bound_text =
      t.Text(std::string_view(reinterpret_cast<const char*>(bounds.data()), bounds.size() * 8));
  const uint32_t evil = t.header->families.load();
  t.families[evil] = {.name = t.Text("evil", 1),
                      .help = {},
                      .unit = {},
                      .labels = {},
                      .bounds_offset = bound_text.offset,
                      .bounds = 57144,
                      .type = static_cast<uint8_t>(MetricType::kHistogram),
                      .mode = 0};
  t.header->families.store(evil + 1);
  const uint32_t first = t.header->series.load();
  const uint32_t last = t.header->layout.max_series;  // 262,144 for 64 MiB
  ASSERT_EQ(last, 262144u);
  for (uint32_t i = first; i < last; ++i) {
    t.series[i] = {
        .family = evil, .values = {}, .cell = static_cast<uint32_t>(t.header->words_used)};
  }
  t.header->series.store(last);
  [[maybe_unused]] const long rss_before = MaxRssKiB();
  for (int scrape = 0; scrape < 3; ++scrape) {
    const std::string text = segment->Render(Format::kText);
    EXPECT_LT(text.size(), size_t{64} << 20);
    const std::vector<MetricFamily> parsed = StrictParse(text);
    EXPECT_THAT(text, HasSubstr("good_total{k=\"a\"} 3.0\n"));
    EXPECT_THAT(text, HasSubstr("level 7.0\n"));
  }
#if !MM_SANITIZED
  // (Sanitizers' shadow memory grows with every byte touched, so the peak is measured only in
  // the plain build.)
  EXPECT_LT(MaxRssKiB() - rss_before, 64 * 1024) << "KiB the scrapes added to the peak";
#endif
  const auto merged = segment->Collect();
  EXPECT_EQ(Skipped(merged, "overlap"), static_cast<double>(last - first - 1));
  ASSERT_NE(Find(merged, "evil"), nullptr);  // the one claim that fits, as it was written
  EXPECT_EQ(Find(merged, "evil")->children.size(), 1u);
}

// One bad byte in a name, a label name or a label value: that family or series is left out, the
// rest of the scrape parses, and the reason shows on the self-metric.
TEST(SharedSegment, InvalidNamesAndTextInRecordsAreSkipped) {
  const std::string name = UniqueName("names");
  auto segment = Attach(name);
  Registry registry(RegistryOptions{.shared = segment});
  registry.AddCounter({.name = "bad_name", .labels = {"k"}})->Labels({"a"}).Inc();
  registry.AddCounter({.name = "bad_label", .labels = {"k"}})->Labels({"a"}).Inc();
  auto* values = registry.AddCounter({.name = "values", .labels = {"k"}});
  values->Labels({"bad"}).Inc();
  values->Labels({"line\nbreak \"quoted\" \\"}).Inc();  // valid UTF-8: escaped, kept
  values->Labels({"fine"}).Inc();
  registry.AddGauge({.name = "newline_help", .help = "one\ntwo \\ three"})->Labels({}).Set(1);
  Tamper t(name, size_t{4} << 20);
  t.NameOf(0)[3] = '\xff';                           // bad\xffname
  (t.arena + t.families[1].labels.offset)[0] = ' ';  // label name " "
  t.ValuesOf(2)[0] = '\xc0';                         // "\xc0ad": not UTF-8
  const std::string text = segment->Render(Format::kText);
  StrictParse(text);
  EXPECT_THAT(text, Not(HasSubstr("\xff")));
  EXPECT_THAT(text, Not(HasSubstr("bad_label_total")));
  EXPECT_THAT(text, Not(HasSubstr("k=\"\xc0"
                                  "ad\"")));
  EXPECT_THAT(text, HasSubstr("values_total{k=\"fine\"} 1.0\n"));
  EXPECT_THAT(text, HasSubstr("values_total{k=\"line\\nbreak \\\"quoted\\\" \\\\\"} 1.0\n"));
  EXPECT_THAT(text, HasSubstr("# HELP newline_help one\\ntwo \\\\ three\n"));
  const auto merged = segment->Collect();
  EXPECT_EQ(Skipped(merged, "bad_name"), 1);
  EXPECT_EQ(Skipped(merged, "bad_label_names"), 1);
  EXPECT_EQ(Skipped(merged, "bad_text"), 1);
  // The series of the two skipped families go with them.
  EXPECT_EQ(Skipped(merged, "no_family"), 2);
}

// A series record copied under another index, or pointed at another family's cells, is not a
// second series: each series renders once.
TEST(SharedSegment, RepeatedOrOverlappingSeriesRecordsRenderOnce) {
  const std::string name = UniqueName("repeat");
  auto segment = Attach(name);
  Registry registry(RegistryOptions{.shared = segment});
  registry.AddCounter({.name = "a", .labels = {"k"}})->Labels({"x"}).Add(uint64_t{2});
  registry.AddCounter({.name = "b", .labels = {"k"}})->Labels({"y"}).Add(uint64_t{5});
  Tamper t(name, size_t{4} << 20);
  const uint32_t n = t.header->series.load();
  segment::SeriesRecord copy = t.series[0];
  copy.cell = static_cast<uint32_t>(t.header->words_used);  // fresh cells, same label set
  t.series[n] = copy;
  segment::SeriesRecord moved = t.series[1];
  moved.family = 0;  // b's cells, claimed for a
  t.series[n + 1] = moved;
  t.header->series.store(n + 2);
  const std::string text = segment->Render(Format::kText);
  StrictParse(text);
  EXPECT_EQ(text.find("a_total{k=\"x\"}"), text.rfind("a_total{k=\"x\"}"));
  EXPECT_THAT(text, Not(HasSubstr("a_total{k=\"y\"}")));
  const auto merged = segment->Collect();
  EXPECT_EQ(Skipped(merged, "duplicate"), 1);
  EXPECT_EQ(Skipped(merged, "overlap"), 1);
  // A process registering the label set the overlapping record claims gets cells of its own,
  // never b's: what it writes is what a scrape shows.
  auto other = Attach(name);
  Registry more(RegistryOptions{.shared = other});
  more.AddCounter({.name = "a", .labels = {"k"}})->Labels({"y"}).Add(uint64_t{7});
  const std::string after = segment->Render(Format::kText);
  EXPECT_THAT(after, HasSubstr("a_total{k=\"y\"} 7.0\n"));
  EXPECT_THAT(after, HasSubstr("b_total{k=\"y\"} 5.0\n"));
}

// Objects another local user plants under a segment's name (tests run as root here, so the
// planted object is handed to uid 65534): a FIFO opens at once and is refused, never waited on;
// an object of another user is refused; neither hangs a reader or a writer.
TEST(SharedSegment, PlantedObjectsAreRefusedWithoutWaiting) {
  for (const bool foreign : {false, true}) {
    const std::string name = UniqueName(foreign ? "fifo-other" : "fifo");
    const std::string path = "/dev/shm/" + name;
    ASSERT_EQ(mkfifo(path.c_str(), 0600), 0);
    if (foreign) {
      ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);
    }
    for (const bool observe : {true, false}) {
      const auto start = std::chrono::steady_clock::now();
      std::string error;
      EXPECT_EQ(
          SharedSegment::Attach(
              {.name = name, .bytes = size_t{1} << 20, .process_slots = 4, .observe_only = observe},
              &error),
          nullptr);
      EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
      EXPECT_THAT(error, HasSubstr("not a shared-memory object"));
    }
    unlink(path.c_str());
  }
  // A plain object of another user, mode 0600: refused with its mode in octal.
  const std::string name = UniqueName("squat");
  const std::string path = "/dev/shm/" + name;
  const int fd = open(path.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  close(fd);
  ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);
  std::string error;
  EXPECT_EQ(SharedSegment::Attach({.name = name}, &error), nullptr);
  EXPECT_THAT(error, HasSubstr("belongs to another user or is open to others (mode 0600)"));
  unlink(path.c_str());
}

// A multiprocess directory records one random name, which processes starting at once agree on;
// an object another user made under the name the directory's path would give changes nothing.
TEST(SharedSegment, ADirectoryRecordsARandomNameTheProcessesShare) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / UniqueName("dir");
  std::filesystem::create_directory(dir);
  const std::string predictable = "/dev/shm/" + SegmentNameForDirectory(dir.string());
  const int squat = open(predictable.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(squat, 0);
  close(squat);
  ASSERT_EQ(chown(predictable.c_str(), 65534, 65534), 0);
  std::string error;
  // Nothing recorded yet: a reader gets the path's name (and finds no service there).
  EXPECT_EQ(RecordedSegmentName(dir.string(), false, &error),
            SegmentNameForDirectory(dir.string()));
  // Eight processes at once: one name, recorded once.
  std::vector<pid_t> children;
  for (int i = 0; i < 8; ++i) {
    children.push_back(Child([&] {
      std::string e;
      const auto name = RecordedSegmentName(dir.string(), true, &e);
      if (!name) return 2;
      const std::string out = (dir / ("child-" + std::to_string(getpid()))).string();
      FILE* f = std::fopen(out.c_str(), "w");
      std::fputs(name->c_str(), f);
      std::fclose(f);
      return 0;
    }));
  }
  for (pid_t pid : children) EXPECT_EQ(Wait(pid), 0);
  const auto recorded = RecordedSegmentName(dir.string(), false, &error);
  ASSERT_TRUE(recorded.has_value()) << error;
  EXPECT_THAT(*recorded, ::testing::MatchesRegex("modelmetrics-[0-9a-f]{32}"));
  EXPECT_NE(*recorded, SegmentNameForDirectory(dir.string()));
  int seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string file = entry.path().filename().string();
    if (!file.starts_with("child-")) continue;
    std::ifstream in(entry.path());
    std::string name;
    in >> name;
    EXPECT_EQ(name, *recorded);
    ++seen;
  }
  EXPECT_EQ(seen, 8);
  auto segment = Attach(*recorded);  // the service starts beside the squatted name
  EXPECT_NE(segment, nullptr);
  segment.reset();
  // A recorded file this user does not own, or that others may write, is refused.
  const std::string file = (dir / std::string(kSegmentNameFile)).string();
  chmod(file.c_str(), 0622);
  EXPECT_FALSE(RecordedSegmentName(dir.string(), true, &error).has_value());
  EXPECT_THAT(error, HasSubstr("is not a segment name this user recorded"));
  unlink(predictable.c_str());
  std::filesystem::remove_all(dir);
}

// The directory lock's holder stopped (SIGSTOP) inside an append: this process keeps recording
// and rendering, and a registration gives up after kDirectoryWait with an error naming the
// holder. Once the holder is dead, or when the lock word names no process of the service, the
// lock is taken over at once.
TEST(SharedSegment, AStoppedLockHolderCostsOneBoundedRegistrationAndADeadOneNothing) {
  const std::string name = UniqueName("lock");
  auto segment = Attach(name);
  Registry registry(RegistryOptions{.shared = segment});
  auto* family = registry.AddCounter({.name = "jobs", .labels = {"k"}});
  Counter a = family->Labels({"a"});
  const pid_t holder = Child([&] {
    Tamper t(name, size_t{4} << 20);
    // The lock word as a holder writes it: pid, slot + 1, the slot's generation (segment_layout.h).
    auto* slots = reinterpret_cast<segment::ProcessSlot*>(reinterpret_cast<uint8_t*>(t.header) +
                                                          t.header->layout.slots_offset);
    const uint64_t generation = slots[segment->slot()].generation.load();
    t.header->directory_lock.store(generation << 45 | (uint64_t(segment->slot()) + 1) << 32 |
                                   uint32_t(getpid()));
    raise(SIGSTOP);
    return 0;
  });
  int status = 0;
  ASSERT_EQ(waitpid(holder, &status, WUNTRACED), holder);
  ASSERT_TRUE(WIFSTOPPED(status));
  std::atomic<bool> done{false};
  std::atomic<int64_t> longest_gap_us{0};
  std::thread heartbeat([&] {  // records and renders while the registration waits
    auto last = std::chrono::steady_clock::now();
    while (!done) {
      a.Inc();
      (void)segment->Render(Format::kText);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      const auto now = std::chrono::steady_clock::now();
      longest_gap_us = std::max<int64_t>(
          longest_gap_us,
          std::chrono::duration_cast<std::chrono::microseconds>(now - last).count());
      last = now;
    }
  });
  ::testing::internal::CaptureStderr();
  const auto start = std::chrono::steady_clock::now();
  Counter b = family->Labels({"b"});
  const auto waited = std::chrono::steady_clock::now() - start;
  done = true;
  heartbeat.join();
  EXPECT_THAT(::testing::internal::GetCapturedStderr(),
              HasSubstr("held by process " + std::to_string(holder) + " of the service"));
  EXPECT_GE(waited, segment::kDirectoryWait);
  EXPECT_LT(waited, segment::kDirectoryWait + std::chrono::seconds(2));
  EXPECT_LT(longest_gap_us.load(), 100000) << "the heartbeat stalled";
  const double a_before = CounterTotal(*segment, "jobs");
  EXPECT_GT(a_before, 1) << "recording went on meanwhile";
  // The new child records in this process until it joins the segment.
  ASSERT_TRUE(b.live());
  b.Add(uint64_t{5});
  // A new family meanwhile records in this process too, instead of failing its caller.
  auto* late = registry.AddHistogram({.name = "late", .buckets = {1}});
  ASSERT_NE(late, nullptr);
  late->Labels({}).Observe(0.5);
  EXPECT_EQ(segment->StuckDirectoryHolder(), holder);
  EXPECT_EQ(CounterTotal(*segment, "jobs"), a_before) << "b is not in the segment yet";
  // Its holder dead: taken over at once, and what b and late recorded meanwhile joins the
  // segment, once.
  kill(holder, SIGKILL);
  EXPECT_EQ(Wait(holder), 128 + SIGKILL);
  b.Inc();
  auto joined = [&] {
    const auto merged = segment->Collect();
    const MergedFamily* h = Find(merged, "late");
    return CounterTotal(*segment, "jobs") == a_before + 6 && h != nullptr &&
           h->children.size() == 1 && h->children[0].count == 1 && h->children[0].sum == 0.5;
  };
  // One sync now, as SharedSegment::Leave does at exit: everything is in, at once.
  metrics_internal::pending_shares::SyncNow();
  ASSERT_TRUE(joined()) << segment->Render(Format::kText);
  b.Inc();
  EXPECT_TRUE(modelmetrics::testing::WaitUntil([&] {
    return CounterTotal(*segment, "jobs") == a_before + 7;
  })) << "later increments follow: "
      << segment->Render(Format::kText);
  auto quick = [&](const char* label) {
    const auto t0 = std::chrono::steady_clock::now();
    std::string refused;
    const std::string_view values[] = {label};
    EXPECT_TRUE(family->Labels(values, Family<Counter>::kNow, &refused).live())
        << label << ": " << refused;
    EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::milliseconds(200)) << label;
  };
  quick("after-death");
  // A word naming no process of the service (garbage, or a pid no slot of it has): at once too.
  Tamper t(name, size_t{4} << 20);
  t.header->directory_lock.store(uint64_t{9999} << 32 | 1);
  quick("garbage-slot");
  t.header->directory_lock.store((uint64_t(segment->slot()) + 1) << 32 | 1);  // pid 1: not ours
  quick("foreign-pid");
  // This very process and slot, but an earlier taking of the slot (a reused pid): stale.
  auto* own_slots = reinterpret_cast<segment::ProcessSlot*>(reinterpret_cast<uint8_t*>(t.header) +
                                                            t.header->layout.slots_offset);
  const uint64_t generation = own_slots[segment->slot()].generation.load();
  t.header->directory_lock.store(((generation - 1) & ((uint64_t{1} << 19) - 1)) << 45 |
                                 (uint64_t(segment->slot()) + 1) << 32 | uint32_t(getpid()));
  quick("earlier-generation");
  // This process's own current word, left by a holding that never released it: stale too.
  t.header->directory_lock.store(generation << 45 | (uint64_t(segment->slot()) + 1) << 32 |
                                 uint32_t(getpid()));
  quick("own-word");
}

TEST(SharedSegment, ThreadsOfOneProcessShareItsSlotExactly) {
  const std::string name = UniqueName("threads");
  auto segment = Attach(name);
  Registry registry(RegistryOptions{.shared = segment});
  Counter counter = registry.AddCounter({.name = "c"})->Labels({});
  Histogram hist = registry.AddHistogram({.name = "h", .buckets = {1}})->Labels({});
  Gauge gauge = registry.AddGauge({.name = "g"})->Labels({});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) {
        counter.Inc();
        hist.Observe(0.5);
        gauge.Inc();
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(counter.Value(), 80000);
  EXPECT_EQ(hist.Read().count, 80000u);
  EXPECT_EQ(hist.Read().sum, 40000);
  EXPECT_EQ(gauge.Value(), 80000);
}

}  // namespace
}  // namespace modelmetrics
