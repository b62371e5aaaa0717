// The probe's end of the nodes' telemetry (docs/explanations/architecture.md): SUB sockets that
// take every message, bounded in size before anything reaches memory, connected to a node's
// telemetry port as a CURVE client of that node when the probe has keys. Shared by the monitor (one
// socket for every node) and the inference probe (one socket per observed node).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "net/envelope.h"
#include "net/security.h"

namespace starling::node {

// A SUB socket of `context` subscribed to everything, with ZMQ_MAXMSGSIZE = max_message_bytes
// (the decoder's bound for the run) and no linger, not yet connected.
zmq::socket_t MakeTelemetrySubscriber(zmq::context_t& context, uint64_t max_message_bytes);

// Connects `sub` to the telemetry endpoint of node `id`, whose peer endpoint (cluster file) is
// `peer_endpoint`; with `curve`, as a client of that node's key (libzmq takes the server key at
// connect time, so one socket can serve several nodes). Returns the telemetry endpoint. Throws
// std::runtime_error naming the node and endpoint if libzmq refuses, and std::out_of_range if
// `curve` has no key for node `id`.
std::string ConnectToTelemetry(zmq::socket_t* sub, int id, const std::string& peer_endpoint,
                               const std::optional<net::CurveOptions>& curve);

// Takes the next message waiting on `sub` without blocking. False when there is none, and when a
// signal interrupted the call (EINTR): the caller's loop checks its stop flag.
bool ReceiveWaiting(zmq::socket_t& sub, zmq::message_t* message);

// The value of the telemetry field `name` of `envelope`, or `fallback` when it has none.
double TelemetryValue(const net::Envelope& envelope, const std::string& name,
                      double fallback = 0.0);

}  // namespace starling::node
