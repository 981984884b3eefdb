// The exposition parser: one pass over the input, line by line, with no look-ahead.
//
// Family tracking. The parser keeps the current family (the name of the last HELP/TYPE/UNIT line,
// or of the last sample that did not fit it) and a map of the families already left. A sample
// belongs to the current family when its name is the family name plus a suffix the family's
// type allows (`_bucket`, `_sum`, ... see SuffixFits); otherwise it opens a new untyped family of
// its own name. Invariants kept by OpenFamily():
//   - `left_families_` holds the state of every family left so far; a family that comes back is
//     an error in OpenMetrics (interleaving) and for metadata after samples in both formats;
//     otherwise (text) its state is restored, so duplicate TYPE/HELP lines are still caught;
//   - `family_` always views memory that outlives the parse (the input, or `family_storage_`).
//
// Fast paths: a global pre-scan tells whether the input has any backslash (if not, quoted strings
// end at the next `"`) and whether it is all ASCII (if so, UTF-8 validation is skipped).
#include <algorithm>
#include <cstring>
#include <deque>
#include <string>
#include <unordered_map>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "format/number.h"
#include "modelmetrics/parser.h"

namespace modelmetrics {
namespace {

// Character classes.
enum : uint8_t { kNameStart = 1, kNameChar = 2, kLabelStart = 4, kLabelChar = 8, kBlank = 16 };

constexpr auto kClass = [] {
  std::array<uint8_t, 256> t{};
  for (int c = 0; c < 256; ++c) {
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    const bool digit = c >= '0' && c <= '9';
    if (alpha || c == ':') t[c] |= kNameStart | kNameChar;
    if (digit) t[c] |= kNameChar | kLabelChar;
    if (alpha) t[c] |= kLabelStart | kLabelChar;
    if (c == ' ' || c == '\t') t[c] |= kBlank;
  }
  return t;
}();

inline bool Is(char c, uint8_t cls) { return kClass[static_cast<uint8_t>(c)] & cls; }

bool ValidUtf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    unsigned char c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    size_t n;
    uint32_t cp;
    if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    if (static_cast<size_t>(end - p) <= n) return false;
    for (size_t i = 1; i <= n; ++i) {
      if ((p[i] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i] & 0x3F);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    p += n + 1;
  }
  return true;
}

// One pass over the input: does it contain a backslash, and is it all ASCII?
void PreScan(std::string_view s, bool* has_backslash, bool* all_ascii) {
  const char* p = s.data();
  const char* end = p + s.size();
  bool backslash = false;
  unsigned high = 0;
#ifdef __SSE2__
  const __m128i bs = _mm_set1_epi8('\\');
  __m128i any_bs = _mm_setzero_si128();
  __m128i any_high = _mm_setzero_si128();
  while (end - p >= 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    any_bs = _mm_or_si128(any_bs, _mm_cmpeq_epi8(v, bs));
    any_high = _mm_or_si128(any_high, v);
    p += 16;
  }
  backslash = _mm_movemask_epi8(any_bs) != 0;
  high = static_cast<unsigned>(_mm_movemask_epi8(any_high));
#endif
  for (; p < end; ++p) {
    backslash |= *p == '\\';
    high |= static_cast<unsigned char>(*p) & 0x80;
  }
  *has_backslash = backslash;
  *all_ascii = high == 0;
}

size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

// The part of a sample name after its family name.
enum class Suffix : uint8_t {
  kNone,
  kTotal,
  kCreated,
  kBucket,
  kSum,
  kCount,
  kGSum,
  kGCount,
  kInfo,
  kOther
};

// Compares with constant sizes so the compiler inlines each comparison.
template <size_t N>
bool Is(std::string_view s, const char (&literal)[N]) {
  return std::memcmp(s.data(), literal, N - 1) == 0;
}

Suffix ClassifySuffix(std::string_view s) {
  switch (s.size()) {
    case 0:
      return Suffix::kNone;
    case 4:
      return Is(s, "_sum") ? Suffix::kSum : Suffix::kOther;
    case 5:
      return Is(s, "_info") ? Suffix::kInfo : Is(s, "_gsum") ? Suffix::kGSum : Suffix::kOther;
    case 6:
      return Is(s, "_total") ? Suffix::kTotal : Is(s, "_count") ? Suffix::kCount : Suffix::kOther;
    case 7:
      return Is(s, "_bucket")   ? Suffix::kBucket
             : Is(s, "_gcount") ? Suffix::kGCount
                                : Suffix::kOther;
    case 8:
      return Is(s, "_created") ? Suffix::kCreated : Suffix::kOther;
    default:
      return Suffix::kOther;
  }
}

// Equality for short strings (label names): a byte loop beats a memcmp call.
inline bool ShortEqual(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// Whether a sample named `family + suffix` belongs to a family of `type`.
bool SuffixFits(MetricType type, Suffix suffix, Format format) {
  const bool om = format == Format::kOpenMetrics;
  switch (type) {
    case MetricType::kCounter:
      // OpenMetrics counters expose `_total` (and `_created`); text counters carry the whole
      // name in TYPE, but a `foo` TYPE with `foo_total` samples is tolerated.
      return suffix == Suffix::kTotal || suffix == Suffix::kCreated ||
             (!om && suffix == Suffix::kNone);
    case MetricType::kHistogram:
      return suffix == Suffix::kBucket || suffix == Suffix::kSum || suffix == Suffix::kCount ||
             suffix == Suffix::kCreated;
    case MetricType::kGaugeHistogram:
      return suffix == Suffix::kBucket || suffix == Suffix::kGSum || suffix == Suffix::kGCount;
    case MetricType::kSummary:
      return suffix == Suffix::kNone || suffix == Suffix::kSum || suffix == Suffix::kCount ||
             suffix == Suffix::kCreated;
    case MetricType::kInfo:
      return suffix == Suffix::kInfo;
    case MetricType::kGauge:
    case MetricType::kStateSet:
    case MetricType::kUntyped:
      return suffix == Suffix::kNone;
  }
  return false;
}

bool IsLegacyMetricName(std::string_view name) {
  if (name.empty() || !Is(name[0], kNameStart)) return false;
  for (char c : name) {
    if (!Is(c, kNameChar)) return false;
  }
  return true;
}

bool ParseType(std::string_view word, Format format, MetricType* type) {
  static constexpr std::pair<std::string_view, MetricType> kText[] = {
      {"counter", MetricType::kCounter},
      {"gauge", MetricType::kGauge},
      {"histogram", MetricType::kHistogram},
      {"summary", MetricType::kSummary},
      {"untyped", MetricType::kUntyped}};
  static constexpr std::pair<std::string_view, MetricType> kOm[] = {
      {"counter", MetricType::kCounter},     {"gauge", MetricType::kGauge},
      {"histogram", MetricType::kHistogram}, {"gaugehistogram", MetricType::kGaugeHistogram},
      {"summary", MetricType::kSummary},     {"info", MetricType::kInfo},
      {"stateset", MetricType::kStateSet},   {"unknown", MetricType::kUntyped}};
  if (format == Format::kOpenMetrics) {
    for (const auto& [name, t] : kOm) {
      if (word == name) return *type = t, true;
    }
  } else {
    for (const auto& [name, t] : kText) {
      if (word == name) return *type = t, true;
    }
  }
  return false;
}

// What a line that yields no event (blank, comment, filtered) returns inside the parser.
constexpr Event kNothing = Event::kEnd;

// Thrown inside one line's parse and caught in Next(); never escapes the parser.
struct LineError {
  const char* at;
  std::string message;
  bool fatal = false;
};

}  // namespace

std::string ParseError::ToString() const {
  return std::to_string(line) + ":" + std::to_string(column) + ": " + message;
}

class Parser::Impl {
 public:
  Impl(std::string_view input, const ParseOptions& options);
  Event Next();

