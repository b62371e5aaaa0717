// Writes the seed corpus for codec_fuzz: one valid encoded message of every type and payload
// encoding (and a few near-misses), so that the fuzzer starts from the real wire format.
// Usage: make_corpus DIR
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "net/codec.h"
#include "net/payload.h"

using namespace starling::net;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_corpus DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  int count = 0;
  auto write = [&](const std::string& name, const std::string& bytes) {
    std::ofstream(dir + "/" + std::to_string(count++) + "-" + name, std::ios::binary) << bytes;
  };
  std::vector<double> x = {1.5, -2.25, 0.0, -0.0, 1e-300, 3e300, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                           16};
  std::string f32, topk;
  const std::vector<uint32_t> idx = {0, 3, 15};
  const std::vector<double> vals = {1.0, -4.5, 1e10};
  const std::string codes(6, '\x5a');  // 16 codes of 3 bits
  // vqSGD cross-polytope codes of dim 12 (5 bits, each < 24), least significant bit first.
  std::string cross(CrossPolytopeBytes(12, 6), '\0');
  {
    size_t at = 0;
    for (uint32_t code : {0u, 23u, 5u, 12u, 1u, 17u}) {
      for (int b = 0; b < CrossPolytopeCodeBits(12); ++b, ++at) {
        if ((code >> b) & 1) cross[at / 8] = static_cast<char>(cross[at / 8] | (1 << (at % 8)));
      }
    }
  }
  // Quantized gossip's range codes: dim 13 codes of 5 bits (65 bits in 9 bytes: 7 unused bits
  // for the fuzzer to set), LSB first.
  std::string range_codes(RangeCodesBytes(13, 5), '\0');
  {
    size_t at = 0;
    for (uint32_t k = 0; k < 13; ++k) {
      const uint32_t code = (7 * k + 3) % 32;
      for (int b = 0; b < 5; ++b, ++at) {
        if ((code >> b) & 1) {
          range_codes[at / 8] = static_cast<char>(range_codes[at / 8] | (1 << (at % 8)));
        }
      }
    }
  }
  const std::vector<std::pair<std::string, Payload>> payloads = {
      {"f64", Float64Payload(x.data(), 16)},
      {"f32", Float32Payload(x.data(), 16, &f32)},
      {"lattice", LatticePayload(16, 0.25, 8, codes, 0x12345678abcdef01ULL)},
      {"topk", TopKPayload(16, idx, vals, &topk)},
      {"cross-polytope", CrossPolytopePayload(12, 3.25, 6, cross, 0x0102030405060708ULL)},
      {"range-codes", RangeCodesPayload(13, 0.625, 5, range_codes)},
  };
  Envelope e;
  e.run_id = 0x1234567890abcdefULL;
  e.sender = 3;
  e.type = MessageType::kHello;
  e.hello = {16, 2, false};
  e.text = "extra";
  write("hello", Encode(e));
  e.hello.ack = true;
  e.text = "refused by node 1: dimension 15 differs from ours 16";
  write("hello-ack", Encode(e));
  e.type = MessageType::kRound;
  e.key = {41, 1, 2};
  for (const auto& [name, p] : payloads) {
    e.payloads = {p};
    write("round-" + name, Encode(e));
  }
  e.payloads = {payloads[0].second, payloads[0].second};
  write("round-2x", Encode(e));
  e.type = MessageType::kResend;
  write("resend", Encode(e));
  e.type = MessageType::kXchgReq;
  e.exchange_seq = 77;
  e.payloads = {payloads[0].second};
  write("xchg-req", Encode(e));
  e.type = MessageType::kXchgRep;
  write("xchg-rep", Encode(e));
  e.type = MessageType::kBusy;
  write("busy", Encode(e));
  e.type = MessageType::kHeartbeat;
  write("heartbeat", Encode(e));
  e.type = MessageType::kBye;
  e.text = "finished";
  write("bye", Encode(e));
  e.type = MessageType::kTelemetry;
  e.telemetry = {{"iteration", 12}, {"local_objective", 0.693}, {"final", 0}};
  write("telemetry", Encode(e));
  // Out-of-line payloads (version 3): the first frame and each payload frame joined by the
  // fuzz target's frame separator; then one with a frame too short.
  const std::string separator("\xc1\x46RM", 4);  // 0xc1 "FRM", as in codec_fuzz.cc
  e.type = MessageType::kXchgReq;
  for (const auto& [name, p] : payloads) {
    e.payloads = {p, payloads[0].second};
    std::string framed;
    std::vector<uint32_t> out_of_line;
    EncodeFramed(e, 0, &framed, &out_of_line);
    for (uint32_t i : out_of_line) framed += separator + std::string(e.payloads[i].bytes);
    write("framed-" + name, framed);
    if (name == "f64") write("framed-short", framed.substr(0, framed.size() - 8));
  }
  // Near misses: truncated and with a trailing byte.
  e.type = MessageType::kRound;
  const std::string round = Encode(e);
  write("truncated", round.substr(0, round.size() / 2));
  write("trailing", round + '\x00');
  std::printf("wrote %d seeds to %s\n", count, dir.c_str());
  return 0;
}
