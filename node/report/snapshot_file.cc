#include "node/report/snapshot_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace starling::node {

namespace {

constexpr char kFileMagic[8] = {'S', 'T', 'S', 'N', 'A', 'P', '0', '1'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kRecordMagic = 0x50414e53;  // "SNAP" in little-endian bytes
constexpr uint32_t kFinalFlag = 1;

template <typename T>
void Put(std::vector<char>* out, const T& value) {
  const char* p = reinterpret_cast<const char*>(&value);
  out->insert(out->end(), p, p + sizeof(T));
}

template <typename T>
T Get(const char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

std::string Where(const std::string& path, size_t offset) {
  return path + " (byte " + std::to_string(offset) + ")";
}

}  // namespace

SnapshotFileWriter::SnapshotFileWriter(const std::string& path, bool append) : path_(path) {
  if (append) {
    std::FILE* existing = std::fopen(path.c_str(), "rbe");
    if (existing != nullptr) {
      const long size = std::fseek(existing, 0, SEEK_END) == 0 ? std::ftell(existing) : 0;
      appending_ = size > 0;
      existing_bytes_ = appending_ ? static_cast<uint64_t>(size) : 0;
      std::fclose(existing);
    }
  }
  file_ = std::fopen(path.c_str(), appending_ ? "abe" : "wbe");  // "e": O_CLOEXEC
  if (file_ == nullptr) {
    throw std::runtime_error(path + ": cannot open the snapshots file: " + std::strerror(errno));
  }
}

SnapshotFileWriter::~SnapshotFileWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

bool SnapshotFileWriter::WriteHeader(const SnapshotHeader& h) {
  if (appending_) return true;
  std::vector<char> out(kFileMagic, kFileMagic + sizeof(kFileMagic));
  Put(&out, kVersion);
  Put(&out, h.node);
  Put(&out, h.dim);
  Put(&out, uint32_t{0});
  Put(&out, h.run_id);
  Put(&out, h.spacing);
  Put(&out, h.start_unix_time);
  return std::fwrite(out.data(), 1, out.size(), file_) == out.size() && std::fflush(file_) == 0;
}

bool SnapshotFileWriter::Write(const SnapshotRecord& r, const Vec& model) {
  std::vector<char> out;
  out.reserve(SnapshotRecordBytes(static_cast<uint32_t>(model.size())));
  Put(&out, kRecordMagic);
  Put(&out, r.final ? kFinalFlag : uint32_t{0});
  Put(&out, r.step);
  Put(&out, r.comm_rounds);
  Put(&out, r.unix_time);
  Put(&out, r.elapsed);
  Put(&out, r.bytes_sent);
  Put(&out, r.bytes_received);
  const char* values = reinterpret_cast<const char*>(model.data());
  out.insert(out.end(), values, values + 8 * model.size());
  return std::fwrite(out.data(), 1, out.size(), file_) == out.size() && std::fflush(file_) == 0;
}

SnapshotFile ReadSnapshotFile(const std::string& path, uint32_t max_dim) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open the snapshots file");
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                std::istreambuf_iterator<char>());
  if (bytes.size() < kSnapshotHeaderBytes ||
      std::memcmp(bytes.data(), kFileMagic, sizeof(kFileMagic)) != 0) {
    throw std::runtime_error(path + ": not a Starling snapshots file (no STSNAP01 header)");
  }
  const char* p = bytes.data();
  if (Get<uint32_t>(p + 8) != kVersion) {
    throw std::runtime_error(path + ": snapshots file version " +
                             std::to_string(Get<uint32_t>(p + 8)) + ", this build reads " +
                             std::to_string(kVersion));
  }
  SnapshotFile file;
  file.header.node = Get<int32_t>(p + 12);
  file.header.dim = Get<uint32_t>(p + 16);
  file.header.run_id = Get<uint64_t>(p + 24);
  file.header.spacing = Get<int64_t>(p + 32);
  file.header.start_unix_time = Get<double>(p + 40);
  const uint32_t dim = file.header.dim;
  if (dim == 0 || dim > max_dim) {
    throw std::runtime_error(path + ": snapshots of dimension " + std::to_string(dim) +
                             ", expected 1.." + std::to_string(max_dim));
  }
  const size_t record_bytes = SnapshotRecordBytes(dim);
  size_t at = kSnapshotHeaderBytes;
  while (at < bytes.size()) {
    if (bytes.size() - at < record_bytes) {
      file.truncated = true;  // a node killed while writing: the last record is incomplete
      break;
    }
    const char* r = p + at;
    const uint32_t flags = Get<uint32_t>(r + 4);
    if (Get<uint32_t>(r) != kRecordMagic || (flags & ~kFinalFlag) != 0) {
      throw std::runtime_error(Where(path, at) + ": not a snapshot record");
    }
    SnapshotRecord s;
    s.final = (flags & kFinalFlag) != 0;
    s.step = Get<int64_t>(r + 8);
    s.comm_rounds = Get<int64_t>(r + 16);
    s.unix_time = Get<double>(r + 24);
    s.elapsed = Get<double>(r + 32);
    s.bytes_sent = Get<uint64_t>(r + 40);
    s.bytes_received = Get<uint64_t>(r + 48);
    s.model.resize(dim);
    std::memcpy(s.model.data(), r + kSnapshotRecordHeaderBytes, 8 * size_t{dim});
    file.records.push_back(std::move(s));
    at += record_bytes;
  }
  return file;
}

}  // namespace starling::node
