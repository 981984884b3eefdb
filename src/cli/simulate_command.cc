#include "simulate_command.h"

#include <chrono>
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
