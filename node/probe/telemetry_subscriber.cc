#include "node/probe/telemetry_subscriber.h"

#include <stdexcept>

#include "net/endpoint.h"

namespace starling::node {

zmq::socket_t MakeTelemetrySubscriber(zmq::context_t& context, uint64_t max_message_bytes) {
  zmq::socket_t sub(context, zmq::socket_type::sub);
  sub.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(max_message_bytes));
  sub.set(zmq::sockopt::subscribe, "");
  sub.set(zmq::sockopt::linger, 0);
  return sub;
}

std::string ConnectToTelemetry(zmq::socket_t* sub, int id, const std::string& peer_endpoint,
                               const std::optional<net::CurveOptions>& curve) {
  const std::string endpoint = net::TelemetryEndpointFor(peer_endpoint);
  try {
    if (curve) net::MakeCurveClient(sub, *curve, curve->server_keys.at(id));
    sub->connect(endpoint);
  } catch (const zmq::error_t& e) {
    throw std::runtime_error("cannot connect to the telemetry of node " + std::to_string(id) +
                             " at " + endpoint + ": " + e.what());
  }
  return endpoint;
}

bool ReceiveWaiting(zmq::socket_t& sub, zmq::message_t* message) {
  try {
    return static_cast<bool>(sub.recv(*message, zmq::recv_flags::dontwait));
  } catch (const zmq::error_t&) {
    return false;
  }
}

double TelemetryValue(const net::Envelope& envelope, const std::string& name, double fallback) {
  for (const auto& f : envelope.telemetry) {
    if (f.name == name) return f.value;
  }
  return fallback;
}

}  // namespace starling::node
