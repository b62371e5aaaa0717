#include "net/poll.h"

#include <cerrno>

namespace starling::net {

bool WaitReadable(zmq::socket_t& socket, std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  try {
    return zmq::poll(&item, 1, timeout) > 0 && (item.revents & ZMQ_POLLIN) != 0;
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return false;
    throw;
  }
}

bool WaitReadable(zmq::socket_t& socket, const std::vector<int>& fds,
                  std::chrono::milliseconds timeout, std::vector<bool>* fd_ready) {
  fd_ready->assign(fds.size(), false);
  if (fds.empty()) return WaitReadable(socket, timeout);
  std::vector<zmq::pollitem_t> items;
  items.reserve(1 + fds.size());
  items.push_back({socket.handle(), 0, ZMQ_POLLIN, 0});
  for (int fd : fds) items.push_back({nullptr, fd, ZMQ_POLLIN, 0});
  try {
    if (zmq::poll(items.data(), items.size(), timeout) <= 0) return false;
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return false;
    throw;
  }
  for (size_t i = 0; i < fds.size(); ++i) {
    (*fd_ready)[i] = (items[1 + i].revents & (ZMQ_POLLIN | ZMQ_POLLERR)) != 0;
  }
  return (items[0].revents & ZMQ_POLLIN) != 0;
}

}  // namespace starling::net
