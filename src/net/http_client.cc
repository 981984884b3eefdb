// libcurl-multi implementation of HttpClient; see http_client.h for the contract.
//
// Ownership and threading: the driver thread (Impl::Run) is the only thread that touches the
// multi handle (except curl_multi_wakeup, which libcurl documents as callable from any thread),
// the easy handles, and the Transfer objects. A FetchAll call validates its requests, puts a Batch
// (which lives on the caller's stack) on `incoming_` under `mu_`, wakes the driver and waits on
// the Batch's condition variable. The driver writes each result into the Batch under `mu_` and
// notifies while still holding it; once a Batch's last result is published the driver never
// touches that Batch (or the caller's requests) again, because FetchAll may return at once.
#include "net/http_client.h"
#include "base/mutex.h"

#include <curl/curl.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

namespace modelmetrics::net {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kUserAgent[] = "modelmetrics/0.1";
constexpr char kProtocols[] = "http,https";
// Upper bound on one curl_multi_poll wait; wakeups and curl's own timers normally come sooner.
constexpr milliseconds kMaxPollWait{1000};

void GlobalInitOnce() {
  // curl_global_init is thread-safe in libcurl >= 7.84 and a function-local static is initialised
  // exactly once anyway. We never call curl_global_cleanup: clients may live until exit.
  static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
  if (rc != CURLE_OK) {
    throw std::runtime_error(std::string("curl_global_init failed: ") + curl_easy_strerror(rc));
  }
}

milliseconds ToMillis(Clock::duration d) { return std::chrono::duration_cast<milliseconds>(d); }

bool IsTokenChar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return std::strchr("!#$%&'*+-.^_`|~", c) != nullptr && c != '\0';
}

// Returns why `request` cannot be sent, or nullopt if it can.
std::optional<std::string> ValidateRequest(const FetchRequest& request) {
  const std::string& url = request.url;
  if (url.empty()) return "empty URL";
  if (url.find('\0') != std::string::npos) return "URL contains a NUL byte";
  CURLU* parsed = curl_url();
  if (parsed == nullptr) return "out of memory";
  std::optional<std::string> problem;
  // No CURLU_GUESS_SCHEME / CURLU_DEFAULT_SCHEME: a URL without a scheme is rejected.
  CURLUcode uc = curl_url_set(parsed, CURLUPART_URL, url.c_str(), 0);
  if (uc != CURLUE_OK) {
    problem = std::string("malformed URL: ") + curl_url_strerror(uc);
  } else {
    char* scheme = nullptr;
    char* host = nullptr;
    if (curl_url_get(parsed, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK || scheme == nullptr ||
        (strcasecmp(scheme, "http") != 0 && strcasecmp(scheme, "https") != 0)) {
      problem =
          std::string("unsupported scheme '") + (scheme ? scheme : "") + "' (only http and https)";
    } else if (curl_url_get(parsed, CURLUPART_HOST, &host, 0) != CURLUE_OK || host == nullptr ||
               host[0] == '\0') {
      problem = "URL has no host";
    }
    curl_free(scheme);
    curl_free(host);
  }
  curl_url_cleanup(parsed);
  if (problem) return problem;

  if (request.method.empty() ||
      !std::all_of(request.method.begin(), request.method.end(),
                   [](char c) { return IsTokenChar(static_cast<unsigned char>(c)); })) {
    return "invalid request method '" + request.method + "'";
  }
  if (request.method == "HEAD" && !request.body.empty()) return "a HEAD request cannot have a body";

  for (const auto& [name, value] : request.headers) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), [](char c) {
          return IsTokenChar(static_cast<unsigned char>(c));
        })) {
      return "invalid request header name '" + name + "'";
    }
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return "request header '" + name + "' has a CR, LF or NUL in its value";
    }
  }
  return std::nullopt;
}

FetchResult Failure(FetchError error, std::string message) {
  FetchResult r;
  r.error = error;
  r.message = std::move(message);
  return r;
}

bool IsTlsError(CURLcode rc) {
  switch (rc) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_USE_SSL_FAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
      return true;
    default:
      return false;
  }
}

