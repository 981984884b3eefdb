// Client certificates for the tests, signed at run time by the TLS fixtures' CA (ca.pem and
// ca-key.pem under test_paths::Tls), through the product's own net::MakeCertificate.
//
// Thread-safety: pure functions.
#ifndef MODELMETRICS_TESTS_PATHS_TEST_CERTIFICATES_H_
#define MODELMETRICS_TESTS_PATHS_TEST_CERTIFICATES_H_

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "net/certificate.h"
#include "status_matchers.h"
#include "test_paths.h"

namespace modelmetrics::test_paths {

struct TestCertificate {
  std::string cert_pem;
  std::string key_pem;
};

// Subject CN `common_name` (the user) and one O per organization (the groups), in order.
inline TestCertificate ClientCertificate(const std::string& common_name,
                                         std::vector<std::string> organizations, long serial) {
  const auto read = [](const std::string& path) {
    std::ifstream file(path);
    EXPECT_TRUE(file.good()) << path;
    std::stringstream text;
    text << file.rdbuf();
    return text.str();
  };
  net::CertificateSpec spec{.common_name = common_name,
                            .organizations = std::move(organizations),
                            .serial = serial,
                            .valid_for = std::chrono::hours(24),
                            .issuer_cert_pem = read(Tls("ca.pem")),
                            .issuer_key_pem = read(Tls("ca-key.pem"))};
  TestCertificate out;
  std::string error;
  EXPECT_OK(net::MakeCertificate(spec, &out.cert_pem, &out.key_pem));
  return out;
}

}  // namespace modelmetrics::test_paths

#endif  // MODELMETRICS_TESTS_PATHS_TEST_CERTIFICATES_H_
