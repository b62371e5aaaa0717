// Endpoint conventions shared by the daemon, the launcher and the probe.
//
// The ports of a node: counted from its peer port PORT (its endpoint tcp://HOST:PORT), it
// listens on PORT (peers), PORT+1 (telemetry) and, in a run formed with starlingd --join,
// PORT+2 (member lists, CURVE) and PORT+3 (the join port's public key, plaintext). Nodes that
// share a host take PORTs kPortsPerNode apart, so that one firewall rule (PORT..PORT+3 per node)
// serves every way of starting a run.
#pragma once

#include <string>

namespace starling::net {

inline constexpr int kTelemetryPortOffset = 1;
inline constexpr int kJoinPortOffset = 2;
inline constexpr int kKeyPortOffset = 3;
inline constexpr int kPortsPerNode = 4;
inline constexpr int kDefaultPort = 7000;

// tcp://HOST:PORT -> tcp://HOST:PORT+offset. Throws std::invalid_argument naming the endpoint
// if it is not of that form or PORT+offset is not a port.
std::string TcpEndpointAtOffset(const std::string& peer_endpoint, int offset);

// The telemetry (PUB) endpoint of the node whose peer (ROUTER) endpoint is `peer_endpoint`:
// tcp://HOST:PORT -> tcp://HOST:PORT+1; ipc://PATH -> ipc://PATH.telemetry.
// Throws std::invalid_argument naming the endpoint if it is neither form or PORT is 65535.
std::string TelemetryEndpointFor(const std::string& peer_endpoint);

// The routing id a node's DEALER sockets present ("n" + decimal id), and its inverse (-1 if the
// bytes are not of that form).
std::string RoutingIdFor(int id);
int IdFromRoutingId(const void* data, size_t size);

}  // namespace starling::net
