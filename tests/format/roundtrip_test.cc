// Property test: WriteFamilies -> ParseFamilies (strict, format given) is the identity on every
// legal family list, in both formats. Families come from a seeded generator (std::mt19937_64 with
// fixed seeds, so a failure names the seed that reproduces it); every shared fixture goes
// parse -> write -> parse as well.
//
// What the generator keeps within the formats (each point is something the formats cannot carry,
// not a choice of this writer):
//   - text HELP has no escape for blanks, and lines are trimmed: no leading or trailing blank or
//     CR in text HELP;
//   - OpenMetrics forbids CR anywhere in a line: no CR in OpenMetrics strings;
//   - `le` and `quantile` labels are always rendered canonically by the writer: they are only used
//     on buckets/quantiles, with values made by AppendCanonicalDouble;
//   - text timestamps are non-negative (strict parsing accepts digits only, as Prometheus does);
//   - UNIT only in OpenMetrics (text has none), always a `_`-suffix of the family name;
//   - exemplars only in OpenMetrics, on `_total`, `_bucket` and `_count`, at most 128 code points.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "format/number.h"
#include "format/test_numbers.h"
#include "modelmetrics/exposition.h"
#include "modelmetrics/parser.h"
#include "modelmetrics/writer.h"
#include "test_paths.h"

namespace modelmetrics {
namespace {

using ::modelmetrics::testing::kInf;

// --- Diff printing -------------------------------------------------------------------------

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(static_cast<char>(c));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out + "\"";
}

std::string Value(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g[%016" PRIx64 "]", v, std::bit_cast<uint64_t>(v));
  return buf;
}

std::string Labels(const std::vector<LabelPair>& labels) {
  std::string out = "{";
  for (const auto& [k, v] : labels) out += Quote(k) + "=" + Quote(v) + ",";
  return out + "}";
}

std::string Describe(const MetricFamily& f) {
  std::ostringstream os;
  os << "family " << Quote(f.name) << " type=" << MetricTypeName(f.type, Format::kOpenMetrics)
     << " has_help=" << f.has_help << " help=" << Quote(f.help) << " unit=" << Quote(f.unit)
     << " samples=" << f.samples.size() << "\n";
  for (const MetricSample& s : f.samples) {
    os << "  " << Quote(s.name) << Labels(s.labels) << " " << Value(s.value);
    if (s.timestamp_ms) os << " ts=" << *s.timestamp_ms;
    if (s.exemplar) {
      os << " # " << Labels(s.exemplar->labels) << " " << Value(s.exemplar->value);
      if (s.exemplar->timestamp_ms) os << " ts=" << *s.exemplar->timestamp_ms;
    }
    os << "\n";
  }
  return os.str();
}

// Empty when equal; otherwise the first difference, both sides described.
std::string Diff(const std::vector<MetricFamily>& want, const std::vector<MetricFamily>& got) {
  std::ostringstream os;
  for (size_t i = 0; i < std::max(want.size(), got.size()); ++i) {
    if (i >= want.size()) {
      os << "extra family #" << i << ":\n" << Describe(got[i]);
      break;
    }
    if (i >= got.size()) {
      os << "missing family #" << i << ":\n" << Describe(want[i]);
      break;
    }
    if (!SameFamily(want[i], got[i])) {
      os << "family #" << i << " differs\n--- want\n"
         << Describe(want[i]) << "--- got\n"
         << Describe(got[i]);
      break;
    }
  }
  return os.str();
}

// --- Generator -----------------------------------------------------------------------------

class Generator {
 public:
  Generator(uint64_t seed, Format format) : rng_(seed), format_(format) {}

  std::vector<MetricFamily> Families() {
    std::vector<MetricFamily> out;
    const int n = 1 + Below(5);
    for (int i = 0; i < n; ++i) out.push_back(Family());
    return out;
  }

