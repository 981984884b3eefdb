#include "simulate_command.h"

#include <chrono>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/duration.h"
#include "sim/deployment_sim.h"
#include "sim/exporter_registry.h"
#include "sim/fleet_sim.h"
#include "sim/pipeline_sim.h"
#include "stop_signals.h"

namespace modelmetrics::cli {
namespace {

// "POD=FAULT" with a known fault name.
std::string CheckFault(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) return "expected POD=FAULT: " + text;
  if (!sim::ParsePodFault(text.substr(eq + 1))) {
    return "unknown fault \"" + text.substr(eq + 1) + "\" (" + sim::PodFaultNames() + ")";
  }
  return "";
}

// A simulator's wait that a stop signal ends. The signals are blocked here, before the
// simulator starts any thread.
sim::StopWait SignalWait(const char* command) {
  const sigset_t signals = BlockStopSignals();
  return [signals, command](std::chrono::milliseconds duration) {
    return WaitForStop(signals, duration, command);
  };
}

// The simulated routers' names, and "none".
std::vector<std::string> RouterChoices() {
  std::vector<std::string> choices = sim::SimRouterNames();
  choices.push_back("none");
  return choices;
}

void AddDeploymentCommand(CLI::App* simulate, int* exit_code) {
  struct Args {
    sim::DeploymentSimOptions options;
    std::string roles = "server";
    int replicas = 1;
    std::string router = "none";
    std::vector<std::string> faults;
    std::string duration = "60s";
  };
  auto args = std::make_shared<Args>();
  CLI::App* deployment = simulate->add_subcommand(
      "deployment",
      "Serve the engine and router Pods of one simulated ModelDeployment on loopback, and write "
      "the objects file describing them");
  deployment->add_option("--name", args->options.name, "ModelDeployment name")
      ->capture_default_str();
  deployment->add_option("-n,--namespace", args->options.ns, "Namespace")->capture_default_str();
  deployment->add_option("--engine", args->options.engine, "Engine")
      ->capture_default_str()
      ->check(CLI::IsMember(sim::SimEngineNames(), CLI::ignore_case));
  deployment
      ->add_option("--pipeline", args->options.omni_pipeline,
                   "vllm-omni: the pipeline each Pod runs (speech or image)")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, sim::SimPipelines>{{"speech", sim::SimPipelines::kSpeech},
                                                   {"image", sim::SimPipelines::kImage}},
          CLI::ignore_case))
      ->default_str("speech");
  deployment
      ->add_option("--roles", args->roles,
                   "server: one server role; pd: a prefill role and a decode role")
      ->capture_default_str()
      ->check(CLI::IsMember({"server", "pd"}));
  deployment->add_option("--replicas", args->replicas, "Pods per role")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  deployment->add_option("--router", args->router, "Router in front of the engines")
      ->capture_default_str()
      ->check(CLI::IsMember(RouterChoices()));
  deployment->add_flag("--kv-cache", args->options.kv_cache, "Attach a KV cache pool");
  deployment->add_flag("--kv-connector", args->options.kv_connector,
                       "vLLM: render --kv-transfer-config even without a pool");
  deployment->add_option("--fault", args->faults, "POD=FAULT, repeatable")->check(CheckFault);
  deployment->add_option("--seed", args->options.seed, "Traffic seed")->capture_default_str();
  deployment
      ->add_option("--rate", args->options.requests_per_second,
                   "Requests per second offered to the deployment")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  deployment->add_flag("--idle", args->options.idle,
                       "No traffic: counters frozen, gauges 0 (SGLang: its warmup request only)");
  deployment->add_option("--padding-bytes", args->options.padding_bytes,
                         "Extra realistic series per engine scrape (benchmarks)");
  deployment->add_option(
      "--tls-cert", args->options.tls_cert_file,
      "Certificate for untrusted-tls Pods (default: a generated self-signed one)");
  deployment->add_option("--tls-key", args->options.tls_key_file, "Key for --tls-cert");
  deployment->add_option("--objects-out", args->options.objects_file,
                         "Write the objects (a kubectl get -o json List) here, kept current");
  deployment->add_option("--file-sd-out", args->options.file_sd_file,
                         "Write Prometheus file_sd targets (namespace and pod labels) here");
  deployment->add_option("--duration", args->duration, "How long to serve (e.g. 30s, 2m)")
      ->capture_default_str()
      ->check(base::CheckDuration);
  deployment->callback([args, exit_code] {
    sim::DeploymentSimOptions options = args->options;
    if (args->roles == "pd") {
      options.roles = {{"prefill", deployment::RoleKind::kPrefill, args->replicas, 1, {}},
                       {"decode", deployment::RoleKind::kDecode, args->replicas, 1, {}}};
    } else {
      options.roles = {{"server", deployment::RoleKind::kServer, args->replicas, 1, {}}};
    }
    options.router = args->router == "none" ? "" : args->router;
    for (const std::string& fault : args->faults) {
      size_t eq = fault.find('=');
      options.faults[fault.substr(0, eq)] = *sim::ParsePodFault(fault.substr(eq + 1));
    }
    std::chrono::milliseconds duration{0};
    base::ParseDuration(args->duration, &duration);
    *exit_code = sim::RunDeploymentSimulator(options, duration, std::cout, std::cerr,
                                             SignalWait("simulate deployment"));
  });
}

