#include "net/endpoint.h"

#include <cstdlib>
#include <stdexcept>

namespace starling::net {

std::string TcpEndpointAtOffset(const std::string& peer_endpoint, int offset) {
  if (peer_endpoint.rfind("tcp://", 0) == 0) {
    const size_t colon = peer_endpoint.rfind(':');
    if (colon != std::string::npos && colon > 6) {
      const std::string port_text = peer_endpoint.substr(colon + 1);
      char* end = nullptr;
      const long port = std::strtol(port_text.c_str(), &end, 10);
      if (!port_text.empty() && *end == '\0' && port >= 1 && port + offset <= 65535 &&
          port + offset >= 1) {
        return peer_endpoint.substr(0, colon + 1) + std::to_string(port + offset);
      }
    }
  }
  throw std::invalid_argument("endpoint '" + peer_endpoint +
                              "': expected tcp://HOST:PORT with PORT+" + std::to_string(offset) +
                              " at most 65535");
}

std::string TelemetryEndpointFor(const std::string& peer_endpoint) {
  if (peer_endpoint.rfind("ipc://", 0) == 0) return peer_endpoint + ".telemetry";
  if (peer_endpoint.rfind("tcp://", 0) == 0) {
    return TcpEndpointAtOffset(peer_endpoint, kTelemetryPortOffset);
  }
  throw std::invalid_argument("endpoint '" + peer_endpoint +
                              "': expected tcp://HOST:PORT (PORT < 65535) or ipc://PATH");
}

std::string RoutingIdFor(int id) { return "n" + std::to_string(id); }

int IdFromRoutingId(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  if (size < 2 || size > 11 || p[0] != 'n') return -1;
  long value = 0;
  for (size_t k = 1; k < size; ++k) {
    if (p[k] < '0' || p[k] > '9') return -1;
    value = value * 10 + (p[k] - '0');
    if (value > 0x7fffffff) return -1;
  }
  if (size > 2 && p[1] == '0') return -1;  // one spelling per id
  return static_cast<int>(value);
}

}  // namespace starling::net
