// See label_selector.h.
#include "kube/label_selector.h"

#include <algorithm>

#include <fmt/format.h>

#include "base/text.h"

namespace modelmetrics::deployment {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// The requirements of `text`, split at the commas outside a value set.
bool SplitRequirements(std::string_view text, std::vector<std::string_view>* out) {
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    const char c = i < text.size() ? text[i] : ',';
    if (c == '(' && ++depth > 1) return false;
    if (c == ')' && --depth < 0) return false;
    if (c == ',' && depth == 0) {
      out->push_back(Trim(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  return depth == 0;
}

bool IsKeyChar(char c) {
  return c != ' ' && c != '\t' && c != '=' && c != '!' && c != '(' && c != ')';
}

// `word` is `in` or `notin` followed by a space or the value set.
bool StartsWithWord(std::string_view s, std::string_view word) {
  return s.starts_with(word) &&
         (s.size() == word.size() || s[word.size()] == ' ' || s[word.size()] == '(');
}

}  // namespace

Status LabelSelector::ParseRequirement(std::string_view term, Requirement* out) {
  const auto bad = [term] {
    return Status::InvalidArgument(
        fmt::format("invalid label selector requirement \"{}\"", base::Excerpt(term, 100)));
  };
  if (term.starts_with('!')) {
    out->op = Op::kNotExists;
    out->key = std::string(Trim(term.substr(1)));
    const bool ok = !out->key.empty() && std::all_of(out->key.begin(), out->key.end(), IsKeyChar);
    return ok ? Status::Ok() : bad();
  }
  size_t end = 0;
  while (end < term.size() && IsKeyChar(term[end])) ++end;
  out->key = std::string(term.substr(0, end));
  if (out->key.empty()) return bad();
  std::string_view rest = Trim(term.substr(end));
  if (rest.empty()) {
    out->op = Op::kExists;
    return Status::Ok();
  }
  if (rest.starts_with("!=") || rest.starts_with("==") || rest.starts_with('=')) {
    out->op = rest.starts_with("!=") ? Op::kNotEquals : Op::kEquals;
    rest = Trim(rest.substr(rest.starts_with('=') && !rest.starts_with("==") ? 1 : 2));
    if (rest.find_first_of("=!() \t") != std::string_view::npos) return bad();
    out->values = {std::string(rest)};  // an empty value is valid: `k=` is "k is empty"
    return Status::Ok();
  }
  const bool in = StartsWithWord(rest, "in");
  if (!in && !StartsWithWord(rest, "notin")) return bad();
  out->op = in ? Op::kIn : Op::kNotIn;
  rest = Trim(rest.substr(in ? 2 : 5));
  if (!rest.starts_with('(') || !rest.ends_with(')')) return bad();
  rest = rest.substr(1, rest.size() - 2);
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view value = Trim(rest.substr(0, comma));
    if (value.empty() || value.find_first_of("=!() \t") != std::string_view::npos) return bad();
    out->values.emplace_back(value);
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return Status::Ok();
}

Status LabelSelector::Parse(std::string_view text, LabelSelector* out) {
  out->requirements_.clear();
  std::vector<std::string_view> terms;
  if (!SplitRequirements(text, &terms)) {
    return Status::InvalidArgument(fmt::format(
        "invalid label selector \"{}\": unbalanced parentheses", base::Excerpt(text, 100)));
  }
  for (std::string_view term : terms) {
    if (term.empty())
      continue;  // the empty selector, or "a=b," as the objects file's callers write
    Requirement requirement;
    if (Status parsed = ParseRequirement(term, &requirement); !parsed.ok()) return parsed;
    out->requirements_.push_back(std::move(requirement));
  }
  return Status::Ok();
}

bool LabelSelector::Matches(const ObjectMeta& meta) const {
  for (const Requirement& r : requirements_) {
    const auto it = meta.labels.find(r.key);
    const bool present = it != meta.labels.end();
    const bool listed =
        present && std::find(r.values.begin(), r.values.end(), it->second) != r.values.end();
    bool ok = false;
    switch (r.op) {
      case Op::kExists:
        ok = present;
        break;
      case Op::kNotExists:
        ok = !present;
        break;
      case Op::kEquals:
      case Op::kIn:
        ok = listed;
        break;
      case Op::kNotEquals:
      case Op::kNotIn:
        ok = !listed;
        break;
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace modelmetrics::deployment
