// Runs the real `modelmetrics parse` binary: exit codes, messages, summary and JSON output.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>

#include "net/http_server.h"
#include "status_matchers.h"
#include "test_paths.h"

namespace {

using ::testing::HasSubstr;
using ::testing::Not;
namespace test_paths = ::modelmetrics::test_paths;

struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string Slurp(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

class ParseCommandTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("mm_cli_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string WriteFile(const std::string& name, const std::string& content) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  // Runs `modelmetrics <args>` with `stdin_text` on standard input.
  CommandResult Modelmetrics(const std::string& args, const std::string& stdin_text = "") {
    const std::string in = WriteFile("stdin", stdin_text);
    const std::string out = (dir_ / "stdout").string();
    const std::string err = (dir_ / "stderr").string();
    const std::string command =
        test_paths::Modelmetrics() + " " + args + " <" + in + " >" + out + " 2>" + err;
    const int status = std::system(command.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = Slurp(out);
    r.err = Slurp(err);
    return r;
  }

  std::filesystem::path dir_;
};

const std::string kVllmV1 =
    test_paths::Shared("fixtures/real/vllm/kserve-llmisvc-vllm-v1-pd-nixl-tinyllama.txt");

TEST_F(ParseCommandTest, SummaryOfARealScrape) {
  CommandResult r = Modelmetrics("parse --strict " + kVllmV1);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("text format, 101 families, 493 samples, 0 errors"));
  EXPECT_THAT(r.out, HasSubstr("vllm:time_to_first_token_seconds"));
  EXPECT_EQ(r.err, "");
}

TEST_F(ParseCommandTest, StrictModeReportsFileLineColumnAndExitsOne) {
  const std::string path = WriteFile("bad.prom", "# TYPE a gauge\na 1\na{x=\"1\",x=\"2\"} 2\n");
  CommandResult r = Modelmetrics("parse --strict " + path);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, path + ":3:9: duplicate label name \"x\"\n");
}

TEST_F(ParseCommandTest, LenientModeSkipsBadLinesAndExitsZero) {
  const std::string path = WriteFile("bad.prom", "a 1\nb oops\nc 3\n");
  CommandResult r = Modelmetrics("parse " + path);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.err, path + ":2:3: invalid value \"oops\"\n");
  EXPECT_THAT(r.out, HasSubstr("2 families, 2 samples, 1 errors (lenient)"));
}

TEST_F(ParseCommandTest, JsonOutputFromStdin) {
  CommandResult r = Modelmetrics("parse -o json -",
                                 "# HELP h Latency.\n# TYPE h histogram\n"
                                 "h_bucket{le=\"0.5\",m=\"x\"} 1\nh_bucket{le=\"+Inf\",m=\"x\"} 2\n"
                                 "h_sum{m=\"x\"} 0.75\nh_count{m=\"x\"} 2\n"
                                 "g NaN 1700000000000\nn -Inf\n");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["families"].size(), 3u);
  const auto& h = doc["families"][0];
  EXPECT_EQ(h["name"], "h");
  EXPECT_EQ(h["type"], "histogram");
  EXPECT_EQ(h["help"], "Latency.");
  ASSERT_EQ(h["samples"].size(), 4u);
  EXPECT_EQ(h["samples"][0]["name"], "h_bucket");
  EXPECT_EQ(h["samples"][0]["labels"]["le"], "0.5");
  EXPECT_EQ(h["samples"][0]["value"], 1.0);
  EXPECT_EQ(h["samples"][2]["value"], 0.75);
  const auto& g = doc["families"][1];
  EXPECT_EQ(g["type"], "untyped");
  EXPECT_EQ(g["samples"][0]["value"], "NaN");
  EXPECT_EQ(g["samples"][0]["timestamp"], 1700000000000);
  EXPECT_EQ(doc["families"][2]["samples"][0]["value"], "-Inf");
  EXPECT_TRUE(doc["errors"].empty());
}

TEST_F(ParseCommandTest, JsonListsErrors) {
  CommandResult r = Modelmetrics("parse -o json -", "a 1\nb x\n");
  ASSERT_EQ(r.exit_code, 0);
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["errors"].size(), 1u);
  EXPECT_EQ(doc["errors"][0]["line"], 2);
  EXPECT_EQ(doc["errors"][0]["column"], 3);
  EXPECT_EQ(doc["errors"][0]["message"], "invalid value \"x\"");
}

TEST_F(ParseCommandTest, FamilyFilter) {
  CommandResult r = Modelmetrics(
      "parse -o json --families vllm:num_requests_running,vllm:iteration_tokens_total " + kVllmV1);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  ASSERT_EQ(doc["families"].size(), 2u);
  EXPECT_EQ(doc["families"][0]["name"], "vllm:num_requests_running");
  EXPECT_EQ(doc["families"][1]["name"], "vllm:iteration_tokens_total");
  EXPECT_EQ(doc["families"][1]["type"], "histogram");
}

TEST_F(ParseCommandTest, FormatFlag) {
  const std::string om = "# TYPE c counter\nc_total 1\n# EOF\n";
  CommandResult detected = Modelmetrics("parse --strict -", om);
  EXPECT_EQ(detected.exit_code, 0) << detected.err;
  EXPECT_THAT(detected.out, HasSubstr("openmetrics format, 1 families"));
  CommandResult forced = Modelmetrics("parse --strict --format openmetrics -", "a 1\n");
  EXPECT_EQ(forced.exit_code, 1);
  EXPECT_THAT(forced.err, HasSubstr("-:2:1: missing # EOF"));
}

