// See api_openapi.h.
#include "apiserver/api_openapi.h"
#include "json_dump.h"

#include <openssl/sha.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"

namespace modelmetrics::deployment {
namespace {

using OrderedJson = nlohmann::ordered_json;

// `worker.gpustack.ai` -> `ai.gpustack.worker`, as Kubernetes names the types of a CRD group.
std::string ReversedGroup(std::string_view group) {
  std::vector<std::string_view> parts;
  for (size_t start = 0;;) {
    const size_t dot = group.find('.', start);
    parts.push_back(group.substr(start, dot - start));
    if (dot == std::string_view::npos) break;
    start = dot + 1;
  }
  std::reverse(parts.begin(), parts.end());
  return fmt::format("{}", fmt::join(parts, "."));
}

// The schemas, with references spelled by `ref` (v2: #/definitions/, v3: #/components/schemas/).
class Schemas {
 public:
  Schemas(const MetricsApi& api, std::string ref_prefix)
      : api_(api),
        prefix_(ReversedGroup(api.group) + "." + api.version + "."),
        ref_prefix_(std::move(ref_prefix)) {}

  std::string Name(std::string_view type) const { return prefix_ + std::string(type); }
  OrderedJson Ref(std::string_view type) const { return {{"$ref", ref_prefix_ + Name(type)}}; }

  OrderedJson All() const {
    OrderedJson all;
    all[Name(kMetricsKind)] = Kind();
    all[Name("DeploymentGauge")] =
        Object("A gauge summed over the deployment's Pods of one role, from one source.",
               {{"name", Text("The metric, e.g. running_requests.")},
                {"source", Text("The exporter family it was read from.")},
                {"scope", Text("`router` or `engine/<role>`.")},
                {"unit", Text("The value's unit.")},
                {"value", Number("The sum over the Pods that reported it.")},
                {"podCount", Integer("How many Pods reported it.")},
                {"observedAt", Time("The newest read that went into it.")}},
               {"name", "source", "scope", "unit", "value", "podCount", "observedAt"});
    all[Name("DeploymentWindow")] =
        Object("A rate or mean over the window between two reads of one Pod.",
               {{"name", Text("The metric, e.g. ttft_mean.")},
                {"pod", Text("The Pod it was read from.")},
                {"source", Text("The exporter family it was read from.")},
                {"scope", Text("`router` or `engine/<role>`.")},
                {"unit", Text("The value's unit.")},
                {"value", Number("The value over the window.")},
                {"samples", Number("Observations in the window.")},
                {"windowSeconds", Number("The window's length.")},
                {"observedAt", Time("The window's end.")}},
               {"name", "pod", "source", "scope", "unit", "value", "samples", "windowSeconds",
                "observedAt"});
    all[Name("CacheHit")] =
        Object("Prefix-cache hits against queries over a window.",
               {{"pod", Text("The Pod, or empty when summed over several.")},
                {"source", Text("The exporter family it was read from.")},
                {"scope", Text("Which cache: local-prefix, external-store, device-prefix, ...")},
                {"unit", Text("What hits and queries count (tokens).")},
                {"hits", Number("Hits in the window.")},
                {"queries", Number("Queries in the window.")},
                {"rate", Number("hits / queries.")},
                {"windowSeconds", Number("The window's length.")},
                {"podCount", Integer("Pods summed.")},
                {"observedAt", Time("The window's end.")}},
               {"pod", "source", "scope", "unit", "hits", "queries", "rate", "windowSeconds",
                "podCount", "observedAt"});
    all[Name("MissingMetric")] =
        Object("Something the snapshot could not read, and why.",
               {{"pod", Text("The Pod, or empty for the deployment.")},
                {"source", Text("The exporter family or object concerned.")},
                {"reason", Text("Why it is missing.")}},
               {"pod", "source", "reason"});
    return all;
  }

 private:
  static OrderedJson Text(std::string_view description) {
    return {{"description", description}, {"type", "string"}, {"default", ""}};
  }
  static OrderedJson Number(std::string_view description) {
    return {{"description", description}, {"type", "number"}, {"format", "double"}};
  }
  static OrderedJson Integer(std::string_view description) {
    return {{"description", description}, {"type", "integer"}, {"format", "int32"}};
  }
  static OrderedJson Time(std::string_view description) {
    return {{"description", description}, {"type", "string"}, {"format", "date-time"}};
  }
  static OrderedJson Object(std::string_view description, OrderedJson properties,
                            std::vector<std::string> required) {
    return {{"description", description},
            {"type", "object"},
            {"required", std::move(required)},
            {"properties", std::move(properties)}};
  }
  OrderedJson List(std::string_view description, std::string_view type) const {
    return {{"description", description}, {"type", "array"}, {"items", Ref(type)}};
  }

