// The simulated exporters' text: a writer in each client library's habits (HELP lines or not,
// label order, where `le` goes, `_count` before or after `_sum`, the number spelling of
// number_spelling.h, blank lines between families), so the deployment half is tested against the
// shapes real Pods serve.
//
// Thread-safety: a Writer belongs to one thread.
#ifndef MODELMETRICS_SIM_EXPOSITION_WRITER_H_
#define MODELMETRICS_SIM_EXPOSITION_WRITER_H_

#include <algorithm>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "number_spelling.h"
#include "sim_histogram.h"

namespace modelmetrics::sim {

enum class Style { kPython, kGo, kRust };

using Labels = std::vector<std::pair<std::string, std::string>>;

class Writer {
 public:
  Writer(Style style, bool blank_between_families) : style_(style), blank_(blank_between_families) {
    out_.reserve(32 * 1024);
  }

  void Family(std::string_view name, std::string_view type, std::string_view help) {
    if (blank_ && !out_.empty()) out_ += '\n';
    if (style_ != Style::kRust) {
      out_ += "# HELP ";
      out_ += name;
      out_ += ' ';
      out_ += help;
      out_ += '\n';
    }
    out_ += "# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }

  void Sample(std::string_view name, Labels labels, double value) {
    if (style_ != Style::kRust) Sort(labels);
    Line(name, labels, value);
  }

  void Histogram(std::string_view name, Labels labels, const SimHistogram& h) {
    if (style_ != Style::kRust) Sort(labels);
    double cumulative = 0;
    for (size_t i = 0; i <= h.bounds.size(); ++i) {
      cumulative += h.counts[i];
      Labels with_le = labels;
      std::string le = i < h.bounds.size() ? Number(h.bounds[i]) : "+Inf";
      with_le.emplace_back("le", std::move(le));
      // prometheus_client sorts `le` in with the others; Go and Rust put it last.
      if (style_ == Style::kPython) Sort(with_le);
      Line(std::string(name) + "_bucket", with_le, cumulative);
    }
    if (style_ == Style::kPython) {
      Line(std::string(name) + "_count", labels, h.count);
      Line(std::string(name) + "_sum", labels, h.sum);
    } else {
      Line(std::string(name) + "_sum", labels, h.sum);
      Line(std::string(name) + "_count", labels, h.count);
    }
  }

  std::string Number(double value) const {
    switch (style_) {
      case Style::kPython:
        return PythonFloat(value);
      case Style::kGo:
        return GoFloat(value);
      case Style::kRust:
        return RustFloat(value);
    }
    return "";
  }

  std::string& out() { return out_; }

 private:
  static void Sort(Labels& labels) {
    std::sort(labels.begin(), labels.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
  }

  void Line(std::string_view name, const Labels& labels, double value) {
    out_ += name;
    if (!labels.empty()) {
      out_ += '{';
      for (size_t i = 0; i < labels.size(); ++i) {
        if (i) out_ += ',';
        out_ += labels[i].first;
        out_ += "=\"";
        out_ += labels[i].second;
        out_ += '"';
      }
      out_ += '}';
    }
    out_ += ' ';
    out_ += Number(value);
    out_ += '\n';
  }

  Style style_;
  bool blank_;
  std::string out_;
};

}  // namespace modelmetrics::sim

#endif  // MODELMETRICS_SIM_EXPOSITION_WRITER_H_