TEST_F(ParseCommandTest, FetchesAUrlAndFollowsItsContentType) {
  using modelmetrics::net::HttpRequest;
  using modelmetrics::net::HttpResponse;
  modelmetrics::net::HttpServer server({});
  std::string accept_seen;
  server.Route("GET", "/metrics", [&](const HttpRequest& request) {
    accept_seen = std::string(request.headers.Get("Accept"));
    HttpResponse r;
    r.content_type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
    r.body = "# TYPE c counter\nc_total 3\n# EOF\n";
    return r;
  });
  server.Route("GET", "/broken",
               [](const HttpRequest&) { return HttpResponse::Text(500, "boom"); });
  std::string error;
  ASSERT_OK(server.Start());
  const std::string base = "http://127.0.0.1:" + std::to_string(server.port());

  CommandResult ok = Modelmetrics("parse --strict " + base + "/metrics");
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_THAT(ok.out, HasSubstr("openmetrics format, 1 families, 1 samples, 0 errors"));
  EXPECT_THAT(accept_seen, HasSubstr("application/openmetrics-text"));

  CommandResult failed = Modelmetrics("parse " + base + "/broken");
  EXPECT_EQ(failed.exit_code, 1);
  EXPECT_THAT(failed.err, HasSubstr("fetch failed (http_status)"));

  // The body (33 bytes) is held to --max-bytes as a file is.
  CommandResult capped = Modelmetrics("parse --max-bytes 32 " + base + "/metrics");
  EXPECT_EQ(capped.exit_code, 1);
  EXPECT_EQ(capped.err, base + "/metrics: input is over the 32-byte limit (--max-bytes)\n");
  server.Stop();
}

TEST_F(ParseCommandTest, SimulatePipelineServesAndPrintsTables) {
  CommandResult on = Modelmetrics(
      "simulate pipeline --listen 127.0.0.1:0 --duration 1500ms --log-interval 1s --seed 7");
  EXPECT_EQ(on.exit_code, 0) << on.err;
  EXPECT_THAT(on.out, HasSubstr("serving /metrics on http://127.0.0.1:"));
  EXPECT_THAT(on.out, HasSubstr("(log-stats on)"));
  EXPECT_THAT(on.out, HasSubstr("[Overall Summary]"));
  CommandResult off = Modelmetrics(
      "simulate pipeline --no-log-stats --listen 127.0.0.1:0 --duration 500ms --log-interval 1s");
  EXPECT_EQ(off.exit_code, 0) << off.err;
  EXPECT_THAT(off.out, HasSubstr("(log-stats off)"));
  EXPECT_THAT(off.out, Not(HasSubstr("[Overall Summary]")));  // tables are off with the stats
  EXPECT_EQ(Modelmetrics("simulate pipeline --duration soon").exit_code, 2);
  EXPECT_EQ(Modelmetrics("simulate pipeline --listen nowhere --duration 1s").exit_code, 2);
}

TEST_F(ParseCommandTest, UsageErrorsExitTwo) {
  EXPECT_EQ(Modelmetrics("parse").exit_code, 2);
  EXPECT_EQ(Modelmetrics("parse --bogus x").exit_code, 2);
  EXPECT_EQ(Modelmetrics("parse --format yaml -").exit_code, 2);
  EXPECT_EQ(Modelmetrics("parse -o xml -").exit_code, 2);
  EXPECT_EQ(Modelmetrics("").exit_code, 2);
}

TEST_F(ParseCommandTest, UnreadableInputExitsOne) {
  CommandResult r = Modelmetrics("parse /nonexistent/file.prom");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "/nonexistent/file.prom: cannot open file\n");
  CommandResult url = Modelmetrics("parse ftp://127.0.0.1/metrics");
  EXPECT_EQ(url.exit_code, 1);
  EXPECT_THAT(url.err, HasSubstr("cannot open file"));
}

// An endless input (/dev/zero) or one over --max-bytes (a file, stdin) is one line
// and exit 1, not an allocation that grows until the process dies.
TEST_F(ParseCommandTest, EndlessOrOversizedInputIsRefused) {
  CommandResult r = Modelmetrics("parse --max-bytes 1048576 /dev/zero");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "/dev/zero: input is over the 1048576-byte limit (--max-bytes)\n");
  const std::string text = "# TYPE a gauge\na 1\n";  // 19 bytes
  r = Modelmetrics("parse --max-bytes 18 -", text);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "-: input is over the 18-byte limit (--max-bytes)\n");
  const std::string big = WriteFile("big.prom", text);
  r = Modelmetrics("parse --max-bytes 18 " + big);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, big + ": input is over the 18-byte limit (--max-bytes)\n");
  r = Modelmetrics("parse --max-bytes 19 " + big);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Past the parser's own 64 MiB default: --max-bytes is the one cap on what is parsed.
  const std::string blank = WriteFile("blank.prom", std::string((size_t{64} << 20) + 1, '\n'));
  r = Modelmetrics("parse --strict " + blank);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, blank + ": text format, 0 families, 0 samples, 0 errors\n");
}

}  // namespace
