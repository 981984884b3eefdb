// The pipeline-metrics catalog against its sources, which are read at test time (nothing here is
// copied from the C++ tables):
//   (a) the behaviour reference (shared/spec/reference/pipeline-metrics-behaviour.md): the §2.1
//       bucket table, the §2.2 constants, the §2.3 label sets and the §3 family tables, through a
//       small markdown extractor; and the design doc's "Metric Definitions" tables, which win
//       where the two disagree;
//   (b) the real vLLM V1 scrape, parsed with ParseFamilies, for the `vllm:*` engine table;
//   (c) invariants of both tables;
//   (d) both tables registered in the real Registry and rendered: the exposition parses back
//       with the catalog's types, HELP texts, label names and buckets.
//   (e) the HELP texts against the Python API reference (shared/spec/reference/
//       vllm-omni-python-api.md), byte for byte.
// The catalog has no deliberate differences from the reference's names, labels, buckets or
// HELP texts; docs/pipeline-metrics.md lists where behaviour differs.
#include <gtest/gtest.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "modelmetrics/metrics.h"
#include "modelmetrics/parser.h"
#include "pipeline/catalog.h"
#include "pipeline/fixture_text.h"
#include "test_paths.h"

namespace modelmetrics::pipeline {
namespace {

using ::modelmetrics::testing::kV1FixturePath;
using ::modelmetrics::testing::ReadFile;

const std::string kReferencePath =
    test_paths::Shared("spec/reference/pipeline-metrics-behaviour.md");
const std::string kDesignPath = test_paths::Shared("spec/pipeline-metrics-design.md");
const std::string kPythonApiPath = test_paths::Shared("spec/reference/vllm-omni-python-api.md");
const std::string kUpstreamChangesPath =
    test_paths::Shared("spec/reference/upstream-changes-2026-09.md");
std::vector<std::string> ToStrings(std::span<const std::string_view> views) {
  return {views.begin(), views.end()};
}

std::vector<double> ToVector(std::span<const double> values) {
  return {values.begin(), values.end()};
}

// Shortest round-trip text of each value, for failure messages.
std::string Show(const std::vector<double>& values) {
  std::string out;
  char buf[32];
  for (double v : values) {
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out += (out.empty() ? "" : ",") + std::string(buf, ec == std::errc() ? end : buf);
  }
  return "[" + out + "]";
}

// "" when equal, else what each side lacks.
std::string SetDiff(const std::set<std::string>& ours, const std::set<std::string>& theirs) {
  std::string out;
  for (const std::string& s : theirs) {
    if (!ours.count(s)) out += " missing " + s;
  }
  for (const std::string& s : ours) {
    if (!theirs.count(s)) out += " extra " + s;
  }
  return out;
}

std::string Join(const std::vector<std::string>& parts) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : ",") + p;
  return out;
}

// ---------------------------------------------------------------------------------------------
// A small markdown extractor: ATX headings, pipe tables (header + separator + rows; a `|` inside
// a backtick span does not split a cell), the other lines as text; fenced code blocks skipped.

std::string Trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

struct MdTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  // Index of the column whose header is `name`, or -1.
  int Column(std::string_view name) const {
    for (size_t i = 0; i < header.size(); ++i) {
      if (header[i] == name) return static_cast<int>(i);
    }
    return -1;
  }
  std::string Cell(const std::vector<std::string>& row, std::string_view name) const {
    int c = Column(name);
    return c >= 0 && static_cast<size_t>(c) < row.size() ? row[c] : std::string();
  }
};

struct MdSection {
  int level = 0;
  std::string heading;  // without the leading #'s
  std::string number;   // "3.1" for "### 3.1 Pipeline families", else empty
  std::string text;     // non-table lines, '\n'-joined
  std::vector<MdTable> tables;
};

std::vector<std::string> SplitRow(std::string_view line) {
  std::vector<std::string> cells;
  std::string cell;
  bool code = false;
  for (char c : Trim(line)) {
    if (c == '`') code = !code;
    if (c == '|' && !code) {
      cells.push_back(Trim(cell));
      cell.clear();
    } else {
      cell += c;
    }
  }
  cells.push_back(Trim(cell));
  // A row starts and ends with a pipe: drop the empty cells outside them.
  if (!cells.empty() && cells.front().empty()) cells.erase(cells.begin());
  if (!cells.empty() && cells.back().empty()) cells.pop_back();
  return cells;
}

bool IsSeparatorRow(std::string_view line) {
  std::string t = Trim(line);
  if (t.empty() || t[0] != '|') return false;
  return t.find_first_not_of("|-: ") == std::string::npos && t.find('-') != std::string::npos;
}

std::vector<MdSection> ParseMarkdown(std::string_view doc) {
  std::vector<std::string> lines;
  for (size_t pos = 0; pos <= doc.size();) {
    size_t nl = doc.find('\n', pos);
    if (nl == std::string_view::npos) nl = doc.size();
    lines.emplace_back(doc.substr(pos, nl - pos));
    pos = nl + 1;
  }
  std::vector<MdSection> sections(1);
  bool fenced = false;
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string t = Trim(lines[i]);
    if (t.rfind("```", 0) == 0) {
      fenced = !fenced;
      continue;
    }
    if (fenced) continue;
    if (!t.empty() && t[0] == '#') {
      size_t level = t.find_first_not_of('#');
      if (level != std::string::npos && level <= 6 && t[level] == ' ') {
        MdSection s;
        s.level = static_cast<int>(level);
        s.heading = Trim(std::string_view(t).substr(level));
        size_t n = s.heading.find_first_not_of("0123456789.");
        if (n > 0 && n != std::string::npos && s.heading[n] == ' ') {
          s.number = s.heading.substr(0, n);
          while (!s.number.empty() && s.number.back() == '.') s.number.pop_back();
        }
        sections.push_back(std::move(s));
        continue;
      }
    }
    if (!t.empty() && t[0] == '|' && i + 1 < lines.size() && IsSeparatorRow(lines[i + 1])) {
      MdTable table;
      table.header = SplitRow(t);
      for (i += 2; i < lines.size() && Trim(lines[i]).rfind('|', 0) == 0; ++i) {
        table.rows.push_back(SplitRow(lines[i]));
      }
      --i;
      sections.back().tables.push_back(std::move(table));
      continue;
    }
    sections.back().text += lines[i] + "\n";
  }
  return sections;
}

// The contents of every `code span` in `s`, in order.
std::vector<std::string> CodeSpans(std::string_view s) {
  std::vector<std::string> spans;
  for (size_t pos = 0;;) {
    size_t b = s.find('`', pos);
    if (b == std::string_view::npos) break;
    size_t e = s.find('`', b + 1);
    if (e == std::string_view::npos) break;
    spans.emplace_back(s.substr(b + 1, e - b - 1));
    pos = e + 1;
  }
  return spans;
}

