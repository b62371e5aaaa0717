#include "node/config/reference_cache.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

namespace starling::node {
namespace {

namespace fs = std::filesystem;

// Bumped whenever the entry format, or anything the key does not name but the solution depends
// on (the solver, the objectives' definitions), changes.
constexpr const char* kHeader = "starling reference cache v1";
constexpr uint64_t kFnvOffset = 1469598103934665603ull;
constexpr uint64_t kFnvPrime = 1099511628211ull;

uint64_t Fnv(const char* data, size_t size, uint64_t h = kFnvOffset) {
  for (size_t i = 0; i < size; ++i) {
    h ^= static_cast<unsigned char>(data[i]);
    h *= kFnvPrime;
  }
  return h;
}

std::string Hex(uint64_t v) {
  char text[20];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(v));
  return text;
}

std::string Exact(double v) {
  char text[40];
  std::snprintf(text, sizeof text, "%.17g", v);
  return text;
}

std::string FileTag(const std::string& path) {
  if (path.empty()) return "-";
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  return Hex(FileContentHash(path)) + ":" + (ec ? std::string("?") : std::to_string(size));
}

bool ParseDouble(const std::string& text, double* v) {
  char* end = nullptr;
  errno = 0;
  *v = std::strtod(text.c_str(), &end);
  return !text.empty() && end == text.c_str() + text.size() && errno == 0;
}

// Reads the entry at `path`; returns the reason it is not usable, or "" with *out filled.
std::string ParseEntry(const std::string& path, const std::string& key_text, CachedReference* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "cannot be read";
  std::stringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) return "cannot be read";
  const std::string text = buffer.str();
  const size_t mark = text.rfind("checksum ");
  if (mark == std::string::npos || (mark > 0 && text[mark - 1] != '\n')) {
    return "has no checksum line (truncated?)";
  }
  std::string stored = text.substr(mark + 9);
  while (!stored.empty() && (stored.back() == '\n' || stored.back() == '\r')) stored.pop_back();
  if (stored != Hex(Fnv(text.data(), mark))) return "fails its checksum (corrupt)";

  std::istringstream body(text.substr(0, mark));
  std::string line;
  if (!std::getline(body, line) || line != kHeader) return "is not a v1 entry";
  std::string key;
  while (std::getline(body, line) && line != "end-key") {
    if (line.rfind("key ", 0) != 0) return "has a malformed key line";
    key += line.substr(4) + "\n";
  }
  if (key != key_text) return "belongs to other inputs (its key differs)";
  auto field = [&](const char* name, std::string* value) {
    if (!std::getline(body, line) || line.rfind(std::string(name) + " ", 0) != 0) return false;
    *value = line.substr(std::strlen(name) + 1);
    return true;
  };
  std::string value;
  CachedReference r;
  double d = 0;
  if (!field("f_star", &value) || !ParseDouble(value, &r.solution.value)) return "has no f_star";
  if (!field("grad_norm", &value) || !ParseDouble(value, &r.solution.grad_norm)) {
    return "has no grad_norm";
  }
  if (!field("iterations", &value) || !ParseDouble(value, &d)) return "has no iterations";
  r.solution.iterations = static_cast<int>(d);
  if (!field("test_accuracy", &value)) return "has no test_accuracy";
  if (value != "none") {
    if (!ParseDouble(value, &d) || !(d >= 0 && d <= 1)) return "has a bad test_accuracy";
    r.test_accuracy = d;
  }
  if (!field("x", &value) || !ParseDouble(value, &d) || d < 1 || d > 1e8) return "has no x";
  r.solution.x.resize(static_cast<Eigen::Index>(d));
  for (Eigen::Index i = 0; i < r.solution.x.size(); ++i) {
    if (!std::getline(body, line) || !ParseDouble(line, &r.solution.x[i])) {
      return "has a short or malformed x";
    }
  }
  if (std::getline(body, line)) return "has text after x";
  *out = std::move(r);
  return "";
}

}  // namespace

std::string ReferenceCacheDir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg != nullptr && xdg[0] == '/') return std::string(xdg) + "/starling";
  const char* home = std::getenv("HOME");
  if (home != nullptr && home[0] != '\0') return std::string(home) + "/.cache/starling";
  return "";
}

