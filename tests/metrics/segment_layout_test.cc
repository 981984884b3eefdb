// The shared segment's byte layout and how a process finds its way into one: the geometry
// PlanLayout computes from the size and the process slots (segment_layout.h), the bounds Attach
// checks before touching shared memory, the header check that refuses a segment of another
// format or geometry (and replaces only one of ours left behind), and the options read from the
// environment with their errors (segment_options.cc), the names a directory gives and records,
// and the multiprocess modes by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "metrics/segment_layout.h"
#include "modelmetrics/metrics.h"
#include "modelmetrics/shared_segment.h"
#include "segment_test_util.h"

namespace modelmetrics {
namespace {

using segment::Layout;
using segment::PlanLayout;
using segment_testing::Attach;
using segment_testing::CounterTotal;
using segment_testing::ShmExists;
using segment_testing::Tamper;
using segment_testing::UniqueName;
using ::testing::HasSubstr;

constexpr size_t kMiB = size_t{1} << 20;

// The invariants every plan keeps: regions in order, each on a cache line, none overlapping the
// next, every slot's cells inside the segment and a whole number of cache lines.
void ExpectWellFormed(const Layout& l, size_t bytes, uint32_t slots) {
  SCOPED_TRACE(::testing::Message() << bytes << " bytes, " << slots << " slots");
  EXPECT_EQ(l.bytes, bytes);
  EXPECT_EQ(l.process_slots, slots);
  EXPECT_EQ(l.max_families, segment::kMaxFamilies);
  EXPECT_EQ(l.max_series, bytes / 256);
  EXPECT_EQ(l.slots_offset, segment::kHeaderBytes);
  for (uint64_t offset : {l.slots_offset, l.families_offset, l.series_offset, l.arena_offset,
                          l.cells_offset, l.arena_bytes}) {
    EXPECT_EQ(offset % 64, 0u) << offset;
  }
  EXPECT_GE(l.families_offset, l.slots_offset + uint64_t{slots} * sizeof(segment::ProcessSlot));
  EXPECT_GE(l.series_offset,
            l.families_offset + uint64_t{l.max_families} * sizeof(segment::FamilyRecord));
  EXPECT_GE(l.arena_offset,
            l.series_offset + uint64_t{l.max_series} * sizeof(segment::SeriesRecord));
  EXPECT_GE(l.cells_offset, l.arena_offset + l.arena_bytes);
  EXPECT_GE(l.arena_bytes, bytes / 16);
  EXPECT_LT(l.arena_bytes, bytes / 16 + 64);
  EXPECT_EQ(l.words_per_slot % 8, 0u) << "whole cache lines per slot";
  EXPECT_GE(l.words_per_slot, 64u);
  EXPECT_LE(l.cells_offset + uint64_t{slots} * l.words_per_slot * 8, bytes);
  // As many words as fit: one more cache line per slot would not.
  EXPECT_GT(l.cells_offset + uint64_t{slots} * (l.words_per_slot + 8) * 8, bytes);
}

TEST(SegmentLayout, EveryPlanKeepsItsRegionsInOrderOnCacheLines) {
  for (size_t bytes : {kMiB, kMiB + 4096, 3 * kMiB + 8, 64 * kMiB, size_t{1} << 30}) {
    for (uint32_t slots : {1u, 2u, 7u, 16u, 128u, 1000u}) {
      const std::optional<Layout> plan = PlanLayout(bytes, slots);
      if (!plan) {
        EXPECT_TRUE(bytes == kMiB || bytes == kMiB + 4096) << bytes << " " << slots;
        continue;
      }
      ExpectWellFormed(*plan, bytes, slots);
    }
  }
}

// The record sizes are part of the format every process of a service must agree on.
TEST(SegmentLayout, RecordSizesAreTheFormats) {
  EXPECT_EQ(sizeof(segment::ProcessSlot), 64u);
  EXPECT_EQ(sizeof(segment::FamilyRecord), 44u);
  EXPECT_EQ(sizeof(segment::SeriesRecord), 16u);
  EXPECT_EQ(sizeof(segment::ArenaText), 8u);
  EXPECT_EQ(offsetof(segment::SegmentHeader, directory_lock), 96u);
  EXPECT_LE(sizeof(segment::SegmentHeader), segment::kHeaderBytes);
}

// One MiB, worked by hand: header 4096 | 1 slot (64) | 4096 families x 44 | 4096 series x 16 |
// arena 64 KiB | cells.
TEST(SegmentLayout, OneMiBForOneProcessWorkedByHand) {
  const std::optional<Layout> plan = PlanLayout(kMiB, 1);
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->slots_offset, 4096u);
  EXPECT_EQ(plan->families_offset, 4160u);
  EXPECT_EQ(plan->series_offset, 4160u + 4096u * 44u);  // 184384, already on a cache line
  EXPECT_EQ(plan->max_series, 4096u);
  EXPECT_EQ(plan->arena_offset, 184384u + 4096u * 16u);
  EXPECT_EQ(plan->arena_bytes, 65536u);
  EXPECT_EQ(plan->cells_offset, 249920u + 65536u);
  EXPECT_EQ(plan->words_per_slot, (kMiB - 315456u) / 8);  // 91640: a whole number of lines
  // 64 slots: the slot table grows by 63 lines, and the rest is shared out in whole lines.
  const std::optional<Layout> many = PlanLayout(kMiB, 64);
  ASSERT_TRUE(many.has_value());
  EXPECT_EQ(many->families_offset, 8192u);
  EXPECT_EQ(many->cells_offset, 319488u);
  EXPECT_EQ(many->words_per_slot, 1424u);  // (1 MiB - 319488) / 64 / 8 = 1424
}

// The most slots a size holds leave each at least 64 words (8 cache lines); one more is refused,
// by PlanLayout and by Attach, which creates nothing then.
TEST(SegmentLayout, TooManySlotsForTheSizeAreRefused) {
  EXPECT_FALSE(PlanLayout(kMiB, 0).has_value());
  // cells_offset = 315392 + 64 * slots; (1 MiB - cells_offset) / slots >= 512 bytes up to 1272.
  const std::optional<Layout> most = PlanLayout(kMiB, 1272);
  ASSERT_TRUE(most.has_value());
  EXPECT_EQ(most->words_per_slot, 64u);
  EXPECT_FALSE(PlanLayout(kMiB, 1273).has_value());
  EXPECT_FALSE(PlanLayout(kMiB, segment::kMaxProcessSlots).has_value());
  for (uint32_t slots = 1; slots <= 1300; slots += 37) {  // fewer slots never hold fewer words
    const auto a = PlanLayout(kMiB, slots), b = PlanLayout(kMiB, slots + 1);
    if (a && b) {
      EXPECT_GE(a->words_per_slot, b->words_per_slot) << slots;
    }
    if (!a) {
      EXPECT_FALSE(b.has_value()) << slots;
    }
  }
  const std::string name = UniqueName("slots");
  std::string error;
  EXPECT_EQ(SharedSegment::Attach({.name = name, .bytes = kMiB, .process_slots = 1273}, &error),
            nullptr);
  EXPECT_EQ(error,
            "MODELMETRICS_MULTIPROC_BYTES: 1048576 bytes leave too few cells for 1273 "
            "process slots");
  EXPECT_FALSE(ShmExists(name)) << "a segment that could not be made is removed";
  auto segment =
      SharedSegment::Attach({.name = name, .bytes = kMiB, .process_slots = 1272}, &error);
  ASSERT_NE(segment, nullptr) << error;
  EXPECT_EQ(segment->Stats().cell_words_per_slot, 64u);
  EXPECT_EQ(segment->slot(), 0);
}

TEST(SegmentLayout, AttachRefusesNamesAndSizesOutOfBoundsBeforeTouchingMemory) {
  const std::string base = UniqueName("bounds");
  struct Case {
    SegmentOptions options;
    std::string error;
  };
  const std::string long_name = base + std::string(201 - base.size(), 'x');
  const std::vector<Case> cases = {
      {{.name = ""}, "invalid segment name '' (1-200 of A-Z a-z 0-9 . _ -)"},
      {{.name = "." + base}, "invalid segment name '." + base + "'"},
      {{.name = base + "/x"}, "invalid segment name"},
      {{.name = base + " x"}, "invalid segment name"},
      {{.name = base + "\xc3\xa9"}, "invalid segment name"},
      {{.name = long_name}, "invalid segment name"},
      {{.name = base, .bytes = kMiB - 1}, "segment size must be 1 MiB .. 4 GiB, not 1048575"},
      {{.name = base, .bytes = (size_t{4} << 30) + 1},
       "segment size must be 1 MiB .. 4 GiB, not 4294967297"},
      {{.name = base, .process_slots = 0}, "process slots must be 1 .. 4096, not 0"},
      {{.name = base, .process_slots = 4097}, "process slots must be 1 .. 4096, not 4097"},
  };
  for (const Case& c : cases) {
    std::string error;
    EXPECT_EQ(SharedSegment::Attach(c.options, &error), nullptr) << c.options.name;
    EXPECT_THAT(error, HasSubstr(c.error));
  }
  EXPECT_FALSE(ShmExists(base));
  EXPECT_FALSE(ShmExists(long_name));
  // The longest name and the smallest size are in bounds.
  const std::string longest = base + std::string(200 - base.size(), 'y');
  auto segment = Attach(longest, 1, kMiB);
  ASSERT_NE(segment, nullptr);
  EXPECT_EQ(segment->name(), longest);
  EXPECT_TRUE(ShmExists(longest));
  segment.reset();
  EXPECT_FALSE(ShmExists(longest));
  EXPECT_EQ(SharedSegment::Attach({.name = ""}, nullptr), nullptr) << "no error wanted: none given";
}

// A process (or a read-only view) opening a segment in use checks its header against the plan it
// computes itself for the object's size: another version, another magic number or any region
// that differs is refused, and the segment in use is left as it was.
TEST(SegmentHeader, AnotherFormatOrGeometryIsRefusedWhileInUse) {
  const std::string name = UniqueName("header");
  auto segment = Attach(name, 8, 2 * kMiB);
  ASSERT_NE(segment, nullptr);
  Registry registry(RegistryOptions{.shared = segment});
  registry.AddCounter({.name = "kept"})->Labels({}).Add(uint64_t{3});
  Tamper t(name, 2 * kMiB);
  EXPECT_EQ(t.header->magic.load(), segment::kMagic);
  EXPECT_EQ(t.header->version, segment::kVersion);
  const Layout saved = t.header->layout;
  ASSERT_EQ(saved, *PlanLayout(2 * kMiB, 8)) << "the creator records its own plan";
  const std::string not_ours = "/dev/shm/" + name + " is not a modelmetrics segment";
  const std::string geometry = not_ours + " (its header does not describe its size)";
  struct Mutation {
    const char* what;
    std::function<void(segment::SegmentHeader&)> apply;
    std::string error;
  };
  const std::vector<Mutation> mutations = {
      {"newer version", [](auto& h) { h.version = segment::kVersion + 1; },
       not_ours + " of this version"},
      {"older version", [](auto& h) { h.version = segment::kVersion - 1; },
       not_ours + " of this version"},
      {"magic", [](auto& h) { h.magic.store(segment::kMagic ^ 1); }, not_ours + " of this version"},
      {"slots", [](auto& h) { h.layout.process_slots = 9; }, geometry},
      {"slots past the bound", [](auto& h) { h.layout.process_slots = 5000; }, geometry},
      {"bytes", [](auto& h) { h.layout.bytes = 4 * kMiB; }, geometry},
      {"series", [](auto& h) { h.layout.max_series -= 1; }, geometry},
      {"families", [](auto& h) { h.layout.max_families += 1; }, geometry},
      {"arena", [](auto& h) { h.layout.arena_bytes += 64; }, geometry},
      {"cells", [](auto& h) { h.layout.cells_offset += 64; }, geometry},
      {"words", [](auto& h) { h.layout.words_per_slot += 8; }, geometry},
      {"reserved", [](auto& h) { h.layout.reserved = 1; }, geometry},
  };
  for (const Mutation& m : mutations) {
    SCOPED_TRACE(m.what);
    m.apply(*t.header);
    for (const bool observe : {false, true}) {
      std::string error;
      EXPECT_EQ(SharedSegment::Attach({.name = name, .observe_only = observe}, &error), nullptr);
      EXPECT_EQ(error, m.error);
    }
    t.header->magic.store(segment::kMagic);
    t.header->version = segment::kVersion;
    t.header->layout = saved;
  }
  EXPECT_EQ(segment->Stats().slots_used, 1u) << "no refused process took a slot";
  auto other = Attach(name, 8, 2 * kMiB);  // the header restored: in again
  ASSERT_NE(other, nullptr);
  EXPECT_EQ(other->slot(), 1);
  EXPECT_EQ(CounterTotal(*other, "kept"), 3);
}

// The object's size is what every process plans from: grown or shrunk under the processes
// using it, its header no longer describes it and no further process joins.
TEST(SegmentHeader, AnObjectResizedUnderItsProcessesIsRefused) {
  const std::string name = UniqueName("resized");
  auto segment = Attach(name, 4, kMiB);
  ASSERT_NE(segment, nullptr);
  const int fd = shm_open(("/" + name).c_str(), O_RDWR, 0);
  ASSERT_GE(fd, 0);
  std::string error;
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(2 * kMiB)), 0);
  EXPECT_EQ(SharedSegment::Attach({.name = name, .bytes = 2 * kMiB, .process_slots = 4}, &error),
            nullptr);
  EXPECT_EQ(error, "/dev/shm/" + name +
                       " is not a modelmetrics segment (its header does not describe its size)");
  // Shrunk below the smallest segment: refused by its size before anything is mapped. (Nothing
  // of the segment past its slot table has been written, so shrinking loses nothing.)
  ASSERT_EQ(ftruncate(fd, 65536), 0);
  EXPECT_EQ(SharedSegment::Attach({.name = name, .observe_only = true}, &error), nullptr);
  EXPECT_EQ(error, "/dev/shm/" + name + " is not a modelmetrics segment (size 65536)");
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(kMiB)), 0);
  close(fd);
  auto view = SharedSegment::Attach({.name = name, .observe_only = true}, &error);
  ASSERT_NE(view, nullptr) << error;
  EXPECT_EQ(view->Stats().slots_used, 1u);
}

