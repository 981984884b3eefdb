#include "pipeline/metrics_endpoint.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "base/mutex.h"

namespace modelmetrics::pipeline {

// One thread rendering scrapes in arrival order.
struct MetricsEndpoint::Worker {
  base::Mutex mu;
  std::condition_variable cv;
  std::deque<std::function<void()>> jobs GUARDED_BY(mu);
  bool stopping GUARDED_BY(mu) = false;
  std::thread thread;

  Worker() : thread([this] { Run(); }) {}
  ~Worker() {
    {
      base::MutexLock lock(&mu);
      stopping = true;
    }
    cv.notify_all();
    thread.join();
  }
  void Post(std::function<void()> job) {
    {
      base::MutexLock lock(&mu);
      jobs.push_back(std::move(job));
    }
    cv.notify_one();
  }
  void Run() {
    for (;;) {
      std::function<void()> job;
      {
        base::MutexLock lock(&mu);
        cv.wait(lock.native(), [&]() REQUIRES(mu) { return stopping || !jobs.empty(); });
        if (jobs.empty()) return;  // stopping, and everything queued is done
        job = std::move(jobs.front());
        jobs.pop_front();
      }
      // A render that throws must not end the process: the job's dropped Responder answers 500.
      try {
        job();
      } catch (...) {
      }
    }
  }
};

MetricsEndpoint::MetricsEndpoint(const Registry& registry)
    : registry_(registry), worker_(std::make_unique<Worker>()) {}

MetricsEndpoint::~MetricsEndpoint() = default;

net::HttpResponse MetricsEndpoint::Scrape(std::string_view accept) const {
  const Format format = NegotiateFormat(accept);
  net::HttpResponse response;
  response.content_type = std::string(ContentTypeFor(format));
  response.body = registry_.Render(format);
  return response;
}

void MetricsEndpoint::Install(net::HttpServer& server, const std::string& path) {
  for (const char* method : {"GET", "HEAD"}) {
    server.RouteAsync(method, path,
                      [this](const net::HttpRequest& request, net::Responder respond) {
                        std::string accept(request.headers.Get("Accept"));
                        worker_->Post([this, accept = std::move(accept),
                                       respond = std::move(respond)] { respond(Scrape(accept)); });
                      });
  }
}

}  // namespace modelmetrics::pipeline
