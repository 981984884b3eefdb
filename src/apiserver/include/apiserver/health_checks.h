// Named health checks served the way kube-apiserver serves /healthz, /livez and /readyz, so that
// probes, `kubectl get --raw /readyz?verbose` and people used to Kubernetes read them alike.
//
//   GET /readyz                 200 `ok` when every check passes
//   GET /readyz?verbose         one line per check, `[+]ping ok`, then `readyz check passed`
//   GET /readyz?exclude=NAME    that check is skipped (`[+]NAME excluded: ok` in verbose form); an
//                               exclusion naming no check adds `warn: some health checks cannot be
//                               excluded: no matches for "NAME"`
//   GET /readyz/NAME            that check alone: 200 `ok`, or 500 `internal server error: WHY`
// Any failure answers 500 with every line (`[-]NAME failed: reason withheld`, the reason stays in
// the server's own log, as Kubernetes withholds it) and `readyz check failed`. Bodies are
// text/plain; charset=utf-8 with X-Content-Type-Options: nosniff.
//
// Thread-safety: add checks before serving; Serve() is then safe from any thread, and a check
// function must be too.
#ifndef MODELMETRICS_APISERVER_HEALTH_CHECKS_H_
#define MODELMETRICS_APISERVER_HEALTH_CHECKS_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "net/http_server.h"

namespace modelmetrics::deployment {

class HealthChecks {
 public:
  // Empty when healthy, else why not (shown only on the single-check path).
  using Check = std::function<std::string()>;

  // `endpoint` is the path's name: "healthz", "livez" or "readyz".
  explicit HealthChecks(std::string endpoint) : endpoint_(std::move(endpoint)) {}

  void Add(std::string name, Check check);
  // A check that never fails the endpoint: in verbose form `[+]NAME ok`, or `[+]NAME MESSAGE`
  // when it reports something (a degraded but working part, e.g. saturated token reviews, which
  // must not take the server out of its Service).
  void AddInformational(std::string name, Check check);
  const std::string& endpoint() const { return endpoint_; }
  // The names, in the order added.
  std::vector<std::string> names() const;

  // Answers `/ENDPOINT` (name empty) or `/ENDPOINT/NAME`, with the request's query.
  net::HttpResponse Serve(std::string_view name, std::string_view query) const;

 private:
  struct Named {
    std::string name;
    Check check;
    bool informational = false;
  };
  std::string endpoint_;
  std::vector<Named> checks_;
};

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_HEALTH_CHECKS_H_
