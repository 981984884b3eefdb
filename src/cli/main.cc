// The `modelmetrics` command: one binary, one subcommand per job. This file is its command line:
// every subcommand's flags, their checks and defaults, parsed by CLI11. Each subcommand's work is
// in its own <name>_command.cc, given the parsed arguments.
//
// Why one file: CLI11 (Debian's 2.1) is header-only and defines its validators in every file that
// includes it, so each such file costs about 7 s more to compile at -O2, in each of the three
// builds the tests make. Here it is compiled once.
#include <CLI/CLI.hpp>

#include <iostream>
#include <map>
#include <memory>
#include <string>

#include "aggregation/exporter_catalog.h"
#include "base/duration.h"
#include "demo_command.h"
#include "object_source_flags.h"
#include "parse_command.h"
#include "read_limit_flags.h"
#include "sample_source_flags.h"
#include "serve_command.h"
#include "sim/exporter_registry.h"
#include "simulate_command.h"
#include "snapshot_command.h"
#include "ui_command.h"

namespace modelmetrics::cli {
namespace {

// ---- flags that several commands share --------------------------------------------------------

// A duration flag (30s, 2m, ...) whose default the help shows.
void AddDurationFlag(CLI::App* command, const std::string& name, std::string* value,
                     const std::string& help) {
  command->add_option(name, *value, help)->capture_default_str()->check(base::CheckDuration);
}

// --max-config-bytes: the size cap on configuration files (`what` names them in the help).
void AddMaxConfigBytesFlag(CLI::App* command, size_t* max_bytes, const std::string& what) {
  command
      ->add_option("--max-config-bytes", *max_bytes,
                   "Refuse " + what + " larger than this many bytes")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 30));
}

void AddObjectSourceFlags(CLI::App* command, ObjectSourceFlags* flags) {
  command->add_option("--objects", flags->objects_file,
                      "Read objects from a `kubectl get -o json` List (or YAML) file");
  command
      ->add_option("--max-objects-bytes", flags->max_objects_bytes,
                   "With --objects: refuse a file larger than this many bytes")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 30));
  command->add_option("--kubeconfig", flags->kubeconfig, "Read objects from the Kubernetes API");
  AddMaxConfigBytesFlag(command, &flags->max_config_bytes, "a kubeconfig");
  command->add_option("--context", flags->context, "The kubeconfig context (default: current)");
  command->add_flag("--in-cluster", flags->in_cluster,
                    "Read objects from the Kubernetes API with the Pod's service account");
}

void AddStoreFlags(CLI::App* command, SampleSourceFlags* flags) {
  command
      ->add_option("--prometheus-namespace-label", flags->store.namespace_label,
                   "The store's label holding the Pod's namespace")
      ->capture_default_str();
  command
      ->add_option("--prometheus-pod-label", flags->store.pod_label,
                   "The store's label holding the Pod's name")
      ->capture_default_str();
  command->add_option("--prometheus-selector", flags->store.selector,
                      "Extra label matchers for every query, e.g. 'job=\"vllm\"'");
  command
      ->add_option("--prometheus-replica-label", flags->store.replica_labels,
                   "A label telling HA replicas' copies of a series apart (one replica's are "
                   "read); repeat for several, '' for none")
      ->capture_default_str();
  command
      ->add_option("--prometheus-pod-limit", flags->store.pod_limit,
                   "The most Pods one snapshot reads from the store")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  command->add_option("--prometheus-ca-file", flags->store.ca_file,
                      "PEM bundle to trust for an HTTPS store");
  command->add_option("--prometheus-bearer-token-file", flags->token_file,
                      "A file holding the store's bearer token");
  command->add_option("--prometheus-user", flags->store.basic_user,
                      "HTTP basic authentication user for the store");
  command->add_option("--prometheus-password-file", flags->password_file,
                      "A file holding that user's password");
}

