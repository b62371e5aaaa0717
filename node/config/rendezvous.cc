#include "node/config/rendezvous.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "net/curve_keys.h"
#include "node/config/bounded_file.h"
#include "node/config/run_difference.h"

namespace starling::node {

namespace fs = std::filesystem;

namespace {

constexpr size_t kMaxEntryBytes = 4096;
constexpr size_t kMaxHostLength = 255;
constexpr int kMaxProbeKeys = 1000;
constexpr char kClusterName[] = "cluster.conf";

std::string ReadBounded(const std::string& path, size_t limit) {
  return ReadBoundedFile(path, limit, "a rendezvous file");
}

bool ParseId(const std::string& field, int* value) {
  if (field.empty() || field.size() > 7) return false;
  int v = 0;
  for (char c : field) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *value = v;
  return true;
}

bool IsFingerprint(const std::string& s) {
  return s.size() == 16 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

bool IsHostName(const std::string& s) {
  if (s.size() > kMaxHostLength) return false;
  for (unsigned char c : s) {
    if (c <= ' ' || c >= 127) return false;
  }
  return true;
}

// A name no other process or thread of this host uses at the same time.
std::string UniqueSuffix() {
  static std::atomic<int> counter{0};
  return std::to_string(getpid()) + "-" + std::to_string(counter++);
}

// Writes `text` to a temporary file in `dir` and hard-links it to `path`; the link fails with
// EEXIST rather than replacing a file. Returns false (and writes nothing) if `path` exists.
bool LinkNewFile(const std::string& dir, const std::string& path, const std::string& text) {
  const std::string temp =
      dir + "/.tmp-" + fs::path(path).filename().string() + "-" + UniqueSuffix();
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      std::remove(temp.c_str());
      throw std::runtime_error(temp + ": cannot write (is " + dir + " writable?)");
    }
  }
  const int rc = ::link(temp.c_str(), path.c_str());
  const int link_errno = errno;
  std::remove(temp.c_str());
  if (rc == 0) return true;
  if (link_errno == EEXIST) return false;
  throw std::runtime_error(path + ": cannot publish: " + std::strerror(link_errno));
}

// "3, 5, 9 (and 12 more)".
std::string ListIds(const std::vector<int>& ids) {
  std::string out;
  const size_t shown = std::min<size_t>(ids.size(), 20);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + std::to_string(ids[i]);
  if (ids.size() > shown) out += " (and " + std::to_string(ids.size() - shown) + " more)";
  return out;
}

// The ids K of the files node-K.publish in `dir`, with their names; names that do not parse
// are returned with id -1 so that the caller can refuse them.
std::map<std::string, int> ListPublications(const std::string& dir) {
  std::map<std::string, int> found;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    const std::string prefix = "node-", suffix = ".publish";
    if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix)) {
      continue;
    }
    int id = -1;
    if (!ParseId(name.substr(prefix.size(), name.size() - prefix.size() - suffix.size()), &id)) {
      id = -1;
    }
    found[name] = id;
  }
  if (ec) throw std::runtime_error(dir + ": cannot list: " + ec.message());
  return found;
}

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// "0.3", "120".
std::string SecondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", seconds);
  return text;
}

}  // namespace

std::string EntryPath(const std::string& dir, int id) {
  return dir + "/node-" + std::to_string(id) + ".publish";
}

std::string FormatEntry(const RendezvousEntry& entry) {
  std::ostringstream out;
  out << "# starlingd rendezvous publication\n"
      << "version 1\n"
      << "id " << entry.id << "\n"
      << "endpoint " << entry.endpoint << "\n"
      << "key " << (entry.public_key.empty() ? "none" : entry.public_key) << "\n"
      << "run " << entry.run << "\n";
  if (!entry.host.empty()) out << "host " << entry.host << "\n";
  if (!entry.options.empty()) out << "options " << entry.options << "\n";
  return out.str();
}

