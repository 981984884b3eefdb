// The bounded YAML reader; see yaml.h.
//
// libyaml's event parser drives an explicit stack of open collections (no recursion, so depth
// costs heap, not the C stack). Every value is charged to one budget of nodes and scalar bytes
// when it is built; an alias charges its anchor's whole size again, and so does the copy kept
// for an anchor, so the budget bounds the memory of everything held at once.
#include "kube/yaml.h"

#include <yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <utility>

#include <nlohmann/json.hpp>

namespace modelmetrics::deployment {
namespace {

using nlohmann::json;

constexpr std::string_view kIntTag = "tag:yaml.org,2002:int";
constexpr std::string_view kFloatTag = "tag:yaml.org,2002:float";
constexpr std::string_view kBoolTag = "tag:yaml.org,2002:bool";
constexpr std::string_view kNullTag = "tag:yaml.org,2002:null";

bool IsDigits(std::string_view s, bool hex = false, bool octal = false) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = octal ? (c >= '0' && c <= '7')
                    : (c >= '0' && c <= '9') ||
                          (hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')));
    if (!ok) return false;
  }
  return true;
}

// Resolves a YAML 1.2 core-schema integer; false when `text` is not one.
bool ResolveInt(std::string_view text, json* out) {
  std::string_view digits = text;
  bool negative = false;
  if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) {
    negative = digits.front() == '-';
    digits.remove_prefix(1);
  }
  int base = 10;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'o')) {
    // The core schema has no sign on hex/octal; accepting one is harmless.
    base = digits[1] == 'x' ? 16 : 8;
    digits.remove_prefix(2);
  }
  if (!IsDigits(digits, base == 16, base == 8)) return false;
  uint64_t magnitude = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), magnitude, base);
  if (ec != std::errc() || end != digits.data() + digits.size()) {
    // Too big for 64 bits: still a number, as a float (what Go's yaml->json would give). The
    // digits are summed here: strtod reads neither `0o` nor every hex form.
    double value = 0;
    for (char c : digits) {
      const int digit = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
      value = value * base + digit;
    }
    if (!std::isfinite(value)) return false;  // then it is a string
    *out = negative ? -value : value;
    return true;
  }
  if (!negative) {
    *out = magnitude;
  } else if (magnitude <= uint64_t{1} << 63) {
    *out = static_cast<int64_t>(0 - magnitude);
  } else {
    *out = -static_cast<double>(magnitude);
  }
  return true;
}

// Resolves a YAML 1.2 core-schema float (finite only: JSON has no Inf/NaN, so `.inf` and `.nan`
// stay strings); false when `text` is not one.
bool ResolveFloat(std::string_view text, json* out) {
  std::string_view s = text;
  if (!s.empty() && (s.front() == '-' || s.front() == '+')) s.remove_prefix(1);
  size_t i = 0;
  size_t int_digits = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++int_digits;
  size_t frac_digits = 0;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++frac_digits;
  }
  if (int_digits + frac_digits == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
    if (!IsDigits(s.substr(i))) return false;
    i = s.size();
  }
  if (i != s.size()) return false;
  const double value = std::strtod(std::string(text).c_str(), nullptr);
  if (!std::isfinite(value)) return false;  // `1e400`: finite only, so a string
  *out = value;
  return true;
}

bool ResolveBool(std::string_view text, json* out) {
  if (text == "true" || text == "True" || text == "TRUE") {
    *out = true;
    return true;
  }
  if (text == "false" || text == "False" || text == "FALSE") {
    *out = false;
    return true;
  }
  return false;
}

bool IsNullWord(std::string_view text) {
  return text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL";
}

// A scalar's text for an error message: one line, short.
std::string Quote(std::string_view text) {
  std::string out = "`";
  for (char c : text.substr(0, 40)) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += c == '\n' ? "\\n" : "?";
    } else {
      out += c;
    }
  }
  out += text.size() > 40 ? "...`" : "`";
  return out;
}

std::string MarkText(const yaml_mark_t& mark) {
  return "line " + std::to_string(mark.line + 1) + ", column " + std::to_string(mark.column + 1);
}

// The line and column (characters, 0-based) of byte `offset` of UTF-8 `text`.
yaml_mark_t MarkOfOffset(std::string_view text, size_t offset) {
  yaml_mark_t mark{};
  offset = std::min(offset, text.size());
  for (size_t i = 0; i < offset; ++i) {
    if (text[i] == '\n') {
      ++mark.line;
      mark.column = 0;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++mark.column;  // a continuation byte is part of the character before it
    }
  }
  return mark;
}

// The parser's own error, on one line.
std::string ParserError(const yaml_parser_t& parser, std::string_view text) {
  const std::string problem = parser.problem != nullptr ? parser.problem : "syntax error";
  switch (parser.error) {
    case YAML_MEMORY_ERROR:
      return "out of memory";
    case YAML_READER_ERROR:  // bad encoding: libyaml gives the byte offset, not the mark
      return MarkText(MarkOfOffset(text, parser.problem_offset)) + ": " + problem;
    default:
      break;
  }
  std::string out = MarkText(parser.problem_mark) + ": " + problem;
  if (parser.context != nullptr) {
    out += " (" + std::string(parser.context) + " at " + MarkText(parser.context_mark) + ")";
  }
  return out;
}