// "a, b, c" / "(a, b)" / "{a, b}" / "`a`, `b`" -> {"a", "b", "c"}; "–", "—", "-" -> {}.
std::vector<std::string> SplitList(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  auto flush = [&] {
    std::string t = Trim(cur);
    cur.clear();
    t.erase(std::remove_if(t.begin(), t.end(),
                           [](char c) { return c == '`' || c == '"' || c == '\''; }),
            t.end());
    if (!t.empty() && t != "-" && t != "\u2013" && t != "\u2014") out.push_back(t);
  };
  for (char c : s) {
    if (c == ',') {
      flush();
    } else if (c != '(' && c != ')' && c != '{' && c != '}') {
      cur += c;
    }
  }
  flush();
  return out;
}

std::optional<double> ToDouble(const std::string& s) {
  if (s.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (end != s.c_str() + s.size()) return std::nullopt;
  return v;
}

std::vector<double> ToDoubles(std::string_view list) {
  std::vector<double> out;
  for (const std::string& item : SplitList(list)) {
    std::optional<double> v = ToDouble(item);
    EXPECT_TRUE(v.has_value()) << "not a number: " << item;
    if (v) out.push_back(*v);
  }
  return out;
}

TEST(MarkdownExtractorTest, TablesHeadingsAndCodeSpans) {
  const std::vector<MdSection> s = ParseMarkdown(
      "intro\n"
      "### 3.9 Title `x`; labels `{a, b}`\n"
      "Some text `k = 1`.\n"
      "| Name | Type | Labels |\n"
      "|---|:---:|---|\n"
      "| `p:q_total` | Counter | `a|b`, c |\n"
      "| `p:r` | Gauge | – |\n"
      "```\n"
      "| not | a | table |\n"
      "|---|---|---|\n"
      "```\n"
      "tail\n");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1].number, "3.9");
  EXPECT_EQ(s[1].level, 3);
  ASSERT_EQ(s[1].tables.size(), 1u);
  const MdTable& t = s[1].tables[0];
  EXPECT_EQ(t.header, (std::vector<std::string>{"Name", "Type", "Labels"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0][2], "`a|b`, c");
  EXPECT_EQ(SplitList(t.rows[1][2]), std::vector<std::string>{});
  EXPECT_EQ(SplitList("(model_name, stage)"), (std::vector<std::string>{"model_name", "stage"}));
  EXPECT_EQ(CodeSpans(s[1].heading), (std::vector<std::string>{"x", "{a, b}"}));
  EXPECT_NE(s[1].text.find("tail"), std::string::npos);
  EXPECT_EQ(s[1].text.find("not | a"), std::string::npos);
  EXPECT_EQ(ToDoubles("1024, 0.05, 2.5"), (std::vector<double>{1024, 0.05, 2.5}));
}

// ---------------------------------------------------------------------------------------------
// Families as the documents describe them.

struct DocFamily {
  std::string name;  // catalog form: counters without `_total`
  Kind kind = Kind::kGauge;
  std::vector<std::string> labels;
  std::string bucket_code;  // reference column B ("SECONDS", "FAST", ..., "default", "")
  Bind bind = Bind::kLazy;
  Guard guard = Guard::kNone;
  std::string section;  // "3.1" or a design heading
};

std::optional<Kind> KindFromWord(std::string_view cell) {
  std::string w = Trim(cell.substr(0, cell.find_first_of(" (")));
  if (w == "Counter") return Kind::kCounter;
  if (w == "Gauge") return Kind::kGauge;
  if (w == "Histogram") return Kind::kHistogram;
  return std::nullopt;
}

std::string CatalogName(std::string exposed, Kind kind) {
  constexpr std::string_view kTotal = "_total";
  if (kind == Kind::kCounter && exposed.size() > kTotal.size() &&
      exposed.compare(exposed.size() - kTotal.size(), kTotal.size(), kTotal) == 0) {
    exposed.resize(exposed.size() - kTotal.size());
  }
  return exposed;
}

// The reference's Guard column, first clause (the observe function's own rule; what follows a
// ';' describes callers).
Guard GuardFromCell(std::string_view cell) {
  std::string clause = Trim(cell.substr(0, cell.find(';')));
  if (clause.find("max(") != std::string::npos) return Guard::kClampNegative;
  if (clause.find("<= 0") != std::string::npos || clause.find("> 0") != std::string::npos) {
    return Guard::kSkipNonPositive;
  }
  if (clause.find("< 0") != std::string::npos) return Guard::kSkipNegative;
  return Guard::kNone;
}

// `{a, b}` after "labels" / "Labels are" / "Labels:" in `text`, or empty.
std::vector<std::string> BaseLabels(const std::string& text) {
  static const std::regex re("[Ll]abels(?: are|:)? `\\{([^}]*)\\}`");
  std::smatch m;
  if (std::regex_search(text, m, re)) return SplitList(m[1].str());
  return {};
}

const MdSection* FindSection(const std::vector<MdSection>& sections, std::string_view number) {
  for (const MdSection& s : sections) {
    if (s.number == number) return &s;
  }
  return nullptr;
}

// Every `vllm_omni:*` family of reference §3: rows of tables with an "Exposed name" column, and
// bullets of the form "`vllm_omni:x_total` (labels `{...}`" (§3.7).
std::vector<DocFamily> ReferenceFamilies(const std::vector<MdSection>& sections) {
  std::vector<DocFamily> out;
  for (const MdSection& s : sections) {
    if (s.number.rfind("3.", 0) != 0) continue;
    const std::vector<std::string> base = BaseLabels(s.heading + "\n" + s.text);
    for (const MdTable& t : s.tables) {
      if (t.Column("Exposed name") < 0) continue;
      for (const auto& row : t.rows) {
        std::vector<std::string> spans = CodeSpans(t.Cell(row, "Exposed name"));
        if (spans.empty() || spans[0].rfind(kOmniPrefix, 0) != 0) continue;
        DocFamily f;
        std::optional<Kind> kind = KindFromWord(t.Cell(row, "Type"));
        EXPECT_TRUE(kind.has_value()) << spans[0];
        f.kind = kind.value_or(Kind::kGauge);
        f.name = CatalogName(spans[0], f.kind);
        if (t.Column("Labels") >= 0) {
          f.labels = SplitList(t.Cell(row, "Labels"));
        } else {
          f.labels = base;
          std::vector<std::string> extra = CodeSpans(t.Cell(row, "Extra label"));
          if (!extra.empty()) f.labels.push_back(extra[0]);
        }
        std::string b = t.Cell(row, "B");
        f.bucket_code = SplitList(b).empty() ? "" : b;
        // §4.11: only the children listed as eager are bound in constructors.
        f.bind = t.Cell(row, "Bind") == "eager" ? Bind::kEager : Bind::kLazy;
        f.guard = GuardFromCell(t.Cell(row, "Guard / semantics") + t.Cell(row, "Guard"));
        f.section = s.number;
        out.push_back(std::move(f));
      }
    }
    static const std::regex bullet("`(vllm_omni:[a-z0-9_]+)` \\(labels `\\{([^}]*)\\}`");
    for (std::sregex_iterator it(s.text.begin(), s.text.end(), bullet), end; it != end; ++it) {
      DocFamily f;
      const std::string exposed = (*it)[1].str();
      EXPECT_TRUE(exposed.ends_with("_total")) << "only counters are described as bullets";
      f.kind = Kind::kCounter;
      f.name = CatalogName(exposed, f.kind);
      f.labels = SplitList((*it)[2].str());
      f.section = s.number;
      out.push_back(std::move(f));
    }
  }
  return out;
}

