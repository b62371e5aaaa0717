#include "net/shm_link.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <vector>

namespace starling::net {
namespace {

std::string SystemError(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

bool HostIdCharacters(const std::string& s) {
  if (s.empty() || s.size() > 128) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) return false;
  }
  return true;
}

bool NameCharacters(const std::string& s) {
  if (s.empty() || s.size() > 96 || s[0] == '.') return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '-' || c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// A decimal of at most `max` (no sign, no leading '+', at most 20 digits).
bool ParseDecimal(const std::string& s, uint64_t max, uint64_t* out) {
  if (s.empty() || s.size() > 20) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (max - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *out = v;
  return true;
}

std::string FirstLine(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
}

// Opens one end of a FIFO the peer (same user) made, checking that it is a FIFO of this uid that
// others cannot open. -1 and *error otherwise.
int OpenFifo(const std::string& path, int flags, std::string* error) {
  const int fd = open(path.c_str(), flags | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) {
    *error = SystemError("cannot open the shared-memory wake-up FIFO", path);
    return -1;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_uid != getuid() ||
      (st.st_mode & 077) != 0) {
    *error = path + " is not a FIFO of this user closed to others; remove it and start again";
    close(fd);
    return -1;
  }
  return fd;
}

}  // namespace

std::string LocalHostId(std::string* error) {
  std::string machine = FirstLine("/etc/machine-id");
  std::string boot = FirstLine("/proc/sys/kernel/random/boot_id");
  if (!HostIdCharacters(machine)) machine.clear();
  if (!HostIdCharacters(boot)) boot.clear();
  if (machine.empty() && boot.empty()) {
    *error = "neither /etc/machine-id nor /proc/sys/kernel/random/boot_id names this host";
    return "";
  }
  return machine + "-" + boot;
}

bool ShmRingSizes(const DecodeLimits& limits, uint32_t* capacity, uint32_t* max_frame) {
  const uint64_t frame = (ShmMessageBound(limits) + 7) & ~uint64_t{7};
  uint64_t c = 64 << 10;
  while (c < 2 * (frame + 8)) c <<= 1;
  if (c > kShmMaxRingBytes) return false;
  *capacity = static_cast<uint32_t>(c);
  *max_frame = static_cast<uint32_t>(frame);
  return true;
}

std::string FormatShmOffer(const ShmOffer& o) {
  return "shm1;host=" + o.host + ";uid=" + std::to_string(o.uid) + ";name=" + o.name +
         ";capacity=" + std::to_string(o.capacity) + ";max_frame=" + std::to_string(o.max_frame);
}

bool ParseShmOffer(const std::string& text, ShmOffer* out, std::string* error) {
  std::vector<std::string> fields;
  size_t start = 0;
  while (fields.size() < 7) {
    const size_t end = text.find(';', start);
    fields.push_back(
        text.substr(start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos) break;
    start = end + 1;
  }
  if (fields.size() != 6 || fields[0] != "shm1") {
    *error = "not a shared-memory offer of this version (shm1 and five fields)";
    return false;
  }
  const char* keys[5] = {"host=", "uid=", "name=", "capacity=", "max_frame="};
  std::string values[5];
  for (int i = 0; i < 5; ++i) {
    const std::string& f = fields[1 + i];
    if (f.rfind(keys[i], 0) != 0) {
      *error = std::string("offer field ") + std::to_string(2 + i) + " is not " + keys[i];
      return false;
    }
    values[i] = f.substr(std::strlen(keys[i]));
  }
  uint64_t capacity = 0, max_frame = 0;
  if (!HostIdCharacters(values[0])) {
    *error = "offer's host id is not 1-128 hexadecimal digits and '-'";
  } else if (!ParseDecimal(values[1], UINT32_MAX, &out->uid)) {
    *error = "offer's uid is not a decimal";
  } else if (!NameCharacters(values[2])) {
    *error = "offer's segment name is not 1-96 letters, digits, '-', '_' or '.'";
  } else if (!ParseDecimal(values[3], UINT32_MAX, &capacity) ||
             !ParseDecimal(values[4], UINT32_MAX, &max_frame)) {
    *error = "offer's ring sizes are not 32-bit decimals";
  } else {
    out->host = values[0];
    out->name = values[2];
    out->capacity = static_cast<uint32_t>(capacity);
    out->max_frame = static_cast<uint32_t>(max_frame);
    return true;
  }
  return false;
}

std::string ShmAcceptText(const std::string& name) { return "accept " + name; }
std::string ShmDeclineText(const std::string& name, const std::string& reason) {
  return "decline " + name + ": " + reason;
}

std::unique_ptr<ShmLink> ShmLink::Create(const std::string& folder, const std::string& name,
                                         uint32_t capacity, uint32_t max_frame,
                                         const DecodeLimits& limits, std::string* error) {
  std::unique_ptr<ShmLink> link(new ShmLink());
  link->folder_ = folder;
  link->name_ = name;
  link->creator_ = true;
  const size_t ring_bytes = ShmRingBytes(capacity);
  link->segment_ = ShmSegment::Create(folder, name, 2 * ring_bytes, error);
  if (!link->segment_) return nullptr;
  link->files_linked_ = true;  // from here on the destructor removes what exists
  char* base = static_cast<char*>(link->segment_->data());
  ShmRing::Format(base, capacity, max_frame);
  ShmRing::Format(base + ring_bytes, capacity, max_frame);
  link->out_ = std::make_unique<ShmRing>(base, ring_bytes, capacity, max_frame);
  link->in_ = std::make_unique<ShmRing>(base + ring_bytes, ring_bytes, capacity, max_frame);
  if (!link->out_->ok() || !link->in_->ok()) {
    *error = "ring of " + std::to_string(capacity) + " bytes: " + link->out_->error();
    return nullptr;
  }
  for (const char* suffix : {".a", ".c"}) {
    const std::string path = folder + "/" + name + suffix;
    if (mkfifo(path.c_str(), 0600) != 0) {
      *error = SystemError("cannot create the shared-memory wake-up FIFO", path);
      return nullptr;
    }
  }
  // The reading end first, so that our own writing end never finds the FIFO without a reader.
  link->read_fd_ = OpenFifo(folder + "/" + name + ".c", O_RDONLY, error);
  if (link->read_fd_ < 0) return nullptr;
  link->write_fd_ = OpenFifo(folder + "/" + name + ".a", O_RDWR, error);
  if (link->write_fd_ < 0) return nullptr;
  link->sender_ = std::make_unique<ShmSender>(link->out_.get());
  link->receiver_ = std::make_unique<ShmReceiver>(link->in_.get(), limits);
  return link;
}

std::unique_ptr<ShmLink> ShmLink::Accept(const std::string& folder, const ShmOffer& offer,
                                         const DecodeLimits& limits, std::string* error) {
  std::unique_ptr<ShmLink> link(new ShmLink());
  link->folder_ = folder;
  link->name_ = offer.name;
  const size_t ring_bytes = ShmRingBytes(offer.capacity);
  link->segment_ = ShmSegment::Open(folder, offer.name, 2 * ring_bytes, error);
  if (!link->segment_) return nullptr;
  char* base = static_cast<char*>(link->segment_->data());
  link->in_ = std::make_unique<ShmRing>(base, ring_bytes, offer.capacity, offer.max_frame);
  link->out_ =
      std::make_unique<ShmRing>(base + ring_bytes, ring_bytes, offer.capacity, offer.max_frame);
  if (!link->in_->ok() || !link->out_->ok()) {
    *error = link->segment_->path() + ": " + (link->in_->ok() ? link->out_ : link->in_)->error();
    return nullptr;
  }
  link->read_fd_ = OpenFifo(folder + "/" + offer.name + ".a", O_RDONLY, error);
  if (link->read_fd_ < 0) return nullptr;
  link->write_fd_ = OpenFifo(folder + "/" + offer.name + ".c", O_RDWR, error);
  if (link->write_fd_ < 0) return nullptr;
  link->sender_ = std::make_unique<ShmSender>(link->out_.get());
  link->receiver_ = std::make_unique<ShmReceiver>(link->in_.get(), limits);
  link->files_linked_ = true;
  link->RemoveFiles();
  return link;
}

void ShmLink::RemoveFiles() {
  if (!files_linked_) return;
  files_linked_ = false;
  if (segment_) segment_->Unlink();
  // Either side may come second: a file already removed is fine.
  unlink((folder_ + "/" + name_).c_str());
  unlink((folder_ + "/" + name_ + ".a").c_str());
  unlink((folder_ + "/" + name_ + ".c").c_str());
}

ShmLink::~ShmLink() {
  if (creator_) RemoveFiles();
  if (read_fd_ >= 0) close(read_fd_);
  if (write_fd_ >= 0) close(write_fd_);
}

ShmRing::Status ShmLink::Send(const Envelope& envelope) {
  // A deadline already past: one check for room, no wait (the transport never blocks).
  const ShmRing::Status status =
      sender_->Send(envelope, std::chrono::steady_clock::time_point::min());
  if (status == ShmRing::Status::kOk && out_->TakePolling()) {
    const char byte = 1;
    // EAGAIN: the FIFO is full of wake-ups already; the reader will wake.
    if (write(write_fd_, &byte, 1) == 1) ++wakes_written_;
  }
  return status;
}

ShmRing::Status ShmLink::Receive(Envelope* out, Reject* reject) {
  if (!in_->Pending())
    return in_->broken_reason().empty() ? ShmRing::Status::kEmpty : ShmRing::Status::kBroken;
  return receiver_->Receive(out, reject, std::chrono::steady_clock::time_point::min());
}

bool ShmLink::Arm() {
  in_->SetPolling(true);
  return in_->Pending();
}

void ShmLink::Disarm() { in_->SetPolling(false); }

bool ShmLink::Drain() {
  char buffer[256];
  for (;;) {
    const ssize_t n = read(read_fd_, buffer, sizeof buffer);
    if (n > 0) continue;
    if (n == 0) return false;  // no writer left: the peer's process closed its end
    if (errno == EINTR) continue;
    return true;  // EAGAIN: empty, the peer still holds its end
  }
}

const std::string& ShmLink::broken_reason() const {
  return !in_->broken_reason().empty() ? in_->broken_reason() : out_->broken_reason();
}

}  // namespace starling::net