uint64_t FileContentHash(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open to hash it for the reference cache");
  std::vector<char> block(1 << 20);
  uint64_t h = kFnvOffset;
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    h = Fnv(block.data(), static_cast<size_t>(in.gcount()), h);
  }
  if (in.bad()) throw std::runtime_error(path + ": read error while hashing it");
  return h;
}

std::string ReferenceKeyText(const RunConfig& config, const RunSetup& setup,
                             const algorithms::Problem& global, double grad_tol) {
  std::ostringstream s;
  s << "data=" << FileTag(config.data) << "\ntest_data=" << FileTag(config.test_data)
    << "\nformat=" << config.format << "\nlabel_column=" << config.label_column
    << "\nfeatures=" << config.features << "\nnum_classes=" << config.num_classes
    << "\nproblem=" << config.problem << "\nhidden=" << config.hidden << "\nl2=" << Exact(config.l2)
    << "\nobjective=" << global.name() << "\ndim=" << global.dim()
    << "\nsamples=" << global.num_samples() << "\nloss_scale=" << Exact(global.loss_scale())
    << "\nobjective_l2=" << Exact(global.l2()) << "\nlabel_map=" << setup.labels.Canonical()
    << "\nscaling=" << setup.scaling.Canonical() << "\ntolerance=" << Exact(grad_tol)
    << "\nmax_iterations=" << algorithms::ReferenceOptions().max_iterations << "\n";
  return s.str();
}

std::string ReferenceEntryPath(const std::string& dir, const std::string& key_text) {
  return dir + "/reference-" + Hex(Fnv(key_text.data(), key_text.size())) + ".txt";
}

std::optional<CachedReference> LoadCachedReference(const std::string& dir,
                                                   const std::string& key_text,
                                                   std::ostream& warn) {
  if (dir.empty()) return std::nullopt;
  const std::string path = ReferenceEntryPath(dir, key_text);
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  CachedReference entry;
  const std::string why = ParseEntry(path, key_text, &entry);
  if (!why.empty()) {
    warn << "warning: reference cache entry " << path << " " << why
         << "; ignoring it and solving again" << std::endl;
    return std::nullopt;
  }
  return entry;
}

bool StoreCachedReference(const std::string& dir, const std::string& key_text,
                          const CachedReference& entry, std::ostream& warn) {
  if (dir.empty()) return false;
  const std::string path = ReferenceEntryPath(dir, key_text);
  std::ostringstream s;
  s << kHeader << "\n";
  std::istringstream keys(key_text);
  for (std::string line; std::getline(keys, line);) s << "key " << line << "\n";
  s << "end-key\nf_star " << Exact(entry.solution.value) << "\ngrad_norm "
    << Exact(entry.solution.grad_norm) << "\niterations " << entry.solution.iterations
    << "\ntest_accuracy " << (entry.test_accuracy ? Exact(*entry.test_accuracy) : "none") << "\nx "
    << entry.solution.x.size() << "\n";
  for (Eigen::Index i = 0; i < entry.solution.x.size(); ++i)
    s << Exact(entry.solution.x[i]) << "\n";
  std::string text = s.str();
  text += "checksum " + Hex(Fnv(text.data(), text.size())) + "\n";

  std::error_code ec;
  fs::create_directories(dir, ec);
  // A file of its own per process, renamed over the entry: readers never see half an entry.
  const std::string temp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(temp, std::ios::binary | std::ios::trunc);
    out << text;
    out.close();
    if (!out) {
      warn << "warning: cannot write the reference cache entry " << temp << " ("
           << std::strerror(errno) << "); the next run will solve again" << std::endl;
      fs::remove(temp, ec);
      return false;
    }
  }
  fs::rename(temp, path, ec);
  if (ec) {
    warn << "warning: cannot move " << temp << " to " << path << " (" << ec.message()
         << "); the next run will solve again" << std::endl;
    fs::remove(temp, ec);
    return false;
  }
  return true;
}

}  // namespace starling::node
