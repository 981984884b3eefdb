// Grammar tests for the exposition parser: each rule with inputs it accepts and inputs it rejects,
// strict and lenient modes, error positions, and the hard limits.
#include "modelmetrics/parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace modelmetrics {
namespace {

using ::testing::HasSubstr;

struct Result {
  std::vector<MetricFamily> families;
  std::vector<ParseError> errors;
  size_t error_count = 0;
};

Result Parse(std::string_view text, Format format, bool strict = true, ParseLimits limits = {}) {
  ParseOptions options;
  options.format = format;
  options.strict = strict;
  options.limits = limits;
  Result r;
  r.families = ParseFamilies(text, options, &r.errors, &r.error_count);
  return r;
}

Result Text(std::string_view text, bool strict = true) {
  return Parse(text, Format::kText, strict);
}
Result Om(std::string_view text, bool strict = true) {
  return Parse(text, Format::kOpenMetrics, strict);
}

// The first error of a strict parse, as "line:column: message"; "" when the input is valid.
std::string TextError(std::string_view text) {
  Result r = Text(text);
  return r.errors.empty() ? "" : r.errors.front().ToString();
}
std::string OmError(std::string_view text) {
  Result r = Om(text);
  return r.errors.empty() ? "" : r.errors.front().ToString();
}

size_t SampleCount(const Result& r) {
  size_t n = 0;
  for (const auto& f : r.families) n += f.samples.size();
  return n;
}

MetricSample OnlySample(const Result& r) {
  EXPECT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  EXPECT_EQ(SampleCount(r), 1u);
  return r.families.at(0).samples.at(0);
}

// ---------------------------------------------------------------------------------------------
// Lines, whitespace, comments.

TEST(ParserText, BlankLinesCommentsAndWhitespaceAreIgnored) {
  Result r = Text(
      "\n"
      "# a free comment\n"
      "   \t\n"
      "#HELP-less comment\n"
      "  a   1  \n"
      "\tb\t2\t\n"
      "# EOF is just a comment in text\n"
      "c 3\n");
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  ASSERT_EQ(r.families.size(), 3u);
  EXPECT_EQ(r.families[0].samples[0].value, 1);
  EXPECT_EQ(r.families[1].samples[0].value, 2);
  EXPECT_EQ(r.families[2].samples[0].value, 3);
}

TEST(ParserText, NoTrailingNewline) {
  Result r = Text("# TYPE a gauge\na 7");
  EXPECT_EQ(OnlySample(r).value, 7);
}

TEST(ParserText, CarriageReturnAtLineEndIsTolerated) {
  Result r = Text("# TYPE a gauge\r\na{x=\"y\"} 7\r\n");
  EXPECT_EQ(OnlySample(r).value, 7);
  EXPECT_EQ(r.families[0].type, MetricType::kGauge);
}

TEST(ParserOpenMetrics, BlankLineIsAnError) {
  EXPECT_EQ(OmError("a 1\n\nb 2\n# EOF\n"), "2:1: blank line");
}

TEST(ParserOpenMetrics, FreeCommentIsAnError) {
  EXPECT_THAT(OmError("# hello\na 1\n# EOF\n"), HasSubstr("1:3: unknown comment"));
}

TEST(ParserOpenMetrics, CarriageReturnIsAnError) {
  EXPECT_EQ(OmError("a 1\r\n# EOF\n"), "1:4: carriage return at the end of a line");
  EXPECT_EQ(OnlySample(Om("a{x=\"1\r2\"} 1\n# EOF\n")).labels[0].second, "1\r2");
}

TEST(ParserOpenMetrics, EofRequiredAndFinal) {
  EXPECT_EQ(OmError("a 1\n# EOF\n"), "");
  EXPECT_EQ(OmError("a 1\n# EOF"), "");
  EXPECT_EQ(OmError("a 1\n"), "2:1: missing # EOF at the end of an OpenMetrics exposition");
  EXPECT_EQ(OmError("a 1"), "1:4: missing # EOF at the end of an OpenMetrics exposition");
  EXPECT_EQ(OmError("a 1\n# EOF\nb 2\n"), "3:1: text after # EOF");
  EXPECT_EQ(OmError("# EOF\n\n"), "2:1: text after # EOF");
}

TEST(ParserOpenMetrics, SingleSpacesOnly) {
  EXPECT_EQ(OmError("a 1\n# EOF\n"), "");
  EXPECT_THAT(OmError("a  1\n# EOF\n"), HasSubstr("1:3: invalid value"));
  EXPECT_THAT(OmError(" a 1\n# EOF\n"), HasSubstr("1:1: invalid metric name"));
  EXPECT_THAT(OmError("a{x=\"1\", y=\"2\"} 1\n# EOF\n"), HasSubstr("1:9: invalid label name"));
  EXPECT_THAT(OmError("a 1 \n# EOF\n"), HasSubstr("unexpected text after the sample"));
}

// ---------------------------------------------------------------------------------------------
// Metadata.

TEST(ParserText, HelpTypeAndFamiliesWithoutSamples) {
  Result r = Text(
      "# HELP empty_family Has metadata only.\n"
      "# TYPE empty_family counter\n"
      "# HELP g A gauge with \\\\ and \\n and \\x escapes.\n"
      "# TYPE g gauge\n"
      "g 1\n");
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  ASSERT_EQ(r.families.size(), 2u);
  EXPECT_EQ(r.families[0].name, "empty_family");
  EXPECT_EQ(r.families[0].type, MetricType::kCounter);
  EXPECT_TRUE(r.families[0].samples.empty());
  EXPECT_EQ(r.families[1].help, "A gauge with \\ and \n and \\x escapes.");
  EXPECT_EQ(r.families[1].type, MetricType::kGauge);
}

TEST(ParserText, HelpWithoutText) {
  Result r = Text("# HELP a\n# TYPE a gauge\na 1\n");
  ASSERT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.families[0].has_help);
  EXPECT_EQ(r.families[0].help, "");
}

