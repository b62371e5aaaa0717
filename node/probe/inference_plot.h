// The PNG of an inference result (inference.png), drawn by a Python script
// (examples/plot_inference.py) in a child process: matplotlib is optional (Debian's
// python3-matplotlib), so a missing or failing script costs the picture, never the results.
#pragma once

#include <string>

namespace starling::node {

// Runs `/usr/bin/python3 script dir` and waits for it at most 60 s (then kills it). Returns a
// note for the user saying why no PNG was drawn, or "" when the script succeeded.
std::string PlotInference(const std::string& script, const std::string& dir);

// The script starling-probe infer draws with unless --plot-script says otherwise:
// ../share/starling/plot_inference.py beside the folder of the running executable (bin/ once
// installed, build/node/ in a build tree, where the build copies the script). "" if the
// executable's path cannot be read.
std::string DefaultPlotScript();

}  // namespace starling::node
