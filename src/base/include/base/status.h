// Status: the one way a function that can fail says how (LevelDB's Status is the model). It
// returns a Status by value: ok(), or a code and a message for the caller to act on or pass up.
// Results go through out-parameters (`Status Load(path, T* out)`), as in LevelDB.
//
// The codes are the HTTP status codes a Kubernetes Status object carries, with its reason
// (BadRequest, NotFound, ...): so one type is what a parser says about bad input, what the
// Kubernetes API answered (kube_api.h keeps its code and reason as sent), and what the API server
// answers a client, with no translation between idioms. Input a caller gave that cannot be used
// (a file, a flag, a document) is InvalidArgument (400); what the process could not do
// (a socket, memory) is Internal (500).
//
// Thread-safety: a plain value.
#ifndef MODELMETRICS_BASE_STATUS_H_
#define MODELMETRICS_BASE_STATUS_H_

#include <string>
#include <string_view>
#include <utility>

namespace modelmetrics::base {

// Kubernetes' StatusReason for an HTTP error code (BadRequest, Unauthorized, Forbidden, NotFound,
// ..., InternalError for any other 5xx); "" (StatusReasonUnknown) for other codes.
std::string_view ReasonForCode(int code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  // `reason` empty: ReasonForCode(code).
  Status(int code, std::string reason, std::string message)
      : code_(code),
        reason_(reason.empty() ? std::string(ReasonForCode(code)) : std::move(reason)),
        message_(std::move(message)) {}

  static Status Ok() { return {}; }
  static Status InvalidArgument(std::string message) {
    return {400, "BadRequest", std::move(message)};
  }
  static Status NotFound(std::string message) { return {404, "NotFound", std::move(message)}; }
  static Status Internal(std::string message) { return {500, "InternalError", std::move(message)}; }
  static Status Unavailable(std::string message) {
    return {503, "ServiceUnavailable", std::move(message)};
  }
  // Kept for the Kubernetes API's name of 400.
  static Status BadRequest(std::string message) { return InvalidArgument(std::move(message)); }

  bool ok() const { return code_ == 200; }
  bool not_found() const { return code_ == 404; }
  int code() const { return code_; }
  const std::string& reason() const { return reason_; }
  const std::string& message() const { return message_; }
  // The same status with `prefix` before its message ("config.yaml: " + what went wrong).
  Status Prefixed(std::string_view prefix) const {
    return ok() ? *this : Status(code_, reason_, std::string(prefix) + message_);
  }
  std::string ToString() const { return ok() ? "OK" : reason_ + ": " + message_; }

 private:
  int code_ = 200;
  std::string reason_;
  std::string message_;
};

}  // namespace modelmetrics::base

#endif  // MODELMETRICS_BASE_STATUS_H_
