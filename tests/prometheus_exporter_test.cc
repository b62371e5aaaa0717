// starling-probe monitor --prometheus-port: the exporter alone on a loopback port (its text
// checked line by line against the exposition format by a parser written here, its bounds
// against oversized, malformed, idle and surplus connections), and a real monitor watching three
// daemons, whose scraped figures must be the ones it wrote to metrics.jsonl and the daemons to
// node-K.jsonl. Ports from PortBase().
#include "node/probe/prometheus_exporter.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/daemon_cluster.h"
#include "tests/subprocess.h"
#include "tests/written_data.h"
#include "topology/generators.h"

namespace starling {
namespace {

using Clock = std::chrono::steady_clock;
using node::NetworkFigures;
using node::NodeFigures;
using node::PrometheusExporter;
using node::PrometheusExporterOptions;

const std::string kProbe = std::string(STARLING_BINARY_DIR) + "/node/starling-probe";

// ---- a client ---------------------------------------------------------------------------------

int ConnectTo(int port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Everything the server sends until it closes, or until `timeout`; nullopt if it did not close.
std::optional<std::string> ReadUntilClosed(int fd, std::chrono::milliseconds timeout) {
  std::string got;
  const Clock::time_point deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(1, left.count()))) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return got;
    if (n > 0) got.append(buf, static_cast<size_t>(n));
  }
  return std::nullopt;
}

struct HttpAnswer {
  bool connected = false, closed = false;
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body, raw;
};

