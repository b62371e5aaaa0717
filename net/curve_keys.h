// CURVE key pairs as Z85 text (ZeroMQ RFC 32): generation, key files and derivation.
//
// A key file holds one 40-character Z85 key on a line of its own; other lines (comments) are
// ignored, so a file is read the same with or without them. WriteCurveKeyFiles writes the
// public key alone (PREFIX.pub is one line, so that $(cat PREFIX.pub) is the key) and the secret
// key under a comment that says to keep it private. The secret key file is created with mode 0600
// and is refused when group or others may read it, as ssh does, since anyone who reads it can join
// the cluster as that node.
#pragma once

#include <string>

namespace starling::net {

struct CurveKeyPair {
  std::string public_key;  // Z85, 40 characters
  std::string secret_key;  // Z85, 40 characters
};

// True if `text` is 40 characters of the Z85 alphabet (a 32-byte CURVE key).
bool IsZ85Key(const std::string& text);

// A fresh key pair from libzmq (libsodium). Throws std::runtime_error if libzmq was built
// without CURVE.
CurveKeyPair GenerateCurveKeyPair();

// The public key that belongs to `secret_key`. Throws std::invalid_argument if it is not a Z85
// key.
std::string CurvePublicKeyOf(const std::string& secret_key);

// Generates a pair and writes PREFIX.key (the secret, mode 0600) and PREFIX.pub (the public key
// alone). Refuses to overwrite either file. Throws std::runtime_error naming the file on failure.
CurveKeyPair WriteCurveKeyFiles(const std::string& prefix);

// Reads the key in `path`. With secret = true also refuses a file that group or others can
// read. Throws std::runtime_error "PATH: reason".
std::string ReadCurveKeyFile(const std::string& path, bool secret);

}  // namespace starling::net
