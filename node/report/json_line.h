// A minimal JSON-lines record builder for metrics: flat objects of numbers and strings.
#pragma once

#include <cstdint>
#include <string>

namespace starling::node {

class JsonLine {
 public:
  JsonLine& Add(const std::string& key, double value);  // non-finite values become null
  JsonLine& Add(const std::string& key, int64_t value);
  JsonLine& Add(const std::string& key, int value) { return Add(key, static_cast<int64_t>(value)); }
  JsonLine& Add(const std::string& key, const std::string& value);
  // The record without a trailing newline.
  std::string str() const { return "{" + body_ + "}"; }

 private:
  void Key(const std::string& key);
  std::string body_;
};

// JSON string literal for `s` (quotes and escapes).
std::string JsonQuote(const std::string& s);

}  // namespace starling::node