RendezvousEntry ParseEntry(const std::string& text, const std::string& source, int nodes,
                           int expected_id) {
  auto fail = [&](int line, const std::string& reason) -> void {
    throw std::runtime_error(source + (line > 0 ? ":" + std::to_string(line) : "") + ": " + reason);
  };
  if (text.size() > kMaxEntryBytes)
    fail(0, "larger than " + std::to_string(kMaxEntryBytes) + " bytes");
  if (text.find('\0') != std::string::npos) fail(0, "contains a NUL byte");
  std::map<std::string, std::string> fields;
  std::istringstream in(text);
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::string name, value, extra;
    words >> name >> value;
    if (name.empty()) continue;  // blank but for spaces
    if (value.empty() || (words >> extra))
      fail(number, "expected 'NAME VALUE', got '" + line + "'");
    if (name != "version" && name != "id" && name != "endpoint" && name != "key" && name != "run" &&
        name != "host" && name != "options") {
      fail(number, "unknown field '" + name +
                       "' (expected version, id, endpoint, key, run, host, options)");
    }
    if (!fields.emplace(name, value).second) fail(number, "field '" + name + "' repeated");
  }
  for (const char* required : {"version", "id", "endpoint", "key", "run"}) {
    if (fields.count(required) == 0) fail(0, std::string("no '") + required + "' field");
  }
  if (fields["version"] != "1")
    fail(0, "version '" + fields["version"] + "' (this starlingd reads 1)");
  RendezvousEntry entry;
  if (!ParseId(fields["id"], &entry.id) || entry.id >= nodes) {
    fail(0, "id '" + fields["id"] + "' is not one of 0.." + std::to_string(nodes - 1) +
                " (the run has " + std::to_string(nodes) + " nodes)");
  }
  if (entry.id != expected_id) {
    fail(0, "says id " + std::to_string(entry.id) + " but its name is node " +
                std::to_string(expected_id) + "'s");
  }
  entry.endpoint = fields["endpoint"];
  if (std::string reason = topology::EndpointProblem(entry.endpoint); !reason.empty()) {
    fail(0, reason);
  }
  if (fields["key"] != "none") {
    if (!net::IsZ85Key(fields["key"])) {
      fail(0, "key '" + fields["key"] + "' is neither 'none' nor a 40-character Z85 CURVE key");
    }
    entry.public_key = fields["key"];
  }
  entry.run = fields["run"];
  if (fields.count("options")) entry.options = fields["options"];  // only shown, never trusted
  if (!IsFingerprint(entry.run)) fail(0, "run '" + entry.run + "' is not 16 hex digits");
  if (fields.count("host")) {
    entry.host = fields["host"];
    if (!IsHostName(entry.host)) fail(0, "host is not a printable name of at most 255 bytes");
  }
  return entry;
}

void PublishEntry(const std::string& dir, const RendezvousEntry& entry) {
  const std::string path = EntryPath(dir, entry.id);
  if (!LinkNewFile(dir, path, FormatEntry(entry))) {
    throw std::runtime_error(path + ": exists already: another process has id " +
                             std::to_string(entry.id) + ", or " + dir +
                             " holds an earlier run (use a fresh directory for each run)");
  }
}

