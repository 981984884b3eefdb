// See prometheus_query.h.
#include "aggregation/prometheus_query.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "format/number.h"

namespace modelmetrics::deployment {
namespace {

// The latest sample time accepted: the end of year 9999, the last an RFC 3339 time can spell.
constexpr double kMaxSampleSeconds = 253402300799;

// The deepest nesting a matrix answer has is 6 (root, data, result, series, values, pair); past
// this the answer is not one, and its depth would cost memory for nothing.
constexpr size_t kMaxDepth = 16;

// Where the SAX handler is in the answer.
enum class Ctx { kTop, kRoot, kData, kResult, kSeries, kMetric, kValues, kPair, kSkip };

class MatrixHandler : public nlohmann::json_sax<nlohmann::json> {
 public:
  MatrixHandler(const MatrixLimits& limits, std::vector<StoreSeries>* out)
      : limits_(limits), out_(out) {}

  bool null() override { return Scalar(); }
  bool boolean(bool) override { return Scalar(); }
  bool number_integer(number_integer_t v) override { return Number(static_cast<double>(v)); }
  bool number_unsigned(number_unsigned_t v) override { return Number(static_cast<double>(v)); }
  bool number_float(number_float_t v, const string_t&) override { return Number(v); }
  bool binary(binary_t&) override { return Scalar(); }

  bool string(string_t& value) override {
    const Ctx ctx = stack_.back();
    if (ctx == Ctx::kRoot) {
      if (key_ == "status") status_ = value;
      if (key_ == "errorType") error_type_ = value;
      if (key_ == "error") error_ = value;
    } else if (ctx == Ctx::kData && key_ == "resultType") {
      result_type_ = value;
    } else if (ctx == Ctx::kMetric) {
      StoreSeries& series = out_->back();
      if (key_ == "__name__") {
        series.name = value;
      } else {
        if (series.labels.size() >= limits_.max_labels) {
          return Fail(fmt::format("a series has more than {} labels", limits_.max_labels));
        }
        series.labels.emplace_back(std::move(key_), std::move(value));
      }
    } else if (ctx == Ctx::kPair) {
      if (pair_index_++ != 1 || !have_ts_) return Fail("a sample is not [time, \"value\"]");
      double v = 0;
      if (!format::ParseValue(value, &v)) return Fail("a sample value is not a number");
      if (++samples_ > limits_.max_samples) {
        return Fail(fmt::format("the answer has more than {} samples", limits_.max_samples));
      }
      out_->back().samples.push_back({ts_ms_, v});
    }
    return true;
  }

  bool key(string_t& value) override {
    key_ = std::move(value);
    return true;
  }

  bool start_object(std::size_t) override { return Open(true); }
  bool start_array(std::size_t) override { return Open(false); }
  bool end_object() override { return Close(); }
  bool end_array() override { return Close(); }

  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (failure_.empty()) failure_ = fmt::format("the answer is not JSON: {}", e.what());
    return false;
  }

  // After the parse: whether the answer was a complete matrix.
  bool Finish(std::string* error) const {
    if (!failure_.empty()) {
      *error = failure_;
      return false;
    }
    if (status_ == "error") {
      *error = fmt::format("the store answered {}: {}", error_type_.empty() ? "error" : error_type_,
                           error_);
      return false;
    }
    if (status_ != "success") {
      *error = "the answer has no \"status\": \"success\"";
      return false;
    }
    if (result_type_ != "matrix") {
      *error = fmt::format("the answer's resultType is \"{}\", not \"matrix\"", result_type_);
      return false;
    }
    if (!have_result_) {
      *error = "the answer has no \"result\" list";
      return false;
    }
    return true;
  }

 private:
  bool Fail(std::string message) {
    if (failure_.empty()) failure_ = std::move(message);
    return false;
  }

  bool Scalar() {
    if (stack_.back() == Ctx::kPair) return Fail("a sample is not [time, \"value\"]");
    return true;
  }

  bool Number(double v) {
    if (stack_.back() != Ctx::kPair) return Scalar();
    if (pair_index_++ != 0) return Fail("a sample is not [time, \"value\"]");
    if (!std::isfinite(v)) return Fail("a sample time is not a number");
    // Beyond these a time is no scrape's (and its milliseconds would not fit an int64).
    if (v < 0 || v > kMaxSampleSeconds) {
      return Fail(fmt::format("a sample time is out of range ({} s since the epoch)", v));
    }
    ts_ms_ = std::llround(v * 1000);
    have_ts_ = true;
    return true;
  }