// The design doc's "Metric Definitions" tables, by subsection heading.
struct DesignFamilies {
  std::vector<DocFamily> families;
  std::map<std::string, size_t> announced;  // heading -> N of "Heading (N)"
  std::map<std::string, size_t> rows;       // heading -> table rows
};

DesignFamilies ReadDesignFamilies(const std::vector<MdSection>& sections) {
  DesignFamilies out;
  bool inside = false;
  for (const MdSection& s : sections) {
    if (s.level == 2) inside = s.heading == "Metric Definitions";
    if (!inside || s.level != 3) continue;
    static const std::regex count_re("^(.*) \\(([0-9]+)\\)$");
    std::smatch m;
    std::string heading = s.heading;
    if (std::regex_match(s.heading, m, count_re)) {
      heading = m[1].str();
      out.announced[heading] = std::stoul(m[2].str());
    }
    const std::vector<std::string> base = BaseLabels(s.text);
    for (const MdTable& t : s.tables) {
      if (t.Column("Metric") < 0) continue;
      for (const auto& row : t.rows) {
        std::vector<std::string> spans = CodeSpans(t.Cell(row, "Metric"));
        if (spans.empty()) continue;
        DocFamily f;
        std::optional<Kind> kind = KindFromWord(t.Cell(row, "Type"));
        EXPECT_TRUE(kind.has_value()) << spans[0];
        f.kind = kind.value_or(Kind::kGauge);
        f.name = CatalogName(spans[0], f.kind);
        if (t.Column("Labels") >= 0) {
          f.labels = SplitList(t.Cell(row, "Labels"));
        } else {
          f.labels = base;
          std::vector<std::string> extra = CodeSpans(t.Cell(row, "Extra label"));
          if (!extra.empty()) f.labels.push_back(extra[0]);
        }
        f.section = heading;
        out.families.push_back(std::move(f));
        ++out.rows[heading];
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Catalog families the reference has but the design doc's tables do not: the token counters
// (§3.1) and the realtime VAD families (§3.5).
struct ReferenceOnly {
  std::string_view name;
  Group group;
};
constexpr ReferenceOnly kReferenceOnly[] = {
    {"vllm_omni:prompt_tokens", Group::kPipeline},
    {"vllm_omni:generation_tokens", Group::kPipeline},
    {"vllm_omni:realtime_vad_active_sessions", Group::kRealtime},
    {"vllm_omni:realtime_vad_inference_latency_s", Group::kRealtime},
    {"vllm_omni:realtime_vad_endpoint_delay_s", Group::kRealtime},
    {"vllm_omni:realtime_vad_errors", Group::kRealtime},
};
bool IsReferenceOnly(std::string_view name) {
  return std::any_of(std::begin(kReferenceOnly), std::end(kReferenceOnly),
                     [&](const ReferenceOnly& r) { return r.name == name; });
}
// The duplex families came after the behaviour reference and the design; their source is
// upstream-changes-2026-09.md §1.1 (checked by UpstreamChangesTest below).
bool IsDuplex(const FamilySpec& f) { return f.group == Group::kDuplex; }

bool Contains(std::span<const std::string_view> list, std::string_view s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

class ReferenceTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    reference_ = new std::vector<MdSection>(ParseMarkdown(ReadFile(kReferencePath)));
    design_ = new std::vector<MdSection>(ParseMarkdown(ReadFile(kDesignPath)));
  }
  static void TearDownTestSuite() {
    delete reference_;
    delete design_;
  }

  // §2.1 bucket lists by name ("SECONDS_BUCKETS", ..., "default").
  static std::map<std::string, std::vector<double>> BucketTable() {
    std::map<std::string, std::vector<double>> lists;
    const MdSection* s = FindSection(*reference_, "2.1");
    EXPECT_NE(s, nullptr);
    if (s == nullptr) return lists;
    for (const MdTable& t : s->tables) {
      for (const auto& row : t.rows) {
        std::string name = t.Cell(row, "Name");
        std::vector<std::string> spans = CodeSpans(name);
        std::string key = name.find("default") != std::string::npos ? "default"
                          : spans.empty()                           ? name
                                                                    : spans[0];
        lists[key] = ToDoubles(t.Cell(row, "Values"));
      }
    }
    return lists;
  }

  // Column B code -> §2.1 list.
  static std::vector<double> BucketsFor(const std::string& code) {
    static const std::map<std::string, std::string> kCodeToName = {{"SECONDS", "SECONDS_BUCKETS"},
                                                                   {"FAST", "SECONDS_FAST_BUCKETS"},
                                                                   {"RTF", "RTF_BUCKETS"},
                                                                   {"BYTES", "BYTES_BUCKETS"},
                                                                   {"default", "default"}};
    if (code.empty()) return {};
    auto name = kCodeToName.find(code);
    EXPECT_NE(name, kCodeToName.end()) << "unknown bucket code " << code;
    if (name == kCodeToName.end()) return {};
    auto lists = BucketTable();
    EXPECT_TRUE(lists.count(name->second)) << name->second;
    return lists[name->second];
  }

  static std::vector<MdSection>* reference_;
  static std::vector<MdSection>* design_;
};
std::vector<MdSection>* ReferenceTest::reference_ = nullptr;
std::vector<MdSection>* ReferenceTest::design_ = nullptr;

TEST_F(ReferenceTest, BucketListsMatchSection2_1) {
  auto lists = BucketTable();
  ASSERT_EQ(lists.size(), 5u);
  EXPECT_EQ(lists["SECONDS_BUCKETS"], ToVector(kSecondsBuckets));
  EXPECT_EQ(lists["SECONDS_FAST_BUCKETS"], ToVector(kSecondsFastBuckets));
  EXPECT_EQ(lists["RTF_BUCKETS"], ToVector(kRtfBuckets));
  EXPECT_EQ(lists["BYTES_BUCKETS"], ToVector(kBytesBuckets));
  EXPECT_EQ(lists["default"], ToVector(kPrometheusDefaultBuckets));
}

TEST_F(ReferenceTest, ConstantsMatchSection2_2) {
  const MdSection* s = FindSection(*reference_, "2.2");
  ASSERT_NE(s, nullptr);
  std::map<std::string, std::string> assigned;  // `NAME = value`
  std::set<std::string> env_names;
  std::vector<std::string> key_chain;
  static const std::regex assign("^([A-Z_]+) = (.*)$");
  for (const std::string& span : CodeSpans(s->text)) {
    std::smatch m;
    if (std::regex_match(span, m, assign)) {
      assigned[m[1].str()] = m[2].str();
    } else if (span.rfind("VLLM_OMNI_", 0) == 0) {
      env_names.insert(span);
    } else if (span.rfind("(\"", 0) == 0) {
      key_chain = SplitList(span);
    }
  }
  EXPECT_EQ(ToDouble(assigned["AUDIO_CONTINUITY_DEFAULT_THRESHOLD_S"]),
            kAudioContinuityDefaultThresholdS);
  EXPECT_EQ(ToDouble(assigned["DEFAULT_AUDIO_SAMPLE_RATE"]), kDefaultAudioSampleRate);
  EXPECT_EQ(ToDouble(assigned["DEFAULT_AUDIO_CHANNELS"]), kDefaultAudioChannels);
  EXPECT_EQ(ToDouble(assigned["DEFAULT_AUDIO_SAMPLE_WIDTH"]), kDefaultAudioSampleWidth);
  EXPECT_EQ(SplitList(assigned["DIFFUSION_SCHEDULER_WAITING_KEY"]),
            std::vector<std::string>{std::string(kDiffusionSchedulerWaitingKey)});
  EXPECT_EQ(SplitList(assigned["DIFFUSION_METRICS_ONLY_REQUEST_ID"]),
            std::vector<std::string>{std::string(kDiffusionMetricsOnlyRequestId)});
  std::vector<std::string> reasons = SplitList(assigned["FAILURE_REASONS"]);
  std::vector<std::string> ours = ToStrings(kFailureReasons);
  std::sort(reasons.begin(), reasons.end());
  std::sort(ours.begin(), ours.end());
  EXPECT_EQ(reasons, ours);
  EXPECT_TRUE(Contains(kFailureReasons, kUnknownReason));
  EXPECT_EQ(env_names, (std::set<std::string>{std::string(kBenchAudioSampleRateEnv),
                                              std::string(kBenchAudioChannelsEnv)}));
  EXPECT_EQ(key_chain, ToStrings(kSampleRateKeys));

  // §4.1 names the continuity-threshold override.
  const MdSection* s41 = FindSection(*reference_, "4.1");
  ASSERT_NE(s41, nullptr);
  std::vector<std::string> spans = CodeSpans(s41->text);
  EXPECT_NE(std::find(spans.begin(), spans.end(), kBenchContinuityThresholdEnv), spans.end());
}

TEST_F(ReferenceTest, LabelSetsMatchSection2_3) {
  const std::map<std::string, std::span<const std::string_view>> ours = {
      {"PIPELINE_LABELS", kPipelineLabels},
      {"SUCCESS_LABELS", kSuccessLabels},
      {"STAGE_LABELS", kStageLabels},
      {"STAGE_GEN_TIME_LABELS", kStageGenTimeLabels},
      {"DIFFUSION_LABELS", kDiffusionLabels},
      {"FAILED_LABELS", kFailedLabels},
      {"KV_WAIT_LABELS", kKvWaitLabels},
      {"AUDIO_CONTINUITY_LABELS", kAudioContinuityLabels},
      {"AUDIO_SKIPPED_LABELS", kAudioSkippedLabels},
      {"TRANSFER_LABELS", kTransferLabels},
  };
  const MdSection* s = FindSection(*reference_, "2.3");
  ASSERT_NE(s, nullptr);
  size_t seen = 0;
  for (const MdTable& t : s->tables) {
    for (const auto& row : t.rows) {
      std::vector<std::string> spans = CodeSpans(t.Cell(row, "Constant"));
      ASSERT_FALSE(spans.empty());
      auto it = ours.find(spans[0]);
      ASSERT_NE(it, ours.end()) << "no C++ constant for " << spans[0];
      EXPECT_EQ(SplitList(t.Cell(row, "Labels")), ToStrings(it->second)) << spans[0];
      ++seen;
    }
  }
  EXPECT_EQ(seen, ours.size());
}

TEST_F(ReferenceTest, ExtractorFindsEverySection3Table) {
  std::vector<DocFamily> families = ReferenceFamilies(*reference_);
  std::map<std::string, size_t> per_section;
  for (const DocFamily& f : families) ++per_section[f.section];
  // Section sizes as the reference's own prose states them (§3.2 "7 audio", §3.4 "four").
  EXPECT_EQ(per_section["3.2"], 7u);
  EXPECT_EQ(per_section["3.4"], 4u);
  EXPECT_GT(per_section["3.1"], 0u);
  EXPECT_GT(per_section["3.3"], 0u);
  EXPECT_EQ(per_section["3.7"], 2u);
  EXPECT_EQ(per_section["3.5"], 4u);
}

TEST_F(ReferenceTest, EveryReferenceFamilyIsInTheCatalogAsSpecified) {
  std::vector<DocFamily> families = ReferenceFamilies(*reference_);
  ASSERT_FALSE(families.empty());
  // A lambda per item: an ASSERT stops only that item.
  auto check = [&](const DocFamily& f) {
    SCOPED_TRACE(f.name + " (§" + f.section + ")");
    const FamilySpec* spec = FindOmniFamily(f.name);
    ASSERT_NE(spec, nullptr);
    EXPECT_EQ(KindName(spec->kind), KindName(f.kind));
    EXPECT_EQ(ToStrings(spec->labels), f.labels);
    EXPECT_EQ(BindName(spec->bind), BindName(f.bind));
    EXPECT_EQ(GuardName(spec->guard), GuardName(f.guard));
    EXPECT_EQ(Show(ToVector(spec->buckets)), Show(BucketsFor(f.bucket_code))) << f.bucket_code;
  };
  for (const DocFamily& f : families) check(f);
}

TEST_F(ReferenceTest, EveryCatalogFamilyIsInTheReference) {
  std::set<std::string> reference;
  for (const DocFamily& f : ReferenceFamilies(*reference_)) {
    EXPECT_TRUE(reference.insert(f.name).second) << "listed twice: " << f.name;
  }
  std::set<std::string> catalog;
  for (const FamilySpec& f : OmniFamilies()) {
    if (!IsDuplex(f)) catalog.insert(std::string(f.name));
  }
  EXPECT_EQ(SetDiff(catalog, reference), "");
}

TEST_F(ReferenceTest, SpeechAbortReasonsMatchBothDocuments) {
  std::vector<std::string> ours = ToStrings(kSpeechAbortReasons);
  auto reasons_in = [](const std::string& text) {
    static const std::regex re("reasons:? ((?:`[a-z_]+`(?:,\\s*)?)+)");
    std::smatch m;
    return std::regex_search(text, m, re) ? SplitList(m[1].str()) : std::vector<std::string>{};
  };
  const MdSection* s = FindSection(*reference_, "3.7");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(reasons_in(s->text), ours);
  bool found = false;
  for (const MdSection& d : *design_) {
    for (const MdTable& t : d.tables) {
      for (const auto& row : t.rows) {
        if (t.Cell(row, "Metric").find("speech_stream_aborted") == std::string::npos) continue;
        EXPECT_EQ(reasons_in(t.Cell(row, "Description")), ours);
        found = true;
      }
    }
  }
  EXPECT_TRUE(found);
}

// (e) HELP texts, byte for byte, from the Python API reference's table ("family | type | HELP").
// The two speech_stream families are not in it (no upstream source records their HELP); they
// keep the design document's descriptions.
TEST(PythonApiReferenceTest, EveryHelpTextIsByteExact) {
  std::vector<MdSection> sections = ParseMarkdown(ReadFile(kPythonApiPath));
  size_t rows = 0;
  std::set<std::string> listed;
  for (const MdSection& s : sections) {
    for (const MdTable& t : s.tables) {
      if (t.Column("HELP (byte-exact)") < 0) continue;
      for (const auto& row : t.rows) {
        std::vector<std::string> spans = CodeSpans(t.Cell(row, "family"));
        ASSERT_FALSE(spans.empty());
        std::string word = t.Cell(row, "type");  // lower case here: "counter"
        if (!word.empty()) word[0] = static_cast<char>(std::toupper(word[0]));
        std::optional<Kind> kind = KindFromWord(word);
        ASSERT_TRUE(kind.has_value()) << spans[0];
        const std::string name = CatalogName(spans[0], *kind);
        SCOPED_TRACE(name);
        const FamilySpec* spec = FindOmniFamily(name);
        ASSERT_NE(spec, nullptr);
        EXPECT_EQ(KindName(spec->kind), KindName(*kind));
        EXPECT_EQ(spec->help, t.Cell(row, "HELP (byte-exact)"));
        listed.insert(name);
        ++rows;
      }
    }
  }
  EXPECT_EQ(rows, 40u);  // the reference's table
  std::set<std::string> rest;
  for (const FamilySpec& f : OmniFamilies()) {
    if (!listed.count(std::string(f.name)) && !IsDuplex(f)) rest.insert(std::string(f.name));
  }
  EXPECT_EQ(rest, (std::set<std::string>{"vllm_omni:speech_stream_aborted",
                                         "vllm_omni:speech_stream_completed"}));
}

// (f) The duplex families against upstream-changes-2026-09.md §1.1 ("name | type | labels |
// HELP"): kind, labels, HELP byte for byte, FAST buckets for the histograms, and the binding its
// prose names ("Bound at construction: ...").
TEST(UpstreamChangesTest, DuplexFamiliesMatchSection1_1) {
  std::vector<MdSection> sections = ParseMarkdown(ReadFile(kUpstreamChangesPath));
  const MdSection* s = FindSection(sections, "1.1");
  ASSERT_NE(s, nullptr);
  std::set<std::string> listed;
  for (const MdTable& t : s->tables) {
    for (const auto& row : t.rows) {
      std::vector<std::string> spans = CodeSpans(t.Cell(row, "name"));
      ASSERT_FALSE(spans.empty());
      std::string word = t.Cell(row, "type");
      if (!word.empty()) word[0] = static_cast<char>(std::toupper(word[0]));
      std::optional<Kind> kind = KindFromWord(word);
      ASSERT_TRUE(kind.has_value()) << spans[0];
      const std::string name = CatalogName(spans[0], *kind);
      SCOPED_TRACE(name);
      const FamilySpec* spec = FindOmniFamily(name);
      ASSERT_NE(spec, nullptr);
      listed.insert(name);
      EXPECT_EQ(GroupName(spec->group), GroupName(Group::kDuplex));
      EXPECT_EQ(KindName(spec->kind), KindName(*kind));
      EXPECT_EQ(ToStrings(spec->labels), SplitList(t.Cell(row, "labels")));
      EXPECT_EQ(spec->help, t.Cell(row, "HELP"));
      const bool fast = t.Cell(row, "type").find("FAST") != std::string::npos;
      EXPECT_EQ(ToVector(spec->buckets),
                fast ? ToVector(kSecondsFastBuckets) : ToVector(kNoBuckets));
      // Eager exactly when the prose binds it at construction: by its state values, the seven
      // model_name-only gauges, or the affinity-loss counter.
      const bool model_only_gauge =
          spec->kind == Kind::kGauge && spec->labels.size() == kPipelineLabels.size();
      const bool eager = model_only_gauge || name == "vllm_omni:duplex_replica_affinity_loss" ||
                         name == "vllm_omni:duplex_sessions";
      EXPECT_EQ(BindName(spec->bind), BindName(eager ? Bind::kEager : Bind::kLazy));
    }
  }
  EXPECT_EQ(listed.size(), 13u);
  std::string prose = s->text;
  std::replace(prose.begin(), prose.end(), '\n', ' ');
  EXPECT_NE(prose.find("`duplex_sessions{state=\"active\"}` and `{state=\"closing\"}`, the seven "
                       "model_name-only gauges and the affinity-loss counter"),
            std::string::npos);
  EXPECT_EQ(ToStrings(FindOmniFamily("vllm_omni:duplex_sessions")->eager_values),
            (std::vector<std::string>{"active", "closing"}));
  for (const FamilySpec& f : OmniFamilies()) {
    if (IsDuplex(f)) {
      EXPECT_TRUE(listed.count(std::string(f.name))) << f.name;
    }
  }
}

TEST_F(ReferenceTest, EveryDesignFamilyIsInTheCatalogWithItsGroup) {
  const std::map<std::string, Group> kHeadingGroup = {
      {"Pipeline", Group::kPipeline},
      {"Image and diffusion service-level metrics", Group::kImage},
      {"Diffusion execution breakdown", Group::kDiffusion},
      {"Audio", Group::kAudio},
      {"Speech streaming", Group::kSpeech},
      {"Cross-stage transfer", Group::kTransfer},
  };
  DesignFamilies design = ReadDesignFamilies(*design_);
  ASSERT_FALSE(design.families.empty());
  for (const auto& [heading, n] : design.announced) {
    EXPECT_EQ(design.rows[heading], n) << heading;
  }
  std::set<std::string> names;
  // A lambda per item: an ASSERT stops only that item.
  auto check = [&](const DocFamily& f) {
    SCOPED_TRACE(f.name + " (" + f.section + ")");
    names.insert(f.name);
    const FamilySpec* spec = FindOmniFamily(f.name);
    ASSERT_NE(spec, nullptr);
    EXPECT_EQ(KindName(spec->kind), KindName(f.kind));
    EXPECT_EQ(ToStrings(spec->labels), f.labels);
    auto group = kHeadingGroup.find(f.section);
    ASSERT_NE(group, kHeadingGroup.end()) << "unmapped design heading";
    EXPECT_EQ(GroupName(spec->group), GroupName(group->second));
  };
  for (const DocFamily& f : design.families) check(f);
  std::set<std::string> catalog;
  for (const FamilySpec& f : OmniFamilies()) {
    if (!IsReferenceOnly(f.name) && !IsDuplex(f)) catalog.insert(std::string(f.name));
  }
  EXPECT_EQ(SetDiff(catalog, names), "");
  for (const ReferenceOnly& r : kReferenceOnly) {
    const FamilySpec* spec = FindOmniFamily(r.name);
    ASSERT_NE(spec, nullptr) << r.name;
    EXPECT_EQ(GroupName(spec->group), GroupName(r.group)) << r.name;
  }
}

TEST_F(ReferenceTest, DesignBucketRangesMatch) {
  // Naming convention: "`SECONDS_BUCKETS` (0.05 s – 300 s)".
  static const std::regex re("`([A-Z_]+_BUCKETS)` \\(([0-9.]+) s \u2013 ([0-9.]+) s\\)");
  const std::map<std::string, std::span<const double>> ours = {
      {"SECONDS_BUCKETS", kSecondsBuckets}, {"SECONDS_FAST_BUCKETS", kSecondsFastBuckets}};
  size_t seen = 0;
  for (const MdSection& s : *design_) {
    for (std::sregex_iterator it(s.text.begin(), s.text.end(), re), end; it != end; ++it) {
      auto list = ours.find((*it)[1].str());
      ASSERT_NE(list, ours.end()) << (*it)[1].str();
      EXPECT_EQ(ToDouble((*it)[2].str()), list->second.front());
      EXPECT_EQ(ToDouble((*it)[3].str()), list->second.back());
      ++seen;
    }
  }
  EXPECT_EQ(seen, 2u);
}

// ---------------------------------------------------------------------------------------------
// (b) The `vllm:*` engine table against the real V1 scrape.

class VllmFixtureTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ParseOptions options;
    options.format = Format::kText;
    options.strict = true;
    std::vector<ParseError> errors;
    families_ =
        new std::vector<MetricFamily>(ParseFamilies(ReadFile(kV1FixturePath), options, &errors));
    EXPECT_TRUE(errors.empty()) << errors.front().ToString();
  }
  static void TearDownTestSuite() { delete families_; }

  static bool IsCreatedGauge(const MetricFamily& f) {
    return f.type == MetricType::kGauge && f.name.ends_with("_created");
  }
  static std::vector<const MetricFamily*> EngineFamilies() {
    std::vector<const MetricFamily*> out;
    for (const MetricFamily& f : *families_) {
      if (f.name.rfind(kEnginePrefix, 0) == 0 && !IsCreatedGauge(f)) out.push_back(&f);
    }
    return out;
  }
  static std::string TableName(const MetricFamily& f) {
    return f.type == MetricType::kCounter ? CatalogName(f.name, Kind::kCounter) : f.name;
  }

  static std::vector<MetricFamily>* families_;
};
std::vector<MetricFamily>* VllmFixtureTest::families_ = nullptr;

// vLLM main changed its families since the fixture was captured: one removed (April 2026), two
// added. The engine table follows vLLM main.
constexpr std::string_view kRemovedUpstream = "vllm:prompt_tokens_recomputed";
constexpr std::string_view kAddedUpstream[] = {"vllm:num_requests_waiting_by_reason",
                                               "vllm:request_num_preemptions"};

TEST_F(VllmFixtureTest, EveryVllmFamilyIsInTheEngineTable) {
  std::vector<const MetricFamily*> engine = EngineFamilies();
  ASSERT_FALSE(engine.empty());
  // A lambda per item: an ASSERT stops only that item.
  auto check = [&](const MetricFamily* f) {
    SCOPED_TRACE(f->name);
    if (TableName(*f) == kRemovedUpstream) return;
    const FamilySpec* spec = FindVllmEngineFamily(TableName(*f));
    ASSERT_NE(spec, nullptr);
    EXPECT_EQ(MetricTypeName(ToMetricType(spec->kind), Format::kText),
              MetricTypeName(f->type, Format::kText));
    EXPECT_TRUE(f->has_help);
    EXPECT_EQ(spec->help, f->help);
    ASSERT_FALSE(f->samples.empty());

    // Label names: the same on every sample (`le` aside); `engine` becomes `stage`, `replica`.
    std::optional<std::vector<std::string>> names;
    std::map<std::vector<std::string>, std::vector<double>> bounds;  // series -> le values
    std::map<std::vector<std::string>, bool> saw_inf;
    for (const MetricSample& s : f->samples) {
      std::vector<std::string> sample_names, series;
      for (const auto& [name, value] : s.labels) {
        if (name == "le" && s.name.ends_with("_bucket")) {
          return;
        }
        if (name == "engine") {
          sample_names.insert(sample_names.end(), {"stage", "replica"});
        } else {
          sample_names.push_back(name);
        }
        series.push_back(name + "=" + value);
      }
      std::sort(sample_names.begin(), sample_names.end());
      if (!names) names = sample_names;
      EXPECT_EQ(sample_names, *names) << s.name;
      if (s.name.ends_with("_bucket")) {
        auto le = std::find_if(s.labels.begin(), s.labels.end(),
                               [](const auto& l) { return l.first == "le"; });
        ASSERT_NE(le, s.labels.end());
        std::optional<double> v = ToDouble(le->second == "+Inf" ? "inf" : le->second);
        ASSERT_TRUE(v.has_value()) << le->second;
        if (std::isinf(*v)) {
          saw_inf[series] = true;
        } else {
          bounds[series].push_back(*v);
        }
      }
    }
    std::vector<std::string> spec_names = ToStrings(spec->labels);
    std::sort(spec_names.begin(), spec_names.end());
    EXPECT_EQ(spec_names, names.value_or(std::vector<std::string>{}));

    // Buckets: every series has the same bounds, ending in +Inf.
    if (spec->kind == Kind::kHistogram) {
      ASSERT_FALSE(bounds.empty());
      for (const auto& [series, le] : bounds) {
        EXPECT_TRUE(saw_inf[series]) << Join(series);
        EXPECT_EQ(Show(le), Show(ToVector(spec->buckets))) << Join(series);
      }
    } else {
      EXPECT_TRUE(spec->buckets.empty());
      EXPECT_TRUE(bounds.empty());
    }
  };
  for (const MetricFamily* f : engine) check(f);
}

TEST_F(VllmFixtureTest, EngineTableHasNothingElse) {
  std::set<std::string> fixture;
  for (const MetricFamily* f : EngineFamilies()) fixture.insert(TableName(*f));
  std::set<std::string> table;
  for (const FamilySpec& f : VllmEngineFamilies()) table.insert(std::string(f.name));
  std::string expected = " missing " + std::string(kRemovedUpstream);
  for (std::string_view added : kAddedUpstream) expected += " extra " + std::string(added);
  EXPECT_EQ(SetDiff(table, fixture), expected);
  EXPECT_EQ(VllmEngineFamilies().size(), fixture.size() + 1) << "duplicate rows";
}

// The family added after the fixture that the references describe: buckets as
// upstream-changes-2026-09.md §2 lists them (HELP: vLLM's loggers.py, in the row's comment).
TEST(UpstreamChangesTest, RequestNumPreemptionsBucketsMatchSection2) {
  const std::string text = ReadFile(kUpstreamChangesPath);
  EXPECT_NE(text.find("`vllm:request_num_preemptions` histogram, buckets 1, 2, 3, 4, 5, 10, 20"),
            std::string::npos);
  const FamilySpec* spec = FindVllmEngineFamily("vllm:request_num_preemptions");
  ASSERT_NE(spec, nullptr);
  EXPECT_EQ(ToVector(spec->buckets), (std::vector<double>{1, 2, 3, 4, 5, 10, 20}));
  EXPECT_EQ(ToStrings(spec->labels), ToStrings(kEngineLabels));
}

TEST_F(VllmFixtureTest, SkippedFamiliesAreCreatedGaugesOfKeptFamilies) {
  std::set<std::string> kept;
  for (const MetricFamily* f : EngineFamilies()) {
    kept.insert(f->name);
    kept.insert(TableName(*f));
  }
  size_t skipped = 0;
  for (const MetricFamily& f : *families_) {
    if (f.name.rfind(kEnginePrefix, 0) != 0 || !IsCreatedGauge(f)) continue;
    ++skipped;
    const std::string base = f.name.substr(0, f.name.size() - std::string_view("_created").size());
    EXPECT_TRUE(kept.count(base)) << f.name << " is not the _created twin of a kept family";
  }
  EXPECT_GT(skipped, 0u);
}

TEST_F(VllmFixtureTest, EagerExtraLabelValuesMatch) {
  auto values = [&](std::string_view family, std::string_view label) {
    std::set<std::string> out;
    for (const MetricFamily& f : *families_) {
      if (f.name != family) continue;
      for (const MetricSample& s : f.samples) {
        for (const auto& [n, v] : s.labels) {
          if (n == label) out.insert(v);
        }
      }
    }
    return out;
  };
  auto set_of = [](std::span<const std::string_view> list) {
    return std::set<std::string>(list.begin(), list.end());
  };
  EXPECT_EQ(values("vllm:request_success_total", "finished_reason"),
            set_of(kEngineFinishedReasons));
  EXPECT_EQ(values("vllm:engine_sleep_state", "sleep_state"), set_of(kEngineSleepStates));
  EXPECT_EQ(values("vllm:prompt_tokens_by_source_total", "source"),
            set_of(kEnginePromptTokenSources));
}

// ---------------------------------------------------------------------------------------------
// (c) Invariants of both tables.

std::vector<const FamilySpec*> AllFamilies() {
  std::vector<const FamilySpec*> out;
  for (const FamilySpec& f : OmniFamilies()) out.push_back(&f);
  for (const FamilySpec& f : VllmEngineFamilies()) out.push_back(&f);
  return out;
}

bool ValidMetricName(std::string_view s) {
  static const std::regex re("[a-zA-Z_:][a-zA-Z0-9_:]*");
  return std::regex_match(s.begin(), s.end(), re);
}

bool ValidLabelName(std::string_view s) {
  static const std::regex re("[a-zA-Z_][a-zA-Z0-9_]*");
  return std::regex_match(s.begin(), s.end(), re) && !s.starts_with("__");
}

TEST(CatalogInvariantsTest, NamesAreValidUniqueAndPrefixed) {
  std::set<std::string_view> names;
  for (const FamilySpec* f : AllFamilies()) {
    EXPECT_TRUE(ValidMetricName(f->name)) << f->name;
    EXPECT_TRUE(names.insert(f->name).second) << "duplicate " << f->name;
    EXPECT_FALSE(f->help.empty()) << f->name;
  }
  for (const FamilySpec& f : OmniFamilies()) {
    EXPECT_TRUE(f.name.starts_with(kOmniPrefix)) << f.name;
    EXPECT_NE(f.group, Group::kEngine) << f.name;
  }
  for (const FamilySpec& f : VllmEngineFamilies()) {
    EXPECT_TRUE(f.name.starts_with(kEnginePrefix)) << f.name;
    EXPECT_EQ(f.group, Group::kEngine) << f.name;
  }
}

TEST(CatalogInvariantsTest, CountersCarryNoTotalSuffix) {
  for (const FamilySpec* f : AllFamilies()) {
    if (f->kind == Kind::kCounter) {
      EXPECT_FALSE(f->name.ends_with("_total")) << f->name;
      EXPECT_FALSE(f->name.ends_with("_created")) << f->name;
    }
  }
}

TEST(CatalogInvariantsTest, BucketsAreStrictlyIncreasingFiniteAndOnlyOnHistograms) {
  for (const FamilySpec* f : AllFamilies()) {
    SCOPED_TRACE(f->name);
    if (f->kind != Kind::kHistogram) {
      EXPECT_TRUE(f->buckets.empty());
      continue;
    }
    ASSERT_FALSE(f->buckets.empty());
    for (size_t i = 0; i < f->buckets.size(); ++i) {
      EXPECT_TRUE(std::isfinite(f->buckets[i])) << i;
      if (i > 0) {
        EXPECT_LT(f->buckets[i - 1], f->buckets[i]) << i;
      }
    }
  }
}

TEST(CatalogInvariantsTest, LabelNamesAreValidAndUnique) {
  for (const FamilySpec* f : AllFamilies()) {
    SCOPED_TRACE(f->name);
    std::set<std::string_view> seen;
    for (std::string_view l : f->labels) {
      EXPECT_TRUE(ValidLabelName(l)) << l;
      EXPECT_TRUE(seen.insert(l).second) << "repeated " << l;
      if (f->kind == Kind::kHistogram) {
        EXPECT_NE(l, "le");
      }
    }
  }
}

TEST(CatalogInvariantsTest, RenderedSampleNamesDoNotCollide) {
  std::map<std::string, std::string_view> owner;
  for (const FamilySpec* f : AllFamilies()) {
    std::vector<std::string> rendered = {std::string(f->name)};
    if (f->kind == Kind::kCounter) rendered.push_back(std::string(f->name) + "_total");
    if (f->kind == Kind::kHistogram) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) {
        rendered.push_back(std::string(f->name) + suffix);
      }
    }
    for (const std::string& r : rendered) {
      auto [it, fresh] = owner.emplace(r, f->name);
      EXPECT_TRUE(fresh) << r << " of " << f->name << " collides with " << it->second;
    }
  }
}