// A built value and what it cost; also what an anchor keeps.
struct Built {
  json value;
  size_t nodes = 1;
  size_t bytes = 0;
  int height = 0;  // collections inside it, itself included
  bool scalar = false;
  std::string key_text;  // a scalar: its text as a mapping key
};

// An open sequence or mapping.
struct Frame {
  json value;
  std::string anchor;  // empty: none
  std::string key;     // a mapping: the key waiting for its value
  bool has_key = false;
  size_t nodes = 1;
  size_t bytes = 0;
  int height = 1;
};

class Builder {
 public:
  Builder(const YamlLimits& limits, std::vector<json>* docs, std::string* error)
      : limits_(limits),
        docs_(docs),
        error_(error),
        nodes_left_(limits.max_nodes),
        bytes_left_(limits.max_scalar_bytes) {}

  // Handles one event; false with *error_ set to stop.
  bool On(const yaml_event_t& event) {
    mark_ = event.start_mark;
    switch (event.type) {
      case YAML_DOCUMENT_START_EVENT:
        anchors_.clear();  // anchors do not cross documents
        root_ = json();
        return true;
      case YAML_DOCUMENT_END_EVENT:
        if (!root_.is_null()) docs_->push_back(std::move(root_));
        root_ = json();
        return true;
      case YAML_SCALAR_EVENT:
        return OnScalar(event);
      case YAML_ALIAS_EVENT:
        return OnAlias(Text(event.data.alias.anchor));
      case YAML_SEQUENCE_START_EVENT:
        return Open(json::array(), Text(event.data.sequence_start.anchor));
      case YAML_MAPPING_START_EVENT:
        return Open(json::object(), Text(event.data.mapping_start.anchor));
      case YAML_SEQUENCE_END_EVENT:
      case YAML_MAPPING_END_EVENT:
        return Close();
      default:  // stream start/end, no event
        return true;
    }
  }

 private:
  static std::string_view Text(const yaml_char_t* text) {
    return text == nullptr ? std::string_view() : reinterpret_cast<const char*>(text);
  }

  bool Fail(std::string what) {
    *error_ = MarkText(mark_) + ": " + what;
    return false;
  }

  bool Charge(size_t nodes, size_t bytes) {
    if (nodes > nodes_left_) {
      return Fail("more than " + std::to_string(limits_.max_nodes) +
                  " nodes once aliases are expanded");
    }
    if (bytes > bytes_left_) {
      return Fail("more than " + std::to_string(limits_.max_scalar_bytes) +
                  " bytes of scalars once aliases are expanded");
    }
    nodes_left_ -= nodes;
    bytes_left_ -= bytes;
    return true;
  }

  bool ExpectingKey() const {
    return !stack_.empty() && stack_.back().value.is_object() && !stack_.back().has_key;
  }

  // Keeps a copy of `built` under `anchor` (charged: the copy is memory too).
  bool Remember(const std::string& anchor, const Built& built) {
    if (anchor.empty()) return true;
    if (anchors_.size() >= limits_.max_anchors && !anchors_.contains(anchor)) {
      return Fail("more than " + std::to_string(limits_.max_anchors) + " anchors");
    }
    if (!Charge(built.nodes, built.bytes)) return false;
    anchors_[anchor] = built;
    return true;
  }

  bool OnScalar(const yaml_event_t& event) {
    const auto& scalar = event.data.scalar;
    Built built;
    built.scalar = true;
    built.bytes = scalar.length;
    const std::string text(reinterpret_cast<const char*>(scalar.value), scalar.length);
    const std::string_view tag = Text(scalar.tag);
    const bool plain = scalar.tag == nullptr && scalar.style == YAML_PLAIN_SCALAR_STYLE;
    built.key_text = plain && IsNullWord(text) ? "null" : text;
    if (!Charge(1, built.bytes)) return false;
    const std::string anchor(Text(scalar.anchor));
    const bool key = ExpectingKey();
    // A key is only ever text; its type matters only if an alias may reuse it as a value.
    if (!key || !anchor.empty()) {
      if (!Resolve(text, tag, plain, &built.value) || !Remember(anchor, built)) return false;
    }
    if (!key) return Attach(std::move(built));
    Frame& top = stack_.back();
    top.key = std::move(built.key_text);
    top.has_key = true;
    top.nodes += 1;
    top.bytes += built.bytes;
    return true;
  }

