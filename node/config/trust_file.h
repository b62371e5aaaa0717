// The trust file of a run formed by joining a seed (starlingd --join): the CURVE public keys
// allowed in the network, one per line, as ssh's authorized_keys lists keys. It is copied once
// to every host; a node, a probe or a monitor is admitted only if its key is in it, and that is
// the only admission rule (the join port's CURVE allow-list; node/config/join_service.h).
//
// A line is a key (40 Z85 characters, the public key a .pub file from starlingd --keygen holds)
// optionally followed by a name for messages ("node-3 on rack 2"); or a comment starting with
// '#'; or blank. A Z85 key may itself begin with '#': a first word of 40 Z85 characters is a
// key. So `cat */node.pub > trust` makes a trust file whether or not the .pub files have a
// comment line.
#pragma once

#include <string>
#include <vector>

namespace starling::node {

struct TrustedKey {
  std::string key;   // Z85, 40 characters
  std::string name;  // the rest of its line (printable, at most kMaxTrustNameLength bytes), or ""
  int line = 0;
};

inline constexpr size_t kMaxTrustFileBytes = 4u << 20;
inline constexpr size_t kMaxTrustNameLength = 64;

struct TrustFile {
  std::string path;
  std::vector<TrustedKey> keys;  // in file order, each key once

  // The entry of `key`, or nullptr.
  const TrustedKey* Find(const std::string& key) const;
  // For messages: "NAME (key ABCDEFGH...)" or "key ABCDEFGH..." (the key's first 8 characters).
  std::string Label(const std::string& key) const;
};

// Reads and checks a trust file. Throws std::runtime_error "PATH:LINE: reason" for a line that
// is neither a key nor a comment, a key listed twice, and "PATH: reason" for a file that cannot
// be read, is larger than kMaxTrustFileBytes or lists no key.
TrustFile ReadTrustFile(const std::string& path);

// "ABCDEFGH..." : the first 8 characters of a key, for messages.
std::string ShortKey(const std::string& key);

}  // namespace starling::node