TEST(ParserText, TypeKeywords) {
  for (const char* t : {"counter", "gauge", "histogram", "summary", "untyped"}) {
    EXPECT_EQ(TextError(std::string("# TYPE a ") + t + "\n"), "") << t;
  }
  EXPECT_EQ(TextError("# TYPE a gaugehistogram\n"), "1:10: invalid metric type \"gaugehistogram\"");
  EXPECT_EQ(TextError("# TYPE a Counter\n"), "1:10: invalid metric type \"Counter\"");
  EXPECT_EQ(TextError("# TYPE a\n"), "1:9: TYPE line without a type");
}

TEST(ParserText, SecondTypeOrHelpIsAnError) {
  EXPECT_EQ(TextError("# TYPE a gauge\n# TYPE a gauge\n"),
            "2:8: second TYPE line for metric name \"a\"");
  EXPECT_EQ(TextError("# HELP a x\n# HELP a y\n"), "2:8: second HELP line for metric name \"a\"");
}

TEST(ParserText, TypeAfterSamplesOfItsFamilyIsAnError) {
  EXPECT_EQ(TextError("a 1\n# TYPE a gauge\n"),
            "2:8: TYPE line for metric name \"a\" after its samples");
  EXPECT_THAT(TextError("a 1\nb 2\n# TYPE a gauge\n"), HasSubstr("3:8: TYPE line for metric name"));
}

TEST(ParserText, MetadataMayComeBackBeforeSamples) {
  // Text only: HELP lines first, TYPE lines later (expfmt accepts this); duplicates still caught.
  Result r = Text("# HELP a A.\n# HELP b B.\n# TYPE a gauge\n# TYPE b counter\na 1\nb 2\n");
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  ASSERT_EQ(r.families.size(), 2u);
  EXPECT_EQ(r.families[0].help, "A.");
  EXPECT_EQ(r.families[0].type, MetricType::kGauge);
  EXPECT_EQ(r.families[1].type, MetricType::kCounter);
  EXPECT_EQ(TextError("# TYPE a gauge\n# TYPE b gauge\n# TYPE a counter\n"),
            "3:8: second TYPE line for metric name \"a\"");
  EXPECT_EQ(TextError("a 1\nb 2\n# HELP a late\n"), "");
  EXPECT_EQ(TextError("a 1\nb 2\n# TYPE a gauge\n"),
            "3:8: TYPE line for metric name \"a\" after its samples");
  EXPECT_THAT(OmError("# HELP a A.\n# HELP b B.\n# TYPE a gauge\n# EOF\n"),
              HasSubstr("3:8: TYPE line for metric name \"a\" after another family"));
}

TEST(ParserText, UnitIsAPlainCommentInText) {
  Result r = Text("# UNIT a_seconds seconds\na_seconds 1\n");
  ASSERT_TRUE(r.errors.empty());
  EXPECT_EQ(r.families[0].unit, "");
}