TEST(CatalogInvariantsTest, BindRules) {
  // Eager children are bound per model only (§4.11), or per model and one listed value of one
  // more label (eager_values); engine families per (stage, replica).
  for (const FamilySpec& f : OmniFamilies()) {
    if (f.bind == Bind::kLazy) {
      EXPECT_TRUE(f.eager_values.empty()) << f.name;
    }
    if (f.bind != Bind::kEager) continue;
    const size_t extra = f.eager_values.empty() ? 0 : 1;
    ASSERT_EQ(f.labels.size(), kPipelineLabels.size() + extra) << f.name;
    EXPECT_EQ(f.labels[0], kPipelineLabels[0]) << f.name;
  }
  for (const FamilySpec& f : VllmEngineFamilies()) {
    EXPECT_EQ(f.bind, Bind::kEager) << f.name;
    EXPECT_EQ(f.guard, Guard::kNone) << f.name;
    // `engine` was replaced in place by the adjacent pair stage, replica.
    auto stage = std::find(f.labels.begin(), f.labels.end(), "stage");
    ASSERT_NE(stage, f.labels.end()) << f.name;
    ASSERT_NE(stage + 1, f.labels.end()) << f.name;
    EXPECT_EQ(*(stage + 1), "replica") << f.name;
    EXPECT_FALSE(Contains(f.labels, "engine")) << f.name;
  }
}

