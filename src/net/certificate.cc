// See certificate.h.
#include "net/certificate.h"

#include <arpa/inet.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <memory>

namespace modelmetrics::net {
namespace {

using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using CertPtr = std::unique_ptr<X509, decltype(&X509_free)>;
using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

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

// "DNS:a,IP:127.0.0.1"; false when a host is empty or holds a comma.
bool AltNames(const std::vector<std::string>& hosts, std::string* names) {
  for (const std::string& host : hosts) {
    if (host.empty() || host.find(',') != std::string::npos) return false;
    *names += (names->empty() ? "" : ",") + std::string(IsIpLiteral(host) ? "IP:" : "DNS:") + host;
  }
  return true;
}

void AddName(X509_NAME* name, const char* field, const std::string& value) {
  X509_NAME_add_entry_by_txt(name, field, MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(value.c_str()), -1, -1, 0);
}

bool AddAltNames(X509* cert, X509* issuer, const std::string& names) {
  if (names.empty()) return true;
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* san = X509V3_EXT_conf_nid(nullptr, &ctx, NID_subject_alt_name, names.c_str());
  const bool ok = san != nullptr && X509_add_ext(cert, san, -1) == 1;
  X509_EXTENSION_free(san);
  return ok;
}

// The issuer's certificate and key from PEM; both null for a self-signed certificate.
bool LoadIssuer(const CertificateSpec& spec, CertPtr* cert, KeyPtr* key) {
  if (spec.issuer_cert_pem.empty() && spec.issuer_key_pem.empty()) return true;
  BioPtr cert_bio(
      BIO_new_mem_buf(spec.issuer_cert_pem.data(), static_cast<int>(spec.issuer_cert_pem.size())),
      BIO_free);
  BioPtr key_bio(
      BIO_new_mem_buf(spec.issuer_key_pem.data(), static_cast<int>(spec.issuer_key_pem.size())),
      BIO_free);
  if (!cert_bio || !key_bio) return false;
  cert->reset(PEM_read_bio_X509(cert_bio.get(), nullptr, nullptr, nullptr));
  key->reset(PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  return *cert && *key;
}

}  // namespace

Status MakeCertificate(const CertificateSpec& spec, std::string* cert_pem, std::string* key_pem) {
  std::string names;
  if (!AltNames(spec.hosts, &names)) {
    return Status::InvalidArgument("certificate: a host name is empty or holds a comma");
  }
  CertPtr issuer(nullptr, X509_free);
  KeyPtr issuer_key(nullptr, EVP_PKEY_free);
  if (!LoadIssuer(spec, &issuer, &issuer_key)) {
    return Status::InvalidArgument("certificate: the issuer's certificate or key does not load");
  }
  KeyPtr key(EVP_EC_gen("P-256"), EVP_PKEY_free);
  CertPtr cert(X509_new(), X509_free);
  BioPtr cert_bio(BIO_new(BIO_s_mem()), BIO_free);
  BioPtr key_bio(BIO_new(BIO_s_mem()), BIO_free);
  bool ok = key && cert && cert_bio && key_bio;
  if (ok) {
    X509_set_version(cert.get(), 2);
    ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), spec.serial);
    X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
    X509_gmtime_adj(X509_getm_notAfter(cert.get()), spec.valid_for.count());
    X509_set_pubkey(cert.get(), key.get());
    X509_NAME* name = X509_get_subject_name(cert.get());
    for (const std::string& organization : spec.organizations) AddName(name, "O", organization);
    AddName(name, "CN", spec.common_name);
    X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer.get()) : name);
    ok = AddAltNames(cert.get(), issuer ? issuer.get() : cert.get(), names) &&
         X509_sign(cert.get(), issuer_key ? issuer_key.get() : key.get(), EVP_sha256()) > 0 &&
         PEM_write_bio_X509(cert_bio.get(), cert.get()) == 1 &&
         PEM_write_bio_PrivateKey(key_bio.get(), key.get(), nullptr, nullptr, 0, nullptr,
                                  nullptr) == 1;
  }
  if (!ok) return Status::Internal("certificate: OpenSSL could not make one");
  *cert_pem = MemoryText(cert_bio.get());
  *key_pem = MemoryText(key_bio.get());
  return Status::Ok();
}

Status SelfSignedCertificate(std::string_view common_name, const std::vector<std::string>& hosts,
                             std::string* cert_pem, std::string* key_pem) {
  CertificateSpec spec{.common_name = std::string(common_name), .hosts = hosts};
  return MakeCertificate(spec, cert_pem, key_pem).Prefixed("self-signed ");
}

}  // namespace modelmetrics::net