TEST(ParserOpenMetrics, Metadata) {
  Result r =
      Om("# TYPE a_seconds histogram\n"
         "# UNIT a_seconds seconds\n"
         "# HELP a_seconds Latency \\\"quoted\\\" \\\\ \\n.\n"
         "a_seconds_bucket{le=\"1.0\"} 1\n"
         "a_seconds_bucket{le=\"+Inf\"} 2\n"
         "a_seconds_sum 3.5\n"
         "a_seconds_count 2\n"
         "a_seconds_created 1700000000.5\n"
         "# EOF\n");
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  ASSERT_EQ(r.families.size(), 1u);
  EXPECT_EQ(r.families[0].unit, "seconds");
  EXPECT_EQ(r.families[0].help, "Latency \"quoted\" \\ \n.");
  EXPECT_EQ(r.families[0].samples.size(), 5u);
}

TEST(ParserOpenMetrics, MetadataErrors) {
  EXPECT_THAT(OmError("# UNIT a_seconds bytes\n# EOF\n"), HasSubstr("is not a suffix"));
  EXPECT_THAT(OmError("# UNIT a_s s\n# UNIT a_s s\n# EOF\n"), HasSubstr("second UNIT line"));
  EXPECT_THAT(OmError("# TYPE a untyped\n# EOF\n"), HasSubstr("invalid metric type"));
  EXPECT_THAT(OmError("# TYPE a gauge\na 1\n# HELP a x\n# EOF\n"),
              HasSubstr("metadata after the family's samples"));
  for (const char* t : {"counter", "gauge", "histogram", "gaugehistogram", "summary", "info",
                        "stateset", "unknown"}) {
    EXPECT_EQ(OmError(std::string("# TYPE a ") + t + "\n# EOF\n"), "") << t;
  }
}

// ---------------------------------------------------------------------------------------------
// Names.

TEST(ParserText, LegacyNames) {
  EXPECT_EQ(TextError("vllm:num_requests_running 1\n"), "");
  EXPECT_EQ(TextError("_a:b_9 1\n"), "");
  EXPECT_EQ(TextError("9a 1\n"), "1:1: invalid metric name");
  EXPECT_EQ(TextError("a-b 1\n"), "1:2: expected blank before the value");
  EXPECT_EQ(TextError("a{9x=\"1\"} 1\n"), "1:3: invalid label name");
  EXPECT_EQ(TextError("a{x:y=\"1\"} 1\n"), "1:4: expected '=' after label name");
}

TEST(ParserText, QuotedUtf8Names) {
  Result r = Text(
      "# HELP \"my.dotted.metric\" A dotted name.\n"
      "# TYPE \"my.dotted.metric\" gauge\n"
      "{\"my.dotted.metric\", \"error.message\"=\"Not Found\", code=\"404\"} 1\n"
      "{\"my.dotted.metric\"} 2\n");
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  ASSERT_EQ(r.families.size(), 1u);
  const MetricFamily& f = r.families[0];
  EXPECT_EQ(f.name, "my.dotted.metric");
  EXPECT_EQ(f.type, MetricType::kGauge);
  ASSERT_EQ(f.samples.size(), 2u);
  EXPECT_EQ(f.samples[0].name, "my.dotted.metric");
  EXPECT_EQ(f.samples[0].labels,
            (std::vector<LabelPair>{{"error.message", "Not Found"}, {"code", "404"}}));
  EXPECT_EQ(f.samples[1].value, 2);
}

TEST(ParserText, QuotedNameErrors) {
  // prometheus/prometheus#18225: a bare identifier alone in braces crashed both Go parsers.
  EXPECT_EQ(TextError("{A}0\n"), "1:3: expected '=' after label name");
  EXPECT_EQ(TextError("{} 1\n"), "1:1: missing metric name");
  EXPECT_EQ(TextError("a{\"b\"} 1\n"), "1:3: metric name given twice");
  EXPECT_EQ(TextError("{\"\"} 1\n"), "1:2: empty quoted label name");
  EXPECT_EQ(TextError("{\"a\", \"b\"} 1\n"), "1:10: expected '=' after label name");
}

// ---------------------------------------------------------------------------------------------
// Labels.

