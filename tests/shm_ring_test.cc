// The shared-memory ring, its envelope channel and its segment: round trips, bounds, hostile
// contents of the shared bytes (the peer's positions and lengths), and two real processes.
#include "net/shm_ring.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "net/codec.h"
#include "net/payload.h"
#include "net/shm_channel.h"
#include "net/shm_segment.h"

namespace starling::net {
namespace {

using Clock = std::chrono::steady_clock;
using Status = ShmRing::Status;

Clock::time_point Soon() { return Clock::now() + std::chrono::milliseconds(20); }
// Generous: waits that must succeed do so under load long before this.
Clock::time_point Generous() { return Clock::now() + std::chrono::seconds(60); }

// Offsets of the ring's header (shm_ring.h's layout), for writing hostile values.
constexpr size_t kWritePos = 64;
constexpr size_t kReadPos = 128;

struct alignas(64) Memory {
  explicit Memory(uint32_t capacity) : bytes(ShmRingBytes(capacity) + 64) {}
  char* base() {
    return reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(bytes.data()) + 63) & ~63ull);
  }
  std::vector<char> bytes;
};

void Poke64(char* base, size_t offset, uint64_t v) { std::memcpy(base + offset, &v, 8); }
void Poke32(char* base, size_t offset, uint32_t v) { std::memcpy(base + offset, &v, 4); }

TEST(ShmRingTest, FramesRoundTripAcrossTheWrap) {
  Memory memory(256);
  ShmRing::Format(memory.base(), 256, 100);
  ShmRing writer(memory.base(), ShmRingBytes(256), 256, 100);
  ShmRing reader(memory.base(), ShmRingBytes(256), 256, 100);
  ASSERT_TRUE(writer.ok()) << writer.error();
  ASSERT_TRUE(reader.ok()) << reader.error();
  std::string got;
  Reject reject;
  // 1000 messages of varying sizes through a 256-byte ring: every one crosses the wrap at some
  // offset, so a copy error at the edge shows.
  for (int i = 0; i < 1000; ++i) {
    std::string message(static_cast<size_t>(i % 101), '\0');
    for (size_t k = 0; k < message.size(); ++k) message[k] = static_cast<char>(i * 31 + k);
    ASSERT_EQ(writer.Write(message.data(), message.size(), Soon()), Status::kOk) << i;
    ASSERT_EQ(reader.Read(&got, &reject, Soon()), Status::kOk) << i;
    ASSERT_EQ(got, message) << i;
  }
  EXPECT_EQ(reader.Read(&got, &reject, Soon()), Status::kEmpty);
}

TEST(ShmRingTest, FullRingAndOversizedMessage) {
  Memory memory(128);
  ShmRing::Format(memory.base(), 128, 64);
  ShmRing writer(memory.base(), ShmRingBytes(128), 128, 64);
  const std::string message(60, 'x');  // 64 bytes with its length: two fit in 128
  EXPECT_EQ(writer.Write(message.data(), message.size(), Soon()), Status::kOk);
  EXPECT_EQ(writer.Write(message.data(), message.size(), Soon()), Status::kOk);
  EXPECT_EQ(writer.Write(message.data(), message.size(), Soon()), Status::kFull);
  const std::string big(65, 'x');
  EXPECT_EQ(writer.Write(big.data(), big.size(), Soon()), Status::kTooLarge);
}

TEST(ShmRingTest, AttachRefusesAHeaderOtherThanExpected) {
  Memory memory(256);
  ShmRing::Format(memory.base(), 256, 100);
  EXPECT_NE(ShmRing(memory.base(), ShmRingBytes(256), 512, 100).error(), "");  // capacity
  EXPECT_NE(ShmRing(memory.base(), ShmRingBytes(256), 256, 120).error(), "");  // frame bound
  EXPECT_NE(ShmRing(memory.base(), ShmRingBytes(128), 256, 100).error(), "");  // mapping size
  Poke32(memory.base(), 8, 1u << 30);  // the peer claims a huge capacity
  ShmRing huge(memory.base(), ShmRingBytes(256), 256, 100);
  EXPECT_FALSE(huge.ok());
  EXPECT_NE(huge.error().find("capacity"), std::string::npos) << huge.error();
  Poke64(memory.base(), 0, 0);  // no magic
  EXPECT_FALSE(ShmRing(memory.base(), ShmRingBytes(256), 256, 100).ok());
}