TEST(CatalogInvariantsTest, GroupSizes) {
  std::map<Group, size_t> sizes;
  for (const FamilySpec& f : OmniFamilies()) ++sizes[f.group];
  EXPECT_EQ(sizes[Group::kPipeline], 6u);  // the design's 4 plus prompt/generation tokens
  EXPECT_EQ(sizes[Group::kImage], 10u);
  EXPECT_EQ(sizes[Group::kDiffusion], 9u);
  EXPECT_EQ(sizes[Group::kAudio], 7u);
  EXPECT_EQ(sizes[Group::kSpeech], 2u);
  EXPECT_EQ(sizes[Group::kTransfer], 4u);
  EXPECT_EQ(sizes[Group::kRealtime], 4u);
  EXPECT_EQ(sizes[Group::kDuplex], 13u);
  EXPECT_EQ(OmniFamilies().size(), 55u);
  EXPECT_EQ(VllmEngineFamilies().size(), 44u);
  // The table is grouped: each group's rows are contiguous.
  std::set<Group> closed;
  for (size_t i = 0; i < OmniFamilies().size(); ++i) {
    Group g = OmniFamilies()[i].group;
    EXPECT_FALSE(closed.count(g)) << OmniFamilies()[i].name;
    if (i + 1 < OmniFamilies().size() && OmniFamilies()[i + 1].group != g) closed.insert(g);
  }
}