  SampleView sample_;
  MetadataView metadata_;
  Format format_;
  ParseError last_error_;
  std::vector<ParseError> errors_;
  size_t error_count_ = 0;
  size_t sample_count_ = 0;

 private:
  Event ParseLine(const char* p, const char* end);
  Event ParseComment(const char* p, const char* end);
  Event ParseSample(const char* p, const char* end);
  void ParseExemplar(const char*& p, const char* end);
  void CheckTypeLabels(const char* name_at);
  // Reads a metric (or label) name, bare or quoted, at `p`; advances `p`.
  std::string_view ReadName(const char*& p, const char* end, bool metric);
  // Reads a quoted string at `p` (which points at the opening quote); advances past the closing
  // quote. `is_help` selects HELP's escape set.
  std::string_view ReadQuoted(const char*& p, const char* end, size_t max_length);
  // Parses `{...}` at `p` (pointing at `{`) into `labels`; a quoted name inside braces becomes
  // `*name` when `name` is not null and still empty.
  void ReadLabels(const char*& p, const char* end, std::vector<LabelView>* labels,
                  std::string_view* name);
  std::string_view Unescape(std::string_view raw, bool help);
  void SkipBlanks(const char*& p, const char* end) {
    if (format_ == Format::kText) {
      while (p < end && Is(*p, kBlank)) ++p;
    }
  }
  // One separator: a run of blanks in text, exactly one space in OpenMetrics.
  void ExpectSeparator(const char*& p, const char* end, const char* what);
  [[noreturn]] void Fail(const char* at, std::string message) {
    throw LineError{at, std::move(message)};
  }
  [[noreturn]] void FailFatal(const char* at, std::string message) {
    throw LineError{at, std::move(message), true};
  }
  void CheckName(const char* at, std::string_view name) {
    if (name.size() > limits_.max_name_length) {
      FailFatal(at, "name longer than the limit of " + std::to_string(limits_.max_name_length) +
                        " bytes");
    }
  }
  bool Wanted(std::string_view family) const;
  // Makes the family of a sample named `name` current: the current one when the name fits it,
  // otherwise a new untyped family of that name.
  // `starts_with_family`: the caller already knows `name` begins with the family name.
  void EnterSampleFamily(std::string_view name, const char* name_at, bool starts_with_family);
  // Makes `name` the current family (closing the previous one). Returns false when the family was
  // left before: its state is then restored and the caller decides whether that is an error.
  bool OpenFamily(std::string_view name);
  void RecordError(const LineError& e);

