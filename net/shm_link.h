// One shared-memory link between two co-located neighbours: a segment holding a ring per
// direction (shm_ring.h, shm_channel.h) and a FIFO per direction to wake a reader that waits in
// zmq_poll, set up by an offer and its answer over the CURVE connection (net/transport.h).
//
// Set-up. The side with the lower node id creates, in the run-private folder (shm_segment.h),
// the segment NAME (two rings: ring 0 carries the creator's messages, ring 1 the acceptor's) and
// two FIFOs of mode 0600, NAME.a (read by the acceptor) and NAME.c (read by the creator); it
// opens its reading end of NAME.c and its writing end of NAME.a, then offers (kShmOffer, text
// FormatShmOffer). The acceptor checks the offer against its own host id, uid and ring sizes,
// maps the segment (which must belong to this uid, mode 0600, of the expected size), attaches
// the rings (their headers must say the expected sizes), opens its ends of the FIFOs, removes the
// three files and answers (kShmAnswer). On a positive answer the creator removes them too (the
// first to get there does it) and the link is up: nothing stays on disk, and the memory is
// freed when the second of the two processes unmaps it or dies.
//
// Wake-ups. Both FIFO writing ends are opened read-write, so a write never raises SIGPIPE and
// never blocks (O_NONBLOCK; a full FIFO already holds a wake-up). A reader about to wait marks
// its ring (ShmRing::SetPolling), checks it once more and waits on its FIFO with the ZeroMQ
// sockets; a writer writes one byte only when that mark is set, so a reader that keeps up costs
// no system call per message. A reader whose FIFO reads end-of-file (no writer left) knows that
// the peer's process is gone: the link is over.
//
// Trust: the segment and the FIFOs are shared with the peer's process only. Every byte read from
// them is untrusted: the ring checks positions and frame lengths, the channel checks the part
// table and decodes with the run's DecodeLimits and all value checks; refusals are counted.
//
// Threading: one thread (the transport's) uses a ShmLink.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>

#include "net/codec.h"
#include "net/envelope.h"
#include "net/reject.h"
#include "net/shm_channel.h"
#include "net/shm_ring.h"
#include "net/shm_segment.h"

namespace starling::net {

// This host's identity for pairing: /etc/machine-id and the kernel's boot id, joined by '-'.
// Two processes with the same host id run under the same kernel (same boot). "" and *error
// naming the file when neither can be read.
std::string LocalHostId(std::string* error);

// Ring sizes for a run's limits: max_frame = ShmMessageBound rounded up to 8, capacity the
// smallest power of two holding two such frames (at least 64 KiB). False when a ring would
// exceed kShmMaxRingBytes (the run's messages are too large for a ring; ZeroMQ carries them).
inline constexpr uint64_t kShmMaxRingBytes = 1ull << 30;
bool ShmRingSizes(const DecodeLimits& limits, uint32_t* capacity, uint32_t* max_frame);

struct ShmOffer {
  std::string host;  // LocalHostId of the creator
  uint64_t uid = 0;
  std::string name;  // the segment's file name in the run folder: [A-Za-z0-9_.-], at most 96
  uint32_t capacity = 0;
  uint32_t max_frame = 0;
};
// "shm1;host=H;uid=U;name=N;capacity=C;max_frame=M".
std::string FormatShmOffer(const ShmOffer& offer);
// Parses an offer (untrusted text). False and *error naming the field otherwise.
bool ParseShmOffer(const std::string& text, ShmOffer* out, std::string* error);
// Answers: "accept NAME", or "decline NAME: REASON".
std::string ShmAcceptText(const std::string& name);
std::string ShmDeclineText(const std::string& name, const std::string& reason);

class ShmLink {
 public:
  // Creator side: creates folder/name and its FIFOs. nullptr and *error on failure (nothing is
  // left on disk then).
  static std::unique_ptr<ShmLink> Create(const std::string& folder, const std::string& name,
                                         uint32_t capacity, uint32_t max_frame,
                                         const DecodeLimits& limits, std::string* error);
  // Acceptor side: maps the offer's segment from `folder` (the offer names no folder: each side
  // uses its own run folder) and removes the files. nullptr and *error naming the file otherwise.
  static std::unique_ptr<ShmLink> Accept(const std::string& folder, const ShmOffer& offer,
                                         const DecodeLimits& limits, std::string* error);
  ~ShmLink();
  ShmLink(const ShmLink&) = delete;
  ShmLink& operator=(const ShmLink&) = delete;

  // Creator side, once the peer accepted: removes the files (if the acceptor has not already).
  void RemoveFiles();
  const std::string& name() const { return name_; }

  // Appends envelope to the outgoing ring without waiting and wakes the peer if it waits.
  // kFull when the ring has no room now; kBroken when the peer broke the ring.
  ShmRing::Status Send(const Envelope& envelope);
  // True if a message (or a broken ring) waits in the incoming ring. No system call.
  bool Pending() const { return in_->Pending(); }
  // Takes the next message without waiting (kEmpty when there is none); as ShmReceiver::Receive.
  ShmRing::Status Receive(Envelope* out, Reject* reject);

  // The descriptor that becomes readable when the peer signals (or is gone).
  int wake_fd() const { return read_fd_; }
  // Around a wait on wake_fd(): Arm marks the incoming ring and returns Pending() (if true, do
  // not sleep); Disarm clears the mark.
  bool Arm();
  void Disarm();
  // Reads the FIFO empty. False when the peer's process has closed its end (it is gone).
  bool Drain();

  const std::string& broken_reason() const;
  const RejectCounters& rejects() const { return receiver_->rejects(); }
  uint64_t wakes_written() const { return wakes_written_; }
  // Ring bytes of the last message sent and of the last received.
  size_t last_sent_bytes() const { return sender_->last_bytes(); }
  size_t last_received_bytes() const { return receiver_->last_bytes(); }

 private:
  ShmLink() = default;

  std::string folder_, name_;
  bool creator_ = false;
  std::unique_ptr<ShmSegment> segment_;
  std::unique_ptr<ShmRing> out_, in_;
  std::unique_ptr<ShmSender> sender_;
  std::unique_ptr<ShmReceiver> receiver_;
  int read_fd_ = -1;
  int write_fd_ = -1;
  bool files_linked_ = false;
  uint64_t wakes_written_ = 0;
};

}  // namespace starling::net