// Maps a failed transfer's curl code (and error text) to a FetchError.
FetchError Classify(CURLcode rc, bool too_large, const std::string& detail) {
  if (too_large) return FetchError::kTooLarge;
  if (IsTlsError(rc)) return FetchError::kTls;
  switch (rc) {
    case CURLE_OPERATION_TIMEDOUT:
      return FetchError::kTimeout;
    case CURLE_COULDNT_CONNECT:
      return FetchError::kConnectionRefused;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      return FetchError::kResolve;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return FetchError::kBadUrl;
    case CURLE_FILESIZE_EXCEEDED:
      return FetchError::kTooLarge;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
      // With TLS 1.3 a server that rejects our (missing) client certificate does so after the
      // client's side of the handshake is done, so it surfaces as a read error carrying the
      // server's TLS alert ("... alert certificate required").
      if (detail.find("alert") != std::string::npos) return FetchError::kTls;
      return FetchError::kProtocol;
    case CURLE_WEIRD_SERVER_REPLY:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
    case CURLE_BAD_CONTENT_ENCODING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_HTTP_RETURNED_ERROR:
      return FetchError::kProtocol;
    default:
      return FetchError::kOther;
  }
}

}  // namespace

std::string_view FetchErrorName(FetchError error) {
  switch (error) {
    case FetchError::kNone:
      return "none";
    case FetchError::kTimeout:
      return "timeout";
    case FetchError::kDeadline:
      return "deadline";
    case FetchError::kTooLarge:
      return "too_large";
    case FetchError::kTls:
      return "tls";
    case FetchError::kConnectionRefused:
      return "connection_refused";
    case FetchError::kResolve:
      return "resolve";
    case FetchError::kBadUrl:
      return "bad_url";
    case FetchError::kHttpStatus:
      return "http_status";
    case FetchError::kProtocol:
      return "protocol";
    case FetchError::kOther:
      return "other";
  }
  return "unknown";
}

struct HttpClient::Impl {
  // One FetchAll call. Lives on the caller's stack until every result is published.
  struct Batch {
    std::span<const FetchRequest> requests;
    Clock::time_point deadline;
    std::vector<size_t> todo;          // Indices still to run (valid requests), in order.
    size_t next = 0;                   // Driver only: todo[next] is the next one to start.
    size_t running = 0;                // Driver only: transfers of this batch in active_.
    std::vector<FetchResult> results;  // Guarded by mu_ while the batch is in flight.
    size_t remaining = 0;              // Guarded by mu_: results not yet published.
    std::vector<size_t> published;     // Guarded by mu_: published, not yet handed to the caller.
    std::condition_variable done;      // A result was published.
  };

  // One running transfer. Owned by the driver thread.
  struct Transfer {
    Batch* batch = nullptr;
    size_t index = 0;
    Clock::time_point deadline;
    Clock::time_point started;
    CURL* easy = nullptr;
    curl_slist* headers = nullptr;
    size_t max_body = 0;
    bool too_large = false;
    std::string body;
    char error[CURL_ERROR_SIZE] = {};
  };

  explicit Impl(ClientOptions opts);
  ~Impl();

  std::vector<FetchResult> FetchAll(std::span<const FetchRequest> batch, Clock::time_point deadline,
                                    const HttpClient::OnResult& on_result);

  // Driver thread.
  void Run();
  void ExpireDeadlines(Clock::time_point now);
  void StartQueued(Clock::time_point now);
  // A queued request could start now: a client-wide slot is free and some batch is under its
  // own bound.
  bool CanStartMore() const;
  void Start(Batch* batch, size_t index, Clock::time_point now);
  std::optional<FetchResult> Configure(Transfer& t, const FetchRequest& request);
  void ReapCompleted();
  void Finish(Transfer* t, std::optional<CURLcode> rc);
  int PollTimeoutMs(Clock::time_point now) const;
  CURL* AcquireEasy();
  void ReleaseEasy(CURL* easy);
  // Publishes results; after the batch's last one is published `batch` may be gone.
  void Complete(Batch* batch, std::vector<std::pair<size_t, FetchResult>> results);
  void Complete(Batch* batch, size_t index, FetchResult result);

  static size_t OnWrite(char* data, size_t size, size_t count, void* user);

  const ClientOptions options_;
  CURLM* multi_ = nullptr;
  CURLSH* share_ = nullptr;

  base::Mutex mu_;
  std::vector<Batch*> incoming_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;

  // Driver thread only.
  std::deque<Batch*> runnable_;  // Batches with requests not yet started, round-robin.
  std::vector<std::unique_ptr<Transfer>> active_;
  std::vector<CURL*> idle_easy_;
  bool shutting_down_ = false;

  std::thread driver_;
};