void AddSampleSourceFlags(CLI::App* command, SampleSourceFlags* flags) {
  command
      ->add_option("--source", flags->samples,
                   "Where samples come from: scrape (the Pods) or prometheus (a "
                   "Prometheus-compatible store, --prometheus-url)")
      ->capture_default_str()
      ->check(CLI::IsMember({std::string(deployment::kSampleSourceScrape),
                             std::string(deployment::kSampleSourcePrometheus)}));
  command->add_option("--prometheus-url", flags->store.url,
                      "The store's API base, e.g. http://127.0.0.1:9090 or a VictoriaMetrics "
                      "cluster's http://vmselect:8481/select/0/prometheus");
  command
      ->add_option("--stale-after", flags->stale_after,
                   "With --source prometheus: a Pod whose newest sample is older is missing "
                   "(default 90s)")
      ->check(base::CheckDuration);
  command
      ->add_option("--settle", flags->settle,
                   "With --source prometheus: read the store as of this long ago, so a store fed "
                   "by remote write shows only complete scrapes (default 0s)")
      ->check(base::CheckDuration);
  AddStoreFlags(command, flags);
}

void AddReadLimitFlags(CLI::App* command, ReadLimitFlags* flags) {
  for (const ReadLimitFlag& f : ReadLimitFlagList()) {
    command
        ->add_option_function<std::string>(
            std::string(f.flag),
            [flags, key = f.key](const std::string& text) { flags->given[key] = text; },
            ReadLimitFlagHelp(f))
        ->group("Read limits");
  }
}

// ---- the subcommands --------------------------------------------------------------------------

void AddParseCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ParseArgs>();
  CLI::App* cmd = app.add_subcommand(
      "parse", "Parse and check Prometheus/OpenMetrics exposition from a file, URL or stdin (-)");
  cmd->add_option("source", args->source, "File path, http(s):// URL, or - for stdin")->required();
  cmd->add_option("--format", args->format, "Input format (auto: Content-Type, then detection)")
      ->check(CLI::IsMember({"auto", "text", "openmetrics"}));
  cmd->add_flag("--strict", args->strict,
                "Stop at the first error and exit 1 (default: skip bad lines and report them)");
  cmd->add_option("--families", args->families, "Only these families (comma-separated)")
      ->delimiter(',');
  cmd->add_option("-o,--output", args->output, "Output: summary or json")
      ->check(CLI::IsMember({"summary", "json"}));
  cmd->add_option("--max-bytes", args->max_bytes,
                  "Refuse input larger than this many bytes (a file, stdin or a URL's body)")
      ->capture_default_str()
      ->check(CLI::Range(size_t{1}, size_t{1} << 40));
  cmd->callback([args, exit_code] { *exit_code = RunParse(*args); });
}

void AddSimulatePipelineCommand(CLI::App* simulate, int* exit_code) {
  auto args = std::make_shared<SimulatePipelineArgs>();
  CLI::App* pipeline = simulate->add_subcommand(
      "pipeline",
      "Simulate a speech (thinker -> talker -> code2wav) and an image (AR -> diffusion) "
      "pipeline and serve their /metrics");
  pipeline->add_option("--listen", args->options.listen, "HOST:PORT for /metrics (port 0: any)")
      ->capture_default_str();
  pipeline->add_flag("--log-stats,!--no-log-stats", args->options.log_stats,
                     "Record statistics (default on); off: the gated-off exposition");
  AddDurationFlag(pipeline, "--duration", &args->duration, "How long to run (e.g. 60s, 2m)");
  AddDurationFlag(pipeline, "--log-interval", &args->log_interval,
                  "Print the log tables this often");
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
  pipeline->callback([args, exit_code] { *exit_code = RunSimulatePipeline(*args); });
}

// The simulated deployment's shape: engine, pipeline, roles, replicas, router, KV cache, faults.
void AddSimulatedDeploymentShape(CLI::App* deployment, SimulateDeploymentArgs* args) {
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
  deployment->add_option("--fault", args->faults, "POD=FAULT, repeatable")->check(CheckPodFault);
  std::map<std::string, sim::SimVariant> variants;
  for (const sim::SimVariant variant : sim::kSimVariants) {
    variants.emplace(sim::SimVariantName(variant), variant);
  }
  deployment
      ->add_option("--variant", args->options.variants,
                   "An upstream variant the exporters write, repeatable: priority and "
                   "all-schedulers (SGLang), non-streaming, older-names (vLLM, llm-d router)")
      ->transform(CLI::CheckedTransformer(variants).description(""))
      ->type_name("VARIANT");
}

