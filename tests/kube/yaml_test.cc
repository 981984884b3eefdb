// Tests of the bounded YAML reader (deployment/yaml.h): Kubernetes' scalar typing, keys, anchors
// and aliases, documents, one-line errors with positions, and every bound (bytes, depth, nodes,
// scalar bytes, anchors), including the input that made yaml-cpp 0.7 spin.
#include "kube/yaml.h"
#include "status_matchers.h"
#include "test_paths.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace modelmetrics::deployment {

using ::modelmetrics::testing::Ok;
namespace {

using nlohmann::json;

// Generous (sanitizer builds, a loaded machine): these catch a hang or an unbounded expansion,
// which ran for minutes before, not a slow parse.
constexpr std::chrono::seconds kBounded{30};

std::vector<json> Parse(const std::string& text, const YamlLimits& limits = {}) {
  std::vector<json> docs;
  std::string error;
  EXPECT_OK(ParseYaml(text, &docs, limits));
  return docs;
}

std::string Error(const std::string& text, const YamlLimits& limits = {}) {
  std::vector<json> docs;
  std::string error;
  EXPECT_FALSE(Ok(ParseYaml(text, &docs, limits), &error)) << text;
  EXPECT_TRUE(docs.empty());  // never a partial result
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  return error;
}

// Numbers JSON cannot hold stay strings; numbers too big for 64 bits become floats from their
// own digits; a forced type that does not fit is an error.
TEST(YamlTest, OutOfRangeNumbersAndForcedTypes) {
  const json d = Parse(
      "huge: 1e400\nbig_octal: 0o7777777777777777777777777\n"
      "big_hex: 0x1ffffffffffffffff\n")[0];
  EXPECT_EQ(d["huge"], json("1e400"));
  ASSERT_TRUE(d["big_octal"].is_number_float());
  EXPECT_DOUBLE_EQ(d["big_octal"].get<double>(), 3.777893186295716e22);
  EXPECT_DOUBLE_EQ(d["big_hex"].get<double>(), 36893488147419103231.0);
  EXPECT_EQ(Error("a: !!null foo\n"), "line 1, column 4: `foo` is not null");
}

TEST(YamlTest, ScalarsAreTypedLikeKubernetes) {
  std::vector<json> docs;
  std::string error;
  ASSERT_OK(ParseYaml(R"(
int: 18001
negative: -3
hex: 0x1F
octal: 0o17
float: 1.5
exp: 1e3
quoted: "18001"
single: '42'
tagged: !!str 7
yes_word: yes
bool_true: true
bool_caps: FALSE
null_word: null
tilde: ~
empty:
quoted_null: "null"
version: 0.11.0
ip: 127.0.0.1
inf: .inf
block: |
  two
  lines
)",
                      &docs));
  ASSERT_EQ(docs.size(), 1u);
  const json& d = docs[0];
  EXPECT_EQ(d["int"], json(18001));
  EXPECT_TRUE(d["int"].is_number_integer());
  EXPECT_EQ(d["negative"], json(-3));
  EXPECT_EQ(d["hex"], json(31));
  EXPECT_EQ(d["octal"], json(15));
  EXPECT_EQ(d["float"], json(1.5));
  EXPECT_EQ(d["exp"], json(1000.0));
  EXPECT_EQ(d["quoted"], json("18001"));
  EXPECT_EQ(d["single"], json("42"));
  EXPECT_EQ(d["tagged"], json("7"));
  EXPECT_EQ(d["yes_word"], json("yes"));  // YAML 1.2: only true/false are booleans
  EXPECT_EQ(d["bool_true"], json(true));
  EXPECT_EQ(d["bool_caps"], json(false));
  EXPECT_TRUE(d["null_word"].is_null());
  EXPECT_TRUE(d["tilde"].is_null());
  EXPECT_TRUE(d["empty"].is_null());
  EXPECT_EQ(d["quoted_null"], json("null"));
  EXPECT_EQ(d["version"], json("0.11.0"));
  EXPECT_EQ(d["ip"], json("127.0.0.1"));
  EXPECT_EQ(d["inf"], json(".inf"));  // JSON has no Inf
  EXPECT_EQ(d["block"], json("two\nlines\n"));
}

TEST(YamlTest, TagsForceATypeOrFail) {
  const json d = Parse(
      "a: !!int '12'\nb: !!float 3\nc: !!bool \"true\"\nd: !!null ~\n"
      "e: !!str true\nf: !custom 5\ng: ! 5\n")[0];
  EXPECT_EQ(d["a"], json(12));
  EXPECT_EQ(d["b"], json(3));
  EXPECT_EQ(d["c"], json(true));
  EXPECT_TRUE(d["d"].is_null());
  EXPECT_EQ(d["e"], json("true"));
  EXPECT_EQ(d["f"], json("5"));
  EXPECT_EQ(d["g"], json("5"));
  EXPECT_EQ(Error("a: !!int twelve\n"), "line 1, column 4: `twelve` is not an integer");
  EXPECT_EQ(Error("a: !!bool \"multi\n  line\"\n"),
            "line 1, column 4: `multi line` is not a boolean");
}

