// Tests for the exposition writer (modelmetrics/writer.h) and the format helpers in
// modelmetrics/exposition.h. Expected strings are written by hand from the Go strconv / expfmt
// rules and the OpenMetrics 1.0 spec; properties are checked against glibc strtod_l/snprintf.
#include "modelmetrics/writer.h"

#include <gtest/gtest.h>
#include <locale.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "format/test_numbers.h"
#include "modelmetrics/exposition.h"

namespace modelmetrics {
namespace {

using ::modelmetrics::testing::kInf;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string Double(double v) {
  std::string out = "x";  // AppendDouble appends
  AppendDouble(&out, v);
  EXPECT_EQ(out[0], 'x');
  return out.substr(1);
}

std::string Canonical(double v) {
  std::string out = "x";
  AppendCanonicalDouble(&out, v);
  EXPECT_EQ(out[0], 'x');
  return out.substr(1);
}

double CStrtod(const std::string& text) {
  static locale_t c_locale = newlocale(LC_ALL_MASK, "C", nullptr);
  return strtod_l(text.c_str(), nullptr, c_locale);
}

TEST(AppendDoubleTest, GoShortestGFormat) {
  struct Case {
    double value;
    const char* want;
  };
  for (const Case& c : std::vector<Case>{
           {0, "0"},
           {1, "1"},
           {-1, "-1"},
           {0.5, "0.5"},
           {0.1, "0.1"},
           {0.1 + 0.2, "0.30000000000000004"},
           {1.0 / 3, "0.3333333333333333"},
           {2.0 / 3, "0.6666666666666666"},
           {1e-05, "1e-05"},
           {1.2345e-05, "1.2345e-05"},
           {-2.5e-07, "-2.5e-07"},
           {0.0001, "0.0001"},
           {0.00012345, "0.00012345"},
           {123456.7, "123456.7"},
           {12345.678, "12345.678"},
           {100000, "100000"},
           {999999, "999999"},
           {1e6, "1e+06"},
           {1.048576e+06, "1.048576e+06"},
           {123456789, "1.23456789e+08"},
           {19392065536.0, "1.9392065536e+10"},
           {1e21, "1e+21"},
           {1e100, "1e+100"},
           {1.5e300, "1.5e+300"},
           {-1.5e-300, "-1.5e-300"},
           {DBL_MAX, "1.7976931348623157e+308"},
           {DBL_MIN, "2.2250738585072014e-308"},
           {std::numeric_limits<double>::denorm_min(), "5e-324"},
           {-0.0, "-0"},
           {kNaN, "NaN"},
           {-kNaN, "NaN"},
           {kInf, "+Inf"},
           {-kInf, "-Inf"},
       }) {
    EXPECT_EQ(Double(c.value), c.want);
  }
}

// Splits a finite AppendDouble output into significant digits and decimal exponent of the first
// digit, independently of the writer.
void Decompose(const std::string& text, std::string* digits, int* exponent) {
  std::string mantissa = text;
  int e = 0;
  if (size_t pos = text.find('e'); pos != std::string::npos) {
    mantissa = text.substr(0, pos);
    e = std::stoi(text.substr(pos + 1));
  }
  if (!mantissa.empty() && mantissa[0] == '-') mantissa.erase(0, 1);
  const size_t point = mantissa.find('.');
  std::string all = mantissa;
  int int_digits = static_cast<int>(mantissa.size());
  if (point != std::string::npos) {
    all.erase(point, 1);
    int_digits = static_cast<int>(point);
  }
  size_t first = all.find_first_not_of('0');
  if (first == std::string::npos) {
    *digits = "0";
    *exponent = 0;
    return;
  }
  size_t last = all.find_last_not_of('0');
  *digits = all.substr(first, last - first + 1);
  *exponent = e + int_digits - 1 - static_cast<int>(first);
}

TEST(AppendDoubleTest, ShortestRoundTripAndGoExponentRuleOnRandomBits) {
  std::mt19937_64 rng(42);
  for (int i = 0; i < 20000; ++i) {
    const double v = std::bit_cast<double>(rng());
    if (!std::isfinite(v)) continue;
    const std::string text = Double(v);
    SCOPED_TRACE(text);
    // Round trip through an independent parser.
    ASSERT_EQ(std::bit_cast<uint64_t>(CStrtod(text)), std::bit_cast<uint64_t>(v));
    std::string digits;
    int exponent = 0;
    Decompose(text, &digits, &exponent);
    // Go 'g' with shortest precision: %e form exactly when the exponent is < -4 or >= 6.
    const bool has_e = text.find('e') != std::string::npos;
    EXPECT_EQ(has_e, exponent < -4 || exponent >= 6);
    if (has_e) {
      // Go's %e: one digit before the point, a sign and at least two exponent digits.
      const std::string exp_part = text.substr(text.find('e') + 1);
      ASSERT_GE(exp_part.size(), 3u);
      EXPECT_TRUE(exp_part[0] == '+' || exp_part[0] == '-');
    }
    // Shortest: one digit fewer does not round-trip.
    if (digits.size() > 1) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.*e", static_cast<int>(digits.size()) - 2, v);
      EXPECT_NE(std::bit_cast<uint64_t>(CStrtod(buf)), std::bit_cast<uint64_t>(v)) << buf;
    }
  }
}

TEST(AppendCanonicalDoubleTest, IntegersGetPointZero) {
  EXPECT_EQ(Canonical(1), "1.0");
  EXPECT_EQ(Canonical(0), "0.0");
  EXPECT_EQ(Canonical(-0.0), "-0.0");
  EXPECT_EQ(Canonical(-3), "-3.0");
  EXPECT_EQ(Canonical(2.5), "2.5");
  EXPECT_EQ(Canonical(0.25), "0.25");
  EXPECT_EQ(Canonical(65536), "65536.0");
  EXPECT_EQ(Canonical(100000), "100000.0");
  EXPECT_EQ(Canonical(1e6), "1e+06");
  EXPECT_EQ(Canonical(1.048576e+06), "1.048576e+06");
  EXPECT_EQ(Canonical(1e-05), "1e-05");
  EXPECT_EQ(Canonical(kInf), "+Inf");
  EXPECT_EQ(Canonical(-kInf), "-Inf");
  EXPECT_EQ(Canonical(kNaN), "NaN");
}

std::vector<LabelView> Labels(std::initializer_list<LabelView> l) { return l; }

TEST(ExpositionWriterTest, HelpEscapingPerFormat) {
  const std::string help = "a\\b\nc \"q\"";
  std::string text, om;
  ExpositionWriter(&text, Format::kText).BeginFamily("m", MetricType::kGauge, help, true);
  ExpositionWriter(&om, Format::kOpenMetrics).BeginFamily("m", MetricType::kGauge, help, true);
  EXPECT_EQ(text, "# HELP m a\\\\b\\nc \"q\"\n# TYPE m gauge\n");
  EXPECT_EQ(om, "# HELP m a\\\\b\\nc \\\"q\\\"\n# TYPE m gauge\n");
}

TEST(ExpositionWriterTest, EmptyAndAbsentHelp) {
  std::string text, om, none;
  ExpositionWriter(&text, Format::kText).BeginFamily("m", MetricType::kCounter, "", true);
  ExpositionWriter(&om, Format::kOpenMetrics).BeginFamily("m", MetricType::kCounter, "", true);
  ExpositionWriter(&none, Format::kText).BeginFamily("m", MetricType::kUntyped, "ignored", false);
  EXPECT_EQ(text, "# HELP m\n# TYPE m counter\n");
  EXPECT_EQ(om, "# HELP m \n# TYPE m counter\n");
  EXPECT_EQ(none, "# TYPE m untyped\n");
}

TEST(ExpositionWriterTest, TypeNamesAndUnit) {
  std::string text, om;
  ExpositionWriter tw(&text, Format::kText);
  ExpositionWriter ow(&om, Format::kOpenMetrics);
  tw.BeginFamily("u", MetricType::kUntyped, "", false, "seconds");
  tw.BeginFamily("s", MetricType::kSummary, "", false);
  tw.BeginFamily("h", MetricType::kHistogram, "", false);
  ow.BeginFamily("u", MetricType::kUntyped, "", false);
  ow.BeginFamily("g_bytes", MetricType::kGaugeHistogram, "", false, "bytes");
  ow.BeginFamily("i", MetricType::kInfo, "", false);
  ow.BeginFamily("st", MetricType::kStateSet, "", false, "");
  EXPECT_EQ(text, "# TYPE u untyped\n# TYPE s summary\n# TYPE h histogram\n");
  EXPECT_EQ(om,
            "# TYPE u unknown\n# TYPE g_bytes gaugehistogram\n# UNIT g_bytes bytes\n"
            "# TYPE i info\n# TYPE st stateset\n");
}

TEST(ExpositionWriterTest, LabelValueEscaping) {
  for (Format format : {Format::kText, Format::kOpenMetrics}) {
    std::string out;
    ExpositionWriter w(&out, format);
    auto labels = Labels({{"a", "back\\slash"},
                          {"b", "say \"hi\""},
                          {"c", "two\nlines"},
                          {"d", "{},=# é\t"},
                          {"e", ""}});
    w.Sample("m", labels, 1);
    EXPECT_EQ(out,
              "m{a=\"back\\\\slash\",b=\"say \\\"hi\\\"\",c=\"two\\nlines\","
              "d=\"{},=# é\t\",e=\"\"} 1\n");
  }
}

TEST(ExpositionWriterTest, LeAndQuantileAreCanonical) {
  std::string out;
  ExpositionWriter w(&out, Format::kText);
  w.BeginFamily("h", MetricType::kHistogram, "", false);
  w.Sample("h_bucket", Labels({{"x", "1"}, {"le", "1"}}), 3);
  w.Sample("h_bucket", Labels({{"le", "0.25"}}), 3);
  w.Sample("h_bucket", Labels({{"le", "1e6"}}), 3);
  w.Sample("h_bucket", Labels({{"le", "65536"}}), 3);
  w.Sample("h_bucket", Labels({{"le", "Inf"}}), 4);
  w.Sample("h_bucket", Labels({{"le", "+inf"}}), 4);
  w.Sample("h_bucket", Labels({{"le", "not a number"}}), 4);
  w.BeginFamily("s", MetricType::kSummary, "", false);
  w.Sample("s", Labels({{"quantile", "0"}}), 1);
  w.Sample("s", Labels({{"quantile", ".5"}}), 1);
  w.Sample("s", Labels({{"quantile", "1"}}), 1);
  // Only histogram `le` and summary `quantile` are bounds; elsewhere they are plain labels.
  w.BeginFamily("g", MetricType::kGauge, "", false);
  w.Sample("g", Labels({{"le", "1"}, {"quantile", "1"}}), 1);
  EXPECT_EQ(out,
            "# TYPE h histogram\n"
            "h_bucket{x=\"1\",le=\"1.0\"} 3\n"
            "h_bucket{le=\"0.25\"} 3\n"
            "h_bucket{le=\"1e+06\"} 3\n"
            "h_bucket{le=\"65536.0\"} 3\n"
            "h_bucket{le=\"+Inf\"} 4\n"
            "h_bucket{le=\"+Inf\"} 4\n"
            "h_bucket{le=\"not a number\"} 4\n"
            "# TYPE s summary\n"
            "s{quantile=\"0.0\"} 1\n"
            "s{quantile=\"0.5\"} 1\n"
            "s{quantile=\"1.0\"} 1\n"
            "# TYPE g gauge\n"
            "g{le=\"1\",quantile=\"1\"} 1\n");
}

TEST(ExpositionWriterTest, NamesOutsideTheLegacyCharsetAreQuoted) {
  std::string out;
  ExpositionWriter w(&out, Format::kText);
  w.BeginFamily("a.b", MetricType::kGauge, "h", true);
  w.Sample("a.b", {}, 1);
  w.Sample("a.b", Labels({{"x", "y"}}), 2);
  w.Sample("vllm:ok_name", Labels({{"label.name", "v"}, {"ok_label", "w"}}), 3);
  w.Sample("é", Labels({{"9lives", "v"}}), 4);
  w.Sample("quo\"te", Labels({{"colon:label", "v"}}), 5);
  w.Sample("_under", Labels({{"_x", "v"}}), 6);
  EXPECT_EQ(out,
            "# HELP \"a.b\" h\n"
            "# TYPE \"a.b\" gauge\n"
            "{\"a.b\"} 1\n"
            "{\"a.b\",x=\"y\"} 2\n"
            "vllm:ok_name{\"label.name\"=\"v\",ok_label=\"w\"} 3\n"
            "{\"é\",\"9lives\"=\"v\"} 4\n"
            "{\"quo\\\"te\",\"colon:label\"=\"v\"} 5\n"
            "_under{_x=\"v\"} 6\n");
}

TEST(ExpositionWriterTest, TimestampsTextMillisecondsOpenMetricsSeconds) {
  std::string text, om;
  ExpositionWriter tw(&text, Format::kText);
  ExpositionWriter ow(&om, Format::kOpenMetrics);
  for (ExpositionWriter* w : {&tw, &ow}) {
    w->Sample("m", {}, 1.5, 1700000000123);
    w->Sample("m", {}, 2, 0);
    w->Sample("m", {}, 3, -1500);
    w->Sample("m", {}, 4, std::nullopt);
  }
  EXPECT_EQ(text, "m 1.5 1700000000123\nm 2 0\nm 3 -1500\nm 4\n");
  EXPECT_EQ(om, "m 1.5 1700000000.123\nm 2 0\nm 3 -1.5\nm 4\n");
}

TEST(ExpositionWriterTest, ExemplarOnlyInOpenMetrics) {
  std::string text, om;
  auto labels = Labels({{"le", "0.5"}});
  auto exemplar = Labels({{"trace_id", "abc\"d"}, {"span.id", "1"}});
  ExpositionWriter(&text, Format::kText)
      .SampleWithExemplar("h_bucket", labels, 7, 1000, exemplar, 0.25, 1700000000500);
  ExpositionWriter ow(&om, Format::kOpenMetrics);
  ow.SampleWithExemplar("h_bucket", labels, 7, 1000, exemplar, 0.25, 1700000000500);
  ow.SampleWithExemplar("c_total", {}, 1, std::nullopt, {}, -kInf, std::nullopt);
  EXPECT_EQ(text, "h_bucket{le=\"0.5\"} 7 1000\n");
  EXPECT_EQ(om,
            "h_bucket{le=\"0.5\"} 7 1 # {trace_id=\"abc\\\"d\",\"span.id\"=\"1\"} 0.25 "
            "1700000000.5\n"
            "c_total 1 # {} -Inf\n");
}

TEST(ExpositionWriterTest, FinishWritesEofOnlyInOpenMetrics) {
  std::string text = "m 1\n", om = "m 1\n";
  ExpositionWriter(&text, Format::kText).Finish();
  ExpositionWriter(&om, Format::kOpenMetrics).Finish();
  EXPECT_EQ(text, "m 1\n");
  EXPECT_EQ(om, "m 1\n# EOF\n");
  EXPECT_EQ(WriteFamilies({}, Format::kText), "");
  EXPECT_EQ(WriteFamilies({}, Format::kOpenMetrics), "# EOF\n");
}

std::vector<MetricFamily> SmallFamilies() {
  std::vector<MetricFamily> f(2);
  f[0].name = "requests";
  f[0].type = MetricType::kCounter;
  f[0].has_help = true;
  f[0].help = "Requests.";
  f[0].samples.push_back({.name = "requests_total",
                          .labels = {{"code", "200"}},
                          .value = 3,
                          .timestamp_ms = 1500,
                          .exemplar = Exemplar{.labels = {{"id", "x"}}, .value = 1}});
  f[0].samples.push_back({.name = "requests_created", .labels = {{"code", "200"}}, .value = 1e9});
  f[1].name = "latency_seconds";
  f[1].type = MetricType::kHistogram;
  f[1].unit = "seconds";
  f[1].samples.push_back({.name = "latency_seconds_bucket", .labels = {{"le", "0.5"}}, .value = 1});
  f[1].samples.push_back(
      {.name = "latency_seconds_bucket", .labels = {{"le", "+Inf"}}, .value = 2});
  f[1].samples.push_back({.name = "latency_seconds_sum", .value = 0.75});
  f[1].samples.push_back({.name = "latency_seconds_count", .value = 2});
  return f;
}

TEST(WriteFamiliesTest, WholeExpositionText) {
  EXPECT_EQ(WriteFamilies(SmallFamilies(), Format::kText),
            "# HELP requests Requests.\n"
            "# TYPE requests counter\n"
            "requests_total{code=\"200\"} 3 1500\n"
            "requests_created{code=\"200\"} 1e+09\n"
            "# TYPE latency_seconds histogram\n"
            "latency_seconds_bucket{le=\"0.5\"} 1\n"
            "latency_seconds_bucket{le=\"+Inf\"} 2\n"
            "latency_seconds_sum 0.75\n"
            "latency_seconds_count 2\n");
}

TEST(WriteFamiliesTest, WholeExpositionOpenMetrics) {
  EXPECT_EQ(WriteFamilies(SmallFamilies(), Format::kOpenMetrics),
            "# HELP requests Requests.\n"
            "# TYPE requests counter\n"
            "requests_total{code=\"200\"} 3 1.5 # {id=\"x\"} 1\n"
            "requests_created{code=\"200\"} 1e+09\n"
            "# TYPE latency_seconds histogram\n"
            "# UNIT latency_seconds seconds\n"
            "latency_seconds_bucket{le=\"0.5\"} 1\n"
            "latency_seconds_bucket{le=\"+Inf\"} 2\n"
            "latency_seconds_sum 0.75\n"
            "latency_seconds_count 2\n"
            "# EOF\n");
}

TEST(ContentTypeTest, ExactStrings) {
  EXPECT_EQ(ContentTypeFor(Format::kText), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(ContentTypeFor(Format::kOpenMetrics),
            "application/openmetrics-text; version=1.0.0; charset=utf-8");
  EXPECT_EQ(MetricTypeName(MetricType::kUntyped, Format::kText), "untyped");
  EXPECT_EQ(MetricTypeName(MetricType::kUntyped, Format::kOpenMetrics), "unknown");
  EXPECT_EQ(MetricTypeName(MetricType::kGaugeHistogram, Format::kOpenMetrics), "gaugehistogram");
}

TEST(ContentTypeTest, NegotiateFormat) {
  EXPECT_EQ(NegotiateFormat(""), Format::kText);
  EXPECT_EQ(NegotiateFormat("*/*"), Format::kText);
  EXPECT_EQ(NegotiateFormat("text/plain;version=0.0.4;q=0.5,*/*;q=0.1"), Format::kText);
  EXPECT_EQ(NegotiateFormat("application/json"), Format::kText);
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text"), Format::kOpenMetrics);
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text; version=1.0.0; charset=utf-8"),
            Format::kOpenMetrics);
  // Prometheus 2.x's scrape Accept header.
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text;version=1.0.0,application/"
                            "openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,"
                            "*/*;q=0.1"),
            Format::kOpenMetrics);
  EXPECT_EQ(NegotiateFormat("text/plain , Application/OpenMetrics-Text ;q=0.9"),
            Format::kOpenMetrics);
  EXPECT_EQ(NegotiateFormat("application/openmetrics-textual"), Format::kText);
  // q=0 means "not acceptable" (RFC 9110 §12.4.2).
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text;q=0,text/plain"), Format::kText);
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text; q=0.000"), Format::kText);
  EXPECT_EQ(NegotiateFormat("application/openmetrics-text;q=0.01"), Format::kOpenMetrics);
}