TEST(ParserText, LabelSeparatorsAndTrailingComma) {
  Result r = Text("a{x=\"1\", y=\"2\",z=\"3\" , } 1\n");
  const MetricSample s = OnlySample(r);
  EXPECT_EQ(s.labels, (std::vector<LabelPair>{{"x", "1"}, {"y", "2"}, {"z", "3"}}));
  EXPECT_EQ(OnlySample(Text("a { x = \"1\" } 1\n")).labels, (std::vector<LabelPair>{{"x", "1"}}));
  EXPECT_EQ(OnlySample(Text("a{} 1\n")).labels.size(), 0u);
  EXPECT_THAT(OmError("a{x=\"1\",} 1\n# EOF\n"), HasSubstr("trailing comma"));
}

TEST(ParserText, LabelSetErrors) {
  EXPECT_EQ(TextError("a{x=\"1\" y=\"2\"} 1\n"), "1:9: expected ',' or '}' in label set");
  EXPECT_EQ(TextError("a{x=1} 1\n"), "1:5: expected '\"' to open label value");
  EXPECT_EQ(TextError("a{x=\"1\"\n"), "1:8: unterminated label set");
  EXPECT_EQ(TextError("a{,} 1\n"), "1:3: invalid label name");
}

TEST(ParserText, LabelValueEscapes) {
  const MetricSample s = OnlySample(Text(R"(a{p="C:\\dir\\",q="say \"hi\"",n="l1\nl2"} 1)"));
  EXPECT_EQ(s.labels[0].second, "C:\\dir\\");
  EXPECT_EQ(s.labels[1].second, "say \"hi\"");
  EXPECT_EQ(s.labels[2].second, "l1\nl2");
}

TEST(ParserText, BackslashAtTheEndOfAValue) {
  // timescale/pg_prometheus#53: the quote after an escaped backslash closes the value.
  const MetricSample s = OnlySample(Text(R"(a{partition="F:\\",b="x"} 1)"));
  EXPECT_EQ(s.labels, (std::vector<LabelPair>{{"partition", "F:\\"}, {"b", "x"}}));
}

TEST(ParserText, BracesCommasAndHashInsideValues) {
  const MetricSample s = OnlySample(Text("a{x=\"{a,b}=#c\",y=\"}\"} 1\n"));
  EXPECT_EQ(s.labels, (std::vector<LabelPair>{{"x", "{a,b}=#c"}, {"y", "}"}}));
  const MetricSample om = OnlySample(Om("a{x=\"# {}\"} 1\n# EOF\n"));
  EXPECT_EQ(om.labels, (std::vector<LabelPair>{{"x", "# {}"}}));
}

TEST(ParserText, UnknownEscapeRejectedInStrictKeptInLenient) {
  // expfmt rejects `\u` (NetApp/harvest#1128); Prometheus's own parser keeps it verbatim.
  EXPECT_EQ(TextError(R"(a{user="domain\user"} 1)"), "1:15: invalid escape sequence '\\u'");
  Result lenient = Text(R"(a{user="domain\user"} 1)", /*strict=*/false);
  EXPECT_EQ(lenient.error_count, 0u);
  EXPECT_EQ(OnlySample(lenient).labels[0].second, "domain\\user");
  // OpenMetrics allows a backslash before a normal character (conformance case `escaping`).
  Result om = Om("a{x=\"\\z\"} 1\n# EOF\n");
  EXPECT_EQ(OnlySample(om).labels[0].second, "\\z");
}

TEST(ParserText, UnterminatedQuote) {
  EXPECT_EQ(TextError("a{x=\"abc} 1\n"), "1:5: unterminated quoted string");
  EXPECT_EQ(TextError("a{x=\"abc\\\"} 1\n"), "1:5: unterminated quoted string");
  EXPECT_EQ(TextError("# TYPE \"abc gauge\n"), "1:8: unterminated quoted string");
}

TEST(ParserText, InvalidUtf8InLabelValue) {
  EXPECT_EQ(TextError("a{x=\"caf\xc3\xa9\"} 1\n"), "");
  EXPECT_EQ(TextError("a{x=\"\xff\"} 1\n"), "1:6: invalid UTF-8 in quoted string");
  EXPECT_EQ(TextError("a{x=\"\xc3\"} 1\n"), "1:6: invalid UTF-8 in quoted string");
  EXPECT_EQ(TextError("a{x=\"\xed\xa0\x80\"} 1\n"), "1:6: invalid UTF-8 in quoted string");
  EXPECT_EQ(TextError("a{x=\"\xc0\xaf\"} 1\n"), "1:6: invalid UTF-8 in quoted string");
}

