// Instruction dispatch of the golden model: decoding, dependency tokens,
// error reporting and the control unit (semaphores, FENCE, END).
#include "hw/golden.h"

#include <limits>
#include <string>

namespace loom::hw {
namespace {

using spec::Insn;
using spec::Opcode;
using spec::Unit;

/// Queues an instruction's four flags refer to; kNone where the unit has no
/// such neighbour (setting that flag is an illegal instruction).
struct TokenRoutes {
  static constexpr int kNone = -1;
  int pop_prev, pop_next, push_prev, push_next;
};

TokenRoutes routes_for(Unit u) {
  constexpr int N = TokenRoutes::kNone;
  switch (u) {
    case Unit::Load:
      return {N, int(TokenQueue::ComputeToLoad), N, int(TokenQueue::LoadToCompute)};
    case Unit::Compute:
      return {int(TokenQueue::LoadToCompute), int(TokenQueue::StoreToCompute), int(TokenQueue::ComputeToLoad),
              int(TokenQueue::ComputeToStore)};
    case Unit::Store:
      return {int(TokenQueue::ComputeToStore), N, int(TokenQueue::StoreToCompute), N};
    case Unit::Control:
      break;
  }
  return {N, N, N, N};  // the control unit has no neighbours
}

spec::Counter class_counter(spec::InsnClass c) {
  switch (c) {
    case spec::InsnClass::Load:
      return spec::Counter::INSN_LOAD;
    case spec::InsnClass::Compute:
      return spec::Counter::INSN_COMPUTE;
    case spec::InsnClass::Store:
      return spec::Counter::INSN_STORE;
    case spec::InsnClass::Sync:
      break;
  }
  return spec::Counter::INSN_SYNC;
}

}  // namespace

std::string validate_config(const spec::HwConfig& cfg) {
  if (cfg.cores == 0 || cfg.cores > spec::kMaxCores)
    return "cores must be 1.." + std::to_string(spec::kMaxCores) + ", got " + std::to_string(cfg.cores);
  if (cfg.semaphores > spec::reg::SEM_VALUE_COUNT)
    return "semaphores must be at most " + std::to_string(spec::reg::SEM_VALUE_COUNT) + ", got " +
           std::to_string(cfg.semaphores);
  if (cfg.in_kib == 0 || cfg.wgt_kib == 0 || cfg.acc_kib == 0 || cfg.out_kib == 0 || cfg.param_kib == 0)
    return "every scratchpad needs a non-zero size";
  // Scratchpad addresses are 24-bit instruction fields.
  for (uint32_t kib : {cfg.in_kib, cfg.wgt_kib, cfg.acc_kib, cfg.out_kib, cfg.param_kib})
    if (uint64_t(kib) * 1024 > (uint64_t(1) << 24)) return "a scratchpad exceeds the 16 MiB address field";
  if (cfg.ring_depth == 0 || (cfg.ring_depth & (cfg.ring_depth - 1)) != 0)
    return "ring_depth must be a power of two, got " + std::to_string(cfg.ring_depth);
  return {};
}

Fabric::Fabric(const spec::HwConfig& cfg, MemoryPort& mem) : cores_(cfg.cores), sems_(cfg.semaphores, 0), mem_(mem) {
  for (CoreState& s : cores_) {
    s.buf(spec::Buffer::IN).assign(uint64_t(cfg.in_kib) * 1024, 0);
    s.buf(spec::Buffer::WGT).assign(uint64_t(cfg.wgt_kib) * 1024, 0);
    s.buf(spec::Buffer::ACC).assign(uint64_t(cfg.acc_kib) * 1024, 0);
    s.buf(spec::Buffer::OUT).assign(uint64_t(cfg.out_kib) * 1024, 0);
    s.buf(spec::Buffer::PARAM).assign(uint64_t(cfg.param_kib) * 1024, 0);
  }
}

void Fabric::raise(unsigned c, uint32_t cause, uint32_t pc) {
  CoreState& s = cores_.at(c);
  if (s.err_cause == 0) s.err_pc = pc;
  s.err_cause |= cause;
}

void Fabric::reset_core(unsigned c) {
  CoreState& s = cores_.at(c);
  s.tokens.fill(0);
  s.counters.fill(0);
  s.err_cause = 0;
  s.err_pc = 0;
}

Outcome Fabric::execute(unsigned c, const Insn& insn, uint32_t pc) {
  CoreState& s = cores_.at(c);
  const spec::OpcodeInfo* info = spec::opcode_info(spec::get_bits(insn, 0, 6));
  auto fault = [&](uint32_t cause) {
    raise(c, cause, pc);
    return Outcome::Faulted;
  };
  if (info == nullptr) return fault(spec::err::ILLEGAL_INSN);

  // NOP ignores its dependency flags by definition.
  if (info->op == Opcode::NOP) {
    ++s.counter(spec::Counter::INSN_SYNC);
    return Outcome::Retired;
  }

  // Error precedence within one instruction: ILLEGAL_INSN for the opcode
  // and token flags, then DEADLOCK, then the instruction's own checks
  // (ILLEGAL_INSN for fields, SCRATCHPAD_OOB, WINDOW, AXI errors).
  const bool flags[4] = {spec::get_bits(insn, 6, 1) != 0, spec::get_bits(insn, 7, 1) != 0,
                         spec::get_bits(insn, 8, 1) != 0, spec::get_bits(insn, 9, 1) != 0};
  const TokenRoutes r = routes_for(info->unit);
  const int queue[4] = {r.pop_prev, r.pop_next, r.push_prev, r.push_next};
  for (int i = 0; i < 4; ++i)
    if (flags[i] && queue[i] == TokenRoutes::kNone) return fault(spec::err::ILLEGAL_INSN);
  // Program order is the model's schedule: a pop needs a push from an
  // earlier instruction of this core, otherwise the hardware would hang.
  for (int i = 0; i < 2; ++i)
    if (flags[i] && s.tokens[unsigned(queue[i])] == 0) return fault(spec::err::DEADLOCK);

  uint32_t cause = 0;
  bool blocked = false;
  Outcome done = Outcome::Retired;
  switch (info->op) {
    case Opcode::LOAD:
      cause = exec_load(s, insn);
      break;
    case Opcode::STORE:
      cause = exec_store(s, insn);
      break;
    case Opcode::GEMM:
      cause = exec_gemm(s, spec::GemmInsn::decode(insn));
      break;
    case Opcode::POSTOP:
      cause = exec_postop(s, spec::PostopInsn::decode(insn));
      break;
    case Opcode::POOL:
      cause = exec_pool(s, spec::PoolInsn::decode(insn));
      break;
    case Opcode::ELTWISE:
      cause = exec_eltwise(s, spec::EltwiseInsn::decode(insn));
      break;
    case Opcode::ROWNORM:
      cause = exec_rownorm(s, spec::RownormInsn::decode(insn));
      break;
    case Opcode::DWCONV:
      cause = exec_dwconv(s, spec::DwconvInsn::decode(insn));
      break;
    case Opcode::END:
      done = Outcome::RetiredEnd;
      [[fallthrough]];
    case Opcode::SEM_SIGNAL:
    case Opcode::SEM_WAIT:
    case Opcode::FENCE:
    case Opcode::NOP:
      cause = exec_sync(info->op, insn, &blocked);
      break;
  }
  if (cause != 0) return fault(cause);
  if (blocked) return Outcome::Blocked;

  for (int i = 0; i < 2; ++i)
    if (flags[i]) --s.tokens[unsigned(queue[i])];
  for (int i = 2; i < 4; ++i)
    if (flags[i]) ++s.tokens[unsigned(queue[i])];
  ++s.counter(class_counter(info->cls));
  return done;
}

// The model executes in program order, so FENCE and END find every earlier
// instruction complete and only need to retire.
uint32_t Fabric::exec_sync(Opcode op, const Insn& insn, bool* blocked) {
  switch (op) {
    case Opcode::SEM_SIGNAL: {
      const auto d = spec::SemSignalInsn::decode(insn);
      if (d.sem_id >= sems_.size()) return spec::err::ILLEGAL_INSN;
      // Saturate rather than wrap so that semaphores stay monotonic.
      if (sems_[d.sem_id] != std::numeric_limits<uint32_t>::max()) ++sems_[d.sem_id];
      return 0;
    }
    case Opcode::SEM_WAIT: {
      const auto d = spec::SemWaitInsn::decode(insn);
      if (d.sem_id >= sems_.size()) return spec::err::ILLEGAL_INSN;
      *blocked = sems_[d.sem_id] < d.count;
      return 0;
    }
    default:
      return 0;
  }
}

}  // namespace loom::hw
