#include "cli/simulate_command.h"

#include <chrono>
#include <memory>
#include <string>

#include "sim/pipeline_sim.h"

namespace modelmetrics::cli {
namespace {

// "90s", "2m", "500ms", "1h", or plain seconds.
bool ParseDuration(const std::string& text, std::chrono::milliseconds* out) {
  size_t used = 0;
  double value = 0;
  try {
    value = std::stod(text, &used);
  } catch (...) {
    return false;
  }
  const std::string unit = text.substr(used);
  double ms;
  if (unit.empty() || unit == "s") {
    ms = value * 1000;
  } else if (unit == "ms") {
    ms = value;
  } else if (unit == "m") {
    ms = value * 60'000;
  } else if (unit == "h") {
    ms = value * 3'600'000;
  } else {
    return false;
  }
  if (!(ms >= 0) || ms > 1e12) return false;
  *out = std::chrono::milliseconds(static_cast<int64_t>(ms));
  return true;
}

std::string CheckDuration(const std::string& text) {
  std::chrono::milliseconds ignored;
  return ParseDuration(text, &ignored) ? "" : "not a duration (e.g. 90s, 2m, 500ms): " + text;
}

}  // namespace

void AddSimulateCommand(CLI::App& app, int* exit_code) {
  CLI::App* simulate = app.add_subcommand("simulate", "Run a simulator");
  simulate->require_subcommand(1);
  struct Args {
    sim::PipelineSimOptions options;
    std::string duration = "60s";
    std::string log_interval = "10s";
  };
  auto args = std::make_shared<Args>();
  CLI::App* pipeline = simulate->add_subcommand(
      "pipeline",
      "Simulate a speech (thinker -> talker -> code2wav) and an image (AR -> diffusion) "
      "pipeline and serve their /metrics");
  pipeline->add_option("--listen", args->options.listen, "HOST:PORT for /metrics (port 0: any)")
      ->capture_default_str();
  pipeline->add_flag("--log-stats,!--no-log-stats", args->options.log_stats,
                     "Record statistics (default on); off: the gated-off exposition");
  pipeline->add_option("--duration", args->duration, "How long to run (e.g. 60s, 2m)")
      ->capture_default_str()
      ->check(CheckDuration);
  pipeline->add_option("--log-interval", args->log_interval, "Print the log tables this often")
      ->capture_default_str()
      ->check(CheckDuration);
  pipeline->add_option("--seed", args->options.seed, "Workload seed")->capture_default_str();
  pipeline
      ->add_option("--rate", args->options.requests_per_second, "Requests per second per pipeline")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  pipeline->callback([args, exit_code] {
    ParseDuration(args->duration, &args->options.duration);
    ParseDuration(args->log_interval, &args->options.log_interval);
    *exit_code = sim::RunPipelineSimulator(args->options);
  });
}

}  // namespace modelmetrics::cli
