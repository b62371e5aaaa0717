// Graph generators. All random ones are seeded and deterministic for a given seed, on every
// platform: they use std::mt19937_64 and their own conversions of its raw output (the std::
// distributions are implementation-defined). Invalid sizes throw std::invalid_argument.
#pragma once

#include <cstdint>
#include <string>

#include "topology/graph.h"

namespace starling::topology {

// n >= 1; n = 1 has no edge and n = 2 a single edge.
Graph Ring(int n);
// 2-D torus with rows*cols nodes (wrap-around grid), node r*cols + c at row r, column c;
// rows, cols >= 1. A side of 1 or 2 adds no self loop or duplicate edge.
Graph Torus(int rows, int cols);
// 2-D grid without wrap-around, numbered like Torus.
Graph Grid(int rows, int cols);
Graph Complete(int n);
// Node 0 is the centre.
Graph Star(int n);
// Erdős–Rényi G(n, p), p in (0, 1], redrawn with seeds seed, seed+1, ... until connected.
// Throws std::runtime_error after 1000 draws.
Graph ErdosRenyi(int n, double p, uint64_t seed);
// Random connected r-regular graph (0 <= r < n, n*r even; r >= 2 unless n <= 2, since degree 0
// or 1 cannot connect more nodes) by the Steger-Wormald pairing, restarted when it gets stuck or
// the result is disconnected: close to uniform for small r, not exactly uniform. Throws
// std::invalid_argument for impossible (n, r), std::runtime_error after 1000 failed attempts.
Graph RandomRegular(int n, int r, uint64_t seed);
// Exponential graph: i ~ (i + 2^k) mod n for every k with 2^k < n.
Graph Exponential(int n);
// Ring of cliques: `cliques` complete graphs of `size` nodes each (clique c holds nodes
// c*size .. c*size + size - 1), clique c's last node linked to clique c+1's first (mod cliques)
// by one bridge edge: the standard community-structure test graph. cliques, size >= 1. With
// cliques >= 3 (and size >= 2) there are cliques * (size*(size-1)/2 + 1) edges, the two bridge
// ends of a clique have degree size and the others size - 1; two cliques get two bridges, one
// clique none; size 1 is a ring of `cliques` nodes.
Graph RingOfCliques(int cliques, int size);

// Parses a topology spec and builds the graph for n nodes:
//   ring | torus | torus:RxC | grid:RxC | complete | star | er:P | regular:R | exp
//   | ring-of-cliques:CxK (C cliques of K nodes, C*K = n)
//   | file:PATH (a plain edge list, see edge_list.h, or a cluster file).
// Square-ish R x C is chosen for a bare "torus" (the largest divisor R of n with R*R <= n; a
// prime n gives 1 x n, a ring). Throws std::invalid_argument "--topology 'SPEC': reason" on a
// bad spec, including a node count that is not n; std::runtime_error for a disconnected graph or
// a generator that gave up (naming the spec), or a bad file (file errors name the file and line).
Graph MakeTopology(const std::string& spec, int n, uint64_t seed);
// Help text listing the accepted specs.
const char* TopologySpecs();

}  // namespace starling::topology
