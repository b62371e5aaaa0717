// Run options as lines that two processes can compare, and the first option in which they
// differ, named as its command-line option with both values: what a node refused for other run
// options is told ("--step 0.05 here, 0.1 at node-2 (key ABCDEFGH...) at tcp://10.0.0.2:7000").
#pragma once

#include <string>
#include <vector>

#include "node/config/run_config.h"

namespace starling::node {

// The options every node of a run formed by seed join must share, one "name=value" per line:
// the run id's canonical text (node/config/run_id.h) for `nodes` nodes, with the --topology
// spec (a file: spec as the file's size and content hash, FileIdentity) in place of the edge list,
// which the spec,
// --nodes and --seed determine.
std::vector<std::string> JoinOptionLines(const RunConfig& config, int nodes);

// The fingerprint of such lines (FNV-1a 64 of the lines joined by newlines).
uint64_t OptionLinesFingerprint(const std::vector<std::string>& lines);

// "" if the lines are equal; otherwise the first name whose value differs (or that one side
// lacks), as "--NAME VALUE here, VALUE at THERE" ('_' in a name becomes '-', as in the option;
// a number as the shortest decimal that is exactly it; a missing value is "(not set)").
std::string FirstDifference(const std::vector<std::string>& here,
                            const std::vector<std::string>& there, const std::string& there_name);

// The lines as one line of at most `max_bytes` bytes, for a HELLO or a rendezvous publication:
// joined by ';'. Lines that do not fit are left off from the end, and a last "..." says so.
std::string OptionLinesText(const std::vector<std::string>& lines, size_t max_bytes);
// Reads such a text back (untrusted: at most 256 lines, each "name=value"); empty if the text
// is not one (a peer that sends only its method's name). *truncated: it ended with "...".
std::vector<std::string> ParseOptionLinesText(const std::string& text, bool* truncated);

// Why two runs' ids differ, as each side would say it: `here` from this node's view ("other run
// options: --step 0.1 here, 0.2 at node 2"), `there` from the other node's ("other run options:
// --step 0.2 here, 0.1 at node 0"). `their_text` is the other node's OptionLinesText; when it
// names no differing option (the options agree, or it carries none), both say what else makes a
// run id: the graph, and the training data's labels and feature scaling.
struct RunDifference {
  std::string here, there;
};
RunDifference ExplainRunDifference(const std::vector<std::string>& mine,
                                   const std::string& their_text, const std::string& my_name,
                                   const std::string& their_name);

// "--step 0.1 here, 0.2 at node 2" as a third node would read it, naming `here_name` for
// "here": "--step 0.1 at node 0, 0.2 at node 2" (the text unchanged if it says no "here").
std::string AsSeenByOthers(const std::string& difference, const std::string& here_name);

}  // namespace starling::node
