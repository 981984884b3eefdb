// Kubernetes' name rules, as its validation package words them, for names that arrive in request
// paths and settings.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_KUBE_KUBE_NAMES_H_
#define MODELMETRICS_KUBE_KUBE_NAMES_H_

#include <string>
#include <string_view>

namespace modelmetrics::deployment {

// DNS-1123 names as Kubernetes validates them. Empty when valid, else Kubernetes' message
// (`must be no more than 63 characters`, `a lowercase RFC 1123 label must consist of ...`).
std::string ValidateDns1123Label(std::string_view value);
std::string ValidateDns1123Subdomain(std::string_view value);

// An API group an APIService can name: a DNS-1123 subdomain with at least one dot (as
// kube-apiserver requires of APIService groups, `example.com`). Empty when valid.
std::string ValidateApiGroup(std::string_view group);
// An API version as Kubernetes orders them: `v1`, `v2beta1`, `v1alpha3` (a DNS-1035 label that
// kube-aggregator sorts by its version priority). Empty when valid.
std::string ValidateApiVersion(std::string_view version);

}  // namespace modelmetrics::deployment

#endif  // MODELMETRICS_KUBE_KUBE_NAMES_H_