std::vector<RendezvousEntry> AwaitEntries(const RendezvousRequest& request) {
  const std::string& dir = request.dir;
  const int n = request.nodes;
  std::vector<RendezvousEntry> entries(n);
  std::vector<bool> have(n, false);
  int count = 0;
  const Clock::time_point start = Clock::now();
  Clock::time_point last_log = start;
  auto missing_ids = [&] {
    std::vector<int> ids;
    for (int i = 0; i < n; ++i) {
      if (!have[i]) ids.push_back(i);
    }
    return ids;
  };
  std::chrono::milliseconds pause(20);
  while (true) {
    for (const auto& [name, id] : ListPublications(dir)) {
      const std::string path = dir + "/" + name;
      if (id < 0 || id >= n) {
        throw std::runtime_error(path + ": not a node of this run (ids are 0.." +
                                 std::to_string(n - 1) + "; is " + dir +
                                 " shared with another run?)");
      }
      if (have[id]) continue;
      RendezvousEntry entry = ParseEntry(ReadBounded(path, kMaxEntryBytes), path, n, id);
      if (entry.run != request.self.run) {
        bool truncated = false;
        const std::string why =
            request.self.options.empty()
                ? std::string("other run options")
                : ExplainRunDifference(ParseOptionLinesText(request.self.options, &truncated),
                                       entry.options, "node " + std::to_string(request.self.id),
                                       "node " + std::to_string(id))
                      .here;
        throw std::runtime_error(path + ": run fingerprint " + entry.run + " differs from node " +
                                 std::to_string(request.self.id) + "'s " + request.self.run +
                                 ": node " + std::to_string(id) + " was started with " + why +
                                 " (every node needs the same), or " + dir +
                                 " holds an earlier run");
      }
      entries[id] = std::move(entry);
      have[id] = true;
      ++count;
    }
    if (count == n) return entries;
    if (request.stop != nullptr && request.stop->load()) {
      throw std::runtime_error("rendezvous " + dir + ": stopped by a signal while waiting for " +
                               ListIds(missing_ids()));
    }
    const double waited = SecondsSince(start);
    if (waited >= request.timeout_seconds) {
      const std::vector<int> missing = missing_ids();
      throw RendezvousTimeout("rendezvous " + dir + ": gave up after " + SecondsText(waited) +
                              " s (--rendezvous-timeout-s " + SecondsText(request.timeout_seconds) +
                              "): " + std::to_string(count) + " of " + std::to_string(n) +
                              " nodes published; missing node" + (missing.size() > 1 ? "s " : " ") +
                              ListIds(missing) + " (no " + EntryPath(dir, missing.front()) +
                              "): did that process start, and does its host see this directory?");
    }
    if (std::chrono::duration<double>(Clock::now() - last_log).count() >=
        request.log_every_seconds) {
      last_log = Clock::now();
      const std::vector<int> missing = missing_ids();
      spdlog::info("rendezvous {}: {} of {} nodes published, waiting for node{} {}", dir, count, n,
                   missing.size() > 1 ? "s" : "", ListIds(missing));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(250));
  }
}

topology::Cluster ClusterFromEntries(const std::vector<RendezvousEntry>& entries,
                                     const topology::Graph& graph, const std::string& dir) {
  const int n = static_cast<int>(entries.size());
  if (graph.num_nodes() != n) {
    throw std::invalid_argument("rendezvous: the graph has " + std::to_string(graph.num_nodes()) +
                                " nodes, " + std::to_string(n) + " published");
  }
  topology::Cluster cluster;
  cluster.graph = graph;
  cluster.source = dir + "/" + kClusterName;
  std::map<std::string, int> owner_of_endpoint, owner_of_key;
  const bool keyed = !entries.front().public_key.empty();
  for (const RendezvousEntry& e : entries) {
    const std::string path = EntryPath(dir, e.id);
    if (auto [it, fresh] = owner_of_endpoint.emplace(e.endpoint, e.id); !fresh) {
      throw std::runtime_error(path + ": endpoint " + e.endpoint + " is also " +
                               EntryPath(dir, it->second) +
                               "'s (two nodes cannot bind one port: "
                               "give each node on a host its own --port (4 apart) or --host)");
    }
    if (e.public_key.empty() == keyed) {
      throw std::runtime_error(path +
                               (keyed ? ": publishes no key but " : ": publishes a key but ") +
                               EntryPath(dir, 0) + (keyed ? " does" : " does not") +
                               ": start every node with the same security (--allow-plaintext on "
                               "all or none)");
    }
    if (keyed) {
      if (auto [it, fresh] = owner_of_key.emplace(e.public_key, e.id); !fresh) {
        throw std::runtime_error(path + ": public key " + e.public_key + " is also " +
                                 EntryPath(dir, it->second) +
                                 "'s: every node needs its own key pair");
      }
    }
    cluster.nodes.push_back({e.id, e.endpoint, e.public_key});
  }
  // Probe keys, sorted by file name so that every node lists them in the same order.
  std::set<std::string> probe_files;
  std::error_code ec;
  for (const fs::directory_entry& f : fs::directory_iterator(dir, ec)) {
    const std::string name = f.path().filename().string();
    if (name.rfind("probe-", 0) == 0 && name.size() > 10 &&
        name.compare(name.size() - 4, 4, ".pub") == 0) {
      probe_files.insert(f.path().string());
    }
  }
  if (probe_files.size() > kMaxProbeKeys) {
    throw std::runtime_error(dir + ": more than " + std::to_string(kMaxProbeKeys) +
                             " probe-*.pub files");
  }
  for (const std::string& path : probe_files) {
    const std::string key = net::ReadCurveKeyFile(path, /*secret=*/false);  // throws naming it
    if (auto it = owner_of_key.find(key); it != owner_of_key.end()) {
      throw std::runtime_error(path + ": the public key of node " + std::to_string(it->second) +
                               "; a probe needs its own key pair");
    }
    cluster.probe_keys.push_back(key);
  }
  return cluster;
}