void AddSimulateDeploymentCommand(CLI::App* simulate, int* exit_code) {
  auto args = std::make_shared<SimulateDeploymentArgs>();
  CLI::App* deployment = simulate->add_subcommand(
      "deployment",
      "Serve the engine and router Pods of one simulated ModelDeployment on loopback, and write "
      "the objects file describing them");
  AddSimulatedDeploymentShape(deployment, args.get());
  deployment->add_option("--seed", args->options.seed, "Traffic seed")->capture_default_str();
  deployment
      ->add_option("--rate", args->options.requests_per_second,
                   "Requests per second offered to the deployment")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  deployment
      ->add_option("--rate-step", args->rate_steps,
                   "RATE@AFTER: from AFTER on (e.g. 30s), RATE requests per second; repeatable")
      ->check(CheckRateStep);
  deployment
      ->add_option("--max-running", args->options.max_running,
                   "Each engine's batch: requests beyond it wait (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
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
  AddDurationFlag(deployment, "--duration", &args->duration, "How long to serve (e.g. 30s, 2m)");
  deployment->callback([args, exit_code] { *exit_code = RunSimulateDeployment(*args); });
}

void AddSimulateFleetCommand(CLI::App* simulate, int* exit_code) {
  auto args = std::make_shared<SimulateFleetArgs>();
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
  AddDurationFlag(fleet, "--duration", &args->duration, "How long to serve (e.g. 30s, 2m)");
  fleet->callback([args, exit_code] { *exit_code = RunSimulateFleet(*args); });
}

void AddSimulateCommand(CLI::App& app, int* exit_code) {
  CLI::App* simulate = app.add_subcommand("simulate", "Run a simulator");
  simulate->require_subcommand(1);
  AddSimulatePipelineCommand(simulate, exit_code);
  AddSimulateDeploymentCommand(simulate, exit_code);
  AddSimulateFleetCommand(simulate, exit_code);
}

void AddSnapshotCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<SnapshotArgs>();
  CLI::App* command = app.add_subcommand(
      "snapshot", "Read one ModelDeploymentMetrics snapshot of a deployment and print it");
  command->add_option("name", args->name, "The ModelDeployment's name")->required();
  command->add_option("-n,--namespace", args->ns, "Its namespace")->capture_default_str();
  AddObjectSourceFlags(command, &args->source);
  command->add_option("-o,--output", args->output, "table, json (the API's document) or yaml")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json", "yaml"}));
  command
      ->add_option("--window", args->window,
                   "Read twice this far apart and print the second read (0: read once); with "
                   "--source prometheus, the range of samples read (default 2m)")
      ->capture_default_str()
      ->check(base::CheckDuration)
      ->each([args](const std::string&) { args->window_given = true; });
  AddSampleSourceFlags(command, &args->samples);
  AddReadLimitFlags(command, &args->limits);
  command
      ->add_option("--watch", args->watch,
                   "Print a new snapshot every DURATION, windowed against the one before")
      ->check(base::CheckDuration);
  command->add_option("--rounds", args->rounds, "With --watch: stop after N snapshots (0: never)")
      ->check(CLI::NonNegativeNumber);
  command->add_option("--ca-file", args->ca_file,
                      "PEM bundle to trust for HTTPS Pods (default: the system bundle)");
  command->callback([args, exit_code] { *exit_code = RunSnapshot(*args); });
}

void AddServeCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<ServeArgs>();
  CLI::App* serve = app.add_subcommand(
      "serve", "Serve the ModelDeploymentMetrics aggregated API (Kubernetes-style, TLS)");
  serve->add_option("--config", args->config, "The serve configuration (YAML)")
      ->check(CLI::ExistingFile);
  serve->add_flag("--config-keys", args->config_keys,
                  "Print every configuration key, its default or an example, and what it does");
  serve
      ->add_option("--duration", args->duration,
                   "Stop after this long (e.g. 30s, 2m); default: until SIGINT/SIGTERM")
      ->check(base::CheckDuration);
  AddMaxConfigBytesFlag(serve, &args->max_config_bytes, "the configuration or its kubeconfig");
  AddReadLimitFlags(serve, &args->limits);
  serve->callback([args, exit_code] {
    if (!args->config_keys && args->config.empty()) throw CLI::RequiredError("--config");
    *exit_code = RunServe(*args);
  });
}

void AddDemoCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<DemoArgs>();
  CLI::App* command = app.add_subcommand(
      "demo",
      "Run simulated vLLM, SGLang and vLLM-Omni deployments, the pipeline simulator and the "
      "aggregated API on loopback, printing live snapshots");
  AddDurationFlag(command, "--duration", &args->duration, "How long to run (e.g. 20s, 2m)");
  AddDurationFlag(command, "--interval", &args->interval, "Time between snapshot rounds");
  command->add_option("--seed", args->seed, "Traffic seed")->capture_default_str();
  command->add_option("-o,--output", args->output, "table or json")
      ->capture_default_str()
      ->check(CLI::IsMember({"table", "json"}));
  command->add_flag("--pipeline,!--no-pipeline", args->pipeline,
                    "Also run the pipeline simulator (default on)");
  command->add_flag("--ui,!--no-ui", args->ui, "Also serve the web page (default on)");
  command->add_option("--ui-port", args->ui_port, "The web page's port (0: any free one)")
      ->capture_default_str();
  command->callback([args, exit_code] { *exit_code = RunDemo(*args); });
}

void AddUiCommand(CLI::App& app, int* exit_code) {
  auto args = std::make_shared<UiArgs>();
  CLI::App* command = app.add_subcommand(
      "ui",
      "Serve a live web page of the deployments' snapshots on loopback, with an access token");
  command->add_option("-n,--namespace", args->ns, "The namespace whose deployments are shown")
      ->capture_default_str();
  command->add_flag("-A,--all-namespaces", args->all_namespaces, "Show every namespace's");
  AddObjectSourceFlags(command, &args->source);
  AddSampleSourceFlags(command, &args->samples);
  AddReadLimitFlags(command, &args->limits);
  command->add_flag("--aggregated-api", args->aggregated_api,
                    "Read each snapshot from the aggregated API through kube-apiserver (with "
                    "--kubeconfig or --in-cluster) instead of computing it here");
  command->add_option("--address", args->address, "Loopback address to listen on")
      ->capture_default_str();
  command->add_option("--port", args->port, "Port to listen on (0: any free one)")
      ->capture_default_str();
  AddDurationFlag(command, "--interval", &args->interval, "How often each deployment is read");
  command->add_option("--duration", args->duration, "Stop after this long (default: on SIGINT)")
      ->check(base::CheckDuration);
  command->add_option("--ca-file", args->ca_file,
                      "PEM bundle to trust for HTTPS Pods (default: the system bundle)");
  command->callback([args, exit_code] { *exit_code = RunUi(*args); });
}

// The exporter catalog: what the snapshot reads from each exporter (exporter_catalog.h).
void AddExportersCommand(CLI::App& app) {
  CLI::App* command = app.add_subcommand("exporters",
                                         "Print, as JSON, the metric families the snapshot reads "
                                         "from each engine and router exporter");
  command->callback([] { std::cout << deployment::ExporterCatalog().dump(2) << "\n"; });
}

}  // namespace
}  // namespace modelmetrics::cli

int main(int argc, char** argv) {
  namespace cli = modelmetrics::cli;
  CLI::App app{"modelmetrics: metrics for multi-stage model serving"};
  app.require_subcommand(1);
  int exit_code = 0;
  cli::AddParseCommand(app, &exit_code);
  cli::AddSimulateCommand(app, &exit_code);
  cli::AddSnapshotCommand(app, &exit_code);
  cli::AddServeCommand(app, &exit_code);
  cli::AddDemoCommand(app, &exit_code);
  cli::AddUiCommand(app, &exit_code);
  cli::AddExportersCommand(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;  // usage error
  }
  return exit_code;
}
