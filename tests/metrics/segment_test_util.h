// Helpers the shared-segment tests share: unique segment names, attaching, forked children (one
// that exits at once, one that stays alive until released), a hostile writer's view of a
// segment's bytes (Tamper), and reading merged scrapes.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "metrics/segment_layout.h"
#include "modelmetrics/metrics.h"
#include "modelmetrics/parser.h"
#include "modelmetrics/shared_segment.h"

namespace modelmetrics::segment_testing {

// Why `family` refuses the label set `values` ("" when it makes a live child, and the child
// exists afterwards), through the Labels overload that reports it.
template <typename T>
std::string Refusal(Family<T>* family, std::initializer_list<std::string_view> values) {
  std::string refused;
  const std::vector<std::string_view> list(values);
  if (family->Labels(list, Family<T>::kNow, &refused).live()) return "";
  return refused;
}

// A name no other test (or test process) uses: mm-test-<pid>-<what>-<n>.
inline std::string UniqueName(const char* what) {
  static std::atomic<int> n{0};
  return "mm-test-" + std::to_string(getpid()) + "-" + what + "-" + std::to_string(++n);
}

inline bool ShmExists(const std::string& name) {
  return std::filesystem::exists("/dev/shm/" + name);
}

inline std::shared_ptr<SharedSegment> Attach(const std::string& name, uint32_t slots = 16,
                                             size_t bytes = size_t{4} << 20) {
  std::string error;
  auto segment =
      SharedSegment::Attach({.name = name, .bytes = bytes, .process_slots = slots}, &error);
  EXPECT_NE(segment, nullptr) << error;
  return segment;
}

// Runs `body` in a forked child that exits with its return value (no gtest in the child).
inline pid_t Child(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) _exit(body());
  return pid;
}

// The child's exit code, or 128 + the signal that ended it.
inline int Wait(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A forked child that runs `body`, reports its result, and stays alive (holding its slot) until
// Release(). The constructor returns once `body` has run.
class LiveChild {
 public:
  explicit LiveChild(const std::function<int()>& body) {
    int go[2], ready[2];
    if (pipe(go) != 0 || pipe(ready) != 0) return;
    pid_ = fork();
    if (pid_ == 0) {
      close(go[1]);
      close(ready[0]);
      const char result = static_cast<char>(body());
      if (write(ready[1], &result, 1) != 1) _exit(90);
      char c;
      _exit(read(go[0], &c, 1) == 1 ? result : 91);
    }
    close(go[0]);
    close(ready[1]);
    go_ = go[1];
    char result = -1;
    if (read(ready[0], &result, 1) == 1) result_ = result;
    close(ready[0]);
  }
  ~LiveChild() { Release(); }
  LiveChild(const LiveChild&) = delete;
  LiveChild& operator=(const LiveChild&) = delete;

  pid_t pid() const { return pid_; }
  int result() const { return result_; }  // what `body` returned; -1 when it never reported
  // Lets the child exit; its exit code (`body`'s result), once.
  int Release() {
    if (go_ < 0) return exit_;
    // A byte, not EOF: children forked later hold copies of this pipe's write end.
    const bool told = write(go_, "x", 1) == 1;
    close(go_);
    go_ = -1;
    if (pid_ <= 0) return exit_;
    if (!told) kill(pid_, SIGKILL);
    exit_ = Wait(pid_);
    return exit_;
  }

 private:
  pid_t pid_ = -1;
  int go_ = -1;
  int result_ = -1;
  int exit_ = -1;
};

// One merged family by name.
inline const MergedFamily* Find(const std::vector<MergedFamily>& families,
                                const std::string& name) {
  for (const MergedFamily& f : families) {
    if (f.options.name == name) return &f;
  }
  return nullptr;
}

inline double CounterTotal(const SharedSegment& segment, const std::string& name) {
  const auto families = segment.Collect();
  const MergedFamily* f = Find(families, name);
  double total = 0;
  if (f != nullptr) {
    for (const MergedChild& c : f->children) total += c.value;
  }
  return total;
}

// The records a scrape skipped for `reason` (its self-metric), 0 when none.
inline double Skipped(const std::vector<MergedFamily>& merged, const std::string& reason) {
  const MergedFamily* self = Find(merged, "modelmetrics_multiprocess_skipped_records");
  if (self == nullptr) return 0;
  for (const MergedChild& c : self->children) {
    if (c.label_values == std::vector<std::string>{reason}) return c.value;
  }
  return 0;
}

// Strictly parsed, or a failure naming the first error.
inline std::vector<MetricFamily> StrictParse(const std::string& text) {
  ParseOptions options;
  options.format = Format::kText;
  std::vector<ParseError> errors;
  std::vector<MetricFamily> families = ParseFamilies(text, options, &errors);
  EXPECT_TRUE(errors.empty()) << errors.front().ToString();
  return families;
}

// Another process's (or a stray write's) view of a segment's bytes, as a hostile writer has it.
class Tamper {
 public:
  Tamper(const std::string& name, size_t bytes) : bytes_(bytes) {
    const int fd = shm_open(("/" + name).c_str(), O_RDWR, 0);
    EXPECT_GE(fd, 0);
    map_ = static_cast<uint8_t*>(mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
    close(fd);
    EXPECT_NE(map_, MAP_FAILED);
    header = reinterpret_cast<segment::SegmentHeader*>(map_);
    slots = reinterpret_cast<segment::ProcessSlot*>(map_ + header->layout.slots_offset);
    families = reinterpret_cast<segment::FamilyRecord*>(map_ + header->layout.families_offset);
    series = reinterpret_cast<segment::SeriesRecord*>(map_ + header->layout.series_offset);
    arena = reinterpret_cast<char*>(map_ + header->layout.arena_offset);
  }
  ~Tamper() { munmap(map_, bytes_); }
  Tamper(const Tamper&) = delete;
  Tamper& operator=(const Tamper&) = delete;

  // Appends `text` to the arena (aligned), as a writer would; its reference.
  segment::ArenaText Text(std::string_view text, size_t align = 8) {
    const uint64_t at = (header->arena_used + align - 1) / align * align;
    if (!text.empty()) std::memcpy(arena + at, text.data(), text.size());
    header->arena_used = at + text.size();
    return {static_cast<uint32_t>(at), static_cast<uint32_t>(text.size())};
  }
  // The text of a family's name, writable in place.
  char* NameOf(uint32_t family) { return arena + families[family].name.offset; }
  char* ValuesOf(uint32_t series_index) { return arena + series[series_index].values.offset; }
  // The cells of series `series_index` in process slot `slot`.
  std::atomic<uint64_t>* CellsOf(uint32_t slot, uint32_t series_index) {
    auto* cells = reinterpret_cast<std::atomic<uint64_t>*>(map_ + header->layout.cells_offset);
    return cells + uint64_t{slot} * header->layout.words_per_slot + series[series_index].cell;
  }

  segment::SegmentHeader* header;
  segment::ProcessSlot* slots;
  segment::FamilyRecord* families;
  segment::SeriesRecord* series;
  char* arena;

 private:
  size_t bytes_;
  uint8_t* map_;
};

}  // namespace modelmetrics::segment_testing
