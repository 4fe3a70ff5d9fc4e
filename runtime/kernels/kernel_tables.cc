#include "runtime/kernels/kernel_tables.h"

#include "runtime/quant/fp_convert.h"
#include "runtime/quant/iq_grids.h"

namespace strata::kernels {
namespace {

template <float (*kConvert)(uint8_t)>
constexpr FloatTable256 MakeTable() {
  FloatTable256 t{};
  for (int i = 0; i < 256; ++i) t.v[i] = kConvert(static_cast<uint8_t>(i));
  return t;
}

}  // namespace

constexpr FloatTable256 kE8M0HalfToFloat = MakeTable<E8M0ToFp32Half>();
constexpr FloatTable256 kUe4m3ToFloat = MakeTable<Ue4m3ToFp32>();
constinit const uint32_t* const kIq3SGridData = kIq3SGrid.data();
constinit const uint32_t* const kIq3XxsGridData = kIq3XxsGrid.data();
constinit const uint64_t* const kIq2XxsGridData = kIq2XxsGrid.data();
constinit const uint64_t* const kIq2XsGridData = kIq2XsGrid.data();
constinit const uint64_t* const kIq2SGridData = kIq2SGrid.data();
constinit const uint64_t* const kIq1SGridData = kIq1SGrid.data();
constinit const uint8_t* const kKsignsIq2xsData = kKsignsIq2xs.data();

}  // namespace strata::kernels