TEST(CatalogInvariantsTest, LookUps) {
  for (const FamilySpec& f : OmniFamilies()) {
    EXPECT_EQ(FindOmniFamily(f.name), &f);
    EXPECT_EQ(FindVllmEngineFamily(f.name), nullptr);
  }
  for (const FamilySpec& f : VllmEngineFamilies()) {
    EXPECT_EQ(FindVllmEngineFamily(f.name), &f);
    EXPECT_EQ(FindOmniFamily(f.name), nullptr);
  }
  EXPECT_EQ(FindOmniFamily("vllm_omni:requests_success_total"), nullptr);
  EXPECT_EQ(FindOmniFamily(""), nullptr);
  EXPECT_EQ(FindVllmEngineFamily("vllm:request_success_total"), nullptr);
  EXPECT_EQ(ToMetricType(Kind::kHistogram), MetricType::kHistogram);
  EXPECT_EQ(KindName(Kind::kCounter), "counter");
  EXPECT_EQ(BindName(Bind::kLazy), "lazy");
  EXPECT_EQ(GroupName(Group::kTransfer), "transfer");
  EXPECT_EQ(GuardName(Guard::kSkipNegative), "skip < 0");
}

TEST(CatalogInvariantsTest, BoundedReasonSetsAreUniqueAndValidValues) {
  using Set = std::span<const std::string_view>;
  for (Set set :
       std::initializer_list<Set>{kFailureReasons, kSpeechAbortReasons, kEngineFinishedReasons,
                                  kEngineSleepStates, kEnginePromptTokenSources}) {
    std::set<std::string_view> seen(set.begin(), set.end());
    EXPECT_EQ(seen.size(), set.size());
    for (std::string_view v : set) EXPECT_FALSE(v.empty());
  }
  EXPECT_TRUE(Contains(kFailureReasons, kUnknownReason));
  EXPECT_TRUE(Contains(kEngineFinishedReasons, kAbortFinishedReason));
  EXPECT_TRUE(Contains(kEngineFinishedReasons, kDefaultFinishedReason));
}

