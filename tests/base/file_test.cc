// Tests of base::ReadFile: whole regular files, the size cap checked before reading, and one-line
// errors for what is not a regular file (a directory, a device, a FIFO), all without blocking.
#include "base/file.h"
#include "status_matchers.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>

namespace modelmetrics::base {

using ::modelmetrics::testing::Ok;
namespace {

class ReadFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("mm_file_test_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& content) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << content;
    return path;
  }

  std::filesystem::path dir_;
};

TEST_F(ReadFileTest, ReadsAWholeFile) {
  std::string content(100'000, 'x');
  content[5] = '\0';  // binary-safe
  const std::string path = Write("f", content);
  std::string out;
  std::string error;
  ASSERT_OK(ReadFile(path, &out));
  EXPECT_EQ(out, content);
  ASSERT_OK(ReadFile(Write("empty", ""), &out));
  EXPECT_EQ(out, "");
  // Exactly at the cap is fine.
  ASSERT_OK(ReadFile(path, &out, content.size()));
}

TEST_F(ReadFileTest, RefusesAFileOverTheCapBeforeReadingIt) {
  const std::string path = Write("f", "12345");
  std::string out;
  std::string error;
  EXPECT_FALSE(Ok(ReadFile(path, &out, 4), &error));
  EXPECT_EQ(error, path + ": file is 5 bytes, over the 4-byte limit");

  // A 1 GiB sparse file: refused by its size, without a read or an allocation.
  const std::string big = (dir_ / "big").string();
  const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t{1} << 30), 0);
  ::close(fd);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(Ok(ReadFile(big, &out), &error));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));  // not 1 GiB read
  EXPECT_EQ(error, big + ": file is 1073741824 bytes, over the 4194304-byte limit");
  EXPECT_EQ(kDefaultMaxFileBytes, size_t{4} << 20);
}

TEST_F(ReadFileTest, RefusesWhatIsNotARegularFile) {
  std::string out;
  std::string error;
  EXPECT_FALSE(Ok(ReadFile("/dev/zero", &out), &error));
  EXPECT_EQ(error, "/dev/zero: not a regular file");
  EXPECT_FALSE(Ok(ReadFile(dir_.string(), &out), &error));
  EXPECT_EQ(error, dir_.string() + ": not a regular file");
  // A FIFO with no writer: opening it must not block.
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(Ok(ReadFile(fifo, &out), &error));
  EXPECT_EQ(error, fifo + ": not a regular file");
}

TEST_F(ReadFileTest, MissingFileSaysWhy) {
  std::string out;
  std::string error;
  const std::string missing = (dir_ / "missing").string();
  EXPECT_FALSE(Ok(ReadFile(missing, &out), &error));
  EXPECT_EQ(error, missing + ": cannot open: No such file or directory");
  EXPECT_FALSE(ReadFile(missing, &out).ok());  // the status alone
}

}  // namespace
}  // namespace modelmetrics::base
