// Values the format tests share.
#ifndef MODELMETRICS_TESTS_FORMAT_TEST_NUMBERS_H_
#define MODELMETRICS_TESTS_FORMAT_TEST_NUMBERS_H_

#include <limits>

namespace modelmetrics::testing {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace modelmetrics::testing

#endif  // MODELMETRICS_TESTS_FORMAT_TEST_NUMBERS_H_