TEST(CatalogDocTest, DocsListEveryFamilyOfBothTables) {
  // docs/pipeline-metrics.md is a view of the tables: its family rows must not drift.
  const std::vector<MdSection> doc =
      ParseMarkdown(ReadFile(test_paths::Source("docs/pipeline-metrics.md")));
  std::set<std::string> listed;
  for (const MdSection& s : doc) {
    for (const MdTable& t : s.tables) {
      for (const auto& row : t.rows) {
        std::vector<std::string> spans = CodeSpans(t.Cell(row, "family"));
        if (!spans.empty()) listed.insert(spans[0]);
      }
    }
  }
  std::set<std::string> catalog;
  for (const FamilySpec* f : AllFamilies()) {
    catalog.insert(std::string(f->name) + (f->kind == Kind::kCounter ? "_total" : ""));
  }
  EXPECT_EQ(SetDiff(listed, catalog), "");
}

// ---------------------------------------------------------------------------------------------
// (d) Through the real registry and writer.

class CatalogRegistryTest : public ::testing::TestWithParam<Format> {};

TEST_P(CatalogRegistryTest, EveryFamilyRegistersAndRendersAsSpecified) {
  const Format format = GetParam();
  Registry registry;
  for (const FamilySpec* f : AllFamilies()) {
    SCOPED_TRACE(f->name);
    FamilyOptions options{.name = std::string(f->name),
                          .help = std::string(f->help),
                          .labels = {f->labels.begin(), f->labels.end()},
                          .buckets = {f->buckets.begin(), f->buckets.end()}};
    std::vector<std::string> values;
    for (size_t i = 0; i < f->labels.size(); ++i) values.push_back("v" + std::to_string(i));
    const std::vector<std::string_view> views(values.begin(), values.end());
    std::string error;
    switch (f->kind) {
      case Kind::kCounter: {
        Family<Counter>* family = registry.AddCounter(options, &error);
        ASSERT_NE(family, nullptr) << error;
        family->Labels(std::span(views)).Inc();
        break;
      }
      case Kind::kGauge: {
        Family<Gauge>* family = registry.AddGauge(options, &error);
        ASSERT_NE(family, nullptr) << error;
        family->Labels(std::span(views)).Set(1);
        break;
      }
      case Kind::kHistogram: {
        Family<Histogram>* family = registry.AddHistogram(options, &error);
        ASSERT_NE(family, nullptr) << error;
        family->Labels(std::span(views)).Observe(f->buckets.front());
        break;
      }
    }
  }

  ParseOptions parse;
  parse.format = format;
  std::vector<ParseError> errors;
  std::vector<MetricFamily> parsed = ParseFamilies(registry.Render(format), parse, &errors);
  ASSERT_TRUE(errors.empty()) << errors.front().ToString();
  std::map<std::string, const MetricFamily*> by_name;
  for (const MetricFamily& f : parsed) by_name[f.name] = &f;
  EXPECT_EQ(parsed.size(), AllFamilies().size());

  for (const FamilySpec* f : AllFamilies()) {
    SCOPED_TRACE(f->name);
    const bool text_counter = f->kind == Kind::kCounter && format == Format::kText;
    auto it = by_name.find(std::string(f->name) + (text_counter ? "_total" : ""));
    ASSERT_NE(it, by_name.end());
    const MetricFamily& family = *it->second;
    EXPECT_EQ(family.type, ToMetricType(f->kind));
    EXPECT_EQ(family.help, f->help);
    std::vector<double> le;
    for (const MetricSample& sample : family.samples) {
      std::vector<std::string> names;
      for (const auto& [name, value] : sample.labels) {
        if (name != "le") {
          names.push_back(name);
        } else if (value != "+Inf") {
          le.push_back(ToDouble(value).value_or(NAN));
        }
      }
      std::vector<std::string> expected = ToStrings(f->labels);
      std::sort(names.begin(), names.end());
      std::sort(expected.begin(), expected.end());
      EXPECT_EQ(names, expected) << sample.name;
    }
    EXPECT_EQ(Show(le), Show(ToVector(f->buckets)));
  }
}

INSTANTIATE_TEST_SUITE_P(BothFormats, CatalogRegistryTest,
                         ::testing::Values(Format::kText, Format::kOpenMetrics),
                         [](const auto& info) {
                           return info.param == Format::kText ? "Text" : "OpenMetrics";
                         });

}  // namespace
}  // namespace modelmetrics::pipeline