TEST(ContentTypeTest, FormatFromContentType) {
  EXPECT_EQ(FormatFromContentType(kTextContentType), Format::kText);
  EXPECT_EQ(FormatFromContentType(kOpenMetricsContentType), Format::kOpenMetrics);
  EXPECT_EQ(FormatFromContentType("text/plain"), Format::kText);
  EXPECT_EQ(FormatFromContentType("TEXT/Plain; charset=utf-8"), Format::kText);
  EXPECT_EQ(FormatFromContentType(" text/plain ;version=0.0.4"), Format::kText);
  EXPECT_EQ(FormatFromContentType("application/openmetrics-text"), Format::kOpenMetrics);
  EXPECT_EQ(FormatFromContentType(""), std::nullopt);
  EXPECT_EQ(FormatFromContentType("application/json"), std::nullopt);
  EXPECT_EQ(FormatFromContentType("text/html; charset=utf-8"), std::nullopt);
  EXPECT_EQ(FormatFromContentType("text/plainx"), std::nullopt);
}

TEST(ContentTypeTest, DetectFormat) {
  EXPECT_EQ(DetectFormat(""), Format::kText);
  EXPECT_EQ(DetectFormat("# EOF"), Format::kOpenMetrics);
  EXPECT_EQ(DetectFormat("# EOF\n"), Format::kOpenMetrics);
  EXPECT_EQ(DetectFormat("a 1\n# EOF\n"), Format::kOpenMetrics);
  EXPECT_EQ(DetectFormat("a 1\n# EOF\n\n"), Format::kOpenMetrics);
  EXPECT_EQ(DetectFormat("a 1\r\n# EOF\r\n"), Format::kOpenMetrics);
  EXPECT_EQ(DetectFormat("a 1\n"), Format::kText);
  EXPECT_EQ(DetectFormat("# EOF\na 1\n"), Format::kText);
  EXPECT_EQ(DetectFormat("a 1\n#EOF\n"), Format::kText);
  EXPECT_EQ(DetectFormat("a 1\n# EOF x\n"), Format::kText);
}