  const char* input_begin_;
  const char* pos_;
  const char* end_;
  const char* line_start_ = nullptr;
  uint32_t line_number_ = 0;
  bool strict_;
  bool started_ = false;
  bool done_ = false;
  bool saw_eof_ = false;
  bool has_backslash_;
  bool all_ascii_;
  ParseLimits limits_;
  std::vector<std::string> filter_;
  bool filtering_;
  bool check_filtered_;

  // Current family.
  std::string_view family_;
  struct FamilyState {
    MetricType type = MetricType::kUntyped;
    bool has_type = false;
    bool has_help = false;
    bool has_unit = false;
    bool has_samples = false;
  };
  FamilyState fam_;
  bool family_wanted_ = true;
  bool family_open_ = false;
  bool family_legacy_ = false;     // the family name is in the legacy charset (see ParseSample)
  Suffix suffix_ = Suffix::kNone;  // of the current sample, relative to its family
  std::unordered_map<std::string_view, FamilyState> left_families_;
  std::deque<std::string> family_storage_;  // names that needed unescaping

  std::vector<LabelView> labels_;
  std::vector<LabelView> exemplar_labels_;
  std::deque<std::string> scratch_;  // unescaped strings of the current line; deque: no moves
  size_t scratch_used_ = 0;
};

Parser::Impl::Impl(std::string_view input, const ParseOptions& options)
    : input_begin_(input.data()),
      pos_(input.data()),
      end_(input.data() + input.size()),
      strict_(options.strict),
      limits_(options.limits),
      filter_(options.families),
      filtering_(!options.families.empty()),
      check_filtered_(options.check_filtered) {
  format_ = options.format ? *options.format : DetectFormat(input);
  PreScan(input, &has_backslash_, &all_ascii_);
  labels_.reserve(16);
}

bool Parser::Impl::Wanted(std::string_view family) const {
  if (!filtering_) return true;
  for (const auto& f : filter_) {
    if (f == family) return true;
  }
  return false;
}

bool Parser::Impl::OpenFamily(std::string_view name) {
  if (family_open_) left_families_.insert_or_assign(family_, fam_);
  family_open_ = true;
  family_ = name;
  family_wanted_ = Wanted(name);
  family_legacy_ = IsLegacyMetricName(name);
  auto it = left_families_.find(name);
  if (it == left_families_.end()) {
    fam_ = FamilyState{};
    return true;
  }
  fam_ = it->second;
  left_families_.erase(it);
  return false;
}

void Parser::Impl::RecordError(const LineError& e) {
  ++error_count_;
  last_error_.line = line_number_ == 0 ? 1 : line_number_;
  const char* base = line_start_ ? line_start_ : input_begin_;
  last_error_.column = static_cast<uint32_t>((e.at >= base ? e.at - base : 0) + 1);
  last_error_.message = e.message;
  if (errors_.size() < limits_.max_errors_kept) errors_.push_back(last_error_);
  if (strict_ || e.fatal) done_ = true;
}

void Parser::Impl::ExpectSeparator(const char*& p, const char* end, const char* what) {
  if (format_ == Format::kText) {
    if (p >= end || !Is(*p, kBlank)) Fail(p, std::string("expected blank before ") + what);
    while (p < end && Is(*p, kBlank)) ++p;
  } else {
    if (p >= end || *p != ' ') Fail(p, std::string("expected one space before ") + what);
    ++p;
  }
}

std::string_view Parser::Impl::Unescape(std::string_view raw, bool help) {
  if (scratch_used_ == scratch_.size()) scratch_.emplace_back();
  std::string& out = scratch_[scratch_used_++];
  out.clear();
  for (size_t i = 0; i < raw.size(); ++i) {
    char c = raw[i];
    if (c != '\\' || i + 1 == raw.size()) {
      out.push_back(c);
      continue;
    }
    char next = raw[++i];
    if (next == '\\') {
      out.push_back('\\');
    } else if (next == 'n') {
      out.push_back('\n');
    } else if (next == '"' && (!help || format_ == Format::kOpenMetrics)) {
      out.push_back('"');
    } else {
      // Unknown escapes are kept as both characters (what Prometheus's own parser does).
      out.push_back('\\');
      out.push_back(next);
    }
  }
  return out;
}

std::string_view Parser::Impl::ReadQuoted(const char*& p, const char* end, size_t max_length) {
  const char* start = ++p;  // past the opening quote
  const char* q;
  if (!has_backslash_) {
    q = static_cast<const char*>(std::memchr(start, '"', end - start));
  } else {
    q = start;
    for (;;) {
      q = static_cast<const char*>(std::memchr(q, '"', end - q));
      if (q == nullptr) break;
      // A quote preceded by an odd number of backslashes is escaped.
      size_t backslashes = 0;
      for (const char* b = q - 1; b >= start && *b == '\\'; --b) ++backslashes;
      if ((backslashes & 1) == 0) break;
      ++q;
    }
  }
  if (q == nullptr) Fail(start - 1, "unterminated quoted string");
  std::string_view raw(start, q - start);
  if (raw.size() > max_length) {
    FailFatal(start,
              "quoted string longer than the limit of " + std::to_string(max_length) + " bytes");
  }
  p = q + 1;
  if (!all_ascii_ && !ValidUtf8(raw)) Fail(start, "invalid UTF-8 in quoted string");
  if (!has_backslash_ || std::memchr(raw.data(), '\\', raw.size()) == nullptr) return raw;
  if (strict_ && format_ == Format::kText) {
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] == '\\') {
        const char next = raw[++i];
        if (next != '\\' && next != '"' && next != 'n') {
          Fail(start + i - 1, std::string("invalid escape sequence '\\") + next + "'");
        }
      }
    }
  }
  return Unescape(raw, false);
}

