// SHA-256 from the system's libcrypto (OpenSSL 3), for the log's per-event hashes: a
// context on the caller's stack and the library's SHA extensions code, through the one
// inline function below (called by `TreeFrontier.Node.sha256`). swift-crypto (used
// everywhere else) allocates and zeroes a context object per hash, which cost a replay more
// than the compression itself.
// OpenSSL 3 marks SHA256_Init/Update/Final deprecated in favour of EVP, whose context
// set-up per hash costs about as much again (measured: 128 ns against 283 ns for 64 bytes);
// they remain part of OpenSSL 3's API.
#ifndef AUTHLEDGER_CLIBCRYPTO_SHIM_H
#define AUTHLEDGER_CLIBCRYPTO_SHIM_H
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/sha.h>
#include <stddef.h>
#include <stdint.h>

/// SHA-256 of a ‖ b ‖ c (any may be empty) into out (32 bytes).
static inline void authledger_sha256(const void *a, size_t na, const void *b, size_t nb,
                                     const void *c, size_t nc, uint8_t *out) {
    SHA256_CTX ctx;
    SHA256_Init(&ctx);
    if (na) SHA256_Update(&ctx, a, na);
    if (nb) SHA256_Update(&ctx, b, nb);
    if (nc) SHA256_Update(&ctx, c, nc);
    SHA256_Final(out, &ctx);
}

#endif
