#include "runtime/memory/plan_search.h"

#include <algorithm>

#include "runtime/base/strings.h"

namespace strata {
namespace {

bool Fits(const PlanInputs& in) {
  auto p = PlanMemory(in);
  return p.ok() && p->Fits();
}

// The largest v in [1, hi) for which `set(inputs, v)` fits; 0 if none.
template <typename Set>
int64_t LargestFitting(const PlanInputs& in, int64_t hi, Set set) {
  int64_t lo = 0;
  --hi;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    PlanInputs t = in;
    set(t, mid);
    if (Fits(t)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

}  // namespace

int32_t LargestFittingExpertSlots(const PlanInputs& in, int32_t limit) {
  auto fits = [&](int32_t s) {
    PlanInputs t = in;
    t.expert_slots = s;
    t.expert_pinned = std::min(in.expert_pinned, s);
    return Fits(t);
  };
  if (!fits(0)) return -1;
  int32_t lo = 0, hi = limit;  // fits(lo)
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

std::vector<std::string> PlanAdvice(const PlanInputs& in) {
  std::vector<std::string> advice;
  if (in.expert_slots > 0) {
    const int32_t s = LargestFittingExpertSlots(in, in.expert_slots - 1);
    if (s >= 0) advice.push_back(StrFormat("--expert-slots %d (a smaller expert cache: %d slots fit)", s, s));
  }
  if (int64_t c = LargestFitting(in, in.n_ctx, [](PlanInputs& t, int64_t v) { t.n_ctx = v; }); c > 0)
    advice.push_back(StrFormat("-c %lld (a smaller context)", static_cast<long long>(c)));
  if (in.parallel > 1)
    if (int64_t p = LargestFitting(in, in.parallel,
                                   [](PlanInputs& t, int64_t v) { t.parallel = static_cast<int32_t>(v); });
        p > 0)
      advice.push_back(StrFormat("--parallel %lld (fewer sequences at once)", static_cast<long long>(p)));
  if (in.batch > 1)
    if (int64_t b = LargestFitting(in, in.batch, [](PlanInputs& t, int64_t v) { t.batch = static_cast<int32_t>(v); });
        b > 0)
      advice.push_back(StrFormat("-b %lld (smaller forward passes)", static_cast<long long>(b)));
  if (!in.allow_paging) {
    PlanInputs t = in;
    t.allow_paging = true;
    if (Fits(t))
      advice.push_back("--allow-paging (let the OS page weights from disk as they are read: it runs, slowly)");
  }
  if (in.trace_tokens) {
    PlanInputs t = in;
    t.trace_tokens = 0;
    if (Fits(t)) advice.push_back("no --routing-trace-out");
  }
  if (advice.empty())
    advice.push_back("no single option makes it fit: a larger budget (more memory), or a smaller quantization");
  return advice;
}

}  // namespace strata
