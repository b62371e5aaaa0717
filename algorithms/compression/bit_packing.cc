#include "algorithms/compression/bit_packing.h"

namespace starling::algorithms {

void AppendPackedBits(const std::vector<uint32_t>& codes, int bits, std::string* out) {
  size_t byte = out->size();
  out->resize(byte + (codes.size() * bits + 7) / 8, '\0');
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t acc = 0;  // pending bits, least significant first (< 8 + 32 of them)
  int pending = 0;
  for (uint32_t code : codes) {
    acc |= (code & mask) << pending;
    pending += bits;
    while (pending >= 8) {
      (*out)[byte++] = static_cast<char>(acc & 0xff);
      acc >>= 8;
      pending -= 8;
    }
  }
  if (pending > 0) (*out)[byte] = static_cast<char>(acc & 0xff);
}

bool UnpackBits(std::string_view bytes, size_t n, int bits, std::vector<uint32_t>* codes) {
  if (bits < 1 || bits > 32 || bytes.size() != (n * bits + 7) / 8) return false;
  codes->resize(n);
  const uint64_t mask = (uint64_t{1} << bits) - 1;
  uint64_t acc = 0;
  int pending = 0;
  size_t byte = 0;
  for (size_t k = 0; k < n; ++k) {
    while (pending < bits) {
      acc |= uint64_t{static_cast<uint8_t>(bytes[byte++])} << pending;
      pending += 8;
    }
    (*codes)[k] = static_cast<uint32_t>(acc & mask);
    acc >>= bits;
    pending -= bits;
  }
  return acc == 0;  // the last byte's unused bits
}

}  // namespace starling::algorithms