HttpClient::Impl::Impl(ClientOptions opts)
    : options_([&] {
        if (opts.max_in_flight == 0) opts.max_in_flight = 1;
        if (opts.max_idle_connections == 0) opts.max_idle_connections = 1;
        if (opts.fetch_timeout < milliseconds(1)) opts.fetch_timeout = milliseconds(1);
        if (opts.connect_timeout < milliseconds(1)) opts.connect_timeout = opts.fetch_timeout;
        return opts;
      }()) {
  GlobalInitOnce();
  multi_ = curl_multi_init();
  share_ = curl_share_init();
  if (multi_ == nullptr || share_ == nullptr) {
    if (multi_ != nullptr) curl_multi_cleanup(multi_);
    if (share_ != nullptr) curl_share_cleanup(share_);
    throw std::runtime_error("cannot create libcurl multi/share handle");
  }
  // Only the driver thread uses the easy handles, so the share needs no lock callbacks. It shares
  // TLS sessions between easy handles so a new connection to a known server can resume.
  curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  curl_multi_setopt(
      multi_, CURLMOPT_MAXCONNECTS,
      static_cast<long>(std::max(options_.max_idle_connections, options_.max_in_flight)));
  driver_ = std::thread([this] { Run(); });
}

HttpClient::Impl::~Impl() {
  {
    base::MutexLock lock(&mu_);
    stopping_ = true;
  }
  curl_multi_wakeup(multi_);
  driver_.join();
  for (CURL* easy : idle_easy_) curl_easy_cleanup(easy);
  curl_multi_cleanup(multi_);  // Closes cached connections.
  curl_share_cleanup(share_);
}

std::vector<FetchResult> HttpClient::Impl::FetchAll(std::span<const FetchRequest> requests,
                                                    Clock::time_point deadline,
                                                    const HttpClient::OnResult& on_result) {
  Batch batch;
  batch.requests = requests;
  batch.deadline = deadline;
  batch.results.resize(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    if (auto problem = ValidateRequest(requests[i])) {
      batch.results[i].error = FetchError::kBadUrl;
      batch.results[i].message = std::move(*problem);
      if (on_result) on_result(i, batch.results[i]);
    } else {
      batch.todo.push_back(i);
    }
  }
  if (batch.todo.empty()) return std::move(batch.results);
  batch.remaining = batch.todo.size();

  base::MutexLock lock(&mu_);
  incoming_.push_back(&batch);
  lock.Unlock();
  curl_multi_wakeup(multi_);
  lock.Lock();
  for (;;) {
    batch.done.wait(lock.native(),
                    [&] { return !batch.published.empty() || batch.remaining == 0; });
    std::vector<size_t> ready;
    ready.swap(batch.published);
    const bool finished = batch.remaining == 0;
    if (on_result && !ready.empty()) {
      // Outside the lock: the driver keeps publishing other results meanwhile. Each element of
      // `results` is written once, before its index is published, and the vector never grows.
      lock.Unlock();
      for (size_t index : ready) on_result(index, batch.results[index]);
      lock.Lock();
    }
    if (finished && batch.published.empty()) break;
  }
  return std::move(batch.results);
}

void HttpClient::Impl::Complete(Batch* batch, std::vector<std::pair<size_t, FetchResult>> results) {
  base::MutexLock lock(&mu_);
  for (auto& [index, result] : results) {
    batch->results[index] = std::move(result);
    batch->published.push_back(index);
  }
  batch->remaining -= results.size();
  // Notify under the lock: once remaining hits 0 the waiter may destroy the batch.
  batch->done.notify_all();
}

void HttpClient::Impl::Complete(Batch* batch, size_t index, FetchResult result) {
  std::vector<std::pair<size_t, FetchResult>> one;
  one.emplace_back(index, std::move(result));
  Complete(batch, std::move(one));
}

void HttpClient::Impl::Run() {
  std::vector<Batch*> arrived;
  for (;;) {
    {
      base::MutexLock lock(&mu_);
      if (stopping_) break;
      arrived.swap(incoming_);
    }
    runnable_.insert(runnable_.end(), arrived.begin(), arrived.end());
    arrived.clear();

    ExpireDeadlines(Clock::now());
    StartQueued(Clock::now());
    int running = 0;
    curl_multi_perform(multi_, &running);
    ReapCompleted();
    // Completions may have freed slots: start queued work before sleeping.
    if (CanStartMore()) continue;

    int timeout_ms = PollTimeoutMs(Clock::now());
    if (curl_multi_poll(multi_, nullptr, 0, timeout_ms, nullptr) != CURLM_OK) {
      std::this_thread::sleep_for(milliseconds(std::min(timeout_ms, 10)));  // Never spin.
    }
  }

  // Shutdown. By contract no FetchAll is waiting; finish anything left defensively anyway.
  shutting_down_ = true;
  while (!active_.empty()) Finish(active_.back().get(), std::nullopt);
  {
    base::MutexLock lock(&mu_);
    runnable_.insert(runnable_.end(), incoming_.begin(), incoming_.end());
    incoming_.clear();
  }
  ExpireDeadlines(Clock::time_point::max());
}

