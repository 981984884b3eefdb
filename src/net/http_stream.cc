// See http_stream.h.
#include "net/http_stream.h"

#include <curl/curl.h>

#include <memory>

namespace modelmetrics::net {
namespace {

constexpr size_t kMaxErrorBody = 64 * 1024;

struct Transfer {
  const std::function<bool(std::string_view)>* on_data = nullptr;
  const std::atomic<bool>* stop = nullptr;
  CURL* easy = nullptr;
  StreamResult* result = nullptr;
  bool refused = false;  // on_data said stop
};

size_t OnWrite(char* data, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t bytes = size * count;
  long status = 0;
  curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
  if (status < 200 || status > 299) {
    std::string& body = t->result->error_body;
    body.append(data, std::min(bytes, kMaxErrorBody - std::min(kMaxErrorBody, body.size())));
    return bytes;
  }
  if (!(*t->on_data)(std::string_view(data, bytes))) {
    t->refused = true;
    return CURL_WRITEFUNC_ERROR;
  }
  return bytes;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->stop != nullptr && t->stop->load() ? 1 : 0;  // non-zero aborts the transfer
}

}  // namespace

StreamResult Stream(const StreamOptions& options,
                    const std::function<bool(std::string_view data)>& on_data,
                    const std::atomic<bool>* stop) {
  StreamResult result;
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> easy(curl_easy_init(), curl_easy_cleanup);
  if (!easy) {
    result.error = "cannot start a transfer";
    return result;
  }
  curl_slist* list = nullptr;
  for (const auto& [name, value] : options.headers) {
    list = curl_slist_append(list, (name + ": " + value).c_str());
  }
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(list, curl_slist_free_all);
  Transfer t{&on_data, stop, easy.get(), &result};
  char error[CURL_ERROR_SIZE] = {0};
  CURL* e = easy.get();
  curl_easy_setopt(e, CURLOPT_URL, options.url.c_str());
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, error);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_PROXY, "");
  curl_easy_setopt(e, CURLOPT_NOPROXY, "*");
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(options.timeout.count()));
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                   static_cast<long>(options.connect_timeout.count()));
  // Nothing at all (not even a bookmark) for idle_timeout: the connection is dead.
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                   static_cast<long>(std::max<int64_t>(1, options.idle_timeout.count() / 1000)));
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnWrite);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, static_cast<void*>(&t));
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, static_cast<void*>(&t));
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
  if (!options.ca_file.empty()) {
    curl_easy_setopt(e, CURLOPT_CAINFO, options.ca_file.c_str());
    curl_easy_setopt(e, CURLOPT_CAPATH, static_cast<const char*>(nullptr));
  }
  if (!options.client_cert_file.empty()) {
    curl_easy_setopt(e, CURLOPT_SSLCERT, options.client_cert_file.c_str());
    if (!options.client_key_file.empty()) {
      curl_easy_setopt(e, CURLOPT_SSLKEY, options.client_key_file.c_str());
    }
  }
  const CURLcode code = curl_easy_perform(e);
  long status = 0;
  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
  result.status = static_cast<int>(status);
  if (t.refused || (stop != nullptr && stop->load())) {
    result.stopped = true;
  } else if (code == CURLE_OK) {
    result.completed = status >= 200 && status <= 299;
  } else {
    result.error = error[0] != '\0' ? error : curl_easy_strerror(code);
  }
  return result;
}

}  // namespace modelmetrics::net
