// X.509 certificates made at run time: the self-signed serving certificate `serve` can make at
// start-up (what metrics-server does by default; its APIService then skips verification, so the
// base install needs no certificate manager), and certificates signed by a given CA (the tests'
// client certificates, whose Organizations are Kubernetes groups). Keys are P-256 and never leave
// the caller's memory.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_NET_CERTIFICATE_H_
#define MODELMETRICS_NET_CERTIFICATE_H_

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace modelmetrics::net {

using base::Status;

struct CertificateSpec {
  std::string common_name;                 // subject CN (a client certificate's user)
  std::vector<std::string> organizations;  // subject O entries (its groups), in order
  std::vector<std::string> hosts;          // subjectAltNames: IP literals as IP, others as DNS
  long serial = 1;
  std::chrono::seconds valid_for{std::chrono::hours(365 * 24)};  // from an hour ago
  // The signing CA, PEM; both empty: self-signed.
  std::string issuer_cert_pem;
  std::string issuer_key_pem;
};

// PEM text in `*cert_pem` and `*key_pem`; an error when OpenSSL fails, a host is empty or holds
// a comma, or the issuer's PEM does not load.
Status MakeCertificate(const CertificateSpec& spec, std::string* cert_pem, std::string* key_pem);

// A self-signed certificate for `hosts`, subject CN `common_name`, valid for a year.
Status SelfSignedCertificate(std::string_view common_name, const std::vector<std::string>& hosts,
                             std::string* cert_pem, std::string* key_pem);

}  // namespace modelmetrics::net

#endif  // MODELMETRICS_NET_CERTIFICATE_H_
