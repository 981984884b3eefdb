// See health_checks.h. The texts follow k8s.io/apiserver's healthz handlers.
#include "apiserver/health_checks.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "base/text.h"

namespace modelmetrics::deployment {
namespace {

net::HttpResponse PlainText(int status, std::string body) {
  net::HttpResponse response = net::HttpResponse::Text(status, std::move(body));
  response.headers.emplace_back("X-Content-Type-Options", "nosniff");
  return response;
}

}  // namespace

void HealthChecks::Add(std::string name, Check check) {
  checks_.push_back({std::move(name), std::move(check)});
}

void HealthChecks::AddInformational(std::string name, Check check) {
  checks_.push_back({std::move(name), std::move(check), /*informational=*/true});
}

std::vector<std::string> HealthChecks::names() const {
  std::vector<std::string> names;
  for (const Named& named : checks_) names.push_back(named.name);
  return names;
}

net::HttpResponse HealthChecks::Serve(std::string_view name, std::string_view query) const {
  if (!name.empty()) {
    const auto it = std::find_if(checks_.begin(), checks_.end(),
                                 [name](const Named& named) { return named.name == name; });
    if (it == checks_.end()) return PlainText(404, "404 page not found\n");
    const std::string why = it->check();
    if (why.empty()) return PlainText(200, "ok");
    if (it->informational) return PlainText(200, base::Excerpt(why, 1024) + "\n");
    return PlainText(500, fmt::format("internal server error: {}\n", base::Excerpt(why, 1024)));
  }
  // Comma-separated lists are accepted too, as Kubernetes does for `exclude`.
  std::set<std::string> excluded;
  for (const std::string& value : base::QueryValues(query, "exclude")) {
    for (size_t start = 0; start <= value.size();) {
      const size_t comma = std::min(value.find(',', start), value.size());
      if (comma > start) excluded.insert(value.substr(start, comma - start));
      start = comma + 1;
    }
  }
  std::string lines;
  bool failed = false;
  for (const Named& named : checks_) {
    if (excluded.erase(named.name) > 0) {
      fmt::format_to(std::back_inserter(lines), "[+]{} excluded: ok\n", named.name);
    } else if (const std::string why = named.check(); why.empty()) {
      fmt::format_to(std::back_inserter(lines), "[+]{} ok\n", named.name);
    } else if (named.informational) {
      fmt::format_to(std::back_inserter(lines), "[+]{} {}\n", named.name, base::Excerpt(why, 256));
    } else {
      fmt::format_to(std::back_inserter(lines), "[-]{} failed: reason withheld\n", named.name);
      failed = true;
    }
  }
  if (!excluded.empty()) {
    std::string quoted;
    for (const std::string& unknown : excluded) {
      fmt::format_to(std::back_inserter(quoted), "{}\"{}\"", quoted.empty() ? "" : ", ",
                     base::Excerpt(unknown, 100));
    }
    fmt::format_to(std::back_inserter(lines),
                   "warn: some health checks cannot be excluded: no matches for {}\n", quoted);
  }
  if (failed) return PlainText(500, fmt::format("{}{} check failed\n", lines, endpoint_));
  if (!base::HasQueryParameter(query, "verbose")) return PlainText(200, "ok");
  return PlainText(200, fmt::format("{}{} check passed\n", lines, endpoint_));
}

}  // namespace modelmetrics::deployment