int HttpClient::Impl::PollTimeoutMs(Clock::time_point now) const {
  Clock::time_point wake = now + kMaxPollWait;
  for (const auto& t : active_) wake = std::min(wake, t->deadline);
  for (const Batch* b : runnable_) wake = std::min(wake, b->deadline);
  if (wake <= now) return 0;
  // Round up so we wake at or after the deadline, not just before it.
  return static_cast<int>(std::chrono::ceil<milliseconds>(wake - now).count());
}

void HttpClient::Impl::ExpireDeadlines(Clock::time_point now) {
  // Running transfers past their batch deadline are aborted.
  for (size_t i = 0; i < active_.size();) {
    if (active_[i]->deadline <= now) {
      Finish(active_[i].get(), std::nullopt);  // Removes active_[i].
    } else {
      ++i;
    }
  }
  // Queued requests of batches past their deadline are never started.
  for (auto it = runnable_.begin(); it != runnable_.end();) {
    Batch* batch = *it;
    if (batch->deadline > now) {
      ++it;
      continue;
    }
    it = runnable_.erase(it);
    std::vector<std::pair<size_t, FetchResult>> results;
    for (; batch->next < batch->todo.size(); ++batch->next) {
      FetchResult r;
      r.error = FetchError::kDeadline;
      r.message = shutting_down_ ? "client shut down before the fetch started"
                                 : "deadline passed before the fetch started";
      results.emplace_back(batch->todo[batch->next], std::move(r));
    }
    Complete(batch, std::move(results));  // `batch` may be gone now.
  }
}

bool HttpClient::Impl::CanStartMore() const {
  if (active_.size() >= options_.max_in_flight) return false;
  const size_t per_batch = options_.max_in_flight_per_batch;
  return std::any_of(runnable_.begin(), runnable_.end(), [per_batch](const Batch* b) {
    return per_batch == 0 || b->running < per_batch;
  });
}

void HttpClient::Impl::StartQueued(Clock::time_point now) {
  const size_t per_batch = options_.max_in_flight_per_batch;
  size_t passed_over = 0;  // batches in a row at their own bound
  while (active_.size() < options_.max_in_flight && passed_over < runnable_.size()) {
    Batch* batch = runnable_.front();
    runnable_.pop_front();
    if (per_batch != 0 && batch->running >= per_batch) {
      runnable_.push_back(batch);
      ++passed_over;
      continue;
    }
    passed_over = 0;
    size_t index = batch->todo[batch->next++];
    // Round-robin between batches. Decide before Start(): if Start() publishes this batch's last
    // result, `batch` may be gone.
    if (batch->next < batch->todo.size()) runnable_.push_back(batch);
    Start(batch, index, now);
  }
}

void HttpClient::Impl::Start(Batch* batch, size_t index, Clock::time_point now) {
  auto t = std::make_unique<Transfer>();
  t->batch = batch;
  t->index = index;
  t->deadline = batch->deadline;
  t->started = now;
  t->max_body = options_.max_body_bytes;
  t->easy = AcquireEasy();
  std::optional<FetchResult> failed;
  if (t->easy == nullptr) {
    failed = Failure(FetchError::kOther, "curl_easy_init failed");
  } else if (!(failed = Configure(*t, batch->requests[index]))) {
    if (CURLMcode mc = curl_multi_add_handle(multi_, t->easy); mc != CURLM_OK) {
      failed = Failure(FetchError::kOther,
                       std::string("curl_multi_add_handle: ") + curl_multi_strerror(mc));
    }
  }
  if (failed) {
    if (t->easy != nullptr) ReleaseEasy(t->easy);
    curl_slist_free_all(t->headers);
    Complete(batch, index, std::move(*failed));
    return;
  }
  ++batch->running;
  active_.push_back(std::move(t));
}

