#include "mojoup/credproxy/session_ca.h"

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <map>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "fmt/format.h"
#include "server_tls.h"

namespace mojoup::credproxy {
// OpenSSL's keys and certificates, owned. Not in the anonymous namespace:
// SessionCa::Keys, which has external linkage, holds them.
namespace session_ca_owned {
struct KeyFree {
  void operator()(EVP_PKEY* key) const { EVP_PKEY_free(key); }
};
struct CertFree {
  void operator()(X509* cert) const { X509_free(cert); }
};
}  // namespace session_ca_owned

namespace {

using Key = std::unique_ptr<EVP_PKEY, session_ca_owned::KeyFree>;
using Cert = std::unique_ptr<X509, session_ca_owned::CertFree>;

constexpr long kValiditySeconds = 7 * 24 * 3600;

absl::Status OpenSslError(std::string_view what) {
  char text[256] = "unknown error";
  if (unsigned long code = ERR_get_error()) ERR_error_string_n(code, text, sizeof text);
  return absl::InternalError(fmt::format("{}: {}", what, text));
}

Key NewP256Key() { return Key(EVP_EC_gen("P-256")); }

bool AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `subject_cn`, valid from an hour ago, serial random.
Cert NewCertificate(const std::string& subject_cn, EVP_PKEY* public_key) {
  Cert cert(X509_new());
  if (!cert) return nullptr;
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  RAND_bytes(serial, sizeof serial);
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), kValiditySeconds);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>("mojoup node"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                             reinterpret_cast<const unsigned char*>(subject_cn.c_str()), -1, -1, 0);
  X509_set_pubkey(cert.get(), public_key);
  return cert;
}

std::string Pem(X509* cert) {
  BIO* bio = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(bio, cert);
  char* data = nullptr;
  long size = BIO_get_mem_data(bio, &data);
  std::string pem(data, static_cast<std::size_t>(size));
  BIO_free(bio);
  return pem;
}

int SelectHttp11(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                 unsigned int inlen, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, outlen, kHttp11, sizeof kHttp11, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    return SSL_TLSEXT_ERR_NOACK;  // the client offered no http/1.1: go on without ALPN
  }
  *out = selected;
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

struct SessionCa::Keys {
  Key ca_key;
  Cert ca_cert;
  Key leaf_key;  // one key for every leaf of this session
};

// Connections ask for contexts from many threads at once.
struct SessionCa::Minted {
  absl::Mutex mu;
  std::map<std::string, std::shared_ptr<ServerTls>> by_host ABSL_GUARDED_BY(mu);
};

SessionCa::SessionCa() : keys_(std::make_unique<Keys>()), minted_(std::make_unique<Minted>()) {}
SessionCa::~SessionCa() = default;

absl::StatusOr<std::unique_ptr<SessionCa>> SessionCa::Create(const std::string& session) {
  std::unique_ptr<SessionCa> ca(new SessionCa());
  ca->keys_->ca_key = NewP256Key();
  ca->keys_->leaf_key = NewP256Key();
  if (!ca->keys_->ca_key || !ca->keys_->leaf_key) return OpenSslError("EC P-256 key generation");
  Cert cert = NewCertificate(fmt::format("mojoup session CA {}", session), ca->keys_->ca_key.get());
  if (!cert) return OpenSslError("CA certificate");
  X509_set_issuer_name(cert.get(), X509_get_subject_name(cert.get()));
  if (!AddExtension(cert.get(), cert.get(), NID_basic_constraints, "critical,CA:TRUE,pathlen:0") ||
      !AddExtension(cert.get(), cert.get(), NID_key_usage, "critical,keyCertSign,cRLSign") ||
      !AddExtension(cert.get(), cert.get(), NID_subject_key_identifier, "hash")) {
    return OpenSslError("CA certificate extensions");
  }
  if (X509_sign(cert.get(), ca->keys_->ca_key.get(), EVP_sha256()) == 0) {
    return OpenSslError("signing the CA certificate");
  }
  ca->certificate_pem_ = Pem(cert.get());
  ca->keys_->ca_cert = std::move(cert);
  return ca;
}

absl::StatusOr<std::shared_ptr<ServerTls>> SessionCa::ServerContext(const std::string& host) {
  absl::MutexLock lock(&minted_->mu);
  if (auto it = minted_->by_host.find(host); it != minted_->by_host.end()) return it->second;

  Cert leaf = NewCertificate(host, keys_->leaf_key.get());
  if (!leaf) return OpenSslError("leaf certificate");
  X509_set_issuer_name(leaf.get(), X509_get_subject_name(keys_->ca_cert.get()));
  std::string bare = host;
  if (bare.size() > 2 && bare.front() == '[') bare = bare.substr(1, bare.size() - 2);
  unsigned char ip[16];
  const bool is_ip =
      inet_pton(AF_INET, bare.c_str(), ip) == 1 || inet_pton(AF_INET6, bare.c_str(), ip) == 1;
  const std::string san = (is_ip ? "IP:" : "DNS:") + bare;
  if (!AddExtension(leaf.get(), keys_->ca_cert.get(), NID_subject_alt_name, san.c_str()) ||
      !AddExtension(leaf.get(), keys_->ca_cert.get(), NID_basic_constraints, "critical,CA:FALSE") ||
      !AddExtension(leaf.get(), keys_->ca_cert.get(), NID_key_usage, "critical,digitalSignature") ||
      !AddExtension(leaf.get(), keys_->ca_cert.get(), NID_ext_key_usage, "serverAuth") ||
      !AddExtension(leaf.get(), keys_->ca_cert.get(), NID_authority_key_identifier,
                    "keyid:always")) {
    return OpenSslError(fmt::format("leaf certificate extensions for {}", host));
  }
  if (X509_sign(leaf.get(), keys_->ca_key.get(), EVP_sha256()) == 0) {
    return OpenSslError(fmt::format("signing the leaf certificate for {}", host));
  }
  auto context = std::make_shared<ServerTls>();
  SSL_CTX* ctx = context->context().native_handle();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  if (SSL_CTX_use_certificate(ctx, leaf.get()) != 1 ||
      SSL_CTX_add1_chain_cert(ctx, keys_->ca_cert.get()) != 1 ||
      SSL_CTX_use_PrivateKey(ctx, keys_->leaf_key.get()) != 1) {
    return OpenSslError(fmt::format("TLS context for {}", host));
  }
  SSL_CTX_set_alpn_select_cb(ctx, SelectHttp11, nullptr);
  minted_->by_host[host] = context;
  return context;
}

}  // namespace mojoup::credproxy