HttpAnswer Exchange(int port, const std::string& request,
                    std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  HttpAnswer a;
  const int fd = ConnectTo(port);
  if (fd < 0) return a;
  a.connected = true;
  size_t sent = 0;
  while (sent < request.size()) {
    const ssize_t n = ::send(fd, request.data() + sent, request.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server may stop reading and answer (a request too long)
    sent += static_cast<size_t>(n);
  }
  const std::optional<std::string> got = ReadUntilClosed(fd, timeout);
  ::close(fd);
  a.closed = got.has_value();
  a.raw = got.value_or("");
  const size_t end = a.raw.find("\r\n\r\n");
  if (a.raw.rfind("HTTP/1.0 ", 0) != 0 || end == std::string::npos) return a;
  a.status = std::atoi(a.raw.c_str() + 9);
  std::istringstream head(a.raw.substr(0, end));
  std::string line;
  std::getline(head, line);
  while (std::getline(head, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    a.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
  }
  a.body = a.raw.substr(end + 4);
  return a;
}

HttpAnswer GetMetrics(int port) { return Exchange(port, "GET /metrics HTTP/1.0\r\n\r\n"); }

bool PortRefuses(int port) {
  const int fd = ConnectTo(port);
  if (fd < 0) return errno == ECONNREFUSED;
  ::close(fd);
  return false;
}

// ---- the text format, parsed here (https://prometheus.io/docs/instrumenting/exposition_formats/)

struct Exposition {
  std::map<std::string, double> samples;  // "name" or "name{node=\"K\"}"
  std::map<std::string, std::string> types;
  std::vector<std::string> errors;  // every rule a line breaks, with its line number
};

bool IsMetricName(const std::string& s) {
  static const std::regex re("[a-zA-Z_:][a-zA-Z0-9_:]*");
  return std::regex_match(s, re);
}

// A Go ParseFloat value as Prometheus accepts it; nullopt otherwise.
std::optional<double> SampleValue(const std::string& s) {
  if (s == "NaN") return std::nan("");
  if (s == "+Inf") return HUGE_VAL;
  if (s == "-Inf") return -HUGE_VAL;
  static const std::regex re("[-+]?([0-9]+\\.?[0-9]*|\\.[0-9]+)([eE][-+]?[0-9]+)?");
  if (!std::regex_match(s, re)) return std::nullopt;
  return std::strtod(s.c_str(), nullptr);
}

Exposition ParseExposition(const std::string& text) {
  Exposition e;
  std::set<std::string> helped, finished_families;
  std::string current_family;
  if (!text.empty() && text.back() != '\n') e.errors.push_back("the text does not end in \\n");
  std::istringstream in(text);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const std::string where = "line " + std::to_string(number) + " '" + line + "': ";
    if (line.empty()) continue;
    if (line[0] == '#') {
      std::istringstream words(line.substr(1));
      std::string keyword, name;
      words >> keyword >> name;
      if (keyword == "HELP" || keyword == "TYPE") {
        if (!IsMetricName(name)) e.errors.push_back(where + "bad metric name");
        if (line.compare(0, keyword.size() + 3 + name.size(), "# " + keyword + " " + name) != 0) {
          e.errors.push_back(where + "not '# " + keyword + " NAME ...'");
        }
      }
      if (keyword == "HELP") {
        if (!helped.insert(name).second) e.errors.push_back(where + "second HELP");
        const std::string help = line.substr(std::min(line.size(), 7 + name.size() + 1));
        for (size_t i = 0; i < help.size(); ++i) {
          if (help[i] == '\\' &&
              (i + 1 >= help.size() || (help[i + 1] != '\\' && help[i + 1] != 'n'))) {
            e.errors.push_back(where + "bad escape in HELP");
          }
          if (help[i] == '\\') ++i;
        }
      } else if (keyword == "TYPE") {
        std::string type, extra;
        words >> type >> extra;
        static const std::set<std::string> kTypes = {"counter", "gauge", "histogram", "summary",
                                                     "untyped"};
        if (!kTypes.count(type) || !extra.empty()) e.errors.push_back(where + "bad TYPE");
        if (e.types.count(name)) e.errors.push_back(where + "second TYPE");
        for (const auto& s : e.samples) {
          if (s.first == name || s.first.rfind(name + "{", 0) == 0) {
            e.errors.push_back(where + "TYPE after the family's samples");
          }
        }
        e.types[name] = type;
      }
      continue;  // other '#' lines are comments
    }
    // name[{labels}] value [timestamp]
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    const std::string name = line.substr(0, i);
    if (!IsMetricName(name)) {
      e.errors.push_back(where + "bad metric name");
      continue;
    }
    std::string key = name;
    if (i < line.size() && line[i] == '{') {
      // label="value" pairs; values escape only \\, \" and \n.
      std::string labels = "{";
      ++i;
      bool ok = true;
      std::set<std::string> seen_labels;
      while (ok && i < line.size() && line[i] != '}') {
        size_t j = i;
        while (j < line.size() && line[j] != '=') ++j;
        const std::string label = line.substr(i, j - i);
        static const std::regex label_re("[a-zA-Z_][a-zA-Z0-9_]*");
        ok = j + 1 < line.size() && line[j + 1] == '"' && std::regex_match(label, label_re) &&
             label.rfind("__", 0) != 0 && seen_labels.insert(label).second;
        std::string value;
        for (j += 2; ok && j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\') {
            ok = j + 1 < line.size() &&
                 (line[j + 1] == '\\' || line[j + 1] == '"' || line[j + 1] == 'n');
            ++j;
          }
          value += line[j];
        }
        ok = ok && j < line.size();
        if (!ok) break;
        labels += (labels.size() > 1 ? "," : "") + label + "=\"" + value + "\"";
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (!ok || i >= line.size()) {
        e.errors.push_back(where + "bad labels");
        continue;
      }
      key += labels + "}";
      ++i;
    }
    if (i >= line.size() || line[i] != ' ') {
      e.errors.push_back(where + "no space before the value");
      continue;
    }
    std::istringstream rest(line.substr(i + 1));
    std::string value_text, timestamp, extra;
    rest >> value_text >> timestamp >> extra;
    const std::optional<double> value = SampleValue(value_text);
    static const std::regex ts_re("-?[0-9]+");
    if (!value || !extra.empty() || (!timestamp.empty() && !std::regex_match(timestamp, ts_re))) {
      e.errors.push_back(where + "bad value or timestamp");
      continue;
    }
    if (!e.types.count(name)) e.errors.push_back(where + "sample without a TYPE line before it");
    if (name != current_family) {
      if (finished_families.count(name)) e.errors.push_back(where + "family not contiguous");
      if (!current_family.empty()) finished_families.insert(current_family);
      current_family = name;
    }
    if (e.types.count(name) && e.types[name] == "counter" && !(*value >= 0)) {
      e.errors.push_back(where + "negative counter");
    }
    if (!e.samples.emplace(key, *value).second) e.errors.push_back(where + "duplicate series");
  }
  for (const auto& [name, type] : e.types) {
    if (name.rfind("starling_", 0) != 0) e.errors.push_back(name + ": not a starling_* name");
    if (!helped.count(name)) e.errors.push_back(name + ": no HELP line");
  }
  return e;
}

std::string Errors(const Exposition& e) {
  std::string s;
  for (const std::string& err : e.errors) s += "\n  " + err;
  return s;
}

std::string NodeKey(const std::string& name, int node) {
  return name + "{node=\"" + std::to_string(node) + "\"}";
}

// ---- the exporter alone -------------------------------------------------------------------------

NetworkFigures SomeFigures() {
  NetworkFigures f;
  f.evaluations = 7;
  f.objective = 0.69314718055994529;
  f.consensus = 3.0000000000000001e-07;
  f.evaluated_at = 12.5;
  f.f_star = 0.31415926535897931;
  f.rel_gap = (f.objective - *f.f_star) / *f.f_star;
  f.test_accuracy = 0.8125;
  f.monitor_rejected = 2;
  f.nodes = {NodeFigures{true, true, 4000, 1999, 123456789012.0, 98765432109.0, 0},
             NodeFigures{},  // never heard from
             NodeFigures{true, false, 3999, 2001, 5e5, 4e5, 17}};
  return f;
}

PrometheusExporterOptions LoopbackOptions(int offset) {
  PrometheusExporterOptions o;
  o.port = testing::PortBase() + offset;
  return o;
}

TEST(PrometheusExporter, ServesTheFiguresInTheTextFormat) {
  PrometheusExporter exporter(LoopbackOptions(0));
  ASSERT_EQ(exporter.port(), testing::PortBase());

  // Before any figures: the counts, and no global figure written as a made-up 0.
  HttpAnswer empty = GetMetrics(exporter.port());
  ASSERT_EQ(empty.status, 200) << empty.raw;
  Exposition e0 = ParseExposition(empty.body);
  EXPECT_TRUE(e0.errors.empty()) << Errors(e0) << "\n" << empty.body;
  EXPECT_EQ(e0.samples.count("starling_objective"), 0u) << empty.body;
  EXPECT_EQ(e0.samples.at("starling_monitor_evaluations_total"), 0.0);

  const NetworkFigures f = SomeFigures();
  exporter.Update(f);
  const HttpAnswer a = GetMetrics(exporter.port());
  ASSERT_EQ(a.status, 200) << a.raw;
  EXPECT_TRUE(a.closed);
  EXPECT_EQ(a.headers.at("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(a.headers.at("content-length"), std::to_string(a.body.size()));
  const Exposition e = ParseExposition(a.body);
  ASSERT_TRUE(e.errors.empty()) << Errors(e) << "\n" << a.body;

  // Exactly the doubles given (17 significant digits round-trip).
  const std::map<std::string, double> expected_global = {
      {"starling_nodes", 3},
      {"starling_nodes_seen", 2},
      {"starling_nodes_finished", 1},
      {"starling_monitor_evaluations_total", 7},
      {"starling_monitor_rejected_total", 2},
      {"starling_objective", f.objective},
      {"starling_reference_objective", *f.f_star},
      {"starling_relative_gap", *f.rel_gap},
      {"starling_test_accuracy", 0.8125},
      {"starling_consensus_distance", f.consensus},
      {"starling_evaluation_time_seconds", 12.5}};
  for (const auto& [name, value] : expected_global) {
    ASSERT_EQ(e.samples.count(name), 1u) << name << "\n" << a.body;
    EXPECT_EQ(e.samples.at(name), value) << name;
  }
  EXPECT_EQ(e.types.at("starling_objective"), "gauge");
  EXPECT_EQ(e.types.at("starling_node_steps_total"), "counter");
  for (int node : {0, 2}) {
    const NodeFigures& n = f.nodes[node];
    EXPECT_EQ(e.samples.at(NodeKey("starling_node_steps_total", node)), n.steps);
    EXPECT_EQ(e.samples.at(NodeKey("starling_node_exchanges_total", node)), n.exchanges);
    EXPECT_EQ(e.samples.at(NodeKey("starling_node_bytes_sent_total", node)), n.bytes_sent);
    EXPECT_EQ(e.samples.at(NodeKey("starling_node_bytes_received_total", node)), n.bytes_received);
    EXPECT_EQ(e.samples.at(NodeKey("starling_node_rejected_total", node)), n.rejected);
    EXPECT_EQ(e.samples.at(NodeKey("starling_node_seen", node)), 1.0);
  }
  EXPECT_EQ(e.samples.at(NodeKey("starling_node_finished", 0)), 1.0);
  EXPECT_EQ(e.samples.at(NodeKey("starling_node_finished", 2)), 0.0);
  // Node 1 was never heard from: seen 0, and no steps or bytes made up for it.
  EXPECT_EQ(e.samples.at(NodeKey("starling_node_seen", 1)), 0.0);
  EXPECT_EQ(e.samples.count(NodeKey("starling_node_steps_total", 1)), 0u);

  // Without f* and test data, those families are absent.
  NetworkFigures g = f;
  g.f_star.reset();
  g.rel_gap.reset();
  g.test_accuracy.reset();
  exporter.Update(g);
  const Exposition e2 = ParseExposition(GetMetrics(exporter.port()).body);
  EXPECT_TRUE(e2.errors.empty()) << Errors(e2);
  EXPECT_EQ(e2.samples.count("starling_relative_gap") + e2.samples.count("starling_test_accuracy") +
                e2.samples.count("starling_reference_objective"),
            0u);
  EXPECT_EQ(exporter.stats().served, 3);
}

// The parser of this test must refuse what breaks the format, or its verdict above means nothing.
TEST(PrometheusExporter, TheTestsParserRefusesBrokenText) {
  const std::vector<std::string> broken = {
      "starling_x 1\n",                                                        // no TYPE
      "# TYPE starling_x gauge\nstarling_x one\n",                             // bad value
      "# TYPE starling_x gauge\n# HELP starling_x h\nstarling_x{node=1} 1\n",  // unquoted label
      "# TYPE starling_x gauge\n# HELP starling_x h\nstarling_x 1",            // no final \n
      "# TYPE starling_x gauge\n# HELP starling_x h\nstarling_x 1\nstarling_x 2\n",  // duplicate
      "# TYPE starling_x counter\n# HELP starling_x h\nstarling_x -1\n",  // negative counter
      "# HELP starling_x h\n# TYPE starling_x gauge\n# TYPE starling_y gauge\n# HELP starling_y "
      "h\nstarling_x 1\nstarling_y 1\nstarling_x{node=\"1\"} 2\n",  // not contiguous
      "# TYPE 9x gauge\n",                                          // bad name
  };
  for (const std::string& text : broken) {
    EXPECT_FALSE(ParseExposition(text).errors.empty()) << text;
  }
  EXPECT_TRUE(ParseExposition("# HELP starling_x a \\\\ b\n# TYPE starling_x gauge\n"
                              "starling_x{node=\"a\\\"b\"} -Inf 123\n")
                  .errors.empty());
}

TEST(PrometheusExporter, RefusesWhatIsNotGetMetrics) {
  PrometheusExporterOptions o = LoopbackOptions(1);
  o.max_request_bytes = 1024;
  PrometheusExporter exporter(o);
  exporter.Update(SomeFigures());
  const int port = exporter.port();
  struct Case {
    std::string request;
    int status;
  };
  const std::vector<Case> cases = {
      {"GET / HTTP/1.0\r\n\r\n", 404},
      {"GET /metricsx HTTP/1.1\r\nHost: x\r\n\r\n", 404},
      {"GET /metrics/../etc/passwd HTTP/1.0\r\n\r\n", 404},
      {"POST /metrics HTTP/1.0\r\nContent-Length: 3\r\n\r\nabc", 405},
      {"get /metrics HTTP/1.0\r\n\r\n", 400},
      {"GET /metrics HTTP/9.9\r\n\r\n", 400},
      {"GET  /metrics HTTP/1.0\r\n\r\n", 400},
      {"GET /metrics\r\n\r\n", 400},
      {std::string("GET /met\0rics HTTP/1.0\r\n\r\n", 26), 400},
      {std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 15), 400},  // TLS-ish
      {std::string(2000, 'A'), 431},  // too long, no newline
      {"GET /metrics HTTP/1.0\r\nX: " + std::string(5000, 'b') + "\r\n\r\n", 431},
  };
  for (const Case& c : cases) {
    const HttpAnswer a = Exchange(port, c.request);
    EXPECT_TRUE(a.closed) << c.request.substr(0, 60);
    EXPECT_EQ(a.status, c.status) << c.request.substr(0, 60) << "\n" << a.raw;
    EXPECT_EQ(a.body.find("starling_"), std::string::npos);
  }
  // A megabyte offered: refused after the first kilobyte, the server unharmed.
  const HttpAnswer big = Exchange(port, std::string(1 << 20, 'x'));
  EXPECT_EQ(big.status, 431) << big.raw;
  // A query string is the same target; the server still serves after all that.
  const HttpAnswer ok = Exchange(port, "GET /metrics?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(ok.status, 200) << ok.raw;
  EXPECT_TRUE(ParseExposition(ok.body).errors.empty());
  EXPECT_EQ(exporter.stats().refused, static_cast<int64_t>(cases.size()) + 1);
  EXPECT_EQ(exporter.stats().served, 1);
}

TEST(PrometheusExporter, IdleAndSurplusConnectionsAreBounded) {
  PrometheusExporterOptions o = LoopbackOptions(2);
  o.max_connections = 2;
  o.connection_deadline_ms = 1500;
  PrometheusExporter exporter(o);
  const int port = exporter.port();
  // Two clients that connect and send half a request, then nothing.
  std::vector<int> idle;
  for (int k = 0; k < 2; ++k) {
    idle.push_back(ConnectTo(port));
    ASSERT_GE(idle.back(), 0);
    ASSERT_EQ(::send(idle.back(), "GET /met", 8, MSG_NOSIGNAL), 8);
  }
  // Wait until the server holds both (a third is then closed at its accept, with no answer).
  const Clock::time_point until = Clock::now() + std::chrono::seconds(30);
  HttpAnswer third;
  do {
    third = GetMetrics(port);
  } while (third.status == 200 && Clock::now() < until);
  EXPECT_TRUE(third.connected && third.closed);
  EXPECT_EQ(third.raw, "") << third.raw;
  EXPECT_GE(exporter.stats().busy, 1);
  // The idle ones are cut at their deadline (1.5 s; allow a loaded machine 30 s), unanswered.
  for (int fd : idle) {
    const std::optional<std::string> got = ReadUntilClosed(fd, std::chrono::seconds(30));
    EXPECT_TRUE(got.has_value()) << "an idle connection outlived its deadline";
    EXPECT_EQ(got.value_or("x"), "");
    ::close(fd);
  }
  EXPECT_EQ(exporter.stats().timed_out, 2);
  // Then the slots are free again.
  EXPECT_EQ(GetMetrics(port).status, 200);
}

// With no descriptor left, accept fails and the pending connection keeps the listening socket
// readable: the server must pause, not spin, and serve the connection once descriptors are back.
TEST(PrometheusExporter, NoDescriptorLeftDoesNotSpin) {
  PrometheusExporter exporter(LoopbackOptions(6));
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  // Fill the table up to a limit a little above what is open, leaving one for the client.
  std::vector<int> filler;
  const int lowest_free = ::dup(0);
  ASSERT_GE(lowest_free, 0);
  ::close(lowest_free);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(lowest_free + 8);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  for (int fd; (fd = ::dup(0)) >= 0;) filler.push_back(fd);
  ASSERT_EQ(errno, EMFILE);
  ::close(filler.back());  // one for the client's socket
  filler.pop_back();
  const int client = ConnectTo(exporter.port());
  ASSERT_GE(client, 0);
  ASSERT_EQ(::send(client, "GET /metrics HTTP/1.0\r\n\r\n", 25, MSG_NOSIGNAL), 25);
  // Waits for conditions, not for a time: the first failed accept, then three more. A server
  // that pauses between accepts needs at least two whole pauses for the last two of those three
  // (the first may follow at once); one that spins makes them in microseconds. Load only
  // lengthens the pauses, so the bound cannot fail on a busy machine.
  auto shortages_at_least = [&](int64_t n, const char* what) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (exporter.stats().accept_shortages < n) {
      if (std::chrono::steady_clock::now() >= deadline) {
        ADD_FAILURE() << "no " << what << " failed accept within 60 s (EMFILE expected)";
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
  };
  bool seen = shortages_at_least(1, "first");
  const auto start = std::chrono::steady_clock::now();
  const int64_t first = exporter.stats().accept_shortages;
  seen = seen && shortages_at_least(first + 3, "fourth");
  const auto waited = std::chrono::steady_clock::now() - start;
  for (int fd : filler) ::close(fd);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  ASSERT_TRUE(seen);
  EXPECT_GE(waited, std::chrono::milliseconds(2 * node::kPrometheusAcceptPauseMs - 5))
      << "the server spun while accept failed with EMFILE";
  const std::optional<std::string> got = ReadUntilClosed(client, std::chrono::seconds(30));
  ::close(client);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->rfind("HTTP/1.0 200 OK", 0), 0u) << *got;
}

TEST(PrometheusExporter, StopClosesThePort) {
  auto exporter = std::make_unique<PrometheusExporter>(LoopbackOptions(3));
  const int port = exporter->port();
  const int held = ConnectTo(port);  // a connection open at the stop is closed too
  ASSERT_GE(held, 0);
  ASSERT_EQ(GetMetrics(port).status, 200);
  exporter->Stop();
  EXPECT_TRUE(PortRefuses(port));
  EXPECT_TRUE(ReadUntilClosed(held, std::chrono::seconds(10)).has_value());
  ::close(held);
  exporter.reset();  // a second Stop, from the destructor, is harmless
}

TEST(PrometheusExporter, BindErrorsNameTheAddress) {
  PrometheusExporter first(LoopbackOptions(4));
  try {
    PrometheusExporter second(LoopbackOptions(4));
    FAIL() << "bound a port in use";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("127.0.0.1:" + std::to_string(first.port())),
              std::string::npos)
        << e.what();
  }
  PrometheusExporterOptions o = LoopbackOptions(5);
  o.bind_address = "localhost";
  EXPECT_THROW(PrometheusExporter{o}, std::invalid_argument);
  o.bind_address = "::1";
  try {
    PrometheusExporter v6(o);
    EXPECT_EQ(v6.endpoint(), "[::1]:" + std::to_string(o.port));
  } catch (const std::runtime_error& e) {
    GTEST_SKIP() << "no IPv6 loopback here: " << e.what();
  }
}

// ---- a real monitor -----------------------------------------------------------------------------

class MonitorPrometheus : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = testing::FreshTempDir("monitor-prometheus");
    base_ = testing::PortBase();
    train_ = testing::WriteLogisticData(dir_ + "/train.svm", 300, 5, 11);
    test_ = testing::WriteLogisticData(dir_ + "/test.svm", 100, 5, 12);
    cluster_ =
        testing::WriteLoopbackCluster(dir_, topology::MakeTopology("ring", 3, 1), base_, false);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<std::string> RunOptions() const {
    return {"--cluster",        cluster_, "--algorithm", "swarmsgd", "--problem", "logistic",
            "--data",           train_,   "--test-data", test_,      "--format",  "libsvm",
            "--iterations",     "300",    "--batch",     "8",        "--seed",    "3",
            "--allow-plaintext"};
  }
  std::unique_ptr<testing::Subprocess> StartMonitor(const std::vector<std::string>& extra) {
    std::vector<std::string> argv = {kProbe, "monitor"};
    for (const std::string& a : RunOptions()) argv.push_back(a);
    for (const std::string& a : extra) argv.push_back(a);
    return std::make_unique<testing::Subprocess>(argv, dir_ + "/monitor.log");
  }
  // Waits until the exporter answers; false if the monitor exited or 60 s passed.
  bool WaitServing(testing::Subprocess* monitor, int port) {
    const Clock::time_point until = Clock::now() + std::chrono::seconds(60);
    while (Clock::now() < until) {
      if (GetMetrics(port).status == 200) return true;
      if (monitor->Wait(std::chrono::milliseconds(50)) >= 0) return false;
    }
    return false;
  }

  std::string dir_, train_, test_, cluster_;
  int base_ = 0;
};

std::vector<std::map<std::string, double>> JsonRecords(const std::string& path) {
  std::vector<std::map<std::string, double>> records;
  std::istringstream in(testing::ReadFile(path));
  std::string line;
  static const std::regex field("\"([a-z_]+)\":(-?[0-9.eE+-]+)");
  while (std::getline(in, line)) {
    if (line.find("\"iter\":") == std::string::npos) continue;  // a header line
    std::map<std::string, double> r;
    for (std::sregex_iterator it(line.begin(), line.end(), field), end; it != end; ++it) {
      r[(*it)[1]] = std::strtod((*it)[2].str().c_str(), nullptr);
    }
    records.push_back(r);
  }
  return records;
}

TEST_F(MonitorPrometheus, ScrapesEqualWhatTheMonitorAndTheDaemonsWrote) {
  const int port = base_ + 10;
  auto monitor =
      StartMonitor({"--prometheus-port", std::to_string(port), "--metrics", dir_ + "/metrics.jsonl",
                    "--interval-ms", "100", "--reference-optimum", "auto", "--timeout-s", "300"});
  ASSERT_TRUE(WaitServing(monitor.get(), port)) << testing::ReadFile(dir_ + "/monitor.log");
  EXPECT_NE(
      testing::ReadFile(dir_ + "/monitor.log")
          .find("Prometheus metrics on http://127.0.0.1:" + std::to_string(port) + "/metrics"),
      std::string::npos);
  // Before any daemon: three nodes none seen, no objective.
  const Exposition before = ParseExposition(GetMetrics(port).body);
  ASSERT_TRUE(before.errors.empty()) << Errors(before);
  EXPECT_EQ(before.samples.at("starling_nodes"), 3.0);
  EXPECT_EQ(before.samples.at("starling_nodes_seen"), 0.0);
  EXPECT_EQ(before.samples.count("starling_objective"), 0u);
  // Garbage at the live monitor: refused, the monitor unharmed.
  EXPECT_EQ(Exchange(port, std::string(100000, '\xff')).status, 431);
  EXPECT_EQ(Exchange(port, "BREW /coffee HTCPCP/1.0\r\n\r\n").status, 400);

  std::vector<std::unique_ptr<testing::Subprocess>> daemons;
  for (int i = 0; i < 3; ++i) {
    std::vector<std::string> argv = {testing::kDaemonBinary,
                                     "--id",
                                     std::to_string(i),
                                     "--metrics",
                                     dir_ + "/node-" + std::to_string(i) + ".jsonl",
                                     "--telemetry-ms",
                                     "50",
                                     "--compute-delay-ms",
                                     "10",
                                     "--give-up-s",
                                     "120"};
    for (const std::string& a : RunOptions()) argv.push_back(a);
    daemons.push_back(
        std::make_unique<testing::Subprocess>(argv, dir_ + "/node-" + std::to_string(i) + ".log"));
  }
  std::vector<Exposition> scrapes;
  int code = -1;
  const Clock::time_point until = Clock::now() + std::chrono::seconds(300);
  while (Clock::now() < until && (code = monitor->Wait(std::chrono::milliseconds(20))) < 0) {
    const HttpAnswer a = GetMetrics(port);
    if (a.status != 200) continue;  // the monitor is stopping
    scrapes.push_back(ParseExposition(a.body));
    ASSERT_TRUE(scrapes.back().errors.empty()) << Errors(scrapes.back()) << "\n" << a.body;
  }
  ASSERT_EQ(code, 0) << testing::ReadFile(dir_ + "/monitor.log");
  // Once the monitor has exited, its port is closed.
  EXPECT_TRUE(PortRefuses(port));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(daemons[i]->Wait(std::chrono::seconds(120)), 0)
        << testing::ReadFile(dir_ + "/node-" + std::to_string(i) + ".log");
  }

  // Every scraped evaluation is a line of metrics.jsonl, to the last bit.
  const auto evaluations = JsonRecords(dir_ + "/metrics.jsonl");
  ASSERT_FALSE(evaluations.empty());
  int with_objective = 0, with_gap = 0;
  for (const Exposition& s : scrapes) {
    if (!s.samples.count("starling_objective")) continue;
    ++with_objective;
    const double objective = s.samples.at("starling_objective");
    const double time = s.samples.at("starling_evaluation_time_seconds");
    // By objective and time together: once the nodes have finished, successive evaluations
    // see the same models and write the same objective at other times.
    const auto line = std::find_if(evaluations.begin(), evaluations.end(), [&](const auto& r) {
      return r.at("objective") == objective && r.at("time") == time;
    });
    ASSERT_NE(line, evaluations.end())
        << "scraped objective " << objective << " at " << time << " s is on no line";
    EXPECT_EQ(s.samples.at("starling_consensus_distance"), line->at("consensus"));
    EXPECT_EQ(s.samples.at("starling_test_accuracy"), line->at("test_accuracy"));
    if (s.samples.count("starling_relative_gap")) {
      ++with_gap;
      EXPECT_EQ(s.samples.at("starling_relative_gap"), line->at("rel_gap"));
    }
  }
  EXPECT_GT(with_objective, 0) << scrapes.size() << " scrapes, none after an evaluation";
  // Every node's scraped (steps, exchanges) is a line its daemon wrote (one report writes both).
  for (int i = 0; i < 3; ++i) {
    const auto lines = JsonRecords(dir_ + "/node-" + std::to_string(i) + ".jsonl");
    double last_steps = 0;
    int checked = 0;
    for (const Exposition& s : scrapes) {
      if (!s.samples.count(NodeKey("starling_node_steps_total", i))) continue;
      const double steps = s.samples.at(NodeKey("starling_node_steps_total", i));
      const double exchanges = s.samples.at(NodeKey("starling_node_exchanges_total", i));
      EXPECT_GE(steps, last_steps);
      last_steps = steps;
      EXPECT_TRUE(std::any_of(
          lines.begin(), lines.end(),
          [&](const auto& r) { return r.at("iter") == steps && r.at("comm_rounds") == exchanges; }))
          << "node " << i << ": steps " << steps << ", exchanges " << exchanges;
      EXPECT_EQ(s.samples.at(NodeKey("starling_node_rejected_total", i)), 0.0);
      ++checked;
    }
    EXPECT_GT(checked, 0) << "node " << i << " never scraped";
  }
  std::cout << scrapes.size() << " scrapes, " << with_objective << " after an evaluation, "
            << with_gap << " with the gap; " << evaluations.size() << " evaluations written\n";
}

