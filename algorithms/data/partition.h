// Splitting a data set's rows among N nodes. Every scheme is seeded and deterministic, so every
// process that reads the same file computes the same shards.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/data/dataset.h"

namespace starling::algorithms {

// Row indices per node (shards[i] is node i's rows, in ascending order). Every row goes to exactly
// one node and every node gets at least one row; otherwise std::runtime_error naming the scheme
// and the node count. nodes < 1 is std::invalid_argument; a non-finite label is
// std::runtime_error for the label-based schemes.
using Shards = std::vector<std::vector<int>>;

// i.i.d.: a seeded shuffle cut into N near-equal parts.
Shards PartitionIid(const Dataset& data, int nodes, uint64_t seed);
// By label (non-i.i.d.): rows sorted by label (ties in a seeded random order), then cut into N
// contiguous near-equal parts, so each node sees one or two classes (when there are at least as
// many nodes as classes of similar size; otherwise a contiguous run of classes).
Shards PartitionByLabel(const Dataset& data, int nodes, uint64_t seed);
// Dirichlet(alpha) label skew: for each class, node proportions ~ Dir(alpha), seeded. A draw that
// leaves a node empty is redrawn (from the same seeded stream) up to 100 times before the error.
// iid and label shards are identical with any standard library; Dirichlet shards use
// std::gamma_distribution, whose algorithm is the library's own.
Shards PartitionDirichlet(const Dataset& data, int nodes, double alpha, uint64_t seed);

// Pre-partitioned data: node i gets the rows whose Dataset::node_of_row is i, in file order. Every
// id must be below `nodes` and every node must have a row; std::runtime_error names the file and
// the offending node otherwise.
Shards PartitionByNodeColumn(const Dataset& data, int nodes);

// The CSV column K of a "column:K" spec, or -1 for any other spec. Throws std::invalid_argument
// for a malformed "column:" spec.
int NodeColumnOf(const std::string& spec);

// By spec: "iid", "label", "dirichlet:ALPHA", "column:K" (the data must have been read with node
// column K). Throws std::invalid_argument naming the spec.
Shards Partition(const Dataset& data, const std::string& spec, int nodes, uint64_t seed);
const char* PartitionSpecs();

}  // namespace starling::algorithms
