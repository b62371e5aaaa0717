// The OPTRA authors' least-squares instance (optra-least-squares in the shared data folder) as run
// options: what a user passes on the command line to run it (docs/how-to/own-data.md).
#pragma once

#include <string>

#include "node/config/run_config.h"
#include "tests/test_data.h"

namespace starling::testing {

inline std::string OptraDir() { return SharedData("optra-least-squares"); }

// Skips the current test unless the instance's files are present.
#define STARLING_REQUIRE_OPTRA_INSTANCE()                                       \
  for (const char* f : {"rows.csv", "laplacian.csv", "x0.csv", "x_opt.csv"}) { \
    STARLING_REQUIRE_FILE(::starling::testing::OptraDir() + "/" + f);           \
  }

// --problem least-squares --l2 0 --data rows.csv --format csv --partition column:0
// --label-column 1 --loss-scale 2 (f_i = ||A_i x - b_i||^2) --laplacian laplacian.csv --nodes 20
// --x0 x0.csv --x-star x_opt.csv
inline node::RunConfig OptraInstanceConfig(const std::string& algorithm) {
  const std::string dir = OptraDir();
  node::RunConfig c;
  c.algorithm = algorithm;
  c.problem = "least-squares";
  c.l2 = 0;
  c.data = dir + "/rows.csv";
  c.format = "csv";
  c.partition = "column:0";
  c.label_column = 1;
  c.loss_scale = 2;
  c.laplacian_file = dir + "/laplacian.csv";
  c.nodes = 20;
  c.x0 = dir + "/x0.csv";
  c.x_star = dir + "/x_opt.csv";
  return c;
}

}  // namespace starling::testing
