#include "runtime/experts/routing_trace.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "runtime/base/atomic_file.h"
#include "runtime/base/checked_alloc.h"
#include "runtime/base/strings.h"

namespace strata {

RoutingTrace RoutingTrace::Slice(uint64_t begin, uint64_t end) const {
  RoutingTrace t;
  t.n_layer = n_layer;
  t.n_expert = n_expert;
  t.k = k;
  t.dense_lead = dense_lead;
  end = std::min(end, tokens());
  begin = std::min(begin, end);
  const uint64_t w = uint64_t{n_layer} * k;
  t.experts.assign(experts.begin() + static_cast<ptrdiff_t>(begin * w), experts.begin() + static_cast<ptrdiff_t>(end * w));
  t.probs.assign(probs.begin() + static_cast<ptrdiff_t>(begin * w), probs.begin() + static_cast<ptrdiff_t>(end * w));
  t.sessions.push_back(0);
  for (uint64_t s : sessions)
    if (s > begin && s < end) t.sessions.push_back(s - begin);
  return t;
}

Status RoutingTrace::Append(const RoutingTrace& o) {
  if (tokens() == 0 && experts.empty()) {
    *this = o;
    if (sessions.empty() || sessions.front() != 0) sessions.insert(sessions.begin(), 0);
    return Status::Ok();
  }
  if (o.n_layer != n_layer || o.n_expert != n_expert || o.k != k || o.dense_lead != dense_lead)
    return InvalidArgument(StrFormat("routing traces of different shapes (%u layers x %u experts, top-%u vs %u x %u, "
                                     "top-%u) cannot be joined",
                                     n_layer, n_expert, k, o.n_layer, o.n_expert, o.k));
  const uint64_t base = tokens();
  experts.insert(experts.end(), o.experts.begin(), o.experts.end());
  probs.insert(probs.end(), o.probs.begin(), o.probs.end());
  sessions.push_back(base);
  for (uint64_t s : o.sessions)
    if (s > 0) sessions.push_back(base + s);
  return Status::Ok();
}

RoutingTraceRecorder::RoutingTraceRecorder(uint32_t n_layer, uint32_t n_expert, uint32_t k, uint32_t dense_lead)
    : per_layer_(n_layer, 0) {
  trace_.n_layer = n_layer;
  trace_.n_expert = n_expert;
  trace_.k = k;
  trace_.dense_lead = std::min(dense_lead, n_layer);
  trace_.sessions.push_back(0);
}

void RoutingTraceRecorder::OnRouted(int32_t layer, std::span<const int32_t> experts, std::span<const float> probs) {
  if (!error_.ok()) return;
  if (layer < static_cast<int32_t>(trace_.dense_lead) || static_cast<uint32_t>(layer) >= trace_.n_layer ||
      experts.size() != trace_.k || probs.size() != trace_.k) {
    error_ = Internal(StrFormat("routing trace: a routing of layer %d with %zu experts does not fit a trace of %u "
                                "layers, top-%u",
                                layer, experts.size(), trace_.n_layer, trace_.k));
    return;
  }
  const uint64_t token = base_ + per_layer_[static_cast<size_t>(layer)]++;
  const uint64_t w = uint64_t{trace_.n_layer} * trace_.k;
  if (trace_.experts.size() < (token + 1) * w) {
    trace_.experts.resize((token + 1) * w, -1);
    trace_.probs.resize((token + 1) * w, 0.0f);
  }
  const uint64_t at = (token * trace_.n_layer + static_cast<uint64_t>(layer)) * trace_.k;
  std::copy(experts.begin(), experts.end(), trace_.experts.begin() + static_cast<ptrdiff_t>(at));
  std::copy(probs.begin(), probs.end(), trace_.probs.begin() + static_cast<ptrdiff_t>(at));
}

void RoutingTraceRecorder::BeginSession() {
  const uint64_t seen = per_layer_.empty() ? 0 : *std::max_element(per_layer_.begin(), per_layer_.end());
  if (seen == 0) return;
  base_ += seen;
  std::fill(per_layer_.begin(), per_layer_.end(), 0);
  trace_.sessions.push_back(base_);
}

Result<RoutingTrace> RoutingTraceRecorder::Finish() const {
  if (!error_.ok()) return error_;
  for (size_t l = trace_.dense_lead; l < per_layer_.size(); ++l)
    if (per_layer_[l] != per_layer_.back())
      return Internal("routing trace: the layers saw different numbers of tokens (a forward pass stopped half way)");
  RoutingTrace t = trace_;
  if (!t.sessions.empty() && t.sessions.back() >= t.tokens() && t.sessions.size() > 1) t.sessions.pop_back();
  return t;
}

Status RoutingTraceRecorder::Reserve(uint64_t tokens) {
  const uint64_t n = tokens * trace_.n_layer * trace_.k;
  STRATA_RETURN_IF_ERROR(CheckedResize(trace_.experts, static_cast<size_t>(n), "the routing trace", true));
  return CheckedResize(trace_.probs, static_cast<size_t>(n), "the routing trace", true);
}

uint64_t RoutingTraceRecorder::BytesFor(uint32_t n_layer, uint32_t k, uint64_t tokens) {
  return tokens * n_layer * k * (sizeof(int32_t) + sizeof(float));
}

Status WriteRoutingTrace(const RoutingTrace& t, const std::string& path) {
  STRATA_ASSIGN_OR_RETURN(AtomicFileWriter w, AtomicFileWriter::Create(path));
  // A trace of a model with leading dense layers says so; those layers are '-'.
  std::string out = StrFormat("strata-routing-trace 1\nlayers %u experts %u k %u", t.n_layer, t.n_expert, t.k);
  out += t.dense_lead ? StrFormat(" dense %u\n", t.dense_lead) : std::string("\n");
  size_t next_session = 0;
  for (uint64_t tok = 0; tok < t.tokens(); ++tok) {
    while (next_session < t.sessions.size() && t.sessions[next_session] <= tok) {
      if (t.sessions[next_session] == tok) out += "session\n";
      ++next_session;
    }
    for (uint32_t l = 0; l < t.n_layer; ++l) {
      if (l) out += " |";
      if (l < t.dense_lead) {
        out += l ? " -" : "-";
        continue;
      }
      auto e = t.Experts(tok, l);
      auto p = t.Probs(tok, l);
      for (uint32_t j = 0; j < t.k; ++j) out += StrFormat("%s%d:%.4g", (l == 0 && j == 0) ? "" : " ", e[j], static_cast<double>(p[j]));
    }
    out += "\n";
    if (out.size() > (1u << 20)) {
      STRATA_RETURN_IF_ERROR(w.Write(out.data(), out.size()));
      out.clear();
    }
  }
  STRATA_RETURN_IF_ERROR(w.Write(out.data(), out.size()));
  return w.Commit();
}

Result<RoutingTrace> ReadRoutingTrace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return NotFound(path + ": cannot open the routing trace");
  auto bad = [&](uint64_t line, const std::string& expected, const std::string& found) {
    return DataLoss(StrFormat("%s: line %llu: expected %s, found %s", path.c_str(),
                              static_cast<unsigned long long>(line), expected.c_str(), Printable(found).c_str()));
  };
  std::string line;
  if (!std::getline(in, line) || line != "strata-routing-trace 1")
    return bad(1, "'strata-routing-trace 1'", line);
  RoutingTrace t;
  // sscanf's %u is undefined for a number out of range: parse each count with
  // from_chars, which reports overflow.
  auto header = [&](const std::string& s) {
    const char* c = s.c_str();
    const char* end = c + s.size();
    uint32_t* fields[] = {&t.n_layer, &t.n_expert, &t.k};
    const char* words[] = {"layers ", " experts ", " k "};
    for (int i = 0; i < 3; ++i) {
      size_t w = std::strlen(words[i]);
      if (static_cast<size_t>(end - c) < w || std::memcmp(c, words[i], w) != 0) return false;
      c += w;
      auto [p, ec] = std::from_chars(c, end, *fields[i]);
      if (ec != std::errc() || p == c) return false;
      c = p;
    }
    if (c == end) return true;
    constexpr std::string_view kDense = " dense ";
    if (static_cast<size_t>(end - c) < kDense.size() || std::memcmp(c, kDense.data(), kDense.size()) != 0) return false;
    c += kDense.size();
    auto [p, ec] = std::from_chars(c, end, t.dense_lead);
    return ec == std::errc() && p != c && p == end;
  };
  if (!std::getline(in, line) || !header(line) || t.n_layer == 0 || t.n_layer > 4096 || t.n_expert == 0 ||
      t.n_expert > 65536 || t.k == 0 || t.k > t.n_expert || t.dense_lead >= t.n_layer)
    return bad(2,
               "'layers L experts E k K' or '... dense D' (1..4096 layers, 1..65536 experts, 1 <= K <= E, "
               "D < L leading layers without experts)",
               line);
  uint64_t line_no = 2;
  while (std::getline(in, line)) {
    ++line_no;
    if (line.empty()) continue;
    if (line == "session") {
      if (t.sessions.empty() || t.sessions.back() != t.tokens()) t.sessions.push_back(t.tokens());
      continue;
    }
    const char* c = line.c_str();
    for (uint32_t l = 0; l < t.n_layer; ++l) {
      if (l) {
        while (*c == ' ') ++c;
        if (*c != '|') return bad(line_no, StrFormat("'|' before layer %u", l), line);
        ++c;
      }
      if (l < t.dense_lead) {  // a leading dense layer: '-'
        while (*c == ' ') ++c;
        if (*c != '-') return bad(line_no, StrFormat("'-' for layer %u (a leading dense layer)", l), line);
        ++c;
        for (uint32_t j = 0; j < t.k; ++j) {
          t.experts.push_back(-1);
          t.probs.push_back(0.0f);
        }
        continue;
      }
      for (uint32_t j = 0; j < t.k; ++j) {
        char* end = nullptr;
        long e = std::strtol(c, &end, 10);
        if (end == c || *end != ':' || e < 0 || e >= static_cast<long>(t.n_expert))
          return bad(line_no, StrFormat("expert:probability with an expert id below %u (layer %u)", t.n_expert, l), line);
        c = end + 1;
        float p = std::strtof(c, &end);
        if (end == c || !std::isfinite(p) || p < 0)
          return bad(line_no, "a finite probability >= 0 after ':'", line);
        c = end;
        t.experts.push_back(static_cast<int32_t>(e));
        t.probs.push_back(p);
      }
    }
    while (*c == ' ') ++c;
    if (*c) return bad(line_no, StrFormat("%u layers of %u experts", t.n_layer, t.k), line);
  }
  if (t.sessions.empty() || t.sessions.front() != 0) t.sessions.insert(t.sessions.begin(), 0);
  if (t.sessions.size() > 1 && t.sessions.back() >= t.tokens()) t.sessions.pop_back();
  return t;
}

}  // namespace strata
