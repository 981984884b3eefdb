// One line of JSON for an answer that may carry outside bytes (a request path, a name): bytes
// that are not UTF-8 are written as U+FFFD instead of making nlohmann throw.
//
// Thread-safety: a pure function.
#ifndef MODELMETRICS_APISERVER_JSON_DUMP_H_
#define MODELMETRICS_APISERVER_JSON_DUMP_H_

#include <string>

#include <nlohmann/json.hpp>

namespace modelmetrics::deployment {

template <typename Json>
std::string DumpJson(const Json& json) {
  return json.dump(-1, ' ', false, Json::error_handler_t::replace);
}

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_APISERVER_JSON_DUMP_H_
