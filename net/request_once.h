// One request and its answer over a fresh ZeroMQ DEALER, with a deadline: how a node joining a
// run by a seed (node/config/seed_join.h) asks a seed for its key and a member for its view.
// The answer is untrusted: decoded within the caller's limits and checked to be of the expected
// type. When no answer comes, the result says why, so that the caller can name it: no TCP
// connection (with its cause from a TcpProbe, made only after ZeroMQ's own attempt failed), our
// key refused by the server's allow-list, a failed CURVE handshake (the server has another key),
// or no answer in time.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "net/codec.h"
#include "net/envelope.h"
#include "net/security.h"

namespace starling::net {

struct RequestOnceOptions {
  std::string endpoint;  // tcp://HOST:PORT
  // CURVE: our key pair (secret_key, public_key) and the server's public key; nullopt: plaintext.
  std::optional<CurveOptions> curve;
  std::string server_key;
  std::chrono::milliseconds timeout{5000};
  DecodeLimits limits;
  MessageType answer_type = MessageType::kJoinAnswer;
};

struct RequestOutcome {
  enum class Kind {
    kAnswered,         // `answer` holds it
    kNoConnection,     // no TCP connection: `detail` says why ("connection refused", ...)
    kKeyRefused,       // the server's allow-list refused our key
    kHandshakeFailed,  // CURVE failed otherwise: the server does not hold the key we expected
    kNoAnswer,         // connected, but nothing (valid) came back in time
  };
  Kind kind = Kind::kNoAnswer;
  Envelope answer;
  std::string detail;  // for messages: the cause, or what was wrong with the answer
};

// Sends `request` to options.endpoint and waits for one message of options.answer_type, at most
// options.timeout (plus a TcpProbe's few seconds when the connection fails). Never throws for
// what the network does; throws std::runtime_error for local failures (no monitor socket).
RequestOutcome RequestOnce(zmq::context_t* context, const RequestOnceOptions& options,
                           const Envelope& request);

}  // namespace starling::net