std::optional<FetchResult> HttpClient::Impl::Configure(Transfer& t, const FetchRequest& request) {
  if (!request.body.empty()) {
    // An empty "Expect:" stops curl's 100-continue round trip before a large body: the servers
    // we talk to answer at once, and the wait would only add latency.
    curl_slist* grown = curl_slist_append(t.headers, "Expect:");
    if (grown == nullptr) return Failure(FetchError::kOther, "out of memory building headers");
    t.headers = grown;
  }
  for (const auto& [name, value] : request.headers) {
    // "Name;" is curl's way to send a header with an empty value ("Name:" would remove it).
    std::string line = value.empty() ? name + ";" : name + ": " + value;
    curl_slist* grown = curl_slist_append(t.headers, line.c_str());
    if (grown == nullptr) return Failure(FetchError::kOther, "out of memory building headers");
    t.headers = grown;
  }

  CURL* e = t.easy;
  if (curl_easy_setopt(e, CURLOPT_URL, request.url.c_str()) != CURLE_OK) {
    return Failure(FetchError::kBadUrl, "URL rejected by libcurl");
  }
  CURLcode rc = CURLE_OK;
  auto set = [&](CURLoption option, auto value) {
    if (rc == CURLE_OK) rc = curl_easy_setopt(e, option, value);
  };
  set(CURLOPT_PRIVATE, static_cast<void*>(&t));
  set(CURLOPT_ERRORBUFFER, t.error);
  set(CURLOPT_NOSIGNAL, 1L);
  if (request.method == "HEAD") {
    set(CURLOPT_NOBODY, 1L);
  } else if (!request.body.empty()) {
    // POSTFIELDS does not copy: `request` outlives the transfer (see FetchRequest::body).
    set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(request.body.size()));
    set(CURLOPT_POSTFIELDS, request.body.data());
    if (request.method != "POST") set(CURLOPT_CUSTOMREQUEST, request.method.c_str());
  } else if (request.method == "POST") {
    set(CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t{0});
    set(CURLOPT_POSTFIELDS, "");
  } else {
    set(CURLOPT_HTTPGET, 1L);
    if (request.method != "GET") set(CURLOPT_CUSTOMREQUEST, request.method.c_str());
  }
  set(CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  set(CURLOPT_PROTOCOLS_STR, kProtocols);
  set(CURLOPT_REDIR_PROTOCOLS_STR, kProtocols);
  set(CURLOPT_FOLLOWLOCATION, 0L);
  set(CURLOPT_PROXY, "");  // "" disables proxies, including the *_proxy environment variables.
  set(CURLOPT_NOPROXY, "*");
  set(CURLOPT_USERAGENT, kUserAgent);
  set(CURLOPT_HTTPHEADER, t.headers);
  set(CURLOPT_TIMEOUT_MS, static_cast<long>(options_.fetch_timeout.count()));
  set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  set(CURLOPT_WRITEFUNCTION, &Impl::OnWrite);
  set(CURLOPT_WRITEDATA, static_cast<void*>(&t));
  if (options_.accept_encoding) set(CURLOPT_ACCEPT_ENCODING, "");  // All decoders built in.
  set(CURLOPT_SHARE, share_);
  set(CURLOPT_SSL_VERIFYPEER, 1L);
  set(CURLOPT_SSL_VERIFYHOST, 2L);
  set(CURLOPT_SSLVERSION, static_cast<long>(CURL_SSLVERSION_TLSv1_2));
  if (!options_.ca_file.empty()) {
    set(CURLOPT_CAINFO, options_.ca_file.c_str());
    set(CURLOPT_CAPATH, static_cast<const char*>(nullptr));  // Trust only ca_file.
  }
  if (!options_.client_cert_file.empty()) {
    set(CURLOPT_SSLCERT, options_.client_cert_file.c_str());
    set(CURLOPT_SSLCERTTYPE, "PEM");
    if (!options_.client_key_file.empty()) {
      set(CURLOPT_SSLKEY, options_.client_key_file.c_str());
      set(CURLOPT_SSLKEYTYPE, "PEM");
    }
  }
  if (rc != CURLE_OK) {
    return Failure(FetchError::kOther, std::string("curl_easy_setopt: ") + curl_easy_strerror(rc));
  }
  return std::nullopt;
}

size_t HttpClient::Impl::OnWrite(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  size_t n = size * count;
  // curl hands us decoded bytes (after Content-Encoding), so the cap bounds decoded size.
  if (n > t->max_body - t->body.size()) {
    t->too_large = true;
    return 0;  // Short count: curl aborts the transfer with CURLE_WRITE_ERROR.
  }
  if (t->body.empty()) {
    // One allocation for the whole body when its length is announced (and within the cap), not
    // a doubling series of copies; an encoded body's length only seeds the first allocation.
    curl_off_t length = -1;
    if (curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &length) == CURLE_OK &&
        length > 0 && static_cast<uint64_t>(length) <= t->max_body) {
      t->body.reserve(static_cast<size_t>(length));
    }
  }
  t->body.append(data, n);
  return n;
}

