// Endpoint conventions shared by the daemon, the launcher and the probe.
#pragma once

#include <string>

namespace starling::net {

// The telemetry (PUB) endpoint of the node whose peer (ROUTER) endpoint is `peer_endpoint`:
// tcp://HOST:PORT -> tcp://HOST:PORT+1; ipc://PATH -> ipc://PATH.telemetry.
// Throws std::invalid_argument naming the endpoint if it is neither form or PORT is 65535.
std::string TelemetryEndpointFor(const std::string& peer_endpoint);

// The routing id a node's DEALER sockets present ("n" + decimal id), and its inverse (-1 if the
// bytes are not of that form).
std::string RoutingIdFor(int id);
int IdFromRoutingId(const void* data, size_t size);

}  // namespace starling::net