std::string_view Parser::Impl::ReadName(const char*& p, const char* end, bool metric) {
  if (p < end && *p == '"') {
    const char* at = p;
    std::string_view name = ReadQuoted(p, end, limits_.max_name_length);
    if (name.empty()) Fail(at, metric ? "empty quoted metric name" : "empty quoted label name");
    return name;
  }
  // Metric names also allow ':'; otherwise the charsets are the same.
  const uint8_t start_class = metric ? kNameStart : kLabelStart;
  const uint8_t char_class = metric ? kNameChar : kLabelChar;
  const char* start = p;
  if (p >= end || !Is(*p, start_class))
    Fail(p, metric ? "invalid metric name" : "invalid label name");
  ++p;
  while (p < end && Is(*p, char_class)) ++p;
  CheckName(start, std::string_view(start, p - start));
  return std::string_view(start, p - start);
}

void Parser::Impl::ReadLabels(const char*& p, const char* end, std::vector<LabelView>* labels,
                              std::string_view* name) {
  const bool om = format_ == Format::kOpenMetrics;
  ++p;  // '{'
  SkipBlanks(p, end);
  bool first = true;
  while (true) {
    if (p >= end) Fail(p, "unterminated label set");
    if (*p == '}') {
      ++p;
      break;
    }
    if (!first) {
      if (*p != ',') Fail(p, "expected ',' or '}' in label set");
      ++p;
      SkipBlanks(p, end);
      if (p < end && *p == '}') {
        if (om) Fail(p, "trailing comma in label set");
        ++p;
        break;
      }
    }
    const char* item = p;
    std::string_view label = ReadName(p, end, false);
    SkipBlanks(p, end);
    if (p < end && *p != '=' && *item == '"' && name != nullptr && first) {
      // `{"metric.name", ...}`: only a quoted string may stand alone as the metric name.
      if (!name->empty()) Fail(item, "metric name given twice");
      *name = label;
      first = false;
      continue;
    }
    if (p >= end || *p != '=') Fail(p, "expected '=' after label name");
    ++p;
    SkipBlanks(p, end);
    if (p >= end || *p != '"') Fail(p, "expected '\"' to open label value");
    std::string_view value = ReadQuoted(p, end, limits_.max_label_value_length);
    if (labels->size() == limits_.max_labels_per_series) {
      FailFatal(item, "more than " + std::to_string(limits_.max_labels_per_series) +
                          " labels in one series");
    }
    for (const LabelView& l : *labels) {
      if (ShortEqual(l.name, label))
        Fail(item, "duplicate label name \"" + std::string(label) + "\"");
    }
    labels->push_back({label, value});
    SkipBlanks(p, end);
    first = false;
  }
}