// Writes a segment header into a new object nobody is attached to, as a process that died (or
// an older or newer release, or another program) left it.
void Plant(const std::string& name, size_t bytes, uint64_t magic, uint32_t version) {
  const int fd = shm_open(("/" + name).c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(bytes)), 0);
  if (bytes >= sizeof(segment::SegmentHeader)) {
    void* map = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    ASSERT_NE(map, MAP_FAILED);
    auto* header = static_cast<segment::SegmentHeader*>(map);
    header->version = version;
    header->layout = PlanLayout(bytes, 4).value_or(Layout{});
    header->families.store(5);  // records a new run must not inherit
    header->series.store(9);
    header->magic.store(magic);
    munmap(map, bytes);
  }
  close(fd);
}

TEST(SegmentHeader, ALeftBehindObjectIsReplacedOnlyWhenItIsOurs) {
  struct Case {
    const char* what;
    size_t bytes;
    uint64_t magic;
    uint32_t version;
    bool replaced;
  };
  const std::vector<Case> cases = {
      {"ours", kMiB, segment::kMagic, segment::kVersion, true},
      {"an older release's", kMiB, segment::kMagic, segment::kVersion - 1, true},
      {"a creator that died before finishing", kMiB, 0, 0, true},
      {"empty", 0, 0, 0, true},
      {"a newer release's", kMiB, segment::kMagic, segment::kVersion + 1, false},
      {"another program's", kMiB, 0x1234, segment::kVersion, false},
      {"zero magic, some version", kMiB, 0, 1, false},
      {"shorter than a header", 100, 0, 0, false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string name = UniqueName("left");
    Plant(name, c.bytes, c.magic, c.version);
    std::string error;
    auto segment = SharedSegment::Attach({.name = name, .bytes = kMiB, .process_slots = 4}, &error);
    if (c.replaced) {
      ASSERT_NE(segment, nullptr) << error;
      const SegmentStats stats = segment->Stats();
      EXPECT_EQ(stats.families, 0u) << "a new run starts from zero";
      EXPECT_EQ(stats.series, 0u);
      EXPECT_EQ(stats.slots_used, 1u);
      segment.reset();
      EXPECT_FALSE(ShmExists(name));
    } else {
      EXPECT_EQ(segment, nullptr);
      EXPECT_EQ(error, "/dev/shm/" + name +
                           " exists and is not a modelmetrics segment; remove it or choose "
                           "another name");
      EXPECT_TRUE(ShmExists(name)) << "never removed";
      shm_unlink(("/" + name).c_str());
    }
  }
}

// Sets (or unsets, with nullptr) environment variables for one scope, restoring them after.
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> values) {
    for (const char* name : {"MODELMETRICS_MULTIPROC", "MODELMETRICS_MULTIPROC_BYTES",
                             "MODELMETRICS_MULTIPROC_PROCESSES", "PROMETHEUS_MULTIPROC_DIR",
                             "prometheus_multiproc_dir"}) {
      const char* old = std::getenv(name);
      saved_.emplace_back(name, old != nullptr ? std::optional<std::string>(old) : std::nullopt);
      unsetenv(name);
    }
    for (const auto& [name, value] : values) Set(name, value);
  }
  ~ScopedEnv() {
    for (const auto& [name, value] : saved_) Set(name.c_str(), value ? value->c_str() : nullptr);
  }
  static void Set(const char* name, const char* value) {
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

TEST(SegmentOptionsEnvironment, SizesTakeASuffixAndStayWithinFourGiB) {
  const std::vector<std::pair<const char*, size_t>> accepted = {
      {"1048576", kMiB},       {"64k", 64 * 1024},
      {"64K", 64 * 1024},      {"3m", 3 * kMiB},
      {"8M", 8 * kMiB},        {"1g", kMiB * 1024},
      {"4G", size_t{4} << 30}, {"4096M", size_t{4} << 30},
      {"000000000012", 12},    {"4294967296", size_t{4} << 30},
  };
  for (const auto& [text, bytes] : accepted) {
    ScopedEnv env({{"MODELMETRICS_MULTIPROC", "svc"}, {"MODELMETRICS_MULTIPROC_BYTES", text}});
    std::string error;
    const auto options = SegmentOptionsFromEnvironment(&error);
    ASSERT_TRUE(options.has_value()) << text << ": " << error;
    EXPECT_EQ(options->bytes, bytes) << text;
    EXPECT_EQ(options->process_slots, 128u) << "the default";
  }
  for (const char* text : {"5G", "4097M", "4294967297", "M", "k", "1.5G", "-1", " 8M", "8 M", "8MB",
                           "0x10", "1T", "1234567890123"}) {
    ScopedEnv env({{"MODELMETRICS_MULTIPROC", "svc"}, {"MODELMETRICS_MULTIPROC_BYTES", text}});
    std::string error;
    EXPECT_FALSE(SegmentOptionsFromEnvironment(&error).has_value()) << text;
    EXPECT_EQ(error, std::string("MODELMETRICS_MULTIPROC_BYTES: '") + text +
                         "' is not a size (e.g. 64M, up to 4G)");
  }
  // A size the parser takes but a segment cannot have is Attach's to refuse.
  ScopedEnv env({{"MODELMETRICS_MULTIPROC", "svc"}, {"MODELMETRICS_MULTIPROC_BYTES", "1K"}});
  std::string error;
  const auto options = SegmentOptionsFromEnvironment(&error);
  ASSERT_TRUE(options.has_value());
  EXPECT_EQ(options->bytes, 1024u);
  EXPECT_EQ(SharedSegment::Attach(*options, &error), nullptr);
  EXPECT_EQ(error, "segment size must be 1 MiB .. 4 GiB, not 1024");
}

TEST(SegmentOptionsEnvironment, ProcessesAreAPlainNumberFromOneTo4096) {
  for (const auto& [text, slots] : std::vector<std::pair<const char*, uint32_t>>{
           {"1", 1}, {"16", 16}, {"0128", 128}, {"4096", 4096}}) {
    ScopedEnv env({{"MODELMETRICS_MULTIPROC", "svc"}, {"MODELMETRICS_MULTIPROC_PROCESSES", text}});
    std::string error;
    const auto options = SegmentOptionsFromEnvironment(&error);
    ASSERT_TRUE(options.has_value()) << text << ": " << error;
    EXPECT_EQ(options->process_slots, slots);
    EXPECT_EQ(options->bytes, 64 * kMiB) << "the default";
  }
  for (const char* text :
       {"0", "4097", "1K", "2k", "-4", "+4", "four", "4.0", " 4", "99999999999999"}) {
    ScopedEnv env({{"MODELMETRICS_MULTIPROC", "svc"}, {"MODELMETRICS_MULTIPROC_PROCESSES", text}});
    std::string error;
    EXPECT_FALSE(SegmentOptionsFromEnvironment(&error).has_value()) << text;
    EXPECT_EQ(error, std::string("MODELMETRICS_MULTIPROC_PROCESSES: '") + text +
                         "' is not a number of processes (1 .. 4096)");
  }
}

// MODELMETRICS_MULTIPROC names the segment; else PROMETHEUS_MULTIPROC_DIR, else its old lower-case
// spelling, gives the name recorded in that directory. Empty values count as unset.
TEST(SegmentOptionsEnvironment, TheNameComesFromTheFirstVariableSet) {
  const std::filesystem::path upper = std::filesystem::temp_directory_path() / UniqueName("upper");
  const std::filesystem::path lower = std::filesystem::temp_directory_path() / UniqueName("lower");
  std::filesystem::create_directory(upper);
  std::filesystem::create_directory(lower);
  std::string error;
  {
    ScopedEnv env({});
    EXPECT_FALSE(SegmentOptionsFromEnvironment(&error).has_value()) << "not multiprocess";
  }
  {
    ScopedEnv env({{"MODELMETRICS_MULTIPROC", ""}, {"PROMETHEUS_MULTIPROC_DIR", ""}});
    EXPECT_FALSE(SegmentOptionsFromEnvironment(&error).has_value()) << "empty is unset";
  }
  {
    ScopedEnv env({{"MODELMETRICS_MULTIPROC", "named"},
                   {"PROMETHEUS_MULTIPROC_DIR", upper.c_str()},
                   {"prometheus_multiproc_dir", lower.c_str()}});
    ASSERT_TRUE(SegmentOptionsFromEnvironment(&error).has_value());
    EXPECT_EQ(SegmentOptionsFromEnvironment(&error)->name, "named");
    EXPECT_FALSE(std::filesystem::exists(upper / std::string(kSegmentNameFile)))
        << "a directory not used records nothing";
  }
  {
    ScopedEnv env({{"MODELMETRICS_MULTIPROC", ""},
                   {"PROMETHEUS_MULTIPROC_DIR", upper.c_str()},
                   {"prometheus_multiproc_dir", lower.c_str()}});
    const auto options = SegmentOptionsFromEnvironment(&error);
    ASSERT_TRUE(options.has_value()) << error;
    EXPECT_EQ(options->name, RecordedSegmentName(upper.string(), false, &error));
    EXPECT_TRUE(std::filesystem::exists(upper / std::string(kSegmentNameFile)));
  }
  {
    ScopedEnv env({{"prometheus_multiproc_dir", lower.c_str()}});
    const auto options = SegmentOptionsFromEnvironment(&error);
    ASSERT_TRUE(options.has_value()) << error;
    EXPECT_EQ(options->name, RecordedSegmentName(lower.string(), false, &error));
    EXPECT_NE(options->name, RecordedSegmentName(upper.string(), false, &error));
  }
  {
    ScopedEnv env({{"prometheus_multiproc_dir", "/no/such/dir/of/modelmetrics"}});
    EXPECT_FALSE(SegmentOptionsFromEnvironment(&error).has_value());
    EXPECT_EQ(error,
              "PROMETHEUS_MULTIPROC_DIR /no/such/dir/of/modelmetrics is not a directory: create it "
              "before the service starts (prometheus_client needs it too)");
  }
  std::filesystem::remove_all(upper);
  std::filesystem::remove_all(lower);
}

// What a directory's recorded-name file may hold: a plain private file of this user's with
// `modelmetrics-` and 32 lower-case hex digits (trailing newlines allowed). Anything else is an
// error naming the file, never a name to attach to.
TEST(SegmentNames, ARecordedNameMustBeAPrivatePlainFileWithAValidName) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / UniqueName("rec");
  std::filesystem::create_directory(dir);
  const std::filesystem::path file = dir / std::string(kSegmentNameFile);
  const std::string valid = "modelmetrics-0123456789abcdef0123456789abcdef";
  auto record = [&](const std::string& text) {
    std::filesystem::remove_all(file);
    std::ofstream(file) << text;
    chmod(file.c_str(), 0600);
  };
  std::string error;
  for (const std::string& text : {valid, valid + "\n", valid + "\n\n"}) {
    record(text);
    for (const bool create : {false, true}) {
      EXPECT_EQ(RecordedSegmentName(dir.string(), create, &error), valid) << error;
    }
  }
  const std::string refused = file.string() +
                              " is not a segment name this user recorded (a plain file of this "
                              "user's, writable by nobody else, holding modelmetrics-<hex>); "
                              "remove it";
  for (const std::string& text :
       {std::string(), std::string("modelmetrics-0123"), valid + "0",
        std::string("modelmetrics-0123456789ABCDEF0123456789ABCDEF"),
        std::string("prometheus-0123456789abcdef0123456789abcdef0"), " " + valid, valid + " ",
        std::string("modelmetrics-0123456789abcdef0123456789abcdeg")}) {
    record(text);
    error.clear();
    EXPECT_FALSE(RecordedSegmentName(dir.string(), true, &error).has_value()) << text;
    EXPECT_EQ(error, refused) << text;
    EXPECT_EQ(std::filesystem::file_size(file), text.size()) << "never replaced";
  }
  record(valid);
  chmod(file.c_str(), 0620);  // writable by the group
  EXPECT_FALSE(RecordedSegmentName(dir.string(), false, &error).has_value());
  EXPECT_EQ(error, refused);
  // A directory or a symbolic link under the name: refused, not followed.
  std::filesystem::remove_all(file);
  std::filesystem::create_directory(file);
  EXPECT_FALSE(RecordedSegmentName(dir.string(), true, &error).has_value());
  EXPECT_EQ(error, refused);
  std::filesystem::remove_all(file);
  const std::filesystem::path target = dir / "target";
  std::ofstream(target) << valid;
  chmod(target.c_str(), 0600);
  std::filesystem::create_symlink(target, file);
  EXPECT_FALSE(RecordedSegmentName(dir.string(), true, &error).has_value());
  EXPECT_THAT(error, HasSubstr(file.string() + ": "));
  std::filesystem::remove_all(dir);
}

