#include "runtime/serve/metrics_text.h"

#include "runtime/base/strings.h"

namespace strata::serve {
namespace {

void Add(std::string& out, const char* name, const char* type, const char* help, double value) {
  out += StrFormat("# HELP strata:%s %s\n# TYPE strata:%s %s\nstrata:%s %.17g\n", name, help, name, type, name, value);
}

}  // namespace

std::string PrometheusText(const SchedulerMetrics& m) {
  std::string o;
  auto d = [](uint64_t v) { return static_cast<double>(v); };
  Add(o, "prompt_tokens_total", "counter", "Prompt tokens run (not counting reused ones).", d(m.prompt_tokens_total));
  Add(o, "prompt_tokens_reused_total", "counter", "Prompt tokens taken from a slot's cache (prefix reuse).",
      d(m.prompt_tokens_reused_total));
  Add(o, "swa_reuse_refused_total", "counter",
      "Cached prefixes not reused because a sliding window's ring had overwritten what their end sees.",
      d(m.swa_reuse_refused));
  Add(o, "prompt_seconds_total", "counter", "Forward-pass time spent on prompt tokens.", m.prompt_seconds_total);
  Add(o, "tokens_predicted_total", "counter", "Tokens generated.", d(m.tokens_predicted_total));
  Add(o, "tokens_predicted_seconds_total", "counter", "Forward-pass time spent on generated tokens.",
      m.predicted_seconds_total);
  Add(o, "prompt_tokens_seconds", "gauge", "Average prompt throughput (tokens/s).",
      m.prompt_seconds_total > 0 ? d(m.prompt_tokens_total) / m.prompt_seconds_total : 0);
  Add(o, "predicted_tokens_seconds", "gauge", "Average generation throughput, all slots together (tokens/s).",
      m.predicted_seconds_total > 0 ? d(m.tokens_predicted_total) / m.predicted_seconds_total : 0);
  Add(o, "requests_processing", "gauge", "Requests in a slot.", m.requests_processing);
  Add(o, "requests_deferred", "gauge", "Requests waiting in the queue.", m.requests_deferred);
  Add(o, "requests_finished_total", "counter", "Requests that ended normally.", d(m.requests_finished_total));
  Add(o, "requests_cancelled_total", "counter", "Requests cancelled (client gone, or shutdown).",
      d(m.requests_cancelled_total));
  Add(o, "requests_rejected_total", "counter", "Requests refused with 503 (queue full, shutting down).",
      d(m.requests_rejected_total));
  Add(o, "requests_failed_total", "counter", "Requests that failed inside the server.", d(m.requests_failed_total));
  Add(o, "kv_cache_tokens", "gauge", "Positions held in all slots' KV caches.", d(m.kv_cache_tokens));
  const double capacity = static_cast<double>(m.n_slots) * static_cast<double>(m.n_ctx);
  Add(o, "kv_cache_usage_ratio", "gauge", "KV cache use: positions held / positions allocated.",
      capacity > 0 ? d(m.kv_cache_tokens) / capacity : 0);
  Add(o, "n_decode_total", "counter", "Forward passes (batches).", d(m.n_decode_total));
  Add(o, "n_busy_slots_per_decode", "gauge", "Average sequences per forward pass.",
      m.n_decode_total ? d(m.n_busy_slots_total) / d(m.n_decode_total) : 0);
  Add(o, "n_slots", "gauge", "Slots (--parallel).", m.n_slots);
  Add(o, "n_ctx_slot", "gauge", "Positions per slot (-c).", static_cast<double>(m.n_ctx));
  Add(o, "state_bytes", "gauge", "Memory of all slots' KV caches and recurrent state.", d(m.state_bytes));
  if (m.expert_tiers) {  // --expert-device: the device tier's expert cache
    Add(o, "expert_hits_total", "counter", "Routed token-expert pairs computed from a device-tier slot.",
        d(m.expert_hits_total));
    Add(o, "expert_pinned_hits_total", "counter", "Of the hits, those from a pinned slot.",
        d(m.expert_pinned_hits_total));
    Add(o, "expert_misses_total", "counter", "Routed token-expert pairs computed on the host tier.",
        d(m.expert_misses_total));
    Add(o, "expert_cache_hit_ratio", "gauge", "Expert cache hit rate: hits / (hits + misses).",
        m.expert_hits_total + m.expert_misses_total
            ? d(m.expert_hits_total) / d(m.expert_hits_total + m.expert_misses_total)
            : 0);
    Add(o, "expert_uploads_total", "counter", "Experts uploaded into device-tier slots.", d(m.expert_uploads_total));
    Add(o, "expert_evictions_total", "counter", "Experts evicted from run-time slots.", d(m.expert_evictions_total));
  }
  return o;
}

}  // namespace strata::serve
