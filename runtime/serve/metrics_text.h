#pragma once
// /metrics: the scheduler's counters in the Prometheus text format (0.0.4).
// Names follow llama-server's (llamacpp:NAME -> strata:NAME) so dashboards
// built for it work with a prefix change.

#include <string>

#include "runtime/serve/scheduler.h"

namespace strata::serve {

std::string PrometheusText(const SchedulerMetrics& m);

}  // namespace strata::serve