void HttpClient::Impl::ReapCompleted() {
  int queued = 0;
  while (CURLMsg* msg = curl_multi_info_read(multi_, &queued)) {
    if (msg->msg != CURLMSG_DONE) continue;
    void* priv = nullptr;
    curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &priv);
    // Copy before Finish: removing the handle invalidates `msg`.
    CURLcode rc = msg->data.result;
    Finish(static_cast<Transfer*>(priv), rc);
  }
}

// Finishes `t`: with the transfer's curl result, or (rc empty) aborted at the deadline/shutdown.
void HttpClient::Impl::Finish(Transfer* t, std::optional<CURLcode> rc) {
  FetchResult r;
  r.elapsed = ToMillis(Clock::now() - t->started);
  CURL* e = t->easy;
  long status = 0;
  if (curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status) == CURLE_OK) {
    r.status = static_cast<int>(status);
  }
  char* content_type = nullptr;
  if (curl_easy_getinfo(e, CURLINFO_CONTENT_TYPE, &content_type) == CURLE_OK && content_type) {
    r.content_type = content_type;
  }
  curl_header* location = nullptr;
  if (r.status != 0 &&
      curl_easy_header(e, "Location", 0, CURLH_HEADER, -1, &location) == CURLHE_OK) {
    r.location = location->value;
  }
  curl_header* retry_after = nullptr;
  if (r.status != 0 &&
      curl_easy_header(e, "Retry-After", 0, CURLH_HEADER, -1, &retry_after) == CURLHE_OK) {
    r.retry_after = retry_after->value;
  }

  if (!rc) {
    r.error = FetchError::kDeadline;
    r.message = (shutting_down_ ? "client shut down after " : "deadline exceeded after ") +
                std::to_string(r.elapsed.count()) + " ms";
  } else if (*rc == CURLE_OK) {
    if (r.status >= 200 && r.status < 300) {
      r.error = FetchError::kNone;
    } else {
      r.error = FetchError::kHttpStatus;
      r.message = "HTTP status " + std::to_string(r.status);
      if (!r.location.empty()) r.message += " (Location: " + r.location + ")";
    }
    r.body = std::move(t->body);
  } else {
    std::string detail = t->error;
    r.error = Classify(*rc, t->too_large, detail);
    if (r.error == FetchError::kTooLarge) {
      r.message = "response body exceeds " + std::to_string(options_.max_body_bytes) + " bytes";
    } else {
      r.message = curl_easy_strerror(*rc);
      if (!detail.empty()) r.message += ": " + detail;
    }
  }

  curl_multi_remove_handle(multi_, e);
  ReleaseEasy(e);
  curl_slist_free_all(t->headers);
  t->headers = nullptr;
  Batch* batch = t->batch;
  size_t index = t->index;
  --batch->running;
  auto it = std::find_if(active_.begin(), active_.end(),
                         [t](const std::unique_ptr<Transfer>& a) { return a.get() == t; });
  std::unique_ptr<Transfer> owned = std::move(*it);
  *it = std::move(active_.back());
  active_.pop_back();
  Complete(batch, index, std::move(r));  // `batch` may be gone now.
}

CURL* HttpClient::Impl::AcquireEasy() {
  if (idle_easy_.empty()) return curl_easy_init();
  CURL* easy = idle_easy_.back();
  idle_easy_.pop_back();
  return easy;
}

void HttpClient::Impl::ReleaseEasy(CURL* easy) {
  // Reset drops every option (and so every pointer into the finished Transfer) but keeps the
  // handle's caches; connections live in the multi handle's cache either way.
  curl_easy_reset(easy);
  if (idle_easy_.size() < options_.max_in_flight) {
    idle_easy_.push_back(easy);
  } else {
    curl_easy_cleanup(easy);
  }
}

HttpClient::HttpClient(ClientOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

HttpClient::~HttpClient() = default;

std::vector<FetchResult> HttpClient::FetchAll(std::span<const FetchRequest> batch,
                                              std::chrono::steady_clock::time_point deadline,
                                              const OnResult& on_result) {
  return impl_->FetchAll(batch, deadline, on_result);
}

}  // namespace modelmetrics::net
