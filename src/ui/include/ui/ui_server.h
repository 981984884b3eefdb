// `modelmetrics ui`: a local web page of deployment snapshots.
//
// A poller reads every ModelDeployment the object source lists (in one namespace, or all) from a
// SnapshotReader (the aggregator here, or the aggregated API through kube-apiserver) every
// `interval`, at most `max_in_flight` reads at once, each within
// `read_timeout`, and keeps per deployment the latest snapshot, its history (history.h) and
// whether the source still answers. The loopback HTTP server serves the page (assets embedded
// in the binary at build time, Chart.js from Debian's libjs-chart.js) and a small JSON API that
// the page polls:
//   GET /                                       the page (no data in it)
//   GET /assets/{app.js,app.css,chart.min.js}   its code
//   GET /api/v1/deployments                     every deployment's summary, and the poll interval
//   GET /api/v1/deployments/<ns>/<name>         its latest snapshot (the API's JSON), history,
//                                               and read status
// Every /api/ request needs `Authorization: Bearer <token>` (a random token made at start unless
// given, compared in constant time): 401 without it, 403 with a wrong one, and no data either way.
// The page takes the token from the URL's fragment (`/#token=...`, never sent to the server or
// written to its logs) and keeps it in the tab's session storage. Responses carry
// `Cache-Control: no-store` and a Content-Security-Policy that allows only the server's own code.
//
// A deployment is stale when its last read failed or is older than three intervals; the page says
// so and keeps showing the last good read.
//
// Thread-safety: Start() and Stop() from one thread; the rest is internal.
#ifndef MODELMETRICS_UI_UI_SERVER_H_
#define MODELMETRICS_UI_UI_SERVER_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "aggregation/snapshot_reader.h"
#include "kube/objects.h"

namespace modelmetrics::ui {

using base::Status;

struct UiOptions {
  std::string address = "127.0.0.1";  // loopback only (checked at Start)
  uint16_t port = 0;                  // 0 picks a free one
  std::string ns;                     // "" reads every namespace
  std::chrono::milliseconds interval{5000};
  std::chrono::milliseconds read_timeout{8000};
  size_t max_in_flight = 2;
  size_t max_deployments = 500;  // more are left out (the list says how many)
  std::string token;             // "" makes a random one
  std::chrono::seconds history{900};
};

class UiServer {
 public:
  // `objects` and `snapshots` must outlive the server.
  UiServer(deployment::ObjectSource* objects, deployment::SnapshotReader* snapshots,
           UiOptions options);
  ~UiServer();  // Stop()s

  // Starts the poller and the server; false with `*error` (bad address, port in use).
  Status Start();
  void Stop();

  uint16_t port() const;
  const std::string& token() const;
  std::string url() const;  // http://127.0.0.1:<port>/#token=<token>

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace modelmetrics::ui

#endif  // MODELMETRICS_UI_UI_SERVER_H_
