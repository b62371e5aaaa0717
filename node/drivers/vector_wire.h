// Model vectors <-> envelope payloads: how the daemon's data path puts an algorithm's vectors on
// the wire and reads them back (net/ only carries and checks payloads; the choice of encoding
// for a vector is made here).
#pragma once

#include <string>
#include <vector>

#include "algorithms/types.h"
#include "net/envelope.h"
#include "net/reject.h"

namespace starling::node {

// Splits v (a whole number of blocks of dim doubles) into one payload per block, replacing
// e->payloads. Dense: float64 views of v (no copy; v must outlive the send). Sparse: a top-k
// payload of each block's nonzero entries, packed into *storage (kept alive by the caller until
// the send), which is how CHOCO-SGD's compressed differences travel.
void AttachVectors(const Vec& v, int dim, net::Envelope* e);
void AttachSparseVectors(const Vec& v, int dim, std::vector<std::string>* storage,
                         net::Envelope* e);
// One block: a top-k payload of the nonzero entries of x[0..dim), packed into *storage.
net::Payload SparsePayload(const double* x, int dim, std::string* storage);

// A vqSGD message [norm, S codes] (RoundAlgorithm::OutgoingVqSamples, CHOCO-SGD's payload) as
// one cross-polytope payload: the norm in its scale, the codes packed into *storage (kept alive
// by the caller until the send), 1 + ceil(log2 dim) bits each.
void AttachCrossPolytope(const Vec& message, int dim, int samples, std::string* storage,
                         net::Envelope* e);
// The inverse for a received ROUND: exactly one cross-polytope payload of this run's dim and S,
// every code < 2 dim, into *out as [norm, S codes]. False with *reject otherwise (a reject to
// count with Transport::ReportReject).
bool CollectCrossPolytope(const net::Envelope& e, int dim, int samples, Vec* out,
                          net::Reject* reject);

// Quantized gossip's coded message (QuantizedGossip::coded(): per segment [r, dim codes < 2^bits])
// as one range-codes payload per segment: r in its scale, the codes packed into (*storage)[s]
// (kept alive by the caller until the send), bits each.
void AttachRangeCodes(const Vec& coded, int dim, int bits, std::vector<std::string>* storage,
                      net::Envelope* e);
// The inverse for a received ROUND, decoded: exactly `segments` range-codes payloads of this
// run's dim and bits, into *out as the segments * dim values the sender's own message holds
// (QuantizedGossip::DecodeSegment, the sender's function). False with *reject otherwise (a
// reject to count with Transport::ReportReject).
bool CollectRangeCodes(const net::Envelope& e, int dim, int segments, int bits, Vec* out,
                       net::Reject* reject);

// Concatenates an envelope's payload vectors into *out: float64 and float32 as they are, top-k
// scattered into zeros. False (with *reject) for a lattice, cross-polytope or range-codes payload
// or NaN/Inf. The transport
// leaves the float value check to this copy (one pass over the bytes), so a failure is a reject
// to count with Transport::ReportReject.
bool CollectVectors(const net::Envelope& e, Vec* out, net::Reject* reject);

}  // namespace starling::node
