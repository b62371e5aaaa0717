// Feature scaling: x'_j = (x_j - shift_j) * factor_j for every feature j, fitted on the training
// data as a whole (every row of the file, in file order, so that every process that reads the
// same file computes the same numbers bit for bit) and applied unchanged to test and new data.
//
//   none      x' = x (the default: results stay those of the raw features)
//   standard  dense: (x - mean) / std; sparse: x / std, not centred (centring would make every
//             stored zero non-zero). std is the population standard deviation (1/M).
//   minmax    dense: (x - min) / (max - min), into [0, 1]; refused for sparse data (it shifts).
//   maxabs    x / max|x|, into [-1, 1]; keeps zeros, so it suits sparse data.
// A feature whose spread is 0 (constant, or all zero) gets factor 1 (standard/minmax still shift
// it, to 0).
#pragma once

#include <string>

#include "algorithms/data/dataset.h"
#include "algorithms/types.h"

namespace starling::algorithms {

struct FeatureScaling {
  std::string method = "none";
  bool centred = false;  // shift is used (not for sparse data)
  Vec shift;             // empty for none; else num_features entries (0 when not centred)
  Vec factor;            // empty for none; else num_features entries

  bool active() const { return method != "none"; }

  // Fits `method` on `training`. Throws std::invalid_argument for an unknown method, and
  // std::runtime_error naming the data for minmax on sparse data.
  static FeatureScaling Fit(const Dataset& training, const std::string& method);

  // Scales *data in place. Throws std::invalid_argument if its feature count differs.
  void Apply(Dataset* data) const;

  // One line for people: "standard (dense: centred, 123 features, factors 0.34..2.1e+03)".
  std::string Describe() const;
  // Exact text, for the run id: the method and every shift and factor in full precision.
  std::string Canonical() const;

  // A text file that can be read back to scale new data: "starling-scaling 1", then
  // "method M", "centred 0|1", "features D", then D lines "j shift factor" (j from 1, %.17g).
  // Lines from '#' on are comments. Throws std::runtime_error naming the file.
  void Write(const std::string& path, const std::string& comment = "") const;
  static FeatureScaling Read(const std::string& path);
};

// Names accepted by --scale, for --help and messages.
const char* ScalingMethods();

}  // namespace starling::algorithms