TEST(ParserText, DuplicateLabelNames) {
  EXPECT_EQ(TextError("a{x=\"1\",x=\"2\"} 1\n"), "1:9: duplicate label name \"x\"");
  EXPECT_EQ(TextError("a{x=\"1\",y=\"2\"} 1\n"), "");
}

TEST(ParserText, ValuesAreViewsIntoTheInputUnlessEscaped) {
  const std::string input = "a{x=\"plain\",y=\"esc\\\"aped\"} 1\n";
  ParseOptions options;
  Parser parser(input, options);
  ASSERT_EQ(parser.Next(), Event::kSample);
  const auto labels = parser.sample().labels;
  ASSERT_EQ(labels.size(), 2u);
  const char* begin = input.data();
  const char* end = begin + input.size();
  EXPECT_TRUE(labels[0].value.data() >= begin && labels[0].value.data() < end);
  EXPECT_FALSE(labels[1].value.data() >= begin && labels[1].value.data() < end);
  EXPECT_EQ(labels[1].value, "esc\"aped");
}

// ---------------------------------------------------------------------------------------------
// Values and timestamps.

TEST(ParserText, Values) {
  struct Case {
    const char* text;
    double value;
  };
  for (const Case& c : std::vector<Case>{{"1.9392065536e+010", 1.9392065536e10},
                                         {"-1.0", -1},
                                         {"482.66999999999996", 482.66999999999996},
                                         {"+Inf", INFINITY},
                                         {"+inf", INFINITY},
                                         {"-Inf", -INFINITY},
                                         {"-INF", -INFINITY},
                                         {"1e-3", 0.001},
                                         {".5", 0.5}}) {
    EXPECT_EQ(OnlySample(Text(std::string("a ") + c.text + "\n")).value, c.value) << c.text;
  }
  for (const char* nan : {"NaN", "nan", "Nan", "NAN"}) {
    EXPECT_TRUE(std::isnan(OnlySample(Text(std::string("a ") + nan + "\n")).value)) << nan;
  }
}

TEST(ParserText, GarbageValues) {
  EXPECT_EQ(TextError("a 0x10\n"), "1:3: invalid value \"0x10\"");
  EXPECT_EQ(TextError("a 1_000\n"), "1:3: invalid value \"1_000\"");
  EXPECT_EQ(TextError("a one\n"), "1:3: invalid value \"one\"");
  EXPECT_EQ(TextError("a 1,5\n"), "1:3: invalid value \"1,5\"");
  EXPECT_EQ(TextError("a\n"), "1:2: expected blank before the value");
  EXPECT_EQ(TextError("a{x=\"1\"}\n"), "1:9: expected blank before the value");
}

TEST(ParserText, TimestampsInMilliseconds) {
  const MetricSample s = OnlySample(Text("a 1 1700000000123\n"));
  EXPECT_EQ(s.timestamp_ms, 1700000000123);
  EXPECT_FALSE(OnlySample(Text("a 1\n")).timestamp_ms.has_value());
  EXPECT_EQ(TextError("a 1 1.5\n"), "1:5: invalid timestamp \"1.5\"");
  EXPECT_EQ(TextError("a 1 2 3\n"), "1:7: unexpected text after the timestamp");
  // Prometheus's lexer takes digits only; lenient mode also takes a sign (the docs' example).
  EXPECT_EQ(TextError("a +Inf -3982045\n"), "1:8: invalid timestamp \"-3982045\"");
  EXPECT_EQ(OnlySample(Text("a +Inf -3982045\n", false)).timestamp_ms, -3982045);
}

TEST(ParserOpenMetrics, TimestampsInSeconds) {
  Result r = Om("a 1 1700000000.123\nb 2 -1.5\n# EOF\n");
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  EXPECT_EQ(r.families[0].samples[0].timestamp_ms, 1700000000123);
  EXPECT_EQ(r.families[1].samples[0].timestamp_ms, -1500);
  EXPECT_THAT(OmError("a 1 NaN\n# EOF\n"), HasSubstr("invalid timestamp"));
}

// ---------------------------------------------------------------------------------------------
// Families and types.