  bool Resolve(const std::string& text, std::string_view tag, bool plain, json* out) {
    if (plain) {
      if (IsNullWord(text)) {
        *out = nullptr;
      } else if (!ResolveBool(text, out) && !ResolveInt(text, out) && !ResolveFloat(text, out)) {
        *out = text;
      }
      return true;
    }
    if (tag == kIntTag) return ResolveInt(text, out) || Fail(Quote(text) + " is not an integer");
    if (tag == kFloatTag) {
      return ResolveFloat(text, out) || ResolveInt(text, out) ||
             Fail(Quote(text) + " is not a float");
    }
    if (tag == kBoolTag) return ResolveBool(text, out) || Fail(Quote(text) + " is not a boolean");
    if (tag == kNullTag) {
      if (!IsNullWord(text)) return Fail(Quote(text) + " is not null");
      *out = nullptr;
      return true;
    }
    // Quoted, block, `!!str`, `!` and application tags: the text itself.
    *out = text;
    return true;
  }

  bool OnAlias(std::string_view name) {
    auto it = anchors_.find(std::string(name));
    if (it == anchors_.end()) {
      // Also an alias inside its own anchor's node: the anchor is kept when the node closes.
      return Fail("unknown anchor " + Quote(name));
    }
    const Built& anchored = it->second;
    if (!Charge(anchored.nodes, anchored.bytes)) return false;
    if (ExpectingKey()) {
      if (!anchored.scalar) return Fail("a mapping key must be a scalar");
      Frame& top = stack_.back();
      top.key = anchored.key_text;
      top.has_key = true;
      top.nodes += anchored.nodes;
      top.bytes += anchored.bytes;
      return true;
    }
    if (static_cast<int>(stack_.size()) + anchored.height > limits_.max_depth) return TooDeep();
    return Attach(anchored);
  }

  bool TooDeep() { return Fail("nested deeper than " + std::to_string(limits_.max_depth)); }

  bool Open(json value, std::string_view anchor) {
    if (ExpectingKey()) return Fail("a mapping key must be a scalar");
    if (static_cast<int>(stack_.size()) >= limits_.max_depth) return TooDeep();
    if (!Charge(1, 0)) return false;
    Frame& frame = stack_.emplace_back();
    frame.value = std::move(value);
    frame.anchor = anchor;
    return true;
  }

  bool Close() {
    if (stack_.empty()) return Fail("unbalanced collection end");  // libyaml never does this
    Frame frame = std::move(stack_.back());
    stack_.pop_back();
    Built built;
    built.value = std::move(frame.value);
    built.nodes = frame.nodes;
    built.bytes = frame.bytes;
    built.height = frame.height;
    if (!Remember(frame.anchor, built)) return false;
    return Attach(std::move(built));
  }

  // Puts a finished value into the open collection, or makes it the document's root.
  bool Attach(Built built) {
    if (stack_.empty()) {
      root_ = std::move(built.value);
      return true;
    }
    Frame& top = stack_.back();
    top.nodes += built.nodes;
    top.bytes += built.bytes;
    top.height = std::max(top.height, built.height + 1);
    if (top.value.is_array()) {
      top.value.push_back(std::move(built.value));
    } else {
      top.value[top.key] = std::move(built.value);
      top.has_key = false;
    }
    return true;
  }

  const YamlLimits& limits_;
  std::vector<json>* docs_;
  std::string* error_;
  size_t nodes_left_;
  size_t bytes_left_;
  yaml_mark_t mark_{};
  std::vector<Frame> stack_;
  std::map<std::string, Built, std::less<>> anchors_;
  json root_;
};

}  // namespace

base::Status ParseYaml(std::string_view text, std::vector<json>* docs, const YamlLimits& limits) {
  using base::Status;
  docs->clear();
  if (text.size() > limits.max_bytes) {
    return Status::InvalidArgument("the text is " + std::to_string(text.size()) +
                                   " bytes, over the " + std::to_string(limits.max_bytes) +
                                   "-byte limit");
  }
  yaml_parser_t parser;
  if (yaml_parser_initialize(&parser) == 0) return Status::Internal("out of memory");
  struct ParserDeleter {
    yaml_parser_t* parser;
    ~ParserDeleter() { yaml_parser_delete(parser); }
  } deleter{&parser};
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
  std::string error;
  Builder builder(limits, docs, &error);
  for (;;) {
    yaml_event_t event;
    if (yaml_parser_parse(&parser, &event) == 0) {
      docs->clear();
      return Status::InvalidArgument(ParserError(parser, text));
    }
    struct EventDeleter {  // also when On() throws (out of memory)
      yaml_event_t* event;
      ~EventDeleter() { yaml_event_delete(event); }
    } event_deleter{&event};
    const bool ok = builder.On(event);
    const bool end = event.type == YAML_STREAM_END_EVENT;
    if (!ok) {
      docs->clear();
      return Status::InvalidArgument(error);
    }
    if (end) return Status::Ok();
  }
}

bool YamlScalarText(const json& value, std::string* out) {
  if (value.is_string()) {
    *out = value.get<std::string>();
  } else if (value.is_boolean() || value.is_number_integer()) {
    *out = value.dump();
  } else {
    return false;
  }
  return true;
}

}  // namespace modelmetrics::deployment