  OrderedJson Kind() const {
    OrderedJson metadata = Object(
        "The ModelDeployment's name and namespace.",
        {{"name", Text("The ModelDeployment's name.")},
         {"namespace", Text("The ModelDeployment's namespace.")},
         {"creationTimestamp", {{"type", "string"}, {"format", "date-time"}, {"nullable", true}}}},
        {});
    metadata.erase("required");
    OrderedJson kind = Object(
        "The metrics of one ModelDeployment, read from its engine and router Pods at one "
        "instant.",
        {{"apiVersion", Text("The API's group/version.")},
         {"kind", Text("ModelDeploymentMetrics.")},
         {"metadata", std::move(metadata)},
         {"timestamp", Time("When the snapshot was taken.")},
         {"processing", List("Requests being processed, per role.", "DeploymentGauge")},
         {"queueing", List("Requests waiting, per role.", "DeploymentGauge")},
         {"cacheHits", List("Prefix-cache hit rates.", "CacheHit")},
         {"missing", List("What could not be read, with exact reasons.", "MissingMetric")},
         {"partial", {{"description", "Some Pod or metric is missing."}, {"type", "boolean"}}},
         {"latency", List("Latency means over each Pod's window.", "DeploymentWindow")},
         {"traffic", List("Request and token rates over each Pod's window.", "DeploymentWindow")},
         {"transfer",
          List("KV and stage transfer rates over each Pod's window.", "DeploymentWindow")}},
        {"timestamp", "partial"});
    kind["x-kubernetes-group-version-kind"] = OrderedJson::array(
        {{{"group", api_.group}, {"kind", kMetricsKind}, {"version", api_.version}}});
    return kind;
  }