Event Parser::Impl::ParseComment(const char* p, const char* end) {
  const bool om = format_ == Format::kOpenMetrics;
  const char* hash = p;
  ++p;  // '#'
  if (om) {
    if (std::string_view(hash, end - hash) == "# EOF") {
      saw_eof_ = true;
      return kNothing;
    }
    if (p >= end || *p != ' ') Fail(p, "expected HELP, TYPE, UNIT or EOF after '#'");
    ++p;
  } else {
    while (p < end && Is(*p, kBlank)) ++p;
  }
  const char* word = p;
  while (p < end && !Is(*p, kBlank)) ++p;
  std::string_view keyword(word, p - word);
  Event kind;
  if (keyword == "HELP") {
    kind = Event::kHelp;
  } else if (keyword == "TYPE") {
    kind = Event::kType;
  } else if (keyword == "UNIT" && om) {
    kind = Event::kUnit;
  } else {
    if (om) Fail(word, "unknown comment '" + std::string(keyword) + "'");
    return kNothing;  // a plain comment
  }
  ExpectSeparator(p, end, "the metric name");
  const char* name_at = p;
  std::string_view name = ReadName(p, end, true);
  // Family bookkeeping first: a filtered family still switches the current family.
  const bool same = family_open_ && name == family_;
  if (!same) {
    // Names that were unescaped live in scratch space; keep a stable copy.
    if (name.data() < input_begin_ || name.data() >= end_) {
      family_storage_.emplace_back(name);
      name = family_storage_.back();
    }
    // Text: a family may come back for HELP, or for TYPE before its first sample.
    if (!OpenFamily(name) && (om || (fam_.has_samples && kind == Event::kType))) {
      Fail(name_at, std::string(keyword) + " line for metric name \"" + std::string(name) +
                        (fam_.has_samples ? "\" after its samples" : "\" after another family"));
    }
  }
  if (kind == Event::kType) {
    if (fam_.has_type)
      Fail(name_at, "second TYPE line for metric name \"" + std::string(name) + "\"");
    if (fam_.has_samples) {
      Fail(name_at, "TYPE line for metric name \"" + std::string(name) + "\" after its samples");
    }
  } else if (kind == Event::kHelp) {
    if (fam_.has_help)
      Fail(name_at, "second HELP line for metric name \"" + std::string(name) + "\"");
  } else if (fam_.has_unit) {
    Fail(name_at, "second UNIT line for metric name \"" + std::string(name) + "\"");
  }
  if (om && fam_.has_samples) Fail(name_at, "metadata after the family's samples");

  // The rest: TYPE word, HELP text or UNIT text.
  std::string_view text;
  if (p < end) {
    ExpectSeparator(p, end, kind == Event::kType ? "the type" : "the text");
    text = std::string_view(p, end - p);
  } else if (kind == Event::kType) {
    Fail(p, "TYPE line without a type");
  }
  if (kind == Event::kType) {
    if (!om) {
      while (!text.empty() && Is(text.back(), kBlank)) text.remove_suffix(1);
    }
    MetricType type;
    if (!ParseType(text, format_, &type))
      Fail(p, "invalid metric type \"" + std::string(text) + "\"");
    fam_.type = type;
    fam_.has_type = true;
    metadata_.type = type;
  } else if (kind == Event::kHelp) {
    fam_.has_help = true;
    if (has_backslash_ && !text.empty() && std::memchr(text.data(), '\\', text.size()) != nullptr) {
      text = Unescape(text, true);
    }
  } else {
    fam_.has_unit = true;
    if (!text.empty() && !family_.ends_with("_" + std::string(text))) {
      Fail(p, "unit \"" + std::string(text) + "\" is not a suffix of the metric name");
    }
  }
  if (!family_wanted_) return kNothing;
  metadata_.name = family_;
  metadata_.text = text;
  return kind;
}