// Without a recorded name the directory's resolved path gives one (FNV-1a, 16 hex digits), the
// same for every spelling of the path.
TEST(SegmentNames, ADirectoryWithoutARecordedNameGivesItsPathsName) {
  EXPECT_EQ(SegmentNameForDirectory("/"), "modelmetrics-af63a24c860189fe");
  EXPECT_EQ(SegmentNameForDirectory("/no/such/dir"), "modelmetrics-e2fa43d8b7cb915d");
  EXPECT_EQ(SegmentNameForDirectory("/no/such/dir//"), "modelmetrics-e2fa43d8b7cb915d")
      << "trailing slashes of a path that does not resolve are dropped";
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / UniqueName("path");
  std::filesystem::create_directories(dir / "sub");
  const std::filesystem::path link = dir.string() + "-link";
  std::filesystem::create_directory_symlink(dir, link);
  const std::string name = SegmentNameForDirectory(dir.string());
  EXPECT_THAT(name, ::testing::MatchesRegex("modelmetrics-[0-9a-f]{16}"));
  for (const std::string& spelling :
       {dir.string() + "/", dir.string() + "/.", dir.string() + "/sub/..", link.string()}) {
    EXPECT_EQ(SegmentNameForDirectory(spelling), name) << spelling;
  }
  EXPECT_NE(SegmentNameForDirectory((dir / "sub").string()), name);
  std::string error;
  EXPECT_EQ(RecordedSegmentName(link.string(), false, &error), name) << "nothing recorded yet";
  EXPECT_FALSE(std::filesystem::exists(dir / std::string(kSegmentNameFile)))
      << "a reader records nothing";
  // Recorded through the link, read through the directory: one name.
  const auto recorded = RecordedSegmentName(link.string(), true, &error);
  ASSERT_TRUE(recorded.has_value()) << error;
  EXPECT_EQ(RecordedSegmentName(dir.string(), false, &error), recorded);
  EXPECT_EQ(std::filesystem::status(dir / std::string(kSegmentNameFile)).permissions() &
                std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  // Only the name file is left: the temporary it was linked from is gone.
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{std::string(kSegmentNameFile), "sub"}));
  std::filesystem::remove(link);
  std::filesystem::remove_all(dir);
}