 private:
  bool om() const { return format_ == Format::kOpenMetrics; }
  int Below(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool OneIn(int n) { return Below(n) == 0; }
  template <typename T>
  const T& Pick(const std::vector<T>& v) {
    return v[static_cast<size_t>(Below(static_cast<int>(v.size())))];
  }

  std::string LegacyName(bool metric) {
    static const std::string kFirst = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_";
    static const std::string kRest = kFirst + "0123456789";
    std::string s(1, kFirst[Below(static_cast<int>(kFirst.size()))]);
    if (metric && OneIn(6)) s = ":";
    const int len = Below(12);
    for (int i = 0; i < len; ++i) {
      s.push_back(metric && OneIn(15) ? ':' : kRest[Below(static_cast<int>(kRest.size()))]);
    }
    return s;
  }

  // A name that is not legal in the legacy charset, so the writer must quote it.
  std::string Utf8Name() {
    static const std::vector<std::string> kPieces = {
        "a", "b", "Z",  "_",  "0", "9", ".", "-", "é", "日本", "🙂", " ",
        "/", ":", "\"", "\\", "{", "}", ",", "=", "#", "\n",   "\t"};
    static const std::vector<std::string> kNeedsQuoting = {".", "-", "é", "🙂", " ", "a.b-c"};
    std::string s = Pick(kNeedsQuoting);
    const int len = Below(6);
    for (int i = 0; i < len; ++i) {
      const std::string& piece = Pick(kPieces);
      if (OneIn(2)) {
        s += piece;
      } else {
        s.insert(0, piece);
      }
    }
    return s;
  }

  std::string MetricName() { return OneIn(4) ? Utf8Name() : LegacyName(true); }

  std::string LabelName() {
    std::string s = OneIn(5) ? Utf8Name() : LegacyName(false);
    return s == "le" || s == "quantile" ? s + "_x" : s;
  }

  // Any UTF-8, heavy on the characters that need escaping or confuse tokenisers.
  std::string Utf8String(int max_len) {
    static const std::vector<std::string> kPieces = {
        "a",    "Z",    "0",   " ",    "\t",  "\\",  "\"",
        "\n",   "{",    "}",   ",",    "#",   "=",   "é",
        "日",   "🙂", "\\n", "\\\"", "\"}", "# {", std::string(1, '\0'),
        "\x7f", "\r",   "+Inf"};
    const int len = Below(max_len + 1);
    std::string s;
    for (int i = 0; i < len; ++i) {
      const std::string& piece = Pick(kPieces);
      if (om() && piece == "\r") continue;  // OpenMetrics has no CR at all
      s += piece;
    }
    return s;
  }

  std::string Help() {
    std::string s = Utf8String(12);
    if (!om()) {
      // Text HELP cannot start or end with a blank (or end with CR): the line is trimmed.
      auto blank = [](char c) { return c == ' ' || c == '\t' || c == '\r'; };
      while (!s.empty() && blank(s.front())) s.erase(0, 1);
      while (!s.empty() && blank(s.back())) s.pop_back();
    }
    return s;
  }

  double Number() {
    switch (Below(14)) {
      case 0:
        return std::numeric_limits<double>::quiet_NaN();
      case 1:
        return kInf;
      case 2:
        return -kInf;
      case 3:
        return -0.0;
      case 4:
        return 0.0;
      case 5:  // subnormal
        return std::bit_cast<double>((rng_() & 0x000fffffffffffffULL) | (rng_() & (1ULL << 63)));
      case 6:
        return OneIn(2) ? DBL_MAX : -DBL_MAX;
      case 7:
        return OneIn(2) ? DBL_MIN : std::numeric_limits<double>::denorm_min();
      case 8:
        return static_cast<double>(Below(2000) - 100);
      case 9:
        return Below(100000) / 1000.0;
      default: {  // random finite bit pattern
        double v;
        do {
          v = std::bit_cast<double>(rng_());
        } while (!std::isfinite(v));
        return v;
      }
    }
  }

  double FiniteNumber() {
    double v;
    do {
      v = Number();
    } while (!std::isfinite(v));
    return v;
  }

  std::optional<int64_t> Timestamp() {
    if (OneIn(2)) return std::nullopt;
    int64_t v;
    switch (Below(4)) {
      case 0:
        v = 1'700'000'000'000 + Below(1'000'000);
        break;
      case 1:
        v = std::bit_cast<int64_t>(rng_()) >> Below(64);  // every decimal length
        break;
      case 2:
        v = OneIn(2) ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
        break;
      default:
        v = std::bit_cast<int64_t>(rng_());
    }
    if (!om()) {
      // Text: digits only, so non-negative.
      if (v == std::numeric_limits<int64_t>::min()) v = 0;
      v = v < 0 ? -v : v;
    }
    return v;
  }

  std::string Canonical(double v) {
    std::string s;
    AppendCanonicalDouble(&s, v);
    return s;
  }

  // Series labels: unique names, none of `reserved`.
  std::vector<LabelPair> SeriesLabels(const std::set<std::string>& reserved) {
    std::vector<LabelPair> labels;
    std::set<std::string> names = reserved;
    const int n = Below(4);
    for (int i = 0; i < n; ++i) {
      std::string name = LabelName();
      if (!names.insert(name).second) continue;
      labels.emplace_back(name, Utf8String(10));
    }
    return labels;
  }

  // Inserts `label` at a random position.
  static void InsertAt(std::vector<LabelPair>* labels, size_t pos, LabelPair label) {
    labels->insert(labels->begin() + static_cast<std::ptrdiff_t>(pos % (labels->size() + 1)),
                   std::move(label));
  }

  std::optional<Exemplar> MaybeExemplar() {
    if (!om() || OneIn(2)) return std::nullopt;
    Exemplar e;
    size_t code_points = 0;
    std::set<std::string> names;
    const int n = Below(3);
    for (int i = 0; i < n; ++i) {
      std::string name = LegacyName(false);
      if (OneIn(4)) name = "trace.id";
      std::string value = Utf8String(8);
      size_t cp = 0;
      for (unsigned char c : name + value) cp += (c & 0xC0) != 0x80;
      if (code_points + cp > 128 || !names.insert(name).second) continue;
      code_points += cp;
      e.labels.emplace_back(std::move(name), std::move(value));
    }
    e.value = Number();
    e.timestamp_ms = Timestamp();
    return e;
  }

  MetricSample Sample(std::string name, std::vector<LabelPair> labels, double value) {
    MetricSample s;
    s.name = std::move(name);
    s.labels = std::move(labels);
    s.value = value;
    s.timestamp_ms = Timestamp();
    return s;
  }

  // The sample names a family named `name` may produce (conservatively: every type's suffixes).
  static std::vector<std::string> OwnedNames(const std::string& name) {
    std::vector<std::string> out = {name};
    for (const char* suffix :
         {"_total", "_created", "_bucket", "_sum", "_count", "_gsum", "_gcount", "_info"}) {
      out.push_back(name + suffix);
    }
    return out;
  }

  // A family name no earlier family uses or produces as a sample name (and vice versa).
  std::string FreshName(MetricType type, const std::string& unit) {
    for (;;) {
      std::string name = MetricName();
      if (!unit.empty()) name += "_" + unit;
      if (!om() && type == MetricType::kCounter) name += "_total";
      if (om() && type == MetricType::kCounter && name.ends_with("_total")) continue;
      if (name.size() > 200) continue;
      const std::vector<std::string> owned = OwnedNames(name);
      bool clash = false;
      for (const std::string& n : owned) clash |= used_.count(n) > 0;
      // Also: no earlier family's name may be one of ours, nor ours one of theirs.
      for (const std::string& f : family_names_) {
        for (const std::string& n : OwnedNames(f)) clash |= n == name;
      }
      if (clash) continue;
      used_.insert(owned.begin(), owned.end());
      family_names_.push_back(name);
      return name;
    }
  }

  MetricFamily Family() {
    std::vector<MetricType> types = {MetricType::kCounter, MetricType::kGauge,
                                     MetricType::kHistogram, MetricType::kSummary,
                                     MetricType::kUntyped};
    if (om()) {
      types.insert(types.end(),
                   {MetricType::kGaugeHistogram, MetricType::kInfo, MetricType::kStateSet});
    }
    MetricFamily f;
    f.type = Pick(types);
    const bool unit_allowed =
        om() && f.type != MetricType::kInfo && f.type != MetricType::kStateSet;
    if (unit_allowed && OneIn(3)) {
      f.unit = Pick(std::vector<std::string>{"seconds", "bytes", "ratio", "celsius", "tokens"});
    }
    f.name = FreshName(f.type, f.unit);
    f.has_help = OneIn(2);
    if (f.has_help) f.help = Help();

    const int series = OneIn(8) ? 0 : 1 + Below(3);
    for (int i = 0; i < series; ++i) AddSeries(&f);
    return f;
  }

  void AddSeries(MetricFamily* f) {
    const std::string& n = f->name;
    switch (f->type) {
      case MetricType::kCounter: {
        std::vector<LabelPair> labels = SeriesLabels({});
        MetricSample total = Sample(om() ? n + "_total" : n, labels, Number());
        total.exemplar = MaybeExemplar();
        f->samples.push_back(std::move(total));
        if (om() && OneIn(2)) f->samples.push_back(Sample(n + "_created", labels, Number()));
        break;
      }
      case MetricType::kGauge:
      case MetricType::kUntyped:
        f->samples.push_back(Sample(n, SeriesLabels({}), Number()));
        break;
      case MetricType::kHistogram:
      case MetricType::kGaugeHistogram: {
        const bool gauge = f->type == MetricType::kGaugeHistogram;
        std::vector<LabelPair> labels = SeriesLabels({"le"});
        const size_t le_pos = rng_();
        std::vector<double> bounds;
        const int finite = Below(5);
        for (int i = 0; i < finite; ++i) bounds.push_back(FiniteNumber());
        if (OneIn(5)) bounds.push_back(-kInf);
        std::sort(bounds.begin(), bounds.end());
        bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
        bounds.push_back(kInf);
        for (double b : bounds) {
          std::vector<LabelPair> bucket_labels = labels;
          InsertAt(&bucket_labels, le_pos, {"le", Canonical(b)});
          MetricSample s = Sample(n + "_bucket", bucket_labels, Number());
          s.exemplar = MaybeExemplar();
          f->samples.push_back(std::move(s));
        }
        if (!OneIn(6)) {
          MetricSample count = Sample(n + (gauge ? "_gcount" : "_count"), labels, Number());
          if (!gauge) count.exemplar = MaybeExemplar();
          f->samples.push_back(std::move(count));
        }
        if (!OneIn(6))
          f->samples.push_back(Sample(n + (gauge ? "_gsum" : "_sum"), labels, Number()));
        if (om() && !gauge && OneIn(3)) {
          f->samples.push_back(Sample(n + "_created", labels, Number()));
        }
        break;
      }
      case MetricType::kSummary: {
        std::vector<LabelPair> labels = SeriesLabels({"quantile"});
        const size_t q_pos = rng_();
        const int quantiles = Below(4);
        for (int i = 0; i < quantiles; ++i) {
          std::vector<LabelPair> q_labels = labels;
          const double q = OneIn(5) ? Number() : Below(1001) / 1000.0;
          InsertAt(&q_labels, q_pos, {"quantile", Canonical(q)});
          f->samples.push_back(Sample(n, q_labels, Number()));
        }
        f->samples.push_back(Sample(n + "_sum", labels, Number()));
        f->samples.push_back(Sample(n + "_count", labels, Number()));
        if (om() && OneIn(3)) f->samples.push_back(Sample(n + "_created", labels, Number()));
        break;
      }
      case MetricType::kInfo:
        f->samples.push_back(Sample(n + "_info", SeriesLabels({}), OneIn(4) ? Number() : 1.0));
        break;
      case MetricType::kStateSet: {
        std::vector<LabelPair> labels = SeriesLabels({n});
        const size_t pos = rng_();
        const int states = 1 + Below(3);
        for (int i = 0; i < states; ++i) {
          std::vector<LabelPair> state_labels = labels;
          InsertAt(&state_labels, pos, {n, "state" + std::to_string(i)});
          f->samples.push_back(Sample(n, state_labels, OneIn(2) ? 1.0 : 0.0));
        }
        break;
      }
    }
  }

  std::mt19937_64 rng_;
  Format format_;
  std::set<std::string> used_;
  std::vector<std::string> family_names_;
};

const char* FormatName(Format f) { return f == Format::kText ? "text" : "OpenMetrics"; }

// Writes, parses strictly in `format`, and compares; returns false (after reporting) on failure.
bool RoundTrip(const std::vector<MetricFamily>& families, Format format, const std::string& what) {
  const std::string text = WriteFamilies(families, format);
  ParseOptions options;
  options.format = format;
  options.strict = true;
  std::vector<ParseError> errors;
  size_t error_count = 0;
  const std::vector<MetricFamily> parsed = ParseFamilies(text, options, &errors, &error_count);
  if (error_count != 0) {
    ADD_FAILURE() << what << " (" << FormatName(format) << "): parse error "
                  << errors.front().ToString() << "\n--- written text ---\n"
                  << text << "--- end ---";
    return false;
  }
  const std::string diff = Diff(families, parsed);
  if (!diff.empty()) {
    ADD_FAILURE() << what << " (" << FormatName(format) << "): families differ\n"
                  << diff << "--- written text ---\n"
                  << text << "--- end ---";
    return false;
  }
  return true;
}

class RoundTripTest : public ::testing::TestWithParam<Format> {};

TEST_P(RoundTripTest, RandomFamiliesSurviveWriteThenParse) {
  const Format format = GetParam();
  constexpr uint64_t kBaseSeed = 0x6d6d5f726f756e64;  // "mm_round"
  constexpr int kIterations = 500;
  size_t samples = 0, families = 0;
  for (int i = 0; i < kIterations; ++i) {
    const uint64_t seed = kBaseSeed + static_cast<uint64_t>(i);
    Generator gen(seed, format);
    const std::vector<MetricFamily> input = gen.Families();
    families += input.size();
    for (const MetricFamily& f : input) samples += f.samples.size();
    if (!RoundTrip(input, format, "seed " + std::to_string(seed))) return;  // one report is enough
  }
  // The generator really produced a sizeable corpus.
  EXPECT_GT(families, 1000u);
  EXPECT_GT(samples, 4000u);
}

TEST_P(RoundTripTest, GeneratorCoversTheInterestingCases) {
  // A guard against a generator that silently stops producing the hard inputs.
  const Format format = GetParam();
  bool quoted_name = false, nan = false, neg_zero = false, subnormal = false, escapes = false,
       empty_help = false, timestamp = false, exemplar = false, unit = false;
  std::set<MetricType> types;
  for (int i = 0; i < 500; ++i) {
    Generator gen(0x6d6d5f726f756e64 + static_cast<uint64_t>(i), format);
    const std::vector<MetricFamily> input = gen.Families();
    const std::string text = WriteFamilies(input, format);
    quoted_name |= text.find("{\"") != std::string::npos;
    escapes |= text.find("\\\\") != std::string::npos && text.find("\\n") != std::string::npos;
    for (const MetricFamily& f : input) {
      types.insert(f.type);
      empty_help |= f.has_help && f.help.empty();
      unit |= !f.unit.empty();
      for (const MetricSample& s : f.samples) {
        nan |= std::isnan(s.value);
        neg_zero |= s.value == 0 && std::signbit(s.value);
        subnormal |= std::fpclassify(s.value) == FP_SUBNORMAL;
        timestamp |= s.timestamp_ms.has_value();
        exemplar |= s.exemplar.has_value();
      }
    }
  }
  EXPECT_TRUE(quoted_name && nan && neg_zero && subnormal && escapes && empty_help && timestamp);
  EXPECT_EQ(types.size(), format == Format::kText ? 5u : 8u);
  EXPECT_EQ(exemplar, format == Format::kOpenMetrics);
  EXPECT_EQ(unit, format == Format::kOpenMetrics);
}

INSTANTIATE_TEST_SUITE_P(Formats, RoundTripTest,
                         ::testing::Values(Format::kText, Format::kOpenMetrics),
                         [](const ::testing::TestParamInfo<Format>& info) {
                           return info.param == Format::kText ? "Text" : "OpenMetrics";
                         });

// Hand-written edge cases, each also a regression test for a specific rule.
TEST(RoundTripEdgeTest, HandPickedFamilies) {
  MetricFamily empty_help{.name = "g", .type = MetricType::kGauge, .has_help = true};
  empty_help.samples.push_back({.name = "g", .value = -0.0});
  MetricFamily no_samples{.name = "a.b", .type = MetricType::kHistogram, .help = "x\\y\nz"};
  no_samples.has_help = true;
  MetricFamily trailing_backslash{.name = "t", .type = MetricType::kUntyped};
  trailing_backslash.samples.push_back(
      {.name = "t", .labels = {{"path", "C:\\"}, {"q", "\\\""}}, .value = kInf});
  for (Format format : {Format::kText, Format::kOpenMetrics}) {
    EXPECT_TRUE(RoundTrip({empty_help, no_samples, trailing_backslash}, format, "hand-picked"));
  }
  // Timestamps at the ends of int64 in OpenMetrics (seconds with a millisecond fraction).
  MetricFamily extremes{.name = "c", .type = MetricType::kCounter};
  extremes.samples.push_back(
      {.name = "c_total", .value = 1, .timestamp_ms = std::numeric_limits<int64_t>::max()});
  extremes.samples.push_back(
      {.name = "c_total", .value = 2, .timestamp_ms = std::numeric_limits<int64_t>::min()});
  extremes.samples.push_back({.name = "c_total",
                              .value = 3,
                              .timestamp_ms = 1234567890123456789,
                              .exemplar = Exemplar{.value = 1, .timestamp_ms = -1}});
  EXPECT_TRUE(RoundTrip({extremes}, Format::kOpenMetrics, "int64 timestamps"));
}

// --- Fixtures ------------------------------------------------------------------------------

std::vector<std::filesystem::path> FixturePaths() {
  const std::filesystem::path root = std::filesystem::path(test_paths::Shared("fixtures"));
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root / "real")) {
    if (entry.is_regular_file()) out.push_back(entry.path());
  }
  for (const auto& entry : std::filesystem::directory_iterator(root / "deployment")) {
    if (entry.is_regular_file() && entry.path().extension() == ".prom") {
      out.push_back(entry.path());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The writer renders `le`/`quantile` canonically, so a capture's `le="1"` comes back as "1.0".
std::vector<MetricFamily> WithCanonicalBounds(std::vector<MetricFamily> families) {
  for (MetricFamily& f : families) {
    for (MetricSample& s : f.samples) {
      for (auto& [name, value] : s.labels) {
        double v;
        if ((name == "le" || name == "quantile") && format::ParseValue(value, &v)) {
          value.clear();
          AppendCanonicalDouble(&value, v);
        }
      }
    }
  }
  return families;
}

TEST(RoundTripFixturesTest, EveryFixtureSurvivesParseWriteParseAsText) {
  // Captures are Prometheus text; text -> OpenMetrics would need counter families renamed (text
  // counters are named `x_total`), so only text -> text is checked.
  const std::vector<std::filesystem::path> paths = FixturePaths();
  ASSERT_GE(paths.size(), 24u) << test_paths::Shared("");
  size_t total_samples = 0;
  for (const std::filesystem::path& path : paths) {
    SCOPED_TRACE(path.string());
    const std::string input = ReadFile(path);
    ASSERT_FALSE(input.empty());
    ASSERT_EQ(DetectFormat(input), Format::kText);
    ParseOptions options;
    options.format = Format::kText;
    std::vector<ParseError> errors;
    const std::vector<MetricFamily> first = ParseFamilies(input, options, &errors);
    ASSERT_TRUE(errors.empty()) << errors.front().ToString();
    ASSERT_FALSE(first.empty());
    for (const MetricFamily& f : first) total_samples += f.samples.size();

    const std::vector<MetricFamily> expected = WithCanonicalBounds(first);
    EXPECT_TRUE(RoundTrip(expected, Format::kText, path.filename().string()));
    // Writing the raw parse gives the same text as writing its canonical form.
    EXPECT_EQ(WriteFamilies(first, Format::kText), WriteFamilies(expected, Format::kText));
    // And the parse of that text is the canonical form.
    const std::vector<MetricFamily> second =
        ParseFamilies(WriteFamilies(first, Format::kText), options, &errors);
    EXPECT_TRUE(errors.empty());
    EXPECT_EQ(Diff(expected, second), "");
  }
  // The fixtures' sample lines: non-blank lines not starting with `#`, counted per file with grep
  // (2652 in all; the same total as fixtures_test.cc's table).
  EXPECT_EQ(total_samples, 2652u);
}

}  // namespace
}  // namespace modelmetrics
