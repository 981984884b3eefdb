// A child process for tests and benchmarks: the real `modelmetrics` binary (test_paths::
// Modelmetrics()) or another program, argv without a shell, stdin from /dev/null, stdout and
// stderr to files, killed (SIGKILL) by its owner's destructor or at a Wait() deadline so a hung
// binary fails its caller instead of hanging CI. posix_spawn rather than fork: the callers run
// simulator threads, and a forked child of a threaded process may only call async-signal-safe
// functions before exec. No GoogleTest here, so benchmark programs use it too.
#ifndef MODELMETRICS_TESTS_PATHS_CHILD_PROCESS_H_
#define MODELMETRICS_TESTS_PATHS_CHILD_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "test_deadlines.h"
#include "test_paths.h"

extern char** environ;

namespace modelmetrics::testing {

// How long a test waits for a command to print something or to end by itself: twice kEventually
// (test_deadlines.h), as a command also starts a process (an ASan binary: a second or more on a
// loaded machine) before it does anything. A hang still fails the test.
inline constexpr std::chrono::seconds kCommandDeadline{2 * kEventually};

struct CliResult {
  int exit_code = -1;   // -1: killed by a signal or by the deadline
  int term_signal = 0;  // the signal that ended it, if one did
  bool timed_out = false;
  long max_rss_kib = 0;  // the child's peak resident memory (wait4's ru_maxrss)
  std::chrono::milliseconds elapsed{0};
  std::string out;
  std::string err;
};

inline std::string SlurpFile(const std::filesystem::path& path) {
  std::ifstream file(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(file), {});
}

// One `modelmetrics` child process. The destructor kills it if it still runs.
class CliProcess {
 public:
  // Starts `modelmetrics <args>`, stdout to `out_file`, stderr to `err_file`.
  CliProcess(const std::vector<std::string>& args, std::string out_file, std::string err_file)
      : CliProcess(test_paths::Modelmetrics(), args, std::move(out_file), std::move(err_file)) {}
  // Starts any `program` (an absolute path) the same way: the real stores tests run beside us.
  CliProcess(const std::string& program, const std::vector<std::string>& args, std::string out_file,
             std::string err_file)
      : out_file_(std::move(out_file)), err_file_(std::move(err_file)) {
    std::vector<std::string> argv_strings{program};
    argv_strings.insert(argv_strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : argv_strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_file_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_file_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~CliProcess() { Kill(); }
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0 && !result_ready_; }

  // Waits for the exit at most `timeout`; on the deadline kills the child and reports
  // timed_out. Idempotent once the child has been reaped.
  CliResult Wait(std::chrono::milliseconds timeout) {
    if (!result_ready_ && pid_ > 0) {
      const auto deadline = std::chrono::steady_clock::now() + timeout;
      int status = 0;
      rusage usage{};
      for (;;) {
        const pid_t done = ::wait4(pid_, &status, WNOHANG, &usage);
        if (done == pid_) {
          result_.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
          result_.term_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
          break;
        }
        if (done < 0 || std::chrono::steady_clock::now() >= deadline) {
          result_.timed_out = done >= 0;
          ::kill(pid_, SIGKILL);
          ::wait4(pid_, &status, 0, &usage);
          result_.exit_code = -1;
          break;
        }
        std::this_thread::sleep_for(kPollInterval);
      }
      result_.max_rss_kib = usage.ru_maxrss;
      result_.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - started_);
      result_ready_ = true;
    }
    result_.out = SlurpFile(out_file_);
    result_.err = SlurpFile(err_file_);
    return result_;
  }

  // Sends `signal` to the running child.
  void Signal(int signal) {
    if (pid_ > 0 && !result_ready_) ::kill(pid_, signal);
  }

  // What the child has written to stdout so far.
  std::string StdoutSoFar() const { return SlurpFile(out_file_); }

  // Waits until the child's stdout holds `text` (a banner, a round's header); false if it did not
  // within `timeout`.
  bool WaitForOutput(const std::string& text,
                     std::chrono::milliseconds timeout = kCommandDeadline) const {
    return WaitUntil([&] { return StdoutSoFar().find(text) != std::string::npos; }, timeout);
  }

  void Kill() {
    if (pid_ > 0 && !result_ready_) {
      ::kill(pid_, SIGKILL);
      int status = 0;
      ::waitpid(pid_, &status, 0);
      result_ready_ = true;
    }
  }

 private:
  std::string out_file_;
  std::string err_file_;
  pid_t pid_ = -1;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
  bool result_ready_ = false;
  CliResult result_;
};

}  // namespace modelmetrics::testing

#endif  // MODELMETRICS_TESTS_PATHS_CHILD_PROCESS_H_