  bool Open(bool object) {
    if (stack_.size() > kMaxDepth)
      return Fail(fmt::format("the answer nests deeper than {}", kMaxDepth));
    const Ctx ctx = stack_.back();
    Ctx next = Ctx::kSkip;
    if (ctx == Ctx::kTop && object) {
      next = Ctx::kRoot;
    } else if (ctx == Ctx::kRoot && object && key_ == "data") {
      next = Ctx::kData;
    } else if (ctx == Ctx::kData && key_ == "result") {
      if (object) return Fail("the answer's \"result\" is not a list");
      next = Ctx::kResult;
      have_result_ = true;
    } else if (ctx == Ctx::kResult && object) {
      if (out_->size() >= limits_.max_series) {
        return Fail(fmt::format("the answer has more than {} series", limits_.max_series));
      }
      out_->emplace_back();
      next = Ctx::kSeries;
    } else if (ctx == Ctx::kSeries && object && key_ == "metric") {
      next = Ctx::kMetric;
    } else if (ctx == Ctx::kSeries && !object && key_ == "values") {
      next = Ctx::kValues;
    } else if (ctx == Ctx::kValues && !object) {
      next = Ctx::kPair;
      pair_index_ = 0;
      have_ts_ = false;
    } else if (ctx == Ctx::kPair || ctx == Ctx::kMetric) {
      return Fail("a sample or label set has an unexpected shape");
    }
    stack_.push_back(next);
    return true;
  }

  bool Close() {
    if (stack_.back() == Ctx::kPair && pair_index_ != 2) {
      return Fail("a sample is not [time, \"value\"]");
    }
    if (stack_.back() == Ctx::kValues && !SortSamples(out_->back())) return false;
    stack_.pop_back();
    return true;
  }

  // The code that reads a series finds samples by binary search: a store that answers out of
  // time order has its samples sorted here, and one with two samples at one time is refused
  // (which of them is the scrape's is unknowable).
  bool SortSamples(StoreSeries& series) {
    auto& samples = series.samples;
    const auto earlier = [](const StoreSample& a, const StoreSample& b) { return a.ms < b.ms; };
    if (!std::is_sorted(samples.begin(), samples.end(), earlier)) {
      std::stable_sort(samples.begin(), samples.end(), earlier);
    }
    const auto twice =
        std::adjacent_find(samples.begin(), samples.end(),
                           [](const StoreSample& a, const StoreSample& b) { return a.ms == b.ms; });
    if (twice == samples.end()) return true;
    return Fail(fmt::format("the series {} has two samples at {} ms", series.name, twice->ms));
  }

  const MatrixLimits& limits_;
  std::vector<StoreSeries>* out_;
  std::vector<Ctx> stack_{Ctx::kTop};
  std::string key_;
  std::string status_, error_type_, error_, result_type_;
  std::string failure_;
  size_t samples_ = 0;
  int pair_index_ = 0;
  bool have_ts_ = false;
  bool have_result_ = false;
  int64_t ts_ms_ = 0;
};

}  // namespace

Status DecodeMatrix(std::string_view body, const MatrixLimits& limits,
                    std::vector<StoreSeries>* out) {
  out->clear();
  MatrixHandler handler(limits, out);
  const bool parsed = nlohmann::json::sax_parse(body.begin(), body.end(), &handler);
  if (std::string error; !handler.Finish(&error) || !parsed) {
    out->clear();
    return Status::InvalidArgument(error.empty() ? "the answer is not JSON" : error);
  }
  return Status::Ok();
}

std::string PromqlString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        out += c;
    }
  }
  out += '"';
  return out;
}

std::string RegexAlternation(std::span<const std::string> literals) {
  std::string out;
  for (const std::string& literal : literals) {
    if (!out.empty()) out += '|';
    for (const char c : literal) {
      if (std::string_view(".^$*+?()[]{}|\\").find(c) != std::string_view::npos) out += '\\';
      out += c;
    }
  }
  return out;
}

std::string FormEncode(std::string_view text) {
  std::string out;
  out.reserve(text.size() * 3 / 2);
  for (const unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += fmt::format("%{:02X}", c);
    }
  }
  return out;
}

}  // namespace modelmetrics::deployment
