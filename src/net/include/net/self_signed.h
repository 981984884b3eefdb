// A self-signed serving certificate made at start-up, for servers installed without one: what
// metrics-server does by default (its APIService then skips verification), so the base install
// needs no certificate manager. Its key never leaves the process's private folder.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_NET_SELF_SIGNED_H_
#define MODELMETRICS_NET_SELF_SIGNED_H_

#include <string>
#include <string_view>
#include <vector>

namespace modelmetrics::net {

// A P-256 certificate valid from an hour ago for a year, subject CN `common_name`, with each of
// `hosts` as a subjectAltName (IP literals as IP, anything else as DNS). PEM text in `*cert_pem`
// and `*key_pem`; false with `*error` when OpenSSL fails or a host is empty.
bool SelfSignedCertificate(std::string_view common_name, const std::vector<std::string>& hosts,
                           std::string* cert_pem, std::string* key_pem, std::string* error);

}  // namespace modelmetrics::net

#endif  // MODELMETRICS_NET_SELF_SIGNED_H_
