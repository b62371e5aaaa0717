// Waiting for input on one socket, robust to signals: a SIGINT or SIGTERM that interrupts the
// wait is not an error (the caller's loop checks its stop flag), so EINTR reads as "nothing yet".
#pragma once

#include <chrono>
#include <vector>
#include <zmq.hpp>

namespace starling::net {

// True if `socket` has a message to read within `timeout`. Throws zmq::error_t only for errors
// other than EINTR.
bool WaitReadable(zmq::socket_t& socket, std::chrono::milliseconds timeout);

// The same, also waking when one of `fds` (plain descriptors) becomes readable or reports an
// error or hang-up: (*fd_ready)[i] says which (resized to fds.size()). Returns whether the
// socket has a message to read.
bool WaitReadable(zmq::socket_t& socket, const std::vector<int>& fds,
                  std::chrono::milliseconds timeout, std::vector<bool>* fd_ready);

}  // namespace starling::net
