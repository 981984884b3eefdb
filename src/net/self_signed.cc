// See self_signed.h.
#include "net/self_signed.h"

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace modelmetrics::net {
namespace {

bool IsIpLiteral(const std::string& host) {
  unsigned char buffer[16];
  return inet_pton(AF_INET, host.c_str(), buffer) == 1 ||
         inet_pton(AF_INET6, host.c_str(), buffer) == 1;
}

std::string MemoryText(BIO* bio) {
  char* data = nullptr;
  const long size = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(size));
}

}  // namespace

bool SelfSignedCertificate(std::string_view common_name, const std::vector<std::string>& hosts,
                           std::string* cert_pem, std::string* key_pem, std::string* error) {
  std::string names;
  for (const std::string& host : hosts) {
    if (host.empty() || host.find(',') != std::string::npos) {
      *error = "self-signed certificate: a host name is empty or holds a comma";
      return false;
    }
    names += (names.empty() ? "" : ",") + std::string(IsIpLiteral(host) ? "IP:" : "DNS:") + host;
  }
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  std::unique_ptr<X509, decltype(&X509_free)> cert(X509_new(), X509_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> cert_bio(BIO_new(BIO_s_mem()), BIO_free);
  std::unique_ptr<BIO, decltype(&BIO_free)> key_bio(BIO_new(BIO_s_mem()), BIO_free);
  bool ok = key && cert && cert_bio && key_bio;
  if (ok) {
    X509_set_version(cert.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), 1);
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), 365L * 24 * 3600);
    X509_set_pubkey(cert.get(), key.get());
    X509_NAME* name = X509_get_subject_name(cert.get());
    const std::string cn(common_name);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                               reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
    X509_set_issuer_name(cert.get(), name);
    if (!names.empty()) {
      X509V3_CTX ctx;
      X509V3_set_ctx_nodb(&ctx);
      X509V3_set_ctx(&ctx, cert.get(), cert.get(), nullptr, nullptr, 0);
      X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, names.c_str());
      ok = san != nullptr && X509_add_ext(cert.get(), san, -1) == 1;
      X509_EXTENSION_free(san);
    }
    ok = ok && X509_sign(cert.get(), key.get(), EVP_sha256()) > 0 &&
         PEM_write_bio_X509(cert_bio.get(), cert.get()) == 1 &&
         PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr,
                                  nullptr) == 1;
  }
  if (!ok) {
    *error = "self-signed certificate: OpenSSL could not make one";
    return false;
  }
  *cert_pem = MemoryText(cert_bio.get());
  *key_pem = MemoryText(key_bio.get());
  return true;
}

}  // namespace modelmetrics::net