TEST(ShmRingTest, HostileWritePositionBreaksTheRingWithoutReadingOutside) {
  for (uint64_t hostile : {uint64_t{257 * 8}, ~uint64_t{0}, uint64_t{3}}) {
    Memory memory(256);
    ShmRing::Format(memory.base(), 256, 100);
    ShmRing reader(memory.base(), ShmRingBytes(256), 256, 100);
    Poke64(memory.base(), kWritePos, hostile);
    std::string got;
    Reject reject;
    EXPECT_EQ(reader.Read(&got, &reject, Soon()), Status::kBroken) << hostile;
    EXPECT_NE(reader.broken_reason().find("writer's position " + std::to_string(hostile)),
              std::string::npos)
        << reader.broken_reason();
    EXPECT_EQ(reader.Read(&got, &reject, Soon()), Status::kBroken) << "stays broken";
  }
}

TEST(ShmRingTest, HostileLengthsAreRejectedByReason) {
  struct Case {
    uint32_t length;
    uint64_t written;
    RejectReason reason;
  };
  for (const Case& c :
       {Case{101, 128, RejectReason::kOversized}, Case{0xffffffffu, 128, RejectReason::kOversized},
        Case{90, 16, RejectReason::kTruncated}}) {
    Memory memory(256);
    ShmRing::Format(memory.base(), 256, 100);
    ShmRing reader(memory.base(), ShmRingBytes(256), 256, 100);
    Poke32(memory.base(), kShmRingHeaderBytes, c.length);
    Poke64(memory.base(), kWritePos, c.written);
    std::string got;
    Reject reject;
    EXPECT_EQ(reader.Read(&got, &reject, Soon()), Status::kReject) << c.length;
    EXPECT_EQ(reject.reason, c.reason) << reject.detail;
    EXPECT_EQ(reader.Read(&got, &reject, Soon()), Status::kBroken);
  }
}

TEST(ShmRingTest, HostileReadPositionBreaksTheWriter) {
  for (uint64_t hostile : {uint64_t{8}, ~uint64_t{0}}) {
    Memory memory(256);
    ShmRing::Format(memory.base(), 256, 100);
    ShmRing writer(memory.base(), ShmRingBytes(256), 256, 100);
    Poke64(memory.base(), kReadPos, hostile);  // ahead of anything written
    EXPECT_EQ(writer.Write("abc", 3, Soon()), Status::kBroken) << hostile;
    EXPECT_NE(writer.broken_reason().find("reader's position " + std::to_string(hostile)),
              std::string::npos)
        << writer.broken_reason();
  }
}

TEST(ShmRingTest, RandomSegmentContentsNeverCrashTheReader) {
  std::mt19937_64 random(7);
  for (int trial = 0; trial < 2000; ++trial) {
    Memory memory(256);
    ShmRing::Format(memory.base(), 256, 100);
    ShmRing reader(memory.base(), ShmRingBytes(256), 256, 100);
    for (size_t i = kShmRingHeaderBytes; i < ShmRingBytes(256); ++i) {
      memory.base()[i] = static_cast<char>(random());
    }
    Poke64(memory.base(), kWritePos, random() % 4 == 0 ? random() : (random() % 40) * 8);
    std::string got;
    Reject reject;
    for (int k = 0; k < 8; ++k) {
      const Status status = reader.Read(&got, &reject, Clock::now());
      if (status != Status::kOk) break;
      EXPECT_LE(got.size(), 100u);
    }
  }
}

TEST(ShmRingTest, WriterMakesNoWakeCallWhileTheReaderIsAwake) {
  Memory memory(4096);
  ShmRing::Format(memory.base(), 4096, 1000);
  ShmRing writer(memory.base(), ShmRingBytes(4096), 4096, 1000);
  ShmRing reader(memory.base(), ShmRingBytes(4096), 4096, 1000);
  std::string got;
  Reject reject;
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(writer.Write("ping", 4, Soon()), Status::kOk);
    ASSERT_EQ(reader.Read(&got, &reject, Soon()), Status::kOk);
  }
  EXPECT_EQ(writer.wakes_sent(), 0u);
  EXPECT_EQ(reader.wakes_sent(), 0u);
}

class ShmChannelTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kDim = 1000;
  ShmChannelTest() : limits_(LimitsForRun(kDim, 1)), memory_(Capacity()) {
    ShmRing::Format(memory_.base(), Capacity(), Bound());
    writer_ =
        std::make_unique<ShmRing>(memory_.base(), ShmRingBytes(Capacity()), Capacity(), Bound());
    reader_ =
        std::make_unique<ShmRing>(memory_.base(), ShmRingBytes(Capacity()), Capacity(), Bound());
  }
  uint32_t Bound() const { return static_cast<uint32_t>(ShmMessageBound(limits_)); }
  static uint32_t Capacity() { return 1u << 16; }
  DecodeLimits limits_;
  Memory memory_;
  std::unique_ptr<ShmRing> writer_, reader_;
};

TEST_F(ShmChannelTest, EnvelopesRoundTripAndGarbageIsCountedNotFatal) {
  std::vector<double> x(kDim);
  for (uint32_t i = 0; i < kDim; ++i) x[i] = 0.1 * i - 3.0;
  Envelope sent;
  sent.type = MessageType::kRound;
  sent.run_id = 42;
  sent.sender = 3;
  sent.key = {7, 1, 0};
  sent.payloads = {Float64Payload(x.data(), kDim)};
  ShmSender sender(writer_.get());
  ShmReceiver receiver(reader_.get(), limits_);
  ASSERT_EQ(sender.Send(sent, Soon()), Status::kOk);
  // A frame that is not a message, then one whose payload holds a NaN: each counted, and the
  // ring goes on.
  const std::string garbage = "\xc1\xc1\xc1";
  ASSERT_EQ(writer_->Write(garbage.data(), garbage.size(), Soon()), Status::kOk);
  std::vector<double> nan = x;
  nan[5] = std::nan("");
  Envelope poisoned = sent;
  poisoned.payloads = {Float64Payload(nan.data(), kDim)};
  ASSERT_EQ(sender.Send(poisoned, Soon()), Status::kOk);
  ASSERT_EQ(sender.Send(sent, Soon()), Status::kOk);

  Envelope got;
  Reject reject;
  ASSERT_EQ(receiver.Receive(&got, &reject, Soon()), Status::kOk);
  EXPECT_EQ(got, sent);
  EXPECT_EQ(receiver.Receive(&got, &reject, Soon()), Status::kReject);
  EXPECT_EQ(reject.reason, RejectReason::kTruncated) << reject.detail;
  EXPECT_EQ(receiver.Receive(&got, &reject, Soon()), Status::kReject);
  EXPECT_EQ(reject.reason, RejectReason::kNonFinite) << reject.detail;
  ASSERT_EQ(receiver.Receive(&got, &reject, Soon()), Status::kOk);
  EXPECT_EQ(got, sent);
  EXPECT_EQ(receiver.rejects().total(), 2u);
  EXPECT_EQ(receiver.rejects().count(RejectReason::kNonFinite), 1u);
}

// Hostile part tables: each refused by reason and counted; the next message still arrives.
TEST_F(ShmChannelTest, HostilePartTablesAreRejectedByReason) {
  auto table = [](std::vector<uint32_t> words, size_t extra) {
    std::string bytes(4 * words.size() + extra, 'z');
    std::memcpy(&bytes[0], words.data(), 4 * words.size());
    return bytes;
  };
  struct Case {
    std::string bytes;
    RejectReason reason;
  };
  const std::vector<Case> cases = {
      {table({0, 0}, 0), RejectReason::kOversized},            // no parts
      {table({3, 1, 1, 1}, 3), RejectReason::kOversized},      // more parts than 1 + max_payloads
      {table({0xffffffffu, 1}, 0), RejectReason::kOversized},  // absurd count
      {table({2, 4}, 0), RejectReason::kTruncated},            // table longer than the message
      {table({2, 4, 0xfffffff0u}, 8), RejectReason::kTruncated},           // part beyond the end
      {table({1, 4}, 9), RejectReason::kTrailingBytes},                    // bytes after the parts
      {table({1, 1}, 1).replace(8, 1, "\x93"), RejectReason::kTruncated},  // array cut short
  };
  ShmReceiver receiver(reader_.get(), limits_);
  Envelope got;
  Reject reject;
  for (size_t i = 0; i < cases.size(); ++i) {
    ASSERT_EQ(writer_->Write(cases[i].bytes.data(), cases[i].bytes.size(), Soon()), Status::kOk);
    ASSERT_EQ(receiver.Receive(&got, &reject, Soon()), Status::kReject) << i;
    EXPECT_EQ(reject.reason, cases[i].reason) << i << ": " << reject.detail;
  }
  Envelope beat;
  beat.type = MessageType::kHeartbeat;
  beat.sender = 1;
  ShmSender sender(writer_.get());
  ASSERT_EQ(sender.Send(beat, Soon()), Status::kOk);
  ASSERT_EQ(receiver.Receive(&got, &reject, Soon()), Status::kOk) << reject.detail;
  EXPECT_EQ(got, beat);
  EXPECT_EQ(receiver.rejects().total(), cases.size());
}