// --- promtool ------------------------------------------------------------------------------

constexpr const char* kPromtool = "/usr/bin/promtool";

struct PromtoolResult {
  int status = -1;
  std::string output;
};

PromtoolResult RunPromtoolCheckMetrics(const std::string& exposition) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path();
  std::string input = (dir / "mm_writer_test_XXXXXX").string();
  const int fd = mkstemp(input.data());
  EXPECT_GE(fd, 0);
  close(fd);
  std::ofstream(input, std::ios::binary) << exposition;
  const std::string output_path = input + ".out";
  const std::string command =
      std::string(kPromtool) + " check metrics < '" + input + "' > '" + output_path + "' 2>&1";
  PromtoolResult result;
  const int raw = std::system(command.c_str());
  result.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(output_path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  result.output = ss.str();
  std::filesystem::remove(input);
  std::filesystem::remove(output_path);
  return result;
}

// promtool exits 0 when clean, 3 when it only found lint problems (names, units), 1 on a parse
// error ("error while linting: text format parsing error ...").
void ExpectPromtoolAccepts(const std::string& exposition) {
  const PromtoolResult r = RunPromtoolCheckMetrics(exposition);
  ::testing::Test::RecordProperty("promtool_status", r.status);
  if (r.status == 3) std::cerr << "promtool lint problems (accepted):\n" << r.output;
  EXPECT_TRUE(r.status == 0 || r.status == 3) << "status " << r.status << "\n"
                                              << r.output << "\n--- input ---\n"
                                              << exposition;
  EXPECT_EQ(r.output.find("error"), std::string::npos) << r.output << "\n--- input ---\n"
                                                       << exposition;
}