std::string AgreeOnClusterFile(const std::string& dir, const topology::Cluster& cluster) {
  const std::string path = dir + "/" + kClusterName;
  const std::string mine = dir + "/.cluster-" + UniqueSuffix() + ".conf";
  topology::WriteClusterFile(cluster, mine);
  std::string text;
  try {
    text = ReadBounded(mine, 1u << 30);
  } catch (...) {
    std::remove(mine.c_str());
    throw;
  }
  std::remove(mine.c_str());
  if (LinkNewFile(dir, path, text)) return path;
  const std::string theirs = ReadBounded(path, 1u << 30);
  if (theirs == text) return path;
  std::istringstream a(text), b(theirs);
  std::string la, lb;
  int line = 0;
  while (true) {
    ++line;
    const bool more_a = static_cast<bool>(std::getline(a, la));
    const bool more_b = static_cast<bool>(std::getline(b, lb));
    if (!more_a && !more_b) break;
    if (!more_a) la = "(end of file)";
    if (!more_b) lb = "(end of file)";
    if (la != lb || !more_a || !more_b) break;
  }
  throw std::runtime_error(path + ":" + std::to_string(line) + ": '" + lb +
                           "', but this node built '" + la +
                           "' from the same publications (were probe-*.pub files added while "
                           "the nodes started, or is " +
                           path + " left from an earlier run?)");
}

std::string JoinRendezvous(const RendezvousRequest& request) {
  std::error_code ec;
  fs::create_directories(request.dir, ec);
  if (!fs::is_directory(request.dir)) {
    throw std::runtime_error("--rendezvous " + request.dir +
                             ": not a directory and cannot be "
                             "made" +
                             (ec ? ": " + ec.message() : std::string()));
  }
  // Whoever may write the directory may publish in a node's name (its own key for node K): it
  // is the run's trust boundary, like the cluster file it replaces.
  const fs::perms perms = fs::status(request.dir).permissions();
  if ((perms & (fs::perms::group_write | fs::perms::others_write)) != fs::perms::none) {
    spdlog::warn(
        "rendezvous {}: writable by group or others, who could publish as a node of "
        "this run; make it yours alone (chmod 700)",
        request.dir);
  }
  PublishEntry(request.dir, request.self);
  spdlog::info("rendezvous {}: published {} ({}), waiting for {} nodes (at most {} s)", request.dir,
               EntryPath(request.dir, request.self.id), request.self.endpoint, request.nodes,
               request.timeout_seconds);
  const Clock::time_point start = Clock::now();
  const std::vector<RendezvousEntry> entries = AwaitEntries(request);
  const topology::Cluster cluster = ClusterFromEntries(entries, request.graph, request.dir);
  const std::string path = AgreeOnClusterFile(request.dir, cluster);
  spdlog::info("rendezvous {}: all {} nodes published after {:.1f} s; cluster file {}", request.dir,
               request.nodes, SecondsSince(start), path);
  return path;
}

std::string AwaitClusterFile(const std::string& dir, double timeout_seconds,
                             const std::atomic<bool>* stop) {
  const std::string path = dir + "/" + kClusterName;
  const Clock::time_point start = Clock::now();
  std::chrono::milliseconds pause(20);
  while (!fs::exists(path)) {
    if (stop != nullptr && stop->load()) {
      throw std::runtime_error("rendezvous " + dir + ": stopped by a signal");
    }
    if (SecondsSince(start) >= timeout_seconds) {
      std::vector<int> published;
      for (const auto& [name, id] : ListPublications(dir)) {
        if (id >= 0) published.push_back(id);
      }
      std::sort(published.begin(), published.end());
      throw RendezvousTimeout(
          "rendezvous " + dir + ": no " + path + " after " + SecondsText(timeout_seconds) + " s; " +
          (published.empty() ? std::string("no node has published")
                             : "published so far: nodes " + ListIds(published)));
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(250));
  }
  return path;
}

}  // namespace starling::node