TEST(ParserText, HistogramWithSumBeforeBucketsAndLeFirst) {
  // SGLang's habit (fixtures/real/sglang): `_sum` first, `le` the first label.
  Result r = Text(
      "# TYPE t histogram\n"
      "t_sum{m=\"x\"} 2.5\n"
      "t_bucket{le=\"0.1\",m=\"x\"} 1\n"
      "t_bucket{le=\"+Inf\",m=\"x\"} 2\n"
      "t_count{m=\"x\"} 2\n"
      "t_created{m=\"x\"} 1.7e9\n");
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  ASSERT_EQ(r.families.size(), 1u);
  EXPECT_EQ(r.families[0].type, MetricType::kHistogram);
  EXPECT_EQ(r.families[0].samples.size(), 5u);
}

TEST(ParserText, HistogramAndSummaryLabelChecks) {
  EXPECT_EQ(TextError("# TYPE t histogram\nt_bucket 1\n"), "2:1: missing \"le\" label");
  EXPECT_EQ(TextError("# TYPE t histogram\nt_bucket{le=\"x\"} 1\n"),
            "2:1: invalid \"le\" value \"x\"");
  EXPECT_EQ(TextError("# TYPE t histogram\nt 1\n"),
            "2:1: sample name \"t\" does not fit its family of type histogram");
  EXPECT_EQ(TextError("# TYPE s summary\ns 1\n"), "2:1: missing \"quantile\" label");
  Result r = Text(
      "# TYPE s summary\n"
      "s{quantile=\"0.5\"} 1\n"
      "s{quantile=\"0.99\"} 2\n"
      "s_sum 10\n"
      "s_count 4\n");
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  EXPECT_EQ(r.families.size(), 1u);
  EXPECT_EQ(r.families[0].samples.size(), 4u);
}

TEST(ParserText, CreatedGaugeFamiliesAndCounters) {
  // client_python 0.0.4 output: `_created` as a separate gauge family after the counter.
  Result r = Text(
      "# HELP c_total Requests.\n"
      "# TYPE c_total counter\n"
      "c_total 3.0\n"
      "# HELP c_created Requests.\n"
      "# TYPE c_created gauge\n"
      "c_created 1.7e9\n");
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  ASSERT_EQ(r.families.size(), 2u);
  EXPECT_EQ(r.families[0].name, "c_total");
  EXPECT_EQ(r.families[1].name, "c_created");
  EXPECT_EQ(r.families[1].type, MetricType::kGauge);
}

TEST(ParserText, UntypedSeriesAndSplitFamilies) {
  Result r = Text("a 1\nb 2\na{x=\"y\"} 3\n");
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  ASSERT_EQ(r.families.size(), 2u);
  EXPECT_EQ(r.families[0].type, MetricType::kUntyped);
  EXPECT_EQ(r.families[0].samples.size(), 2u);
}

TEST(ParserOpenMetrics, InterleavedFamiliesAreAnError) {
  EXPECT_EQ(OmError("a 1\nb 2\na 3\n# EOF\n"), "3:1: family \"a\" is interleaved with another");
  EXPECT_THAT(OmError("# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\n# TYPE a gauge\n# EOF\n"),
              HasSubstr("5:8: TYPE line for metric name \"a\" after"));
}

TEST(ParserOpenMetrics, CounterSamplesNeedTotal) {
  Result r = Om("# TYPE c counter\nc_total 1\nc_created 1700000000\n# EOF\n");
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  ASSERT_EQ(r.families.size(), 1u);
  EXPECT_EQ(r.families[0].samples.size(), 2u);
  EXPECT_EQ(OmError("# TYPE c counter\nc 1\n# EOF\n"),
            "2:1: sample name \"c\" does not fit its family of type counter");
}

TEST(ParserOpenMetrics, Exemplars) {
  Result r =
      Om("# TYPE h histogram\n"
         "h_bucket{le=\"1.0\"} 1 # {trace_id=\"a#b\"} 0.5 1700000000.25\n"
         "h_bucket{le=\"+Inf\"} 2 # {} 3\n"
         "h_sum 3.5\n"
         "h_count 2\n"
         "# TYPE c counter\n"
         "c_total 5 1700000000 # {id=\"x\"} 1\n"
         "# EOF\n");
  ASSERT_TRUE(r.errors.empty()) << r.errors.front().ToString();
  const MetricSample& b = r.families[0].samples[0];
  ASSERT_TRUE(b.exemplar.has_value());
  EXPECT_EQ(b.exemplar->labels, (std::vector<LabelPair>{{"trace_id", "a#b"}}));
  EXPECT_EQ(b.exemplar->value, 0.5);
  EXPECT_EQ(b.exemplar->timestamp_ms, 1700000000250);
  EXPECT_TRUE(r.families[0].samples[1].exemplar->labels.empty());
  const MetricSample& c = r.families[1].samples[0];
  EXPECT_EQ(c.timestamp_ms, 1700000000000);
  EXPECT_EQ(c.exemplar->value, 1);

  EXPECT_THAT(OmError("# TYPE g gauge\ng 1 # {a=\"b\"} 1\n# EOF\n"),
              HasSubstr("exemplar on a sample that cannot have one"));
  EXPECT_THAT(OmError("# TYPE c counter\nc_total 1 # {a=\"b\"}\n# EOF\n"),
              HasSubstr("expected one space before the exemplar value"));
  EXPECT_THAT(
      OmError("# TYPE c counter\nc_total 1 # {a=\"" + std::string(130, 'x') + "\"} 1\n# EOF\n"),
      HasSubstr("longer than 128 code points"));
}

