#include "net/shm_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace starling::net {
namespace {

std::string SystemError(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

bool ValidRunTag(const std::string& run) {
  if (run.empty() || run.size() > 64) return false;
  for (char c : run) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_';
    if (!ok) return false;
  }
  return true;
}

// The folder must be ours and closed to others: otherwise another user could place or read a
// segment in it.
bool CheckPrivate(const std::string& path, const struct stat& st, bool want_dir,
                  std::string* error) {
  if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    *error = path + (want_dir ? " is not a folder" : " is not a regular file") +
             "; remove it and start again";
    return false;
  }
  if (st.st_uid != getuid()) {
    *error = path + " belongs to uid " + std::to_string(st.st_uid) + ", not to this user (uid " +
             std::to_string(getuid()) + "); remove it or set XDG_RUNTIME_DIR";
    return false;
  }
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    *error = path + " is open to other users (mode " + mode + "); remove it and start again";
    return false;
  }
  return true;
}

}  // namespace

std::string ShmRunFolder(const std::string& run, std::string* error) {
  if (!ValidRunTag(run)) {
    *error = "shared-memory run tag '" + run + "' must be 1-64 letters, digits, '-' or '_'";
    return "";
  }
  std::string folder;
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  struct stat st;
  if (xdg != nullptr && xdg[0] == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode)) {
    folder = std::string(xdg) + "/starling-" + run;
  } else {
    folder = "/dev/shm/starling-" + std::to_string(getuid()) + "-" + run;
  }
  if (mkdir(folder.c_str(), 0700) != 0 && errno != EEXIST) {
    *error = SystemError("cannot create the shared-memory folder", folder);
    return "";
  }
  if (lstat(folder.c_str(), &st) != 0) {
    *error = SystemError("cannot inspect the shared-memory folder", folder);
    return "";
  }
  if (!CheckPrivate(folder, st, /*want_dir=*/true, error)) return "";
  return folder;
}

std::unique_ptr<ShmSegment> ShmSegment::Create(const std::string& folder, const std::string& name,
                                               size_t bytes, std::string* error) {
  const std::string path = folder + "/" + name;
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    *error = SystemError("cannot create the shared-memory segment", path);
    return nullptr;
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    *error = SystemError("cannot size the shared-memory segment", path);
    close(fd);
    unlink(path.c_str());
    return nullptr;
  }
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (data == MAP_FAILED) {
    *error = SystemError("cannot map the shared-memory segment", path);
    unlink(path.c_str());
    return nullptr;
  }
  return std::unique_ptr<ShmSegment>(new ShmSegment(path, data, bytes, /*owner=*/true));
}

std::unique_ptr<ShmSegment> ShmSegment::Open(const std::string& folder, const std::string& name,
                                             size_t bytes, std::string* error) {
  const std::string path = folder + "/" + name;
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    *error = SystemError("cannot open the shared-memory segment", path);
    return nullptr;
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    *error = SystemError("cannot inspect the shared-memory segment", path);
    close(fd);
    return nullptr;
  }
  if (!CheckPrivate(path, st, /*want_dir=*/false, error)) {
    close(fd);
    return nullptr;
  }
  if (static_cast<uint64_t>(st.st_size) != bytes) {
    *error = path + " holds " + std::to_string(st.st_size) + " bytes, expected " +
             std::to_string(bytes) + "; the peer sized its ring differently";
    close(fd);
    return nullptr;
  }
  void* data = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (data == MAP_FAILED) {
    *error = SystemError("cannot map the shared-memory segment", path);
    return nullptr;
  }
  return std::unique_ptr<ShmSegment>(new ShmSegment(path, data, bytes, /*owner=*/false));
}

void ShmSegment::Unlink() {
  if (!linked_) return;
  unlink(path_.c_str());
  linked_ = false;
}

ShmSegment::~ShmSegment() {
  munmap(data_, size_);
  if (owner_) Unlink();
}

}  // namespace starling::net