TEST(MultiprocessModes, EveryModeHasItsPrometheusClientName) {
  const std::vector<std::pair<MultiprocessMode, std::string>> modes = {
      {MultiprocessMode::kAll, "all"},
      {MultiprocessMode::kLiveAll, "liveall"},
      {MultiprocessMode::kMin, "min"},
      {MultiprocessMode::kLiveMin, "livemin"},
      {MultiprocessMode::kMax, "max"},
      {MultiprocessMode::kLiveMax, "livemax"},
      {MultiprocessMode::kSum, "sum"},
      {MultiprocessMode::kLiveSum, "livesum"},
      {MultiprocessMode::kMostRecent, "mostrecent"},
      {MultiprocessMode::kLiveMostRecent, "livemostrecent"},
  };
  for (const auto& [mode, name] : modes) {
    EXPECT_EQ(MultiprocessModeName(mode), name);
    EXPECT_EQ(ParseMultiprocessMode(name), mode) << name;
    EXPECT_EQ(IsLiveMode(mode), name.starts_with("live")) << name;
  }
  for (const char* name : {"", "ALL", "Live", "live", "liveAll", "most_recent", "sum ", "avg"}) {
    EXPECT_FALSE(ParseMultiprocessMode(name).has_value()) << name;
  }
  // A value outside the enumeration (a corrupt record's, say) reads as the default, `all`.
  EXPECT_EQ(MultiprocessModeName(static_cast<MultiprocessMode>(10)), "all");
  EXPECT_FALSE(IsLiveMode(static_cast<MultiprocessMode>(200)));
}

}  // namespace
}  // namespace modelmetrics