// ---------------------------------------------------------------------------------------------
// Strict and lenient modes, events, filtering.

TEST(ParserModes, StrictStopsAtTheFirstError) {
  ParseOptions options;
  options.format = Format::kText;
  Parser parser("a 1\nb x\nc 3\n", options);
  EXPECT_EQ(parser.Next(), Event::kSample);
  EXPECT_EQ(parser.Next(), Event::kError);
  EXPECT_EQ(parser.last_error().ToString(), "2:3: invalid value \"x\"");
  EXPECT_EQ(parser.Next(), Event::kEnd);
  EXPECT_EQ(parser.Next(), Event::kEnd);
  EXPECT_FALSE(parser.ok());
}

TEST(ParserModes, LenientSkipsCountsAndReportsBadLines) {
  Result r = Text("a 1\nb x\nc{ 3\nd 4\ne{x=\"1\",x=\"2\"} 5\nf 6\n", /*strict=*/false);
  EXPECT_EQ(r.error_count, 3u);
  ASSERT_EQ(r.errors.size(), 3u);
  EXPECT_EQ(r.errors[0].line, 2u);
  EXPECT_EQ(r.errors[1].line, 3u);
  EXPECT_EQ(r.errors[2].line, 5u);
  std::vector<std::string> names;
  for (const auto& f : r.families) names.push_back(f.name);
  EXPECT_EQ(names, (std::vector<std::string>{"a", "d", "f"}));
}

TEST(ParserModes, LenientKeepsOnlyTheFirstErrors) {
  std::string text;
  for (int i = 0; i < 50; ++i) text += "bad line\n";
  ParseLimits limits;
  limits.max_errors_kept = 10;
  Result r = Parse(text, Format::kText, /*strict=*/false, limits);
  EXPECT_EQ(r.error_count, 50u);
  EXPECT_EQ(r.errors.size(), 10u);
}

TEST(ParserModes, FormatDetectedWhenNotGiven) {
  ParseOptions options;  // no format
  Parser om("# TYPE c counter\nc_total 1\n# EOF\n", options);
  EXPECT_EQ(om.format(), Format::kOpenMetrics);
  Parser text("c_total 1\n", options);
  EXPECT_EQ(text.format(), Format::kText);
}

TEST(ParserModes, EventsCarryMetadataAndFamily) {
  ParseOptions options;
  Parser parser("# HELP h Help.\n# TYPE h histogram\nh_bucket{le=\"+Inf\"} 1\nh_sum 2\nh_count 1\n",
                options);
  ASSERT_EQ(parser.Next(), Event::kHelp);
  EXPECT_EQ(parser.metadata().name, "h");
  EXPECT_EQ(parser.metadata().text, "Help.");
  ASSERT_EQ(parser.Next(), Event::kType);
  EXPECT_EQ(parser.metadata().type, MetricType::kHistogram);
  ASSERT_EQ(parser.Next(), Event::kSample);
  EXPECT_EQ(parser.sample().name, "h_bucket");
  EXPECT_EQ(parser.sample().family, "h");
  EXPECT_EQ(parser.sample().type, MetricType::kHistogram);
  ASSERT_EQ(parser.Next(), Event::kSample);
  ASSERT_EQ(parser.Next(), Event::kSample);
  EXPECT_EQ(parser.Next(), Event::kEnd);
  EXPECT_EQ(parser.sample_count(), 3u);
  EXPECT_TRUE(parser.ok());
}

