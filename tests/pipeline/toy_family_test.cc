// Adding a family is one row and one method. The toy list below has the shape of the catalog's
// lists (omni_families.h) and one row; ToyMetrics records it with one method, asking its
// FamilySet for the family by id. Everything else (the enum, the name, the typed handle, the
// HELP, labels and guard) comes from the row.
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "pipeline/catalog.h"

// The toy's one row (id, name, instrument, HELP, labels, buckets, bind, group, guard).
#define MM_TOY_FAMILIES(X)                                                                 \
  X(kWidgetsMade, "toy:widgets_made", Counter, "Widgets made, by model.", kPipelineLabels, \
    kNoBuckets, Bind::kLazy, Group::kPipeline, Guard::kSkipNonPositive)

namespace modelmetrics::pipeline::toy {

MM_DEFINE_FAMILY_LIST(ToyFamily, MM_TOY_FAMILIES)
MM_DEFINE_FAMILY_TABLE(ToyFamily, MM_TOY_FAMILIES)

class ToyMetrics {
 public:
  ToyMetrics(Registry& registry, std::string model)
      : families_(registry), model_(std::move(model)) {}

  // The one method.
  void WidgetsMade(double count) {
    constexpr ToyFamily kFamily = ToyFamily::kWidgetsMade;
    if (!ApplyGuard(FamilySpecOf(kFamily).guard, count)) return;
    families_.Get<kFamily>()->Labels({model_}).Add(count);
  }

 private:
  FamilySet<ToyFamily> families_;
  std::string model_;
};

namespace {

TEST(ToyFamily, OneRowAndOneMethodMakeAFamily) {
  static_assert(FamilyCount(ToyFamily{}) == 1);
  static_assert(FamilyName(ToyFamily::kWidgetsMade) == "toy:widgets_made");
  static_assert(std::is_same_v<FamilyInstrument<ToyFamily::kWidgetsMade>, Counter>);

  Registry registry;
  ToyMetrics toy(registry, "m");
  toy.WidgetsMade(2);
  toy.WidgetsMade(0);  // the row's guard drops non-positive counts
  toy.WidgetsMade(-1);
  toy.WidgetsMade(1);
  const std::string text = registry.Render(Format::kText);
  EXPECT_NE(text.find("# HELP toy:widgets_made_total Widgets made, by model.\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("# TYPE toy:widgets_made_total counter\n"), std::string::npos) << text;
  EXPECT_NE(text.find("toy:widgets_made_total{model_name=\"m\"} 3.0\n"), std::string::npos) << text;
}

TEST(ToyFamily, AFamilySetRegistersOnlyTheRowsItIsAskedFor) {
  Registry registry;
  const FamilySet<ToyFamily> none(registry, [](const FamilySpec&) { return false; });
  EXPECT_EQ(none.Get<ToyFamily::kWidgetsMade>(), nullptr);
  EXPECT_EQ(registry.Render(Format::kText), "");
}

}  // namespace
}  // namespace modelmetrics::pipeline::toy