// Random messages, some with a well-formed part table in front: every one is taken or refused
// and counted, none crashes the receiver.
TEST_F(ShmChannelTest, RandomMessagesAreTakenOrCountedNeverFatal) {
  std::mt19937_64 random(11);
  ShmReceiver receiver(reader_.get(), limits_);
  Envelope got;
  Reject reject;
  uint64_t refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string bytes(random() % 200, '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    if (bytes.size() >= 8 && random() % 2 == 0) {
      const uint32_t count = 1;
      const uint32_t length = static_cast<uint32_t>(bytes.size() - 8);
      std::memcpy(&bytes[0], &count, 4);
      std::memcpy(&bytes[4], &length, 4);
    }
    ASSERT_EQ(writer_->Write(bytes.data(), bytes.size(), Soon()), Status::kOk);
    const Status status = receiver.Receive(&got, &reject, Soon());
    ASSERT_TRUE(status == Status::kOk || status == Status::kReject) << ShmRingStatusName(status);
    if (status == Status::kReject) ++refused;
  }
  EXPECT_GT(refused, 0u);
  EXPECT_EQ(receiver.rejects().total(), refused);
}

class ShmSegmentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/starling-shm-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    runtime_ = pattern;
    setenv("XDG_RUNTIME_DIR", runtime_.c_str(), 1);
    std::string error;
    folder_ = ShmRunFolder("run" + std::to_string(getpid()), &error);
    ASSERT_NE(folder_, "") << error;
  }
  void TearDown() override {
    rmdir(folder_.c_str());
    rmdir(runtime_.c_str());
  }
  std::string runtime_, folder_;
};

