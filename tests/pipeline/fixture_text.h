// Text the pipeline tests share: the real vLLM v1 capture they compare with, and file reading.
#ifndef MODELMETRICS_TESTS_PIPELINE_FIXTURE_TEXT_H_
#define MODELMETRICS_TESTS_PIPELINE_FIXTURE_TEXT_H_

#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include <gtest/gtest.h>

#include "test_paths.h"

namespace modelmetrics::testing {

// A real vLLM v1 /metrics capture (prefill/decode, NIXL, TinyLlama).
inline const std::string kV1FixturePath =
    test_paths::Shared("fixtures/real/vllm/kserve-llmisvc-vllm-v1-pd-nixl-tinyllama.txt");

// The whole file (a failed expectation when it cannot be read).
inline std::string ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  EXPECT_TRUE(file.good()) << path;
  return std::string(std::istreambuf_iterator<char>(file), {});
}

inline bool Contains(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace modelmetrics::testing

#endif  // MODELMETRICS_TESTS_PIPELINE_FIXTURE_TEXT_H_