void Parser::Impl::EnterSampleFamily(std::string_view name, const char* name_at,
                                     bool starts_with_family) {
  if (starts_with_family || (family_open_ && name.size() >= family_.size() &&
                             std::memcmp(name.data(), family_.data(), family_.size()) == 0)) {
    suffix_ = ClassifySuffix(name.substr(family_.size()));
    if (SuffixFits(fam_.type, suffix_, format_)) {
      fam_.has_samples = true;
      return;
    }
    if (suffix_ == Suffix::kNone) {
      Fail(name_at, "sample name \"" + std::string(name) + "\" does not fit its family of type " +
                        std::string(MetricTypeName(fam_.type, format_)));
    }
  }
  // A new family named after the sample.
  suffix_ = Suffix::kNone;
  std::string_view family = name;
  if (family.data() < input_begin_ || family.data() >= end_) {
    family_storage_.emplace_back(family);
    family = family_storage_.back();
  }
  if (!OpenFamily(family) && format_ == Format::kOpenMetrics) {
    // Text accepts a family that comes back (expfmt merges it); OpenMetrics forbids it.
    Fail(name_at, "family \"" + std::string(name) + "\" is interleaved with another");
  }
  fam_.has_samples = true;
}

Event Parser::Impl::ParseSample(const char* p, const char* end) {
  const bool om = format_ == Format::kOpenMetrics;
  if (sample_count_ + 1 > limits_.max_series) {
    FailFatal(p, "more than " + std::to_string(limits_.max_series) + " samples");
  }
  const char* name_at = p;
  std::string_view name;
  bool family_decided = false;
  if (*p != '{') {
    bool starts_with_family = false;
    if (family_legacy_ && static_cast<size_t>(end - p) > family_.size() &&
        std::memcmp(p, family_.data(), family_.size()) == 0) {
      starts_with_family = true;
      // Most samples continue the current family: its name is known valid, scan only the rest.
      const char* q = p + family_.size();
      while (q < end && Is(*q, kNameChar)) ++q;
      name = std::string_view(p, q - p);
      CheckName(p, name);
      p = q;
    } else {
      name = ReadName(p, end, true);
    }
    EnterSampleFamily(name, name_at, starts_with_family);
    family_decided = true;
    if (!family_wanted_ && !check_filtered_) {
      ++sample_count_;
      return kNothing;  // filtered: the rest of the line is not read
    }
  }
  labels_.clear();
  if (p < end && !om) {
    const char* q = p;
    while (q < end && Is(*q, kBlank)) ++q;
    if (q < end && *q == '{') p = q;
  }
  if (p < end && *p == '{') ReadLabels(p, end, &labels_, &name);
  if (name.empty()) Fail(name_at, "missing metric name");
  if (!family_decided) EnterSampleFamily(name, name_at, false);
  ++sample_count_;
  if (!family_wanted_ && !check_filtered_) return kNothing;

  // Value.
  ExpectSeparator(p, end, "the value");
  const char* value_at = p;
  while (p < end && *p != ' ' && *p != '\t') ++p;
  std::string_view value_text(value_at, p - value_at);
  if (!format::ParseValue(value_text, &sample_.value)) {
    Fail(value_at, "invalid value \"" + std::string(value_text) + "\"");
  }
  sample_.has_timestamp = false;
  sample_.has_exemplar = false;
  if (!om) {
    while (p < end && Is(*p, kBlank)) ++p;
    if (p < end) {
      const char* ts_at = p;
      while (p < end && !Is(*p, kBlank)) ++p;
      if (!format::ParseTimestampMs(std::string_view(ts_at, p - ts_at), !strict_,
                                    &sample_.timestamp_ms)) {
        Fail(ts_at, "invalid timestamp \"" + std::string(ts_at, p - ts_at) + "\"");
      }
      sample_.has_timestamp = true;
      while (p < end && Is(*p, kBlank)) ++p;
      if (p < end) Fail(p, "unexpected text after the timestamp");
    }
  } else {
    if (p < end && *p == ' ' && p + 1 < end && p[1] != '#') {
      ++p;
      const char* ts_at = p;
      while (p < end && *p != ' ') ++p;
      if (!format::ParseSecondsAsMs(std::string_view(ts_at, p - ts_at), &sample_.timestamp_ms)) {
        Fail(ts_at, "invalid timestamp \"" + std::string(ts_at, p - ts_at) + "\"");
      }
      sample_.has_timestamp = true;
    }
    if (p < end) ParseExemplar(p, end);
  }

  CheckTypeLabels(name_at);

  if (!family_wanted_) return kNothing;  // checked, not emitted
  sample_.name = name;
  sample_.family = family_;
  sample_.type = fam_.type;
  sample_.labels = labels_;
  return Event::kSample;
}

