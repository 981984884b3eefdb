// Label selectors in their string form: set-based requirements (what a scale target's selector
// carries when its workload uses matchExpressions) and the malformed ones refused.
#include "kube/label_selector.h"

#include <gtest/gtest.h>

#include "status_matchers.h"

namespace modelmetrics::deployment {
namespace {

ObjectMeta Labels(std::map<std::string, std::string> labels) {
  ObjectMeta meta;
  meta.labels = std::move(labels);
  return meta;
}

bool Matches(std::string_view text, const ObjectMeta& meta) {
  LabelSelector selector;
  EXPECT_TRUE(LabelSelector::Parse(text, &selector).ok()) << text;
  return selector.Matches(meta);
}

TEST(LabelSelector, SetBasedRequirements) {
  const ObjectMeta decode = Labels({{"role", "decode"}, {"app", "chat"}});
  const ObjectMeta other = Labels({{"app", "chat"}});
  EXPECT_TRUE(Matches("role in (prefill,decode)", decode));
  EXPECT_TRUE(Matches("role in ( prefill , decode ),app=chat", decode));
  EXPECT_FALSE(Matches("role in (prefill,decode)", other));  // absent: not in any set
  EXPECT_FALSE(Matches("role notin (decode)", decode));
  EXPECT_TRUE(Matches("role notin (decode)", other));  // absent: in none
  EXPECT_TRUE(Matches("app in(chat),role", decode));
  EXPECT_FALSE(Matches("app,!role", decode));
  EXPECT_TRUE(Matches("app,!role", other));
  EXPECT_TRUE(Matches("app=chat,role!=prefill", decode));
  // Whitespace of every kind around tokens; an empty entry of a set is the empty value.
  EXPECT_TRUE(Matches("role\tin\n(decode)\r,app", decode));
  EXPECT_TRUE(Matches("role in (decode,)", decode));
  EXPECT_TRUE(Matches("tier in ()", Labels({{"tier", ""}})));
  EXPECT_FALSE(Matches("tier in (a,,b)", Labels({{"tier", "c"}})));
}

TEST(LabelSelector, IntegerBounds) {
  const ObjectMeta three = Labels({{"gpus", "3"}, {"name", "x"}});
  EXPECT_TRUE(Matches("gpus>2", three));
  EXPECT_TRUE(Matches("gpus < 4", three));
  EXPECT_FALSE(Matches("gpus>3", three));
  EXPECT_FALSE(Matches("name>1", three));    // not an integer: no match
  EXPECT_FALSE(Matches("absent<9", three));  // absent: no match
}

// An objects file's names do not always follow the name rules; such a value still selects.
TEST(LabelSelector, AnEqualityValueOutsideTheNameRulesStillSelects) {
  EXPECT_TRUE(Matches("app.kubernetes.io/instance=chat über+1 %x",
                      Labels({{"app.kubernetes.io/instance", "chat über+1 %x"}})));
}

// A selector as long as a request line allows (and longer) is read in one pass: many requirements,
// and a value set of many entries.
TEST(LabelSelector, ALongSelectorIsReadWhole) {
  std::string text;
  for (int i = 0; i < 20000; ++i) text += "k" + std::to_string(i) + "!=x,";
  text += "role in (";
  for (int i = 0; i < 20000; ++i) text += "v" + std::to_string(i) + ",";
  text += "decode)";
  EXPECT_TRUE(Matches(text, Labels({{"role", "decode"}})));
  EXPECT_FALSE(Matches(text, Labels({{"role", "decode"}, {"k19999", "x"}})));
}

TEST(LabelSelector, MalformedRequirementsAreRefusedNamingThem) {
  LabelSelector selector;
  for (const char* text : {"role in (a,b", "role in a,b)", "role in", "=x", "role=a=b",
                           "role in ((a))", "role notin(a) x", "role ~ x", "!", "! =x", "!role=x",
                           "gpus>x", "gpus<", "role in (a b)"}) {
    SCOPED_TRACE(text);
    const Status parsed = LabelSelector::Parse(text, &selector);
    EXPECT_EQ(parsed.code(), 400);
    EXPECT_NE(parsed.message().find("label selector"), std::string::npos) << parsed.message();
  }
  ASSERT_OK(LabelSelector::Parse("", &selector));
  EXPECT_TRUE(selector.Matches(Labels({})));
}

}  // namespace
}  // namespace modelmetrics::deployment
