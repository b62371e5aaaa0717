#include "node/config/trust_file.h"

#include <map>
#include <sstream>
#include <stdexcept>

#include "net/curve_keys.h"
#include "node/config/bounded_file.h"

namespace starling::node {

namespace {

std::string Trim(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

const TrustedKey* TrustFile::Find(const std::string& key) const {
  for (const TrustedKey& k : keys) {
    if (k.key == key) return &k;
  }
  return nullptr;
}

std::string ShortKey(const std::string& key) { return key.substr(0, 8) + "..."; }

std::string TrustFile::Label(const std::string& key) const {
  const TrustedKey* k = Find(key);
  if (k == nullptr || k->name.empty()) return "key " + ShortKey(key);
  return k->name + " (key " + ShortKey(key) + ")";
}

TrustFile ReadTrustFile(const std::string& path) {
  const std::string text = ReadBoundedFile(path, kMaxTrustFileBytes, "a trust file");
  TrustFile trust;
  trust.path = path;
  std::map<std::string, int> line_of;
  std::istringstream lines(text);
  std::string line;
  for (int number = 1; std::getline(lines, line); ++number) {
    const std::string trimmed = Trim(line);
    if (trimmed.empty()) continue;
    const size_t space = trimmed.find_first_of(" \t");
    const std::string first = trimmed.substr(0, space);
    if (!net::IsZ85Key(first)) {
      if (trimmed[0] == '#') continue;  // a comment (a key file's comment line among them)
      throw std::runtime_error(path + ":" + std::to_string(number) + ": '" + trimmed.substr(0, 60) +
                               "' is not a key: expected a 40-character Z85 CURVE public key "
                               "(the key line of a .pub file from starlingd --keygen), "
                               "optionally followed by a name, or a '#' comment");
    }
    if (auto [it, fresh] = line_of.emplace(first, number); !fresh) {
      throw std::runtime_error(path + ":" + std::to_string(number) + ": key " + ShortKey(first) +
                               " listed twice (first on line " + std::to_string(it->second) + ")");
    }
    TrustedKey key;
    key.key = first;
    key.line = number;
    if (space != std::string::npos) {
      std::string name = Trim(trimmed.substr(space));
      if (!name.empty() && name[0] == '#') name = Trim(name.substr(1));
      for (char& c : name) {
        if (static_cast<unsigned char>(c) < ' ' || c == 127) c = ' ';
      }
      key.name = name.substr(0, kMaxTrustNameLength);
    }
    trust.keys.push_back(std::move(key));
  }
  if (trust.keys.empty()) {
    throw std::runtime_error(path +
                             ": lists no key (one public key per line: cat each host's "
                             ".pub file from starlingd --keygen into it)");
  }
  return trust;
}

}  // namespace starling::node
