// See kube_names.h. Messages as k8s.io/apimachinery's validation package writes them.
#include "kube/kube_names.h"

#include <algorithm>

namespace modelmetrics::deployment {
namespace {

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`, any length.
bool IsLabelShape(std::string_view value) {
  return !value.empty() && IsLowerAlnum(value.front()) && IsLowerAlnum(value.back()) &&
         std::all_of(value.begin(), value.end(),
                     [](char c) { return IsLowerAlnum(c) || c == '-'; });
}

}  // namespace

std::string ValidateDns1123Label(std::string_view value) {
  if (value.size() > 63) return "must be no more than 63 characters";
  if (IsLabelShape(value)) return "";
  return "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
         "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
         "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
}

std::string ValidateDns1123Subdomain(std::string_view value) {
  if (value.size() > 253) return "must be no more than 253 characters";
  // Dot-separated label shapes; only the whole name is length-limited, as in Kubernetes.
  bool valid = true;
  for (std::string_view rest = value;;) {
    const size_t dot = rest.find('.');
    valid = valid && IsLabelShape(rest.substr(0, dot));
    if (dot == std::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  if (valid) return "";
  return "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
         "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
         "regex used for validation is "
         "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
}

std::string ValidateApiGroup(std::string_view group) {
  if (std::string why = ValidateDns1123Subdomain(group); !why.empty()) return why;
  if (group.find('.') == std::string_view::npos) {
    return "must be a domain name with at least one dot (e.g. metrics.example.com)";
  }
  return "";
}

std::string ValidateApiVersion(std::string_view version) {
  // v<major>[(alpha|beta)<minor>], numbers without leading zeros.
  const auto number = [&version](size_t* at) {
    const size_t start = *at;
    while (*at < version.size() && version[*at] >= '0' && version[*at] <= '9') ++*at;
    return *at > start && version[start] != '0';
  };
  size_t at = 1;
  bool valid = version.size() <= 63 && !version.empty() && version[0] == 'v' && number(&at);
  for (std::string_view stage : {"alpha", "beta"}) {
    if (valid && version.substr(at, stage.size()) == stage) {
      at += stage.size();
      valid = number(&at);
      break;
    }
  }
  if (valid && at == version.size()) return "";
  return "must be a Kubernetes API version: v1, v2beta1, v1alpha2 (v, a major number, optionally "
         "alpha or beta and a minor number)";
}

}  // namespace modelmetrics::deployment
