// gtest assertions on base::Status: ASSERT_OK(expr) and EXPECT_OK(expr) print the status (reason
// and message) when it is not ok.
#ifndef MODELMETRICS_TESTS_STATUS_MATCHERS_H_
#define MODELMETRICS_TESTS_STATUS_MATCHERS_H_

#include <gtest/gtest.h>

#include <string>

#include "base/status.h"

#define MM_STATUS_CHECK_(check, expr)                       \
  do {                                                      \
    const ::modelmetrics::base::Status mm_status_ = (expr); \
    check(mm_status_.ok()) << mm_status_.ToString();        \
  } while (0)
#define ASSERT_OK(expr) MM_STATUS_CHECK_(ASSERT_TRUE, expr)
#define EXPECT_OK(expr) MM_STATUS_CHECK_(EXPECT_TRUE, expr)

namespace modelmetrics::testing {

// True when `status` is ok; its message in `*message` either way, for the test's own checks of
// the text: `EXPECT_FALSE(Ok(Load(path), &error)); EXPECT_EQ(error, "...");`.
inline bool Ok(const base::Status& status, std::string* message) {
  *message = status.message();
  return status.ok();
}

}  // namespace modelmetrics::testing

#endif  // MODELMETRICS_TESTS_STATUS_MATCHERS_H_