MetricSample S(std::string name, std::vector<LabelPair> labels, double value) {
  return MetricSample{.name = std::move(name), .labels = std::move(labels), .value = value};
}

std::vector<MetricFamily> RealisticFamilies() {
  std::vector<MetricFamily> f;
  MetricFamily counter{.name = "http_requests_total",
                       .type = MetricType::kCounter,
                       .help = "Requests served, by \\path\\ and\nstatus.",
                       .has_help = true};
  counter.samples = {
      S("http_requests_total", {{"code", "200"}, {"path", "C:\\temp\\"}}, 1027),
      S("http_requests_total", {{"code", "500"}, {"path", "say \"hi\"\nbye"}}, 3),
      S("http_requests_total", {{"code", "404"}, {"path", "{a=\"b\",c}#é"}}, 0),
  };
  counter.samples[0].timestamp_ms = 1700000000123;
  f.push_back(counter);

  MetricFamily gauge{.name = "model_requests_running",
                     .type = MetricType::kGauge,
                     .help = "Requests running now.",
                     .has_help = true};
  gauge.samples = {S("model_requests_running", {{"model_name", "Qwen/Qwen2.5-0.5B"}}, 2),
                   S("model_requests_running", {{"model_name", "NaN model"}}, kNaN),
                   S("model_requests_running", {{"model_name", "inf"}}, -kInf),
                   S("model_requests_running", {{"model_name", "tiny"}}, 1.25e-7)};
  f.push_back(gauge);

  MetricFamily histogram{.name = "request_duration_seconds",
                         .type = MetricType::kHistogram,
                         .help = "Request latency.",
                         .has_help = true};
  for (const char* method : {"GET", "POST"}) {
    double cumulative = 0;
    for (const char* le : {"0.005", "0.1", "1", "2.5", "10", "+Inf"}) {
      cumulative += 2;
      histogram.samples.push_back(
          S("request_duration_seconds_bucket", {{"method", method}, {"le", le}}, cumulative));
    }
    histogram.samples.push_back(S("request_duration_seconds_sum", {{"method", method}}, 7.125));
    histogram.samples.push_back(
        S("request_duration_seconds_count", {{"method", method}}, cumulative));
  }
  f.push_back(histogram);

  MetricFamily summary{.name = "rpc_duration_seconds",
                       .type = MetricType::kSummary,
                       .help = "RPC latency quantiles.",
                       .has_help = true};
  for (const char* q : {"0.5", "0.9", "0.99"}) {
    summary.samples.push_back(S("rpc_duration_seconds", {{"quantile", q}}, 0.012));
  }
  summary.samples.push_back(S("rpc_duration_seconds_sum", {}, 1.7560473e+07));
  summary.samples.push_back(S("rpc_duration_seconds_count", {}, 2693));
  f.push_back(summary);

  MetricFamily untyped{
      .name = "process_start_time_seconds", .help = "Start time.", .has_help = true};
  untyped.samples = {S("process_start_time_seconds", {}, 1.7e9)};
  f.push_back(untyped);
  return f;
}

