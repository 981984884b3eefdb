// See api_responses.h.
#include "api_responses.h"

#include <utility>

namespace modelmetrics::deployment {

net::HttpResponse JsonResponse(int code, std::string body) {
  net::HttpResponse response;
  response.status = code;
  response.content_type = "application/json";
  response.body = std::move(body);
  return response;
}

int ErrorCode(int code) { return code >= 400 && code <= 599 ? code : 500; }

net::HttpResponse StatusResponse(const Status& status, const StatusDetails* details,
                                 bool with_details, int retry_after_seconds) {
  net::HttpResponse response = JsonResponse(
      ErrorCode(status.code()), StatusJson(status, details, with_details, retry_after_seconds));
  if (retry_after_seconds > 0) {
    response.headers.emplace_back("Retry-After", std::to_string(retry_after_seconds));
  }
  return response;
}

net::HttpResponse TooManyRequests(const StatusDetails* details) {
  return StatusResponse({429, "TooManyRequests", "Too many requests, please try again later."},
                        details, /*with_details=*/true, /*retry_after_seconds=*/1);
}

}  // namespace modelmetrics::deployment
