// The API server's answers as HTTP responses: JSON bodies and Kubernetes Status errors (the
// Status JSON itself is StatusJson, api_server.h). Shared by the snapshot's routes and the custom
// metrics API's.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_APISERVER_API_RESPONSES_H_
#define MODELMETRICS_APISERVER_API_RESPONSES_H_

#include <string>

#include "apiserver/api_server.h"
#include "net/http_server.h"

namespace modelmetrics::deployment {

net::HttpResponse JsonResponse(int code, std::string body);

// An error code as sent: a status that is not an HTTP error (a source's bug) is a 500.
int ErrorCode(int code);

// `status` as a Status object: the deployment named in details; 401 without details, as
// Kubernetes sends it; Retry-After when `retry_after_seconds` > 0.
net::HttpResponse StatusResponse(const Status& status, const StatusDetails* details,
                                 bool with_details = true, int retry_after_seconds = 0);

// 429 with Retry-After: 1.
net::HttpResponse TooManyRequests(const StatusDetails* details);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_API_RESPONSES_H_