// OpenMetrics: " # {labels} value [timestamp]" after a sample that may carry one.
void Parser::Impl::ParseExemplar(const char*& p, const char* end) {
  if (end - p < 4 || std::string_view(p, 4) != " # {") {
    Fail(p, "unexpected text after the sample");
  }
  const bool exemplar_allowed =
      ((fam_.type == MetricType::kHistogram || fam_.type == MetricType::kGaugeHistogram) &&
       (suffix_ == Suffix::kBucket || suffix_ == Suffix::kCount)) ||
      (fam_.type == MetricType::kCounter && suffix_ == Suffix::kTotal);
  if (!exemplar_allowed) Fail(p, "exemplar on a sample that cannot have one");
  p += 3;
  exemplar_labels_.clear();
  ReadLabels(p, end, &exemplar_labels_, nullptr);
  size_t length = 0;
  for (const auto& l : exemplar_labels_) length += CodePoints(l.name) + CodePoints(l.value);
  if (length > 128) Fail(p, "exemplar labels longer than 128 code points");
  ExpectSeparator(p, end, "the exemplar value");
  const char* ev_at = p;
  while (p < end && *p != ' ') ++p;
  if (!format::ParseValue(std::string_view(ev_at, p - ev_at), &sample_.exemplar_value)) {
    Fail(ev_at, "invalid exemplar value");
  }
  sample_.exemplar_has_timestamp = false;
  if (p < end) {
    ++p;
    const char* ts_at = p;
    while (p < end && *p != ' ') ++p;
    if (!format::ParseSecondsAsMs(std::string_view(ts_at, p - ts_at),
                                  &sample_.exemplar_timestamp_ms)) {
      Fail(ts_at, "invalid exemplar timestamp");
    }
    sample_.exemplar_has_timestamp = true;
    if (p < end) Fail(p, "unexpected text after the exemplar");
  }
  sample_.has_exemplar = true;
  sample_.exemplar_labels = exemplar_labels_;
}

// A bucket's `le` and a quantile's `quantile` label: present and a number.
void Parser::Impl::CheckTypeLabels(const char* name_at) {
  if (fam_.type == MetricType::kHistogram || fam_.type == MetricType::kGaugeHistogram ||
      fam_.type == MetricType::kSummary) {
    const bool bucket = fam_.type != MetricType::kSummary && suffix_ == Suffix::kBucket;
    const bool quantile = fam_.type == MetricType::kSummary && suffix_ == Suffix::kNone;
    if (bucket || quantile) {
      const std::string_view key = bucket ? "le" : "quantile";
      const LabelView* found = nullptr;
      for (const auto& l : labels_) {
        if (l.name == key) found = &l;
      }
      double bound;
      if (found == nullptr) Fail(name_at, "missing \"" + std::string(key) + "\" label");
      if (!format::ParseValue(found->value, &bound)) {
        Fail(name_at,
             "invalid \"" + std::string(key) + "\" value \"" + std::string(found->value) + "\"");
      }
    }
  }
}

Event Parser::Impl::ParseLine(const char* p, const char* end) {
  const bool om = format_ == Format::kOpenMetrics;
  if (saw_eof_) Fail(p, "text after # EOF");
  if (om) {
    if (p == end) Fail(p, "blank line");
    // CR may appear inside quoted strings, never as part of a line ending.
    if (end[-1] == '\r') Fail(end - 1, "carriage return at the end of a line");
  } else {
    while (p < end && Is(*p, kBlank)) ++p;
    while (end > p && (Is(end[-1], kBlank) || end[-1] == '\r')) --end;
    if (p == end) return kNothing;
  }
  if (*p == '#') return ParseComment(p, end);
  return ParseSample(p, end);
}

