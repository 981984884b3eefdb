#include "cli/parse_command.h"

#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "modelmetrics/parser.h"
#include "net/http_client.h"

namespace modelmetrics::cli {
namespace {

struct ParseArgs {
  std::string source;
  std::string format = "auto";
  bool strict = false;
  std::vector<std::string> families;
  std::string output = "summary";
};

struct Input {
  std::string body;
  std::string content_type;
  std::string error;
};

bool IsUrl(const std::string& s) { return s.starts_with("http://") || s.starts_with("https://"); }

Input ReadInput(const std::string& source) {
  Input in;
  if (source == "-") {
    in.body.assign(std::istreambuf_iterator<char>(std::cin), {});
    return in;
  }
  if (IsUrl(source)) {
    net::HttpClient client;
    net::FetchRequest request{
        source,
        {{"Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"}}};
    auto results = client.FetchAll(std::span(&request, 1),
                                   std::chrono::steady_clock::now() + std::chrono::seconds(10));
    net::FetchResult& r = results.front();
    if (!r.ok()) {
      in.error = fmt::format("fetch failed ({}): {}", net::FetchErrorName(r.error), r.message);
      return in;
    }
    in.body = std::move(r.body);
    in.content_type = std::move(r.content_type);
    return in;
  }
  std::ifstream file(source, std::ios::binary);
  if (!file) {
    in.error = "cannot open file";
    return in;
  }
  in.body.assign(std::istreambuf_iterator<char>(file), {});
  if (file.bad()) in.error = "read error";
  return in;
}

nlohmann::ordered_json JsonNumber(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return v;
}

nlohmann::ordered_json JsonLabels(const std::vector<LabelPair>& labels) {
  nlohmann::ordered_json out = nlohmann::ordered_json::object();
  for (const auto& [k, v] : labels) out[k] = v;
  return out;
}

std::string ToJson(Format format, const std::vector<MetricFamily>& families,
                   const std::vector<ParseError>& errors, size_t error_count) {
  nlohmann::ordered_json doc;
  doc["format"] = format == Format::kOpenMetrics ? "openmetrics" : "text";
  auto& fams = doc["families"] = nlohmann::ordered_json::array();
  for (const MetricFamily& f : families) {
    nlohmann::ordered_json jf;
    jf["name"] = f.name;
    jf["type"] = MetricTypeName(f.type, format);
    jf["help"] = f.help;
    jf["unit"] = f.unit;
    auto& samples = jf["samples"] = nlohmann::ordered_json::array();
    for (const MetricSample& s : f.samples) {
      nlohmann::ordered_json js;
      js["name"] = s.name;
      js["labels"] = JsonLabels(s.labels);
      js["value"] = JsonNumber(s.value);
      if (s.timestamp_ms) js["timestamp"] = *s.timestamp_ms;
      if (s.exemplar) {
        nlohmann::ordered_json je;
        je["labels"] = JsonLabels(s.exemplar->labels);
        je["value"] = JsonNumber(s.exemplar->value);
        if (s.exemplar->timestamp_ms) je["timestamp"] = *s.exemplar->timestamp_ms;
        js["exemplar"] = std::move(je);
      }
      samples.push_back(std::move(js));
    }
    fams.push_back(std::move(jf));
  }
  auto& errs = doc["errors"] = nlohmann::ordered_json::array();
  for (const ParseError& e : errors) {
    errs.push_back({{"line", e.line}, {"column", e.column}, {"message", e.message}});
  }
  doc["error_count"] = error_count;
  // Label values were validated as UTF-8 by the parser; HELP text was not, so replace.
  return doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
}

int Run(const ParseArgs& args) {
  Input in = ReadInput(args.source);
  if (!in.error.empty()) {
    fmt::print(stderr, "{}: {}\n", args.source, in.error);
    return 1;
  }
  ParseOptions options;
  options.strict = args.strict;
  options.families = args.families;
  if (args.format == "text") {
    options.format = Format::kText;
  } else if (args.format == "openmetrics") {
    options.format = Format::kOpenMetrics;
  } else if (auto f = FormatFromContentType(in.content_type)) {
    options.format = f;
  }
  const Format format = options.format ? *options.format : DetectFormat(in.body);
  options.format = format;

  std::vector<ParseError> errors;
  size_t error_count = 0;
  std::vector<MetricFamily> families = ParseFamilies(in.body, options, &errors, &error_count);
  for (const ParseError& e : errors) {
    fmt::print(stderr, "{}:{}:{}: {}\n", args.source, e.line, e.column, e.message);
  }
  if (error_count > errors.size()) {
    fmt::print(stderr, "{}: {} more errors not shown\n", args.source, error_count - errors.size());
  }

  if (args.output == "json") {
    fmt::print("{}\n", ToJson(format, families, errors, error_count));
  } else {
    size_t samples = 0;
    for (const MetricFamily& f : families) {
      fmt::print("{:<60} {:<14} {:>6}\n", f.name, MetricTypeName(f.type, format), f.samples.size());
      samples += f.samples.size();
    }
    fmt::print("{}: {} format, {} families, {} samples, {} errors{}\n", args.source,
               format == Format::kOpenMetrics ? "openmetrics" : "text", families.size(), samples,
               error_count, args.strict ? "" : " (lenient)");
  }
  return args.strict && error_count > 0 ? 1 : 0;
}

}  // namespace

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
  cmd->callback([args, exit_code] { *exit_code = Run(*args); });
}

}  // namespace modelmetrics::cli
