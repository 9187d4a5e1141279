// The golden model's load and store units: 2-D DMA between device memory and
// the scratchpads, with row padding, the per-core address window and AXI
// error responses, all checked before any byte moves.
#include <cstring>

#include "hw/golden.h"

namespace loom::hw {
namespace {

using spec::Buffer;

uint32_t axi_cause(AxiResp r) {
  switch (r) {
    case AxiResp::Okay:
      return 0;
    case AxiResp::SlvErr:
      return spec::err::AXI_SLVERR;
    case AxiResp::DecErr:
      return spec::err::AXI_DECERR;
  }
  return spec::err::AXI_DECERR;
}

/// Checks the device-memory side of a 2-D transfer: the whole byte range
/// against the window first (so a violation moves nothing), then each row
/// against the memory's responses. Returns 0 or the error bit.
uint32_t check_dram(const CoreState& s, const MemoryPort& mem, uint64_t addr, uint64_t rows, uint64_t cols,
                    uint64_t stride) {
  const uint64_t len = span_2d(rows, stride, cols);
  if (len == 0) return 0;
  if (addr < s.win_base || addr + len > s.win_limit) return spec::err::WINDOW;
  for (uint64_t i = 0; i < rows; ++i)
    if (uint32_t c = axi_cause(mem.probe(addr + i * stride, cols))) return c;
  return 0;
}

}  // namespace

uint32_t Fabric::exec_load(CoreState& s, const spec::Insn& insn) {
  const auto d = spec::LoadInsn::decode(insn);
  if (d.buf != unsigned(Buffer::IN) && d.buf != unsigned(Buffer::WGT) && d.buf != unsigned(Buffer::OUT) &&
      d.buf != unsigned(Buffer::PARAM))
    return spec::err::ILLEGAL_INSN;
  if (d.buf == unsigned(Buffer::PARAM) && !(is_word_aligned(d.sp_addr) && is_word_aligned(d.sp_stride)))
    return spec::err::ILLEGAL_INSN;

  std::vector<uint8_t>& sp = s.sp[d.buf];
  const uint64_t total = d.pad_lo + d.rows + d.pad_hi;
  if (!in_scratchpad(sp.size(), d.sp_addr, span_2d(total, d.sp_stride, d.cols))) return spec::err::SCRATCHPAD_OOB;
  if (uint32_t c = check_dram(s, mem_, d.dram_addr, d.rows, d.cols, d.dram_stride)) return c;
  if (d.cols == 0) return 0;

  // Rows are written in order, so overlapping scratchpad rows (sp_stride <
  // cols) end up holding the later row.
  for (uint64_t i = 0; i < total; ++i) {
    uint8_t* dst = sp.data() + d.sp_addr + i * d.sp_stride;
    if (i < d.pad_lo || i >= d.pad_lo + d.rows)
      std::memset(dst, int(uint8_t(d.pad_value)), d.cols);
    else
      mem_.read(d.dram_addr + (i - d.pad_lo) * d.dram_stride, std::span<uint8_t>(dst, d.cols));
  }
  s.counter(spec::Counter::BYTES_RD) += d.rows * d.cols;
  return 0;
}

uint32_t Fabric::exec_store(CoreState& s, const spec::Insn& insn) {
  const auto d = spec::StoreInsn::decode(insn);
  if (d.buf != unsigned(Buffer::OUT) && d.buf != unsigned(Buffer::ACC)) return spec::err::ILLEGAL_INSN;
  if (d.buf == unsigned(Buffer::ACC) && !(is_word_aligned(d.sp_addr) && is_word_aligned(d.sp_stride)))
    return spec::err::ILLEGAL_INSN;

  const std::vector<uint8_t>& sp = s.sp[d.buf];
  if (!in_scratchpad(sp.size(), d.sp_addr, span_2d(d.rows, d.sp_stride, d.cols))) return spec::err::SCRATCHPAD_OOB;
  if (uint32_t c = check_dram(s, mem_, d.dram_addr, d.rows, d.cols, d.dram_stride)) return c;
  if (d.cols == 0) return 0;

  for (uint64_t i = 0; i < d.rows; ++i)
    mem_.write(d.dram_addr + i * d.dram_stride,
               std::span<const uint8_t>(sp.data() + d.sp_addr + i * d.sp_stride, d.cols));
  s.counter(spec::Counter::BYTES_WR) += d.rows * d.cols;
  return 0;
}

}  // namespace loom::hw