TEST(YamlTest, KeysAreAlwaysStrings) {
  const json d = Parse("1: one\ntrue: yes\n~: tilde\n\"~\": quoted\n0x10: hex\n? \n: empty\n")[0];
  EXPECT_EQ(d["1"], json("one"));
  EXPECT_EQ(d["true"], json("yes"));
  EXPECT_EQ(d["null"], json("empty"));  // `~` and the empty key both read as "null"; last wins
  EXPECT_EQ(d["~"], json("quoted"));
  EXPECT_EQ(d["0x10"], json("hex"));
  EXPECT_EQ(Error("? [a]\n: b\n"), "line 1, column 3: a mapping key must be a scalar");
  EXPECT_EQ(Error("{a: 1, {b: 2}: 3}\n"), "line 1, column 8: a mapping key must be a scalar");
}

TEST(YamlTest, AliasesCopyTheirAnchorsValue) {
  const json d = Parse(
      "base: &b {image: vllm, port: 8000}\ncopy: *b\nname: &n chat\nlabel: *n\n*n : keyed\n")[0];
  EXPECT_EQ(d["copy"], d["base"]);
  EXPECT_EQ(d["label"], json("chat"));
  EXPECT_EQ(d["chat"], json("keyed"));
  EXPECT_EQ(Error("a: *nowhere\n"), "line 1, column 4: unknown anchor `nowhere`");
  // A node cannot contain an alias to itself: no cycle can be built.
  EXPECT_EQ(Error("a: &x [1, *x]\n"), "line 1, column 11: unknown anchor `x`");
  // Anchors do not cross documents.
  EXPECT_EQ(Error("a: &x 1\n---\nb: *x\n"), "line 3, column 4: unknown anchor `x`");
  EXPECT_EQ(Error("a: &m {k: v}\n*m : 1\n"), "line 2, column 1: a mapping key must be a scalar");
}

TEST(YamlTest, DocumentsAndEmptyDocuments) {
  std::vector<json> docs = Parse("---\n---\na: 1\n--- ~\n---\n- x\n...\n# only a comment\n");
  ASSERT_EQ(docs.size(), 2u);
  EXPECT_EQ(docs[0], json({{"a", 1}}));
  EXPECT_EQ(docs[1], json({"x"}));
  EXPECT_TRUE(Parse("").empty());
  EXPECT_TRUE(Parse("# nothing\n").empty());
  EXPECT_EQ(Parse("\xEF\xBB\xBFk: v\n")[0], json({{"k", "v"}}));  // a UTF-8 BOM is skipped
}

TEST(YamlTest, SyntaxErrorsAreOneLineWithPosition) {
  EXPECT_EQ(Error("kind: List\nitems: [a,\nb: 2\n"),
            "line 4, column 1: did not find expected ',' or ']' (while parsing a flow sequence at "
            "line 2, column 8)");
  EXPECT_EQ(Error("a: \"open\n"),
            "line 2, column 1: found unexpected end of stream (while "
            "scanning a quoted scalar at line 1, column 4)");
  EXPECT_EQ(Error("a: b: c\n"), "line 1, column 5: mapping values are not allowed in this context");
  // Encoding errors: libyaml gives a byte offset; the column counts characters (é is one).
  EXPECT_EQ(Error("a: 1\nb: \xc3\xa9\x01\n"),
            "line 2, column 5: control characters are not allowed");
  EXPECT_EQ(Error("a: \xff\xfe\n"), "line 1, column 4: invalid leading UTF-8 octet");
}

TEST(YamlTest, TextLargerThanTheLimitIsRefused) {
  YamlLimits limits;
  limits.max_bytes = 16;
  EXPECT_EQ(Error("key: a value that is long\n", limits),
            "the text is 26 bytes, over the 16-byte limit");
  EXPECT_FALSE(Parse(std::string(limits.max_bytes - 4, 'x') + ": 1").empty());
}

TEST(YamlTest, NestingIsBounded) {
  YamlLimits limits;
  EXPECT_EQ(Parse(std::string(128, '[') + std::string(128, ']')).size(), 1u);
  EXPECT_EQ(Error(std::string(129, '[') + std::string(129, ']')),
            "line 1, column 129: nested deeper than 128");
  // Block nesting too, and the error comes long before the end of a megabyte of it.
  std::string block;
  for (int i = 0; i < 200; ++i) block += std::string(2 * i, ' ') + "k:\n";
  EXPECT_EQ(Error(block).rfind("line 129, column ", 0), 0u);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(Error(std::string(1 << 20, '[')).find("nested deeper than 128"), std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, kBounded);
  // An alias cannot deepen the tree past the bound either.
  limits.max_depth = 4;
  EXPECT_EQ(Parse("a: &x [[1]]\nb: [*x]\n", limits).size(), 1u);
  EXPECT_EQ(Error("a: &x [[1]]\nb: [[*x]]\n", limits), "line 2, column 6: nested deeper than 4");
}