void AddFleetCommand(CLI::App* simulate, int* exit_code) {
  struct Args {
    sim::FleetSimOptions options;
    std::string duration = "60s";
  };
  auto args = std::make_shared<Args>();
  CLI::App* fleet = simulate->add_subcommand(
      "fleet",
      "Serve many simulated deployments at once on loopback (vLLM and SGLang, some behind an "
      "llm-d router), with one objects file and one Prometheus file_sd file for all of them");
  fleet->add_option("--deployments", args->options.deployments, "How many deployments")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  fleet->add_option("--pods", args->options.pods, "Pods per deployment (a router included)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  fleet
      ->add_option("--extra-deployment-pods", args->options.extra_sizes,
                   "Also a vLLM deployment of this many Pods (repeatable), named model-<n>pods")
      ->check(CLI::Range(1, 5000));
  fleet->add_option("-n,--namespace", args->options.ns, "Namespace")->capture_default_str();
  fleet->add_option("--seed", args->options.seed, "Traffic seed")->capture_default_str();
  fleet
      ->add_option("--rate", args->options.requests_per_second,
                   "Requests per second offered to each deployment")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  fleet->add_option("--objects-out", args->options.objects_file,
                    "Write every deployment's objects (a kubectl get -o json List) here");
  fleet->add_option("--file-sd-out", args->options.file_sd_file,
                    "Write every Pod's Prometheus file_sd target (namespace and pod labels) here");
  fleet->add_option("--duration", args->duration, "How long to serve (e.g. 30s, 2m)")
      ->capture_default_str()
      ->check(base::CheckDuration);
  fleet->callback([args, exit_code] {
    std::chrono::milliseconds duration{0};
    base::ParseDuration(args->duration, &duration);
    *exit_code = sim::RunFleetSimulator(args->options, duration, std::cout, std::cerr,
                                        SignalWait("simulate fleet"));
  });
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
      ->check(base::CheckDuration);
  pipeline->add_option("--log-interval", args->log_interval, "Print the log tables this often")
      ->capture_default_str()
      ->check(base::CheckDuration);
  pipeline->add_option("--seed", args->options.seed, "Workload seed")->capture_default_str();
  pipeline
      ->add_option("--pipeline", args->options.pipelines,
                   "Which pipelines run: both, speech or image")
      ->transform(CLI::CheckedTransformer(
          std::map<std::string, sim::SimPipelines>{{"both", sim::SimPipelines::kBoth},
                                                   {"speech", sim::SimPipelines::kSpeech},
                                                   {"image", sim::SimPipelines::kImage}},
          CLI::ignore_case))
      ->default_str("both");
  pipeline
      ->add_option("--rate", args->options.requests_per_second, "Requests per second per pipeline")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  pipeline->callback([args, exit_code] {
    base::ParseDuration(args->duration, &args->options.duration);
    base::ParseDuration(args->log_interval, &args->options.log_interval);
    args->options.wait = SignalWait("simulate pipeline");
    *exit_code = sim::RunPipelineSimulator(args->options);
  });
  AddDeploymentCommand(simulate, exit_code);
  AddFleetCommand(simulate, exit_code);
}

}  // namespace modelmetrics::cli
