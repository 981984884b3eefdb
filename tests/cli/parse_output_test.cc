// parse's streaming output against the reference: the JSON stream must be byte-identical to
// nlohmann's rendering of ParseFamilies() for every shared capture and for the corner cases
// (exemplars, escapes, invalid UTF-8 in HELP, specials, errors, metadata-only and interleaved
// families); the scan must count what ParseFamilies materialises; InputBytes maps files and
// reads pipes.
#include "cli/parse_output.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "cli/input_bytes.h"
#include "modelmetrics/parser.h"
#include "status_matchers.h"
#include "test_paths.h"

namespace modelmetrics::cli {

using ::modelmetrics::testing::Ok;
namespace {

std::string Slurp(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

ParseOptions Options(std::string_view input, bool strict, std::vector<std::string> families = {}) {
  ParseOptions o;
  o.strict = strict;
  o.families = std::move(families);
  o.format = DetectFormat(input);
  return o;
}

struct Rendered {
  std::string stream;
  std::string reference;
  size_t chunks = 0;
};

Rendered Render(std::string_view input, const ParseOptions& options) {
  Rendered r;
  const FamilyScan scan = ScanFamilies(input, options);
  WriteJson(input, options, scan, [&](std::string_view chunk) {
    r.stream.append(chunk);
    ++r.chunks;
  });
  std::vector<ParseError> errors;
  size_t error_count = 0;
  const auto families = ParseFamilies(input, options, &errors, &error_count);
  r.reference = FamiliesToJson(*options.format, families, errors, error_count);
  // The scan is the summary: same families, types and counts as the materialised parse.
  EXPECT_EQ(scan.families.size(), families.size());
  size_t samples = 0;
  for (size_t i = 0; i < std::min(scan.families.size(), families.size()); ++i) {
    EXPECT_EQ(scan.families[i].name, families[i].name);
    EXPECT_EQ(scan.families[i].type, families[i].type);
    EXPECT_EQ(scan.families[i].samples, families[i].samples.size()) << families[i].name;
    samples += families[i].samples.size();
  }
  EXPECT_EQ(scan.samples, samples);
  EXPECT_EQ(scan.error_count, error_count);
  return r;
}

std::vector<std::filesystem::path> Fixtures() {
  std::vector<std::filesystem::path> files;
  for (const auto& e :
       std::filesystem::recursive_directory_iterator(test_paths::Shared("fixtures"))) {
    const auto ext = e.path().extension();
    if (e.is_regular_file() && (ext == ".txt" || ext == ".prom")) files.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

TEST(ParseOutputTest, StreamMatchesReferenceOnEverySharedCapture) {
  const auto files = Fixtures();
  ASSERT_GE(files.size(), 20u);
  for (const auto& path : files) {
    const std::string body = Slurp(path);
    for (bool strict : {true, false}) {
      const Rendered r = Render(body, Options(body, strict));
      EXPECT_EQ(r.stream, r.reference) << path << (strict ? " strict" : " lenient");
    }
    // A filter that keeps some families and drops the rest.
    const ParseOptions filtered =
        Options(body, false,
                {"vllm:num_requests_running", "vllm:time_to_first_token_seconds",
                 "sglang:num_running_reqs", "http_requests_total"});
    const Rendered f = Render(body, filtered);
    EXPECT_EQ(f.stream, f.reference) << path << " filtered";
  }
}

TEST(ParseOutputTest, StreamMatchesReferenceOnCornerCases) {
  const std::vector<std::string> inputs = {
      "",
      "# HELP only_help Has no samples.\n",
      "# HELP h Latency \"q\" \\\\ \\n done.\n# TYPE h histogram\n"
      "h_bucket{le=\"0.5\",m=\"x\"} 1\nh_bucket{le=\"+Inf\",m=\"x\"} 2\n"
      "h_sum{m=\"x\"} 0.75\nh_count{m=\"x\"} 2\n"
      "g NaN 1700000000000\nn -Inf\np +Inf\nz -0.0\nbig 1e+300\nsmall 1.5e-7\nint 42\n",
      // Invalid UTF-8 and a control byte in HELP (replaced / escaped as nlohmann does).
      "# HELP bad Bytes \xff\xfe and \x01 tab\there.\nbad 1\n",
      // Escapes and non-ASCII in label values.
      "esc{a=\"x\\\"y\",b=\"line\\nbreak\",c=\"back\\\\slash\",d=\"caf\xc3\xa9 \xe2\x82\xac\"} 3\n",
      // Errors (lenient): listed in the document.
      "a 1\nb oops\nc{x=\"1\",x=\"2\"} 2\nd 4\n",
      // Families seen in metadata before the samples, in and out of the samples' order.
      "# TYPE a gauge\n# TYPE b gauge\na 1\nb 2\n",
      "# TYPE b gauge\n# TYPE a gauge\na 1\nb 2\n",
      // Interleaved: `a` comes back after `b` (merged; the stream falls back).
      "# TYPE a gauge\na 1\n# TYPE b gauge\nb 2\na{x=\"2\"} 3\n",
      // OpenMetrics: exemplars with and without timestamps, units, _created.
      "# TYPE c counter\n# UNIT c seconds\n# HELP c A counter.\n"
      "c_total{m=\"x\"} 3 # {trace_id=\"abc\"} 1.5 1700000000.123\n"
      "c_created{m=\"x\"} 1700000000\n"
      "# TYPE hh histogram\nhh_bucket{le=\"1.0\"} 1 # {id=\"z\"} 0.5\nhh_bucket{le=\"+Inf\"} 1\n"
      "hh_count 1\nhh_sum 0.5\n# EOF\n",
  };
  for (const std::string& input : inputs) {
    for (bool strict : {true, false}) {
      const Rendered r = Render(input, Options(input, strict));
      EXPECT_EQ(r.stream, r.reference) << "input:\n" << input << (strict ? "strict" : "lenient");
    }
  }
}

TEST(ParseOutputTest, InterleavedFamiliesAreDetected) {
  const std::string input = "# TYPE a gauge\na 1\n# TYPE b gauge\nb 2\na{x=\"2\"} 3\n";
  const FamilyScan scan = ScanFamilies(input, Options(input, true));
  EXPECT_TRUE(scan.interleaved);
  ASSERT_EQ(scan.families.size(), 2u);
  EXPECT_EQ(scan.families[0].samples, 2u);
  // Metadata ahead of the samples is fine while the samples follow the families' order...
  const std::string ordered = "# TYPE a gauge\n# TYPE b gauge\na 1\nb 2\n";
  EXPECT_FALSE(ScanFamilies(ordered, Options(ordered, true)).interleaved);
  // ...but `b` is listed first here and its sample comes after `a`'s: not streamable in order.
  const std::string reversed = "# TYPE b gauge\n# TYPE a gauge\na 1\nb 2\n";
  EXPECT_TRUE(ScanFamilies(reversed, Options(reversed, true)).interleaved);
}

// A ~3 MB generated scrape: the stream is flushed in several chunks and stays identical.
TEST(ParseOutputTest, LargeInputIsStreamedInChunks) {
  std::string input;
  for (int f = 0; f < 200; ++f) {
    const std::string name = "fam_" + std::to_string(f);
    input += "# HELP " + name + " Family " + std::to_string(f) + ".\n# TYPE " + name + " gauge\n";
    for (int s = 0; s < 200; ++s) {
      input += name + "{engine=\"" + std::to_string(s) + "\",model_name=\"m\"} " +
               std::to_string(f * 0.25 + s) + "\n";
    }
  }
  ASSERT_GT(input.size(), size_t{1} << 20);
  const Rendered r = Render(input, Options(input, true));
  EXPECT_EQ(r.stream, r.reference);
  EXPECT_GT(r.chunks, 4u);
}

class InputBytesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() / ("mm_input_bytes_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

TEST_F(InputBytesTest, MapsARegularFile) {
  const std::string path = (dir_ / "m.prom").string();
  const std::string content = "# TYPE a gauge\na 1\n";
  std::ofstream(path, std::ios::binary) << content;
  InputBytes in;
  std::string error;
  ASSERT_OK(in.LoadFile(path));
  EXPECT_TRUE(in.mapped());
  EXPECT_EQ(in.view(), content);
  InputBytes moved = std::move(in);  // the mapping moves with the object
  EXPECT_EQ(moved.view(), content);
  EXPECT_EQ(in.view(), "");
}

TEST_F(InputBytesTest, EmptyFileMissingFileAndDirectory) {
  const std::string empty = (dir_ / "empty").string();
  std::ofstream(empty, std::ios::binary).flush();
  InputBytes in;
  std::string error;
  ASSERT_OK(in.LoadFile(empty));
  EXPECT_EQ(in.view(), "");
  EXPECT_FALSE(Ok(in.LoadFile((dir_ / "missing").string()), &error));
  EXPECT_EQ(error, "cannot open file");
  error.clear();
  EXPECT_FALSE(Ok(in.LoadFile(dir_.string()), &error));
  EXPECT_EQ(error, "read error");
}

// The cap: a regular file is checked by its size, a device or pipe stopped one byte past it.
TEST_F(InputBytesTest, StopsAtTheCap) {
  const std::string path = (dir_ / "m.prom").string();
  std::ofstream(path, std::ios::binary) << "0123456789";
  InputBytes in;
  std::string error;
  ASSERT_OK(in.LoadFile(path, 10));
  EXPECT_EQ(in.view(), "0123456789");
  EXPECT_FALSE(Ok(in.LoadFile(path, 9), &error));
  EXPECT_EQ(error, "input is over the 9-byte limit (--max-bytes)");
  error.clear();
  EXPECT_FALSE(Ok(in.LoadFile("/dev/zero", size_t{1} << 20), &error));
  EXPECT_EQ(error, "input is over the 1048576-byte limit (--max-bytes)");
  EXPECT_EQ(in.view(), "");
}

// Bytes written to a pipe by a thread (a pipe holds only 64 KiB), read through LoadFd.
bool LoadThroughPipe(InputBytes* in, size_t bytes, size_t max_bytes, std::string* error) {
  int fds[2];
  if (::pipe(fds) != 0) return false;
  const std::string content(bytes, 'x');
  std::thread writer([&] {
    size_t done = 0;
    while (done < content.size()) {
      const ssize_t n = ::write(fds[1], content.data() + done, content.size() - done);
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    ::close(fds[1]);
  });
  const bool ok = Ok(in->LoadFd(fds[0], max_bytes), error);
  ::close(fds[0]);  // a writer blocked on a refused input gets EPIPE and stops
  writer.join();
  return ok && in->view() == content;
}

// Through the read path (not the regular file's size check): exactly the cap is whole, one byte
// more is refused, at a page multiple where the buffer grows to its largest.
TEST_F(InputBytesTest, APipeOfExactlyTheCapIsReadAndOneByteMoreIsRefused) {
  ::signal(SIGPIPE, SIG_IGN);
  constexpr size_t kCap = size_t{256} << 10;  // 4 growths from the 64 KiB first guess
  InputBytes in;
  std::string error;
  EXPECT_TRUE(LoadThroughPipe(&in, kCap, kCap, &error)) << error;
  EXPECT_FALSE(in.mapped());
  EXPECT_FALSE(LoadThroughPipe(&in, kCap + 1, kCap, &error));
  EXPECT_EQ(error, "input is over the 262144-byte limit (--max-bytes)");
  EXPECT_EQ(in.view(), "");
  error.clear();
  EXPECT_TRUE(LoadThroughPipe(&in, 0, kCap, &error)) << error;  // empty
  EXPECT_EQ(in.view(), "");
}

TEST_F(InputBytesTest, ReadsAPipeAndAPositionedFile) {
  InputBytes in;
  std::string error;
  // More than one pipe buffer: several reads.
  EXPECT_TRUE(LoadThroughPipe(&in, 100000, InputBytes::kDefaultMaxBytes, &error)) << error;
  EXPECT_FALSE(in.mapped());

  // A descriptor already past the start (e.g. a shared stdin) is read from where it is.
  const std::string path = (dir_ / "f").string();
  std::ofstream(path, std::ios::binary) << "skip\nrest\n";
  const int fd = ::open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::lseek(fd, 5, SEEK_SET), 5);
  EXPECT_OK(in.LoadFd(fd));
  ::close(fd);
  EXPECT_EQ(in.view(), "rest\n");
}

}  // namespace
}  // namespace modelmetrics::cli
