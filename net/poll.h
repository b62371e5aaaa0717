// Waiting for input on one socket, robust to signals: a SIGINT or SIGTERM that interrupts the
// wait is not an error (the caller's loop checks its stop flag), so EINTR reads as "nothing yet".
#pragma once

#include <chrono>

#include <zmq.hpp>

namespace starling::net {

// True if `socket` has a message to read within `timeout`. Throws zmq::error_t only for errors
// other than EINTR.
bool WaitReadable(zmq::socket_t& socket, std::chrono::milliseconds timeout);

}  // namespace starling::net
