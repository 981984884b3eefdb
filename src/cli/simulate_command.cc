#include "simulate_command.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "base/duration.h"
#include "sim/exporter_registry.h"
#include "stop_signals.h"

namespace modelmetrics::cli {
namespace {

// A simulator's wait that a stop signal ends. The signals are blocked here, before the
// simulator starts any thread.
sim::StopWait SignalWait(const char* command) {
  const sigset_t signals = BlockStopSignals();
  return [signals, command](std::chrono::milliseconds duration) {
    return WaitForStop(signals, duration, command);
  };
}

}  // namespace

std::string CheckPodFault(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return "expected POD=FAULT: " + text;
  if (!sim::ParsePodFault(text.substr(eq + 1))) {
    return "unknown fault \"" + text.substr(eq + 1) + "\" (" + sim::PodFaultNames() + ")";
  }
  return "";
}

bool ParseRateStep(const std::string& text, sim::DeploymentSimOptions::RateStep* out) {
  const size_t at = text.find('@');
  if (at == std::string::npos) return false;
  const std::string rate = text.substr(0, at);
  char* end = nullptr;
  const double value = std::strtod(rate.c_str(), &end);
  if (rate.empty() || end != rate.c_str() + rate.size() || !(value >= 0) || value > 1e6) {
    return false;
  }
  std::chrono::milliseconds after{0};
  if (!base::ParseDuration(text.substr(at + 1), &after)) return false;
  *out = {.after = after, .requests_per_second = value};
  return true;
}

std::string CheckRateStep(const std::string& text) {
  sim::DeploymentSimOptions::RateStep step;
  return ParseRateStep(text, &step) ? "" : "expected RATE@AFTER, e.g. 40@30s: " + text;
}

std::vector<std::string> RouterChoices() {
  std::vector<std::string> choices = sim::SimRouterNames();
  choices.push_back("none");
  return choices;
}

int RunSimulatePipeline(SimulatePipelineArgs args) {
  base::ParseDuration(args.duration, &args.options.duration);
  base::ParseDuration(args.log_interval, &args.options.log_interval);
  args.options.wait = SignalWait("simulate pipeline");
  return sim::RunPipelineSimulator(args.options);
}

int RunSimulateDeployment(const SimulateDeploymentArgs& args) {
  sim::DeploymentSimOptions options = args.options;
  if (args.roles == "pd") {
    options.roles = {{"prefill", deployment::RoleKind::kPrefill, args.replicas, 1, {}},
                     {"decode", deployment::RoleKind::kDecode, args.replicas, 1, {}}};
  } else {
    options.roles = {{"server", deployment::RoleKind::kServer, args.replicas, 1, {}}};
  }
  options.router = args.router == "none" ? "" : args.router;
  for (const std::string& fault : args.faults) {
    size_t eq = fault.find('=');
    options.faults[fault.substr(0, eq)] = *sim::ParsePodFault(fault.substr(eq + 1));
  }
  for (const std::string& text : args.rate_steps) {
    ParseRateStep(text, &options.rate_steps.emplace_back());
  }
  std::sort(options.rate_steps.begin(), options.rate_steps.end(),
            [](const auto& a, const auto& b) { return a.after < b.after; });
  std::chrono::milliseconds duration{0};
  base::ParseDuration(args.duration, &duration);
  return sim::RunDeploymentSimulator(options, duration, std::cout, std::cerr,
                                     SignalWait("simulate deployment"));
}

int RunSimulateFleet(const SimulateFleetArgs& args) {
  std::chrono::milliseconds duration{0};
  base::ParseDuration(args.duration, &duration);
  return sim::RunFleetSimulator(args.options, duration, std::cout, std::cerr,
                                SignalWait("simulate fleet"));
}

}  // namespace modelmetrics::cli
