#ifndef CLIBCRYPTO_SHIM_H
#define CLIBCRYPTO_SHIM_H

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/opensslv.h>

// Only what Swift cannot import directly lives here: function-like macros and
// API that is a macro in one OpenSSL line and a function in another. Every
// helper is `static inline` and prefixed `CLibCrypto_`.

#if OPENSSL_VERSION_NUMBER < 0x10101000L
#error "VaultCrypto requires OpenSSL 1.1.1 or later (ChaCha20-Poly1305, HKDF, scrypt)"
#endif

// MARK: - HKDF (EVP_PKEY_HKDF)
// OpenSSL 1.1.x defines these setters as macros over EVP_PKEY_CTX_ctrl; 3.x
// turns them into real functions. The wrappers compile against both.

static inline int CLibCrypto_EVP_PKEY_CTX_set_hkdf_md(EVP_PKEY_CTX *ctx, const EVP_MD *md) {
  return EVP_PKEY_CTX_set_hkdf_md(ctx, md);
}

static inline int CLibCrypto_EVP_PKEY_CTX_set1_hkdf_salt(EVP_PKEY_CTX *ctx,
                                                         const unsigned char *salt, int saltlen) {
  return EVP_PKEY_CTX_set1_hkdf_salt(ctx, salt, saltlen);
}

static inline int CLibCrypto_EVP_PKEY_CTX_set1_hkdf_key(EVP_PKEY_CTX *ctx,
                                                        const unsigned char *key, int keylen) {
  return EVP_PKEY_CTX_set1_hkdf_key(ctx, key, keylen);
}

static inline int CLibCrypto_EVP_PKEY_CTX_add1_hkdf_info(EVP_PKEY_CTX *ctx,
                                                         const unsigned char *info, int infolen) {
  return EVP_PKEY_CTX_add1_hkdf_info(ctx, info, infolen);
}

#endif
