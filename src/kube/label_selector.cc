// See label_selector.h.
#include "kube/label_selector.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include <fmt/format.h>

#include "base/text.h"

namespace modelmetrics::deployment {
namespace {

bool IsSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// A key ends at whitespace or an operator character.
bool IsKeyChar(char c) {
  return !IsSpace(c) && c != '=' && c != '!' && c != '(' && c != ')' && c != '<' && c != '>';
}

// `rest` (after a key and its whitespace) starts with the word `word`, then whitespace or `(`.
bool StartsWithWord(std::string_view rest, std::string_view word) {
  return rest.starts_with(word) && rest.size() > word.size() &&
         (IsSpace(rest[word.size()]) || rest[word.size()] == '(');
}

// Whether the text before a `(` is `<key> in` or `<key> notin`: the `(` opens a value set.
bool OpensValueSet(std::string_view before) {
  before = Trim(before);
  for (std::string_view word : {std::string_view("notin"), std::string_view("in")}) {
    if (before.ends_with(word) && before.size() > word.size() &&
        IsSpace(before[before.size() - word.size() - 1])) {
      return true;
    }
  }
  return false;
}

// The requirements of `text`: split at commas, except inside a value set. False for a value set
// that never closes. Each character is looked at a bounded number of times.
bool SplitRequirements(std::string_view text, std::vector<std::string_view>* out) {
  size_t begin = 0;
  size_t open = text.find('(');
  while (true) {
    size_t end = text.find(',', begin);
    while (open != std::string_view::npos && open < begin) open = text.find('(', open + 1);
    if (open != std::string_view::npos && open < end &&
        OpensValueSet(text.substr(begin, open - begin))) {
      const size_t close = text.find(')', open);
      if (close == std::string_view::npos) return false;
      end = text.find(',', close);
    }
    out->push_back(Trim(text.substr(begin, end == std::string_view::npos ? end : end - begin)));
    if (end == std::string_view::npos) return true;
    begin = end + 1;
  }
}

std::optional<int64_t> Integer(std::string_view text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

}  // namespace

Status LabelSelector::ParseRequirement(std::string_view term, Requirement* out) {
  const auto bad = [term] {
    return Status::InvalidArgument(
        fmt::format("invalid label selector requirement \"{}\"", base::Excerpt(term, 100)));
  };
  const bool negated = term.starts_with('!');
  if (negated) term = Trim(term.substr(1));
  size_t end = 0;
  while (end < term.size() && IsKeyChar(term[end])) ++end;
  out->key = std::string(term.substr(0, end));
  if (out->key.empty()) return bad();
  std::string_view rest = Trim(term.substr(end));
  if (negated || rest.empty()) {
    out->op = negated ? Op::kNotExists : Op::kExists;
    return rest.empty() ? Status::Ok() : bad();
  }
  if (rest.starts_with('<') || rest.starts_with('>')) {
    out->op = rest.starts_with('<') ? Op::kLessThan : Op::kGreaterThan;
    const std::string_view value = Trim(rest.substr(1));
    if (!Integer(value)) return bad();  // Kubernetes: an integer to compare with
    out->values = {std::string(value)};
    return Status::Ok();
  }
  if (rest.starts_with("!=") || rest.starts_with('=')) {
    out->op = rest.starts_with("!=") ? Op::kNotEquals : Op::kEquals;
    rest = Trim(rest.substr(rest.starts_with("==") || rest.starts_with("!=") ? 2 : 1));
    // An empty value is valid (`k=` is "k is empty"). Other characters are left to the name
    // rules, which objects files do not always follow.
    if (rest.find_first_of("=!()<>") != std::string_view::npos) return bad();
    out->values = {std::string(rest)};
    return Status::Ok();
  }
  const bool in = StartsWithWord(rest, "in");
  if (!in && !StartsWithWord(rest, "notin")) return bad();
  out->op = in ? Op::kIn : Op::kNotIn;
  rest = Trim(rest.substr(in ? 2 : 5));
  if (!rest.starts_with('(') || !rest.ends_with(')')) return bad();
  rest = rest.substr(1, rest.size() - 2);
  // Kubernetes reads an empty entry (`(a,)`, `()`) as the empty value.
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view value = Trim(rest.substr(0, comma));
    if (value.find_first_of("=!()<> \t\n\v\f\r") != std::string_view::npos) return bad();
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
    return Status::InvalidArgument(
        fmt::format("invalid label selector \"{}\": a value set ( ... ) "
                    "does not close",
                    base::Excerpt(text, 100)));
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
      case Op::kGreaterThan:
      case Op::kLessThan: {
        // Present, an integer, and beyond the bound (which Parse checked is one).
        const std::optional<int64_t> have = present ? Integer(it->second) : std::nullopt;
        const int64_t bound = *Integer(r.values.front());
        ok = have && (r.op == Op::kGreaterThan ? *have > bound : *have < bound);
        break;
      }
    }
    if (!ok) return false;
  }
  return true;
}

}  // namespace modelmetrics::deployment