TEST(PromtoolTest, AcceptsRealisticTextExposition) {
  if (access(kPromtool, X_OK) != 0) GTEST_SKIP() << kPromtool << " is not installed";
  const std::string text = WriteFamilies(RealisticFamilies(), Format::kText);
  // The input really exercises the escapes and canonical `le` values.
  ASSERT_NE(text.find("C:\\\\temp\\\\"), std::string::npos) << text;
  ASSERT_NE(text.find("say \\\"hi\\\"\\nbye"), std::string::npos) << text;
  ASSERT_NE(text.find("\\\\path\\\\ and\\nstatus."), std::string::npos) << text;
  ASSERT_NE(text.find("le=\"1.0\""), std::string::npos) << text;
  ASSERT_NE(text.find("1.7560473e+07"), std::string::npos) << text;
  ExpectPromtoolAccepts(text);
}

TEST(PromtoolTest, TheCheckCanFail) {
  if (access(kPromtool, X_OK) != 0) GTEST_SKIP() << kPromtool << " is not installed";
  // A HELP written without escaping (what prometheus-cpp does) breaks the exposition.
  const PromtoolResult r = RunPromtoolCheckMetrics(
      "# HELP a_total x\ny\n# TYPE a_total counter\n"
      "a_total{l=\"unterminated} 1\n");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("error"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace modelmetrics