  const MetricsApi& api_;
  std::string prefix_;
  std::string ref_prefix_;
};

std::string OperationId(const MetricsApi& api, std::string_view suffix) {
  // readWorkerGpustackAiV1NamespacedModelDeploymentMetrics, Kubernetes' operation id shape.
  std::string id = "read";
  bool upper = true;
  for (char c : api.group + "." + api.version) {
    if (c == '.' || c == '-') {
      upper = true;
      continue;
    }
    id.push_back(upper && c >= 'a' && c <= 'z' ? static_cast<char>(c - 'a' + 'A') : c);
    upper = false;
  }
  return id + "Namespaced" + std::string(kMetricsKind) + std::string(suffix);
}

OrderedJson PathParameter(std::string_view name, std::string_view description, bool v3) {
  OrderedJson parameter{
      {"name", name}, {"in", "path"}, {"description", description}, {"required", true}};
  if (v3) {
    parameter["schema"] = {{"type", "string"}, {"uniqueItems", true}};
  } else {
    parameter["type"] = "string";
    parameter["uniqueItems"] = true;
  }
  return parameter;
}

// `operation_suffix` keeps the two paths' operation ids apart.
OrderedJson PathItem(const MetricsApi& api, const Schemas& schemas, bool v3,
                     std::string_view operation_suffix) {
  OrderedJson ok{{"description", "OK"}};
  if (v3) {
    ok["content"] = {{"application/json", {{"schema", schemas.Ref(kMetricsKind)}}}};
  } else {
    ok["schema"] = schemas.Ref(kMetricsKind);
  }
  OrderedJson get{{"tags", OrderedJson::array({api.group + "_" + api.version})},
                  {"description", "read the metrics of the specified ModelDeployment"},
                  {"operationId", OperationId(api, operation_suffix)},
                  {"responses", {{"200", ok}, {"401", {{"description", "Unauthorized"}}}}},
                  {"x-kubernetes-action", "get"},
                  {"x-kubernetes-group-version-kind",
                   {{"group", api.group}, {"version", api.version}, {"kind", kMetricsKind}}}};
  if (!v3) {
    get["consumes"] = OrderedJson::array({"*/*"});
    get["produces"] = OrderedJson::array({"application/json"});
    get["schemes"] = OrderedJson::array({"https"});
  }
  return {{"get", std::move(get)},
          {"parameters",
           OrderedJson::array({PathParameter("name", "name of the ModelDeployment", v3),
                               PathParameter("namespace",
                                             "object name and auth scope, such as for teams and "
                                             "projects",
                                             v3)})}};
}

// The subresource (as Kubernetes would name its operation) and the resource of its own.
OrderedJson Paths(const MetricsApi& api, const Schemas& schemas, bool v3) {
  return {{api.MetricsPath("{namespace}", "{name}"), PathItem(api, schemas, v3, "")},
          {api.ObjectPath("{namespace}", "{name}"), PathItem(api, schemas, v3, "Object")}};
}

std::string BuildV2(const MetricsApi& api) {
  const Schemas schemas(api, "#/definitions/");
  OrderedJson doc{{"swagger", "2.0"},
                  {"info", {{"title", "modelmetrics"}, {"version", api.version}}},
                  {"paths", Paths(api, schemas, false)},
                  {"definitions", schemas.All()}};
  return DumpJson(doc);
}

std::string BuildV3(const MetricsApi& api) {
  const Schemas schemas(api, "#/components/schemas/");
  OrderedJson doc{{"openapi", "3.0.0"},
                  {"info", {{"title", "modelmetrics"}, {"version", api.version}}},
                  {"paths", Paths(api, schemas, true)},
                  {"components", {{"schemas", schemas.All()}}}};
  return DumpJson(doc);
}

net::HttpResponse Document(const std::string& body, const std::string& etag) {
  net::HttpResponse response;
  response.content_type = "application/json";
  response.body = body;
  response.headers.emplace_back("ETag", "\"" + etag + "\"");
  response.headers.emplace_back("Vary", "Accept");
  return response;
}

bool EtagMatches(const net::HttpRequest& request, const std::string& etag) {
  const std::string_view sent = request.headers.Get("If-None-Match");
  return !sent.empty() && (sent == "\"" + etag + "\"" || sent == etag || sent == "*");
}

net::HttpResponse NotModified(const std::string& etag) {
  net::HttpResponse response;
  response.status = 304;
  response.headers.emplace_back("ETag", "\"" + etag + "\"");
  return response;
}

// kube-openapi answers 406 when the client accepts neither JSON nor anything.
bool AcceptsJson(const net::HttpRequest& request) {
  const std::string_view accept = request.headers.Get("Accept");
  return accept.empty() || accept.find("application/json") != std::string_view::npos ||
         accept.find("*/*") != std::string_view::npos ||
         accept.find("application/*") != std::string_view::npos;
}

net::HttpResponse NotAcceptable() {
  net::HttpResponse response = net::HttpResponse::Text(
      406, "the server can only serve application/json for this document\n");
  return response;
}

}  // namespace

std::string DocumentHash(std::string_view bytes) {
  unsigned char digest[SHA512_DIGEST_LENGTH];
  SHA512(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  std::string hex;
  for (unsigned char byte : digest) fmt::format_to(std::back_inserter(hex), "{:02X}", byte);
  return hex;
}

OpenApiDocuments::OpenApiDocuments(const MetricsApi& api)
    : v2_(BuildV2(api)),
      v3_group_version_(BuildV3(api)),
      v3_path_("/openapi/v3" + api.VersionPath()) {
  v2_etag_ = DocumentHash(v2_);
  v3_hash_ = DocumentHash(v3_group_version_);
  OrderedJson index{{"paths",
                     {{api.VersionPath().substr(1),
                       {{"serverRelativeURL", fmt::format("{}?hash={}", v3_path_, v3_hash_)}}}}}};
  v3_index_ = DumpJson(index);
  v3_index_etag_ = DocumentHash(v3_index_);
}

std::optional<net::HttpResponse> OpenApiDocuments::Serve(const net::HttpRequest& request) const {
  std::string_view path = request.path;
  if (path.size() > 1 && path.back() == '/') path.remove_suffix(1);
  const bool document = path == "/openapi/v2" || path == "/openapi/v3" || path == v3_path_;
  if (document && !AcceptsJson(request)) return NotAcceptable();
  if (path == "/openapi/v2") {
    if (EtagMatches(request, v2_etag_)) return NotModified(v2_etag_);
    return Document(v2_, v2_etag_);
  }
  if (path == "/openapi/v3") {
    if (EtagMatches(request, v3_index_etag_)) return NotModified(v3_index_etag_);
    net::HttpResponse response = Document(v3_index_, v3_index_etag_);
    response.headers.emplace_back("Cache-Control", "no-cache, private");
    return response;
  }
  if (path != v3_path_) return std::nullopt;
  const std::vector<std::string> hashes = base::QueryValues(request.query, "hash");
  if (!hashes.empty() && hashes.front() != v3_hash_) {
    net::HttpResponse moved;
    moved.status = 301;
    moved.headers.emplace_back("Location", fmt::format("{}?hash={}", v3_path_, v3_hash_));
    return moved;
  }
  if (EtagMatches(request, v3_hash_)) return NotModified(v3_hash_);
  net::HttpResponse response = Document(v3_group_version_, v3_hash_);
  if (hashes.empty()) {
    response.headers.emplace_back("Cache-Control", "no-cache, private");
  } else {
    response.headers.emplace_back("Cache-Control", "public, immutable");
    const std::time_t in_a_year = std::chrono::system_clock::to_time_t(
        std::chrono::system_clock::now() + std::chrono::hours(24 * 365));
    std::tm utc{};
    gmtime_r(&in_a_year, &utc);
    char expires[64];
    std::strftime(expires, sizeof(expires), "%a, %d %b %Y %H:%M:%S GMT", &utc);
    response.headers.emplace_back("Expires", expires);
  }
  return response;
}

}  // namespace modelmetrics::deployment