TEST_F(MonitorPrometheus, PortClosesWhenTheMonitorIsStopped) {
  const int port = base_ + 11;
  auto monitor = StartMonitor({"--prometheus-port", std::to_string(port), "--timeout-s", "300",
                               "--prometheus-bind", "127.0.0.1"});
  ASSERT_TRUE(WaitServing(monitor.get(), port)) << testing::ReadFile(dir_ + "/monitor.log");
  monitor->Signal(SIGTERM);
  EXPECT_EQ(monitor->Wait(std::chrono::seconds(60)), 0) << testing::ReadFile(dir_ + "/monitor.log");
  EXPECT_TRUE(PortRefuses(port));
}

TEST_F(MonitorPrometheus, BadOptionsAreRefusedNamingThem) {
  struct Case {
    std::vector<std::string> extra;
    std::string message;
  };
  // A port the exporter above cannot have: held here.
  PrometheusExporter holder(LoopbackOptions(12));
  const std::vector<Case> cases = {
      {{"--prometheus-port", "0"}, "--prometheus-port 0: must be in 1..65535"},
      {{"--prometheus-port", "70000"}, "--prometheus-port 70000: must be in 1..65535"},
      {{"--prometheus-bind", "127.0.0.1"}, "--prometheus-bind: needs --prometheus-port"},
      {{"--prometheus-port", std::to_string(base_ + 13), "--prometheus-bind", "localhost"},
       "--prometheus-bind 'localhost': not a numeric IPv4 or IPv6 address"},
      {{"--prometheus-port", std::to_string(holder.port())},
       "cannot listen on 127.0.0.1:" + std::to_string(holder.port())},
  };
  for (const Case& c : cases) {
    auto monitor = StartMonitor(c.extra);
    EXPECT_EQ(monitor->Wait(std::chrono::seconds(60)), 2) << c.message;
    const std::string log = testing::ReadFile(dir_ + "/monitor.log");
    EXPECT_NE(log.find(c.message), std::string::npos) << log;
  }
}

}  // namespace
}  // namespace starling