TEST_F(ShmSegmentTest, FolderAndFileArePrivateAndCheckedOnOpen) {
  struct stat st;
  ASSERT_EQ(stat(folder_.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  std::string error;
  auto created = ShmSegment::Create(folder_, "link", 4096, &error);
  ASSERT_NE(created, nullptr) << error;
  ASSERT_EQ(stat(created->path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(ShmSegment::Open(folder_, "link", 8192, &error), nullptr);
  EXPECT_NE(error.find("4096"), std::string::npos) << error;
  EXPECT_EQ(ShmSegment::Create(folder_, "link", 4096, &error), nullptr) << "exists already";
  auto opened = ShmSegment::Open(folder_, "link", 4096, &error);
  ASSERT_NE(opened, nullptr) << error;
  static_cast<char*>(created->data())[10] = 'q';
  EXPECT_EQ(static_cast<char*>(opened->data())[10], 'q');
  chmod(created->path().c_str(), 0644);
  EXPECT_EQ(ShmSegment::Open(folder_, "link", 4096, &error), nullptr);
  EXPECT_NE(error.find("open to other users"), std::string::npos) << error;
  const std::string path = created->path();
  created->Unlink();
  EXPECT_NE(access(path.c_str(), F_OK), 0);
  EXPECT_EQ(static_cast<char*>(opened->data())[10], 'q') << "the mapping outlives the name";
}

TEST_F(ShmSegmentTest, FolderOpenToOthersIsRefused) {
  chmod(folder_.c_str(), 0755);
  std::string error;
  EXPECT_EQ(ShmRunFolder("run" + std::to_string(getpid()), &error), "");
  EXPECT_NE(error.find("open to other users"), std::string::npos) << error;
  chmod(folder_.c_str(), 0700);
}

constexpr uint32_t kTwoProcessCapacity = 1u << 16;
constexpr uint32_t kTwoProcessBound = 20000;
constexpr size_t kRingBytes = ShmRingBytes(kTwoProcessCapacity);

// The child: maps the segment by name as another process would, and echoes every message from
// ring 0 to ring 1 until it gets an empty one. Exit code 0 on success.
int EchoChild(const std::string& folder) {
  std::string error;
  auto segment = ShmSegment::Open(folder, "pair", 2 * kRingBytes, &error);
  if (segment == nullptr) return 2;
  char* base = static_cast<char*>(segment->data());
  ShmRing in(base, kRingBytes, kTwoProcessCapacity, kTwoProcessBound);
  ShmRing out(base + kRingBytes, kRingBytes, kTwoProcessCapacity, kTwoProcessBound);
  if (!in.ok() || !out.ok()) return 3;
  std::string message;
  Reject reject;
  for (;;) {
    if (in.Read(&message, &reject, Generous()) != Status::kOk) return 4;
    if (message.empty()) return 0;
    if (out.Write(message.data(), message.size(), Generous()) != Status::kOk) return 5;
  }
}

TEST_F(ShmSegmentTest, TwoProcessesExchangeThroughTheRingsAndAKilledPeerIsNoticed) {
  std::string error;
  auto segment = ShmSegment::Create(folder_, "pair", 2 * kRingBytes, &error);
  ASSERT_NE(segment, nullptr) << error;
  char* base = static_cast<char*>(segment->data());
  ShmRing::Format(base, kTwoProcessCapacity, kTwoProcessBound);
  ShmRing::Format(base + kRingBytes, kTwoProcessCapacity, kTwoProcessBound);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(EchoChild(folder_));
  ShmRing out(base, kRingBytes, kTwoProcessCapacity, kTwoProcessBound);
  ShmRing in(base + kRingBytes, kRingBytes, kTwoProcessCapacity, kTwoProcessBound);
  std::string got;
  Reject reject;
  // Messages larger than a quarter of the ring, so that both sides wait for each other.
  for (int i = 0; i < 300; ++i) {
    std::string message(static_cast<size_t>(1 + (i * 7919) % kTwoProcessBound), '\0');
    for (size_t k = 0; k < message.size(); k += 97) message[k] = static_cast<char>(i + k);
    ASSERT_EQ(out.Write(message.data(), message.size(), Generous()), Status::kOk) << i;
    ASSERT_EQ(in.Read(&got, &reject, Generous()), Status::kOk) << i;
    ASSERT_EQ(got, message) << i;
  }
  // The peer has the segment mapped: the name can go, and nothing is left if either is killed.
  segment->Unlink();
  EXPECT_NE(access((folder_ + "/pair").c_str(), F_OK), 0);
  // Killed while it holds the ring (waiting in Read): this side's reads end at their deadline
  // instead of hanging, and its writes fail once the ring is full.
  kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(in.Read(&got, &reject, Soon()), Status::kEmpty);
  const std::string filler(kTwoProcessBound, 'f');
  Status last = Status::kOk;
  for (int i = 0; i < 10 && last == Status::kOk; ++i) {
    last = out.Write(filler.data(), filler.size(), Soon());
  }
  EXPECT_EQ(last, Status::kFull);
}

TEST_F(ShmSegmentTest, ChildEndsCleanly) {
  std::string error;
  auto segment = ShmSegment::Create(folder_, "pair", 2 * kRingBytes, &error);
  ASSERT_NE(segment, nullptr) << error;
  char* base = static_cast<char*>(segment->data());
  ShmRing::Format(base, kTwoProcessCapacity, kTwoProcessBound);
  ShmRing::Format(base + kRingBytes, kTwoProcessCapacity, kTwoProcessBound);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) _exit(EchoChild(folder_));
  ShmRing out(base, kRingBytes, kTwoProcessCapacity, kTwoProcessBound);
  ASSERT_EQ(out.Write("", 0, Generous()), Status::kOk);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace starling::net