TEST(ParserModes, FamilyFilterCanStillCheckSkippedFamilies) {
  ParseOptions options;
  options.families = {"want"};
  options.check_filtered = true;
  std::vector<ParseError> errors;
  std::vector<MetricFamily> families =
      ParseFamilies("# TYPE want gauge\nwant 1\nskip{broken 1\nwant_other 2\n", options, &errors);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].ToString(), "3:13: expected '=' after label name");
  ASSERT_EQ(families.size(), 1u);
  EXPECT_EQ(families[0].samples.size(), 1u);
}

TEST(ParserModes, FamilyFilterSkipsOtherFamiliesUnread) {
  ParseOptions options;
  options.families = {"want", "h"};
  // The unwanted lines are broken after their names: they are never read past the name.
  std::vector<MetricFamily> families = ParseFamilies(
      "# TYPE skip gauge\nskip{broken 1\n# TYPE want gauge\nwant{a=\"b\"} 1\n"
      "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_sum 1\nh_count 2\nother{x garbage\n",
      options);
  ASSERT_EQ(families.size(), 2u);
  EXPECT_EQ(families[0].name, "want");
  EXPECT_EQ(families[1].name, "h");
  EXPECT_EQ(families[1].samples.size(), 3u);
}

// ---------------------------------------------------------------------------------------------
// Hard limits: a clear error, never a crash or an unbounded allocation, in both modes.

TEST(ParserLimits, Bytes) {
  ParseLimits limits;
  limits.max_bytes = 10;
  Result r = Parse("a 1\nb 2\nc 3\n", Format::kText, /*strict=*/false, limits);
  ASSERT_EQ(r.errors.size(), 1u);
  EXPECT_EQ(r.errors[0].ToString(), "1:1: input of 12 bytes exceeds the limit of 10 bytes");
  EXPECT_TRUE(r.families.empty());
}

TEST(ParserLimits, LineLength) {
  ParseLimits limits;
  limits.max_line_length = 20;
  Result r = Parse("a 1\nb{x=\"" + std::string(30, 'y') + "\"} 2\nc 3\n", Format::kText,
                   /*strict=*/false, limits);
  ASSERT_EQ(r.error_count, 1u);
  EXPECT_EQ(r.errors[0].ToString(), "2:1: line longer than the limit of 20 bytes");
  EXPECT_EQ(r.families.size(), 1u);  // fatal even in lenient mode: c is not read
}

TEST(ParserLimits, LabelsPerSeries) {
  ParseLimits limits;
  limits.max_labels_per_series = 3;
  EXPECT_EQ(Parse("a{a=\"1\",b=\"2\",c=\"3\"} 1\n", Format::kText, true, limits).error_count, 0u);
  Result r = Parse("a{a=\"1\",b=\"2\",c=\"3\",d=\"4\"} 1\nb 2\n", Format::kText, false, limits);
  ASSERT_EQ(r.error_count, 1u);
  EXPECT_EQ(r.errors[0].ToString(), "1:21: more than 3 labels in one series");
  EXPECT_TRUE(r.families.empty());
}

TEST(ParserLimits, SeriesPerScrape) {
  ParseLimits limits;
  limits.max_series = 2;
  Result r = Parse("a 1\nb 2\nc 3\nd 4\n", Format::kText, false, limits);
  ASSERT_EQ(r.error_count, 1u);
  EXPECT_EQ(r.errors[0].ToString(), "3:1: more than 2 samples");
  EXPECT_EQ(r.families.size(), 2u);
}

TEST(ParserLimits, NameAndLabelLengths) {
  ParseLimits limits;
  limits.max_name_length = 8;
  limits.max_label_value_length = 4;
  EXPECT_EQ(Parse("abcdefgh{abcdefgh=\"abcd\"} 1\n", Format::kText, true, limits).error_count, 0u);
  EXPECT_EQ(Parse("abcdefghi 1\n", Format::kText, false, limits).errors.at(0).ToString(),
            "1:1: name longer than the limit of 8 bytes");
  EXPECT_EQ(Parse("a{abcdefghi=\"1\"} 1\n", Format::kText, false, limits).errors.at(0).ToString(),
            "1:3: name longer than the limit of 8 bytes");
  EXPECT_EQ(Parse("a{b=\"abcde\"} 1\n", Format::kText, false, limits).errors.at(0).ToString(),
            "1:6: quoted string longer than the limit of 4 bytes");
  EXPECT_EQ(Parse("{\"abcdefghi\"} 1\n", Format::kText, false, limits).errors.at(0).ToString(),
            "1:3: quoted string longer than the limit of 8 bytes");
}

}  // namespace
}  // namespace modelmetrics