Event Parser::Impl::Next() {
  if (!started_) {
    started_ = true;
    const size_t size = end_ - input_begin_;
    if (size > limits_.max_bytes) {
      RecordError({input_begin_,
                   "input of " + std::to_string(size) + " bytes exceeds the limit of " +
                       std::to_string(limits_.max_bytes) + " bytes",
                   true});
      return Event::kError;
    }
  }
  while (!done_) {
    if (pos_ >= end_) {
      done_ = true;
      if (format_ == Format::kOpenMetrics && !saw_eof_) {
        // Point just past the last line: its end, or the start of the (empty) line after it.
        if (line_start_ == nullptr || end_[-1] == '\n') {
          ++line_number_;
          line_start_ = end_;
        }
        RecordError({end_, "missing # EOF at the end of an OpenMetrics exposition"});
        return Event::kError;
      }
      return Event::kEnd;
    }
    const char* nl = static_cast<const char*>(std::memchr(pos_, '\n', end_ - pos_));
    const char* line_end = nl ? nl : end_;
    line_start_ = pos_;
    ++line_number_;
    pos_ = nl ? nl + 1 : end_;
    scratch_used_ = 0;
    try {
      if (static_cast<size_t>(line_end - line_start_) > limits_.max_line_length) {
        FailFatal(line_start_, "line longer than the limit of " +
                                   std::to_string(limits_.max_line_length) + " bytes");
      }
      Event e = ParseLine(line_start_, line_end);
      if (e != kNothing) return e;
    } catch (const LineError& e) {
      RecordError(e);
      return Event::kError;
    }
  }
  return Event::kEnd;
}

Parser::Parser(std::string_view input, const ParseOptions& options)
    : impl_(std::make_unique<Impl>(input, options)) {}
Parser::~Parser() = default;
Event Parser::Next() { return impl_->Next(); }
const SampleView& Parser::sample() const { return impl_->sample_; }
const MetadataView& Parser::metadata() const { return impl_->metadata_; }
Format Parser::format() const { return impl_->format_; }
bool Parser::ok() const { return impl_->error_count_ == 0; }
const ParseError& Parser::last_error() const { return impl_->last_error_; }
const std::vector<ParseError>& Parser::errors() const { return impl_->errors_; }
size_t Parser::error_count() const { return impl_->error_count_; }
size_t Parser::sample_count() const { return impl_->sample_count_; }

}  // namespace modelmetrics

namespace modelmetrics {
namespace {

std::vector<LabelPair> OwnLabels(std::span<const LabelView> labels) {
  std::vector<LabelPair> out;
  out.reserve(labels.size());
  for (const auto& l : labels) out.emplace_back(std::string(l.name), std::string(l.value));
  return out;
}

}  // namespace

std::vector<MetricFamily> ParseFamilies(std::string_view input, const ParseOptions& options,
                                        std::vector<ParseError>* errors, size_t* error_count) {
  std::vector<MetricFamily> families;
  std::unordered_map<std::string, size_t> index;  // family name -> position in `families`
  auto family_for = [&](std::string_view name) -> MetricFamily& {
    auto [it, inserted] = index.try_emplace(std::string(name), families.size());
    if (inserted) families.push_back(MetricFamily{.name = std::string(name)});
    return families[it->second];
  };
  Parser parser(input, options);
  for (Event e = parser.Next(); e != Event::kEnd; e = parser.Next()) {
    switch (e) {
      case Event::kHelp: {
        MetricFamily& f = family_for(parser.metadata().name);
        f.help = std::string(parser.metadata().text);
        f.has_help = true;
        break;
      }
      case Event::kType:
        family_for(parser.metadata().name).type = parser.metadata().type;
        break;
      case Event::kUnit:
        family_for(parser.metadata().name).unit = std::string(parser.metadata().text);
        break;
      case Event::kSample: {
        const SampleView& s = parser.sample();
        MetricFamily& f = family_for(s.family);
        f.type = s.type;
        MetricSample& out = f.samples.emplace_back();
        out.name = std::string(s.name);
        out.labels = OwnLabels(s.labels);
        out.value = s.value;
        if (s.has_timestamp) out.timestamp_ms = s.timestamp_ms;
        if (s.has_exemplar) {
          out.exemplar = Exemplar{.labels = OwnLabels(s.exemplar_labels),
                                  .value = s.exemplar_value,
                                  .timestamp_ms = std::nullopt};
          if (s.exemplar_has_timestamp) out.exemplar->timestamp_ms = s.exemplar_timestamp_ms;
        }
        break;
      }
      case Event::kError:
      case Event::kEnd:
        break;
    }
  }
  if (errors != nullptr) *errors = parser.errors();
  if (error_count != nullptr) *error_count = parser.error_count();
  return families;
}

}  // namespace modelmetrics
