#include "parse_command.h"

#include <fmt/core.h>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "input_bytes.h"
#include "modelmetrics/parser.h"
#include "net/http_client.h"
#include "parse_output.h"

namespace modelmetrics::cli {
namespace {

struct Input {
  InputBytes bytes;
  std::string content_type;
  std::string error;
};

bool IsUrl(const std::string& s) { return s.starts_with("http://") || s.starts_with("https://"); }

Input ReadInput(const std::string& source, size_t max_bytes) {
  Input in;
  if (source == "-") {
    in.error = in.bytes.LoadFd(STDIN_FILENO, max_bytes).message();
    return in;
  }
  if (IsUrl(source)) {
    net::ClientOptions client_options;
    client_options.max_body_bytes = max_bytes;
    net::HttpClient client(client_options);
    net::FetchRequest request{
        source,
        {{"Accept", "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5"}}};
    auto results = client.FetchAll(std::span(&request, 1),
                                   std::chrono::steady_clock::now() + std::chrono::seconds(10));
    net::FetchResult& r = results.front();
    if (r.error == net::FetchError::kTooLarge) {
      in.error = InputBytes::OverLimitError(max_bytes);
      return in;
    }
    if (!r.ok()) {
      in.error = fmt::format("fetch failed ({}): {}", net::FetchErrorName(r.error), r.message);
      return in;
    }
    in.bytes = InputBytes(std::move(r.body));
    in.content_type = std::move(r.content_type);
    return in;
  }
  in.error = in.bytes.LoadFile(source, max_bytes).message();
  return in;
}

}  // namespace

int RunParse(const ParseArgs& args) {
  Input in = ReadInput(args.source, args.max_bytes);
  if (!in.error.empty()) {
    fmt::print(stderr, "{}: {}\n", args.source, in.error);
    return 1;
  }
  const std::string_view body = in.bytes.view();
  ParseOptions options;
  options.strict = args.strict;
  options.families = args.families;
  options.limits.max_bytes = args.max_bytes;  // one cap: what was read may be parsed
  if (args.format == "text") {
    options.format = Format::kText;
  } else if (args.format == "openmetrics") {
    options.format = Format::kOpenMetrics;
  } else if (auto f = FormatFromContentType(in.content_type)) {
    options.format = f;
  }
  const Format format = options.format ? *options.format : DetectFormat(body);
  options.format = format;

  // One counting pass: the summary needs nothing more, and the JSON stream takes its metadata,
  // order and errors from it (errors go to stderr before the document, as they always have).
  const FamilyScan scan = ScanFamilies(body, options);
  for (const ParseError& e : scan.errors) {
    fmt::print(stderr, "{}:{}:{}: {}\n", args.source, e.line, e.column, e.message);
  }
  if (scan.error_count > scan.errors.size()) {
    fmt::print(stderr, "{}: {} more errors not shown\n", args.source,
               scan.error_count - scan.errors.size());
  }

  if (args.output == "json") {
    WriteJson(body, options, scan,
              [](std::string_view chunk) { std::fwrite(chunk.data(), 1, chunk.size(), stdout); });
    std::fputc('\n', stdout);
  } else {
    std::string table;
    for (const FamilyRecord& f : scan.families) {
      fmt::format_to(std::back_inserter(table), "{:<60} {:<14} {:>6}\n", f.name,
                     MetricTypeName(f.type, format), f.samples);
    }
    std::fwrite(table.data(), 1, table.size(), stdout);
    fmt::print("{}: {} format, {} families, {} samples, {} errors{}\n", args.source,
               format == Format::kOpenMetrics ? "openmetrics" : "text", scan.families.size(),
               scan.samples, scan.error_count, args.strict ? "" : " (lenient)");
  }
  std::fflush(stdout);
  return args.strict && scan.error_count > 0 ? 1 : 0;
}

}  // namespace modelmetrics::cli
