// A spdlog sink that remembers the node's last error line, so that the C ABI can hand the
// node's own message to the caller (starling_last_error) when its loop ends with an error.
#pragma once

#include <spdlog/sinks/base_sink.h>

#include <mutex>
#include <string>

namespace starling::capi {

class LastErrorSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  LastErrorSink() { set_level(spdlog::level::err); }
  std::string last() {
    std::lock_guard<std::mutex> lock(mutex_);
    return last_;
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    last_.assign(msg.payload.data(), msg.payload.size());  // base_sink holds mutex_
  }
  void flush_() override {}

 private:
  std::string last_;
};

}  // namespace starling::capi
