#include "net/curve_keys.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace starling::net {

namespace {

constexpr char kZ85Alphabet[] =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";

// Creates `path` exclusively with `mode` and writes `text`; throws naming the file.
void WriteNewFile(const std::string& path, const std::string& text, mode_t mode) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) {
    const int err = errno;
    throw std::runtime_error(path + ": cannot create" +
                             (err == EEXIST ? std::string(": it exists; remove it first or pick "
                                                          "another prefix")
                                            : std::string(": ") + std::strerror(err)));
  }
  // O_CREAT's mode is masked by the umask; set the mode we promise explicitly.
  bool ok = ::fchmod(fd, mode) == 0;
  size_t done = 0;
  while (ok && done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  ok = ::fsync(fd) == 0 && ok;
  ok = ::close(fd) == 0 && ok;
  if (!ok) throw std::runtime_error(path + ": write failed: " + std::strerror(errno));
}

}  // namespace

bool IsZ85Key(const std::string& text) {
  return text.size() == 40 && text.find_first_not_of(kZ85Alphabet) == std::string::npos;
}

CurveKeyPair GenerateCurveKeyPair() {
  char public_key[41] = {}, secret_key[41] = {};
  if (zmq_curve_keypair(public_key, secret_key) != 0) {
    throw std::runtime_error(std::string("cannot generate a CURVE key pair: ") +
                             zmq_strerror(zmq_errno()) + " (libzmq without CURVE support?)");
  }
  return {public_key, secret_key};
}

std::string CurvePublicKeyOf(const std::string& secret_key) {
  char public_key[41] = {};
  if (!IsZ85Key(secret_key) || zmq_curve_public(public_key, secret_key.c_str()) != 0) {
    throw std::invalid_argument("not a 40-character Z85 CURVE secret key");
  }
  return public_key;
}

CurveKeyPair WriteCurveKeyFiles(const std::string& prefix) {
  const CurveKeyPair pair = GenerateCurveKeyPair();
  const std::string secret_path = prefix + ".key", public_path = prefix + ".pub";
  struct stat st {};
  if (::stat(public_path.c_str(), &st) == 0) {
    throw std::runtime_error(public_path +
                             ": cannot create: it exists; remove it first or pick "
                             "another prefix");
  }
  WriteNewFile(secret_path,
               "# Starling CURVE secret key (Z85). Keep it private: whoever reads it can join the\n"
               "# cluster as this node. Its public key is in " +
                   public_path + ".\n" + pair.secret_key + "\n",
               0600);
  // The key alone, so that $(cat PREFIX.pub) is the key (in a cluster file's node line, a
  // command line, a trust file).
  WriteNewFile(public_path, pair.public_key + "\n", 0644);
  return pair;
}

std::string ReadCurveKeyFile(const std::string& path, bool secret) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw std::runtime_error(path + ": cannot read key file: " + std::strerror(errno));
  }
  if (secret && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    throw std::runtime_error(path + ": secret key file is accessible by group or others (mode " +
                             std::to_string((st.st_mode >> 6) & 7) +
                             std::to_string((st.st_mode >> 3) & 7) +
                             std::to_string(st.st_mode & 7) + "); run chmod 600 " + path);
  }
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": cannot read key file");
  std::string line;
  // A Z85 key may begin with '#', so the key is the first line that is exactly one key; comment
  // lines contain spaces and never are.
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ' || line.back() == '\t')) {
      line.pop_back();
    }
    if (IsZ85Key(line)) return line;
  }
  throw std::runtime_error(path +
                           ": no 40-character Z85 CURVE key in the file (make one with "
                           "starlingd --keygen PREFIX)");
}

}  // namespace starling::net
