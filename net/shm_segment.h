// A shared-memory segment private to one user and one run: a file of fixed size in a folder only
// its owner can enter, mapped by the two processes of one co-located link.
//
// Where: $XDG_RUNTIME_DIR/starling-<run> when XDG_RUNTIME_DIR names a folder, otherwise
// /dev/shm/starling-<uid>-<run>. The folder has mode 0700 and the file mode 0600; Open refuses a
// folder or file that another user owns or that others may read or write, so a segment is shared
// by processes of one user on one host and by no one else (the trust boundary).
//
// Lifetime: the creator unlinks the file once the peer has mapped it (Unlink), so that a process
// killed later leaves nothing behind: the memory lives as long as one of the two mappings does.
// The destructor unmaps, and unlinks the file if this object created it and it is still linked.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace starling::net {

// The run-private folder for run tag `run` (letters, digits, '-' and '_' only). Created with mode
// 0700 when absent. Returns "" with *error naming the folder and what is wrong when it cannot be
// created or belongs to another user or is open to others.
std::string ShmRunFolder(const std::string& run, std::string* error);

class ShmSegment {
 public:
  // Creates folder/name with `bytes` bytes (zeroed), mode 0600, failing if it exists. nullptr and
  // *error (naming the path and the system's reason) on failure.
  static std::unique_ptr<ShmSegment> Create(const std::string& folder, const std::string& name,
                                            size_t bytes, std::string* error);
  // Maps an existing folder/name created by another process of this user. It must be a regular
  // file owned by this uid, mode 0600, of exactly `bytes` bytes; nullptr and *error otherwise.
  static std::unique_ptr<ShmSegment> Open(const std::string& folder, const std::string& name,
                                          size_t bytes, std::string* error);
  ~ShmSegment();
  ShmSegment(const ShmSegment&) = delete;
  ShmSegment& operator=(const ShmSegment&) = delete;

  void* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Removes the file's name; the mappings stay valid. Idempotent.
  void Unlink();

 private:
  ShmSegment(std::string path, void* data, size_t size, bool owner)
      : path_(std::move(path)), data_(data), size_(size), owner_(owner) {}
  std::string path_;
  void* data_;
  size_t size_;
  bool owner_;
  bool linked_ = true;
};

}  // namespace starling::net
