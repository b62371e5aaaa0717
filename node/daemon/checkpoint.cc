#include "node/daemon/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "net/envelope.h"

namespace starling::node {

namespace {

constexpr char kMagic[8] = {'S', 'T', 'R', 'L', 'C', 'K', 'P', '2'};
// Bounds on what a checkpoint may declare, so that a damaged length cannot ask for gigabytes.
constexpr uint64_t kMaxCount = 1u << 20;
constexpr uint64_t kMaxVectorLength = 1ull << 28;

class Writer {
 public:
  template <typename T>
  void Put(const T& v) {
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    out_.append(s);
  }
  std::string& bytes() { return out_; }

 private:
  std::string out_;
};

class Reader {
 public:
  Reader(const std::string& bytes, const std::string& path) : in_(bytes), path_(path) {}
  template <typename T>
  T Get() {
    Need(sizeof(T));
    T v;
    std::memcpy(&v, in_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  uint64_t Count(uint64_t max) {
    const uint64_t n = Get<uint64_t>();
    if (n > max) Fail("a declared length of " + std::to_string(n) + " is out of range");
    return n;
  }
  std::string GetString() {
    const uint64_t n = Count(kMaxVectorLength);
    Need(n);
    std::string s = in_.substr(at_, n);
    at_ += n;
    return s;
  }
  void Need(uint64_t n) {
    if (in_.size() - at_ < n) Fail("truncated");
  }
  [[noreturn]] void Fail(const std::string& why) {
    throw std::runtime_error(path_ + ": not a usable checkpoint: " + why);
  }
  size_t at() const { return at_; }

 private:
  const std::string& in_;
  std::string path_;
  size_t at_ = 0;
};

void WriteAll(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw std::runtime_error(path + ": write failed: " + std::strerror(errno));
    done += static_cast<size_t>(n);
  }
}

void PutState(const algorithms::AlgorithmState& state, Writer* w) {
  w->PutString(state.algorithm);
  w->Put<uint64_t>(state.ints.size());
  for (int64_t v : state.ints) w->Put(v);
  w->Put<uint64_t>(state.reals.size());
  for (double v : state.reals) w->Put(v);
  w->Put<uint64_t>(state.vectors.size());
  for (const Vec& v : state.vectors) {
    w->Put<uint64_t>(static_cast<uint64_t>(v.size()));
    w->bytes().append(reinterpret_cast<const char*>(v.data()), sizeof(double) * v.size());
  }
  w->Put<uint64_t>(state.texts.size());
  for (const std::string& t : state.texts) w->PutString(t);
}

algorithms::AlgorithmState GetState(Reader* r) {
  algorithms::AlgorithmState state;
  state.algorithm = r->GetString();
  state.ints.resize(r->Count(kMaxCount));
  for (auto& v : state.ints) v = r->Get<int64_t>();
  state.reals.resize(r->Count(kMaxCount));
  for (auto& v : state.reals) v = r->Get<double>();
  state.vectors.resize(r->Count(kMaxCount));
  for (Vec& v : state.vectors) {
    const uint64_t n = r->Count(kMaxVectorLength);
    r->Need(n * sizeof(double));
    v.resize(static_cast<Eigen::Index>(n));
    for (uint64_t k = 0; k < n; ++k) v[static_cast<Eigen::Index>(k)] = r->Get<double>();
  }
  state.texts.resize(r->Count(kMaxCount));
  for (auto& t : state.texts) t = r->GetString();
  return state;
}

// The bytes of a checkpoint file, checksum included.
std::string Serialize(const Checkpoint& c) {
  Writer w;
  w.bytes().append(kMagic, sizeof(kMagic));
  w.Put<uint64_t>(c.run_id);
  w.Put<int32_t>(c.node_id);
  PutState(c.state, &w);
  PutState(c.driver, &w);
  w.Put<uint64_t>(net::RunIdOf(w.bytes()));  // FNV-1a of everything above
  return std::move(w.bytes());
}

std::string FolderOf(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  return dir.empty() ? "." : dir;
}

}  // namespace

void WriteCheckpoint(const std::string& path, const Checkpoint& c) {
  const std::string bytes = Serialize(c);
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw std::runtime_error(tmp + ": cannot create: " + std::strerror(errno));
  try {
    WriteAll(fd, bytes, tmp);
    if (::fsync(fd) != 0) throw std::runtime_error(tmp + ": fsync failed: " + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw std::runtime_error(tmp + ": close failed: " + std::strerror(errno));
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error(path +
                             ": cannot rename the checkpoint into place: " + std::strerror(errno));
  }
  // Make the rename durable: fsync the directory that holds the file.
  const int dfd = ::open(FolderOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    (void)::fsync(dfd);
    ::close(dfd);
  }
}

CheckpointWriter::CheckpointWriter(const std::string& path)
    : path_(path),
      tmp_path_(path + ".tmp"),
      name_(std::filesystem::path(path).filename().string()),
      tmp_name_(name_ + ".tmp") {
  const std::string dir = FolderOf(path);
  dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) {
    throw std::runtime_error(path + ": cannot open its folder " + dir + ": " +
                             std::strerror(errno));
  }
  if (!Reserve()) {
    const std::string why = std::strerror(errno);
    ::close(dir_fd_);
    throw std::runtime_error(tmp_path_ + ": cannot create: " + why);
  }
}

CheckpointWriter::~CheckpointWriter() {
  if (tmp_fd_ >= 0) {
    ::close(tmp_fd_);
    (void)::unlinkat(dir_fd_, tmp_name_.c_str(), 0);  // reserved, never written
  }
  ::close(dir_fd_);
}

bool CheckpointWriter::Reserve() {
  // Relative to the folder's descriptor, so that the file written is in the folder fsync'ed.
  tmp_fd_ = ::openat(dir_fd_, tmp_name_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  return tmp_fd_ >= 0;
}

void CheckpointWriter::Write(const Checkpoint& c) {
  if (tmp_fd_ < 0 && !Reserve()) {
    throw std::runtime_error(tmp_path_ + ": cannot create: " + std::strerror(errno));
  }
  const std::string bytes = Serialize(c);
  // A reserved PATH.tmp may be stale (someone else wrote to the path): start it over.
  if (::ftruncate(tmp_fd_, 0) != 0 || ::lseek(tmp_fd_, 0, SEEK_SET) != 0) {
    throw std::runtime_error(tmp_path_ + ": cannot truncate: " + std::strerror(errno));
  }
  WriteAll(tmp_fd_, bytes, tmp_path_);
  if (::fsync(tmp_fd_) != 0) {
    throw std::runtime_error(tmp_path_ + ": fsync failed: " + std::strerror(errno));
  }
  if (::renameat(dir_fd_, tmp_name_.c_str(), dir_fd_, name_.c_str()) != 0) {
    throw std::runtime_error(path_ +
                             ": cannot rename the checkpoint into place: " + std::strerror(errno));
  }
  (void)::fsync(dir_fd_);
  // tmp_fd_ is now PATH itself: never write to it again. The next PATH.tmp is opened before it
  // is closed, so that the slot is not lost to another thread (ZeroMQ's accepting connections)
  // in between; if no descriptor is left, its own slot is given back and tried once more.
  const int written = tmp_fd_;
  if (!Reserve()) {
    ::close(written);
    Reserve();
    return;
  }
  ::close(written);
}

Checkpoint ReadCheckpoint(const std::string& path, uint64_t expected_run_id,
                          int32_t expected_node) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open the checkpoint");
  std::stringstream buffer;
  buffer << in.rdbuf();
  const std::string bytes = buffer.str();
  Reader r(bytes, path);
  if (bytes.size() < sizeof(kMagic) + 8 || std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0) {
    r.Fail("no checkpoint header");
  }
  uint64_t stored_sum;
  std::memcpy(&stored_sum, bytes.data() + bytes.size() - 8, 8);
  if (net::RunIdOf(std::string_view(bytes.data(), bytes.size() - 8)) != stored_sum) {
    r.Fail("checksum mismatch (damaged file)");
  }
  r.Need(sizeof(kMagic));
  for (size_t k = 0; k < sizeof(kMagic); ++k) r.Get<char>();
  Checkpoint c;
  c.run_id = r.Get<uint64_t>();
  c.node_id = r.Get<int32_t>();
  if (c.run_id != expected_run_id) {
    r.Fail(
        "written by another run configuration (run id differs); start without --resume or "
        "with the same options");
  }
  if (c.node_id != expected_node) {
    r.Fail("written by node " + std::to_string(c.node_id) + ", not node " +
           std::to_string(expected_node));
  }
  c.state = GetState(&r);
  c.driver = GetState(&r);
  if (r.at() != bytes.size() - 8) r.Fail("trailing bytes");
  return c;
}

}  // namespace starling::node
