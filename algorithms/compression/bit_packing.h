// Fixed-width codes packed least significant bit first, the layout both quantizers put on the
// wire (LatticeQuantizer's codes, CrossPolytopeQuantizer's; net/envelope.h documents it for the
// payloads that carry them): code k occupies bits [k*bits, (k+1)*bits) of the byte string, in
// ceil(n*bits/8) bytes whose unused high bits are 0.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace starling::algorithms {

// Appends the packed form of codes (each reduced to its low `bits` bits, bits in [1, 32]) to
// *out, which keeps its capacity.
void AppendPackedBits(const std::vector<uint32_t>& codes, int bits, std::string* out);
// The inverse for bytes from the network: false unless bytes.size() == ceil(n*bits/8) and the
// unused bits are 0; then *codes holds the n codes (resized to n).
bool UnpackBits(std::string_view bytes, size_t n, int bits, std::vector<uint32_t>* codes);

}  // namespace starling::algorithms