TEST(YamlTest, AliasExpansionCountsAgainstTheNodeBudget) {
  // A "billion laughs": nine levels of ten aliases each name 10^9 scalars in a few hundred bytes.
  std::string bomb = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int level = 1; level <= 9; ++level) {
    const std::string prev = "*a" + std::to_string(level - 1);
    bomb += "a" + std::to_string(level) + ": &a" + std::to_string(level) + " [";
    for (int i = 0; i < 10; ++i) bomb += (i ? ", " : "") + prev;
    bomb += "]\n";
  }
  const auto start = std::chrono::steady_clock::now();
  EXPECT_NE(Error(bomb).find("more than 1000000 nodes once aliases are expanded"),
            std::string::npos);
  EXPECT_LT(std::chrono::steady_clock::now() - start, kBounded);

  // The budget spans documents, and alias copies are charged like the nodes they copy.
  YamlLimits limits;
  limits.max_nodes = 11;
  EXPECT_EQ(Parse("[1, 2, 3]\n---\n[4, 5, 6]\n", limits).size(), 2u);  // 8 nodes
  EXPECT_NE(Error("[1, 2, 3]\n---\n[4, 5, 6]\n---\n[7, 8, 9]\n", limits).find("nodes"),
            std::string::npos);
  // 4 for the list, 4 for the anchor's copy, 4 for the alias, 3 for the mapping and its keys.
  EXPECT_EQ(Error("a: &x [1, 2, 3]\nb: *x\n", limits),
            "line 2, column 4: more than 11 nodes once aliases are expanded");
  EXPECT_EQ(Parse("a: &x [1]\nb: *x\n", limits).size(), 1u);  // 2 + 2 + 2 + 3: 9
}

TEST(YamlTest, AliasesOfLongStringsCountTheirBytes) {
  std::string yaml = "s: &s " + std::string(1 << 20, 'x') + "\nl: [";
  for (int i = 0; i < 100; ++i) yaml += "*s, ";
  yaml += "*s]\n";
  EXPECT_NE(Error(yaml).find("bytes of scalars once aliases are expanded"), std::string::npos);
}

TEST(YamlTest, AnchorsAreBounded) {
  YamlLimits limits;
  limits.max_anchors = 3;
  EXPECT_EQ(Parse("[&a 1, &b 2, &c 3, &a 4]\n", limits).size(), 1u);  // redefining is free
  EXPECT_EQ(Error("[&a 1, &b 2, &c 3, &d 4]\n", limits), "line 1, column 20: more than 3 anchors");
}

TEST(YamlTest, ScalarTextOfSettings) {
  std::string text;
  EXPECT_TRUE(YamlScalarText(json("name"), &text));
  EXPECT_EQ(text, "name");
  EXPECT_TRUE(YamlScalarText(json(12), &text));
  EXPECT_EQ(text, "12");
  EXPECT_TRUE(YamlScalarText(json(-3), &text));
  EXPECT_EQ(text, "-3");
  EXPECT_TRUE(YamlScalarText(json(false), &text));
  EXPECT_EQ(text, "false");
  EXPECT_FALSE(YamlScalarText(json(nullptr), &text));
  EXPECT_FALSE(YamlScalarText(json(1.5), &text));
  EXPECT_FALSE(YamlScalarText(json::array(), &text));
  EXPECT_FALSE(YamlScalarText(json::object(), &text));
}

// The objects fuzzer's input on which yaml-cpp 0.7's LoadAll spun, growing to 14 GB in 30 s.
// Here it parses or fails at once; either way the answer is bounded.
TEST(YamlTest, TheInputThatHungYamlCppEndsAtOnce) {
  std::ifstream file(test_paths::Source("fuzz/corpus/yaml/yaml_cpp_0.7_loadall_hang.yaml"),
                     std::ios::binary);
  ASSERT_TRUE(file) << "missing seed";
  const std::string text(std::istreambuf_iterator<char>(file), {});
  ASSERT_GT(text.size(), 500u);
  const auto start = std::chrono::steady_clock::now();
  std::vector<json> docs;
  std::string error;
  const bool ok = Ok(ParseYaml(text, &docs), &error);
  EXPECT_LT(std::chrono::steady_clock::now() - start, kBounded);
  // It is malformed (a NUL byte, unbalanced flow collections): an error with a position.
  EXPECT_FALSE(ok);
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  EXPECT_FALSE(error.empty());
  EXPECT_TRUE(docs.empty());
}

}  // namespace
}  // namespace modelmetrics::deployment
