// The plan: what the compiler emits and the runtime loads. A versioned binary
// container (docs/plan-format.md): fixed header (magic, format version,
// lengths, FNV-1a-64 checksum), a JSON metadata block, then binary sections
// (constants and one instruction stream per core).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/tensor.h"
#include "loom/spec_gen.h"

namespace loom::plan {

/// One graph's plan: the bytes of each segment in a program file, and what
/// loom wrote for a JSON graph before program files (read_program reads it).
inline constexpr uint32_t kPlanFormatVersion = 1;
/// An ONNX model's program plan as loom wrote it before program files
/// (format 3, plan/program_file.h): read, never written.
inline constexpr uint32_t kOnnxProgramFormatVersion = 2;
/// A program file (plan/program_file.h): what loom writes for every input.
inline constexpr uint32_t kProgramFormatVersion = 3;
inline constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'P', 'L', 'A', 'N'};

/// A graph input or output: where it lives in device memory (relative to the
/// plan's base) and how to interpret it.
struct TensorBinding {
  std::string name;
  DType dtype = DType::I8;
  std::vector<int64_t> shape;
  double scale = 1.0;
  int32_t zero_point = 0;
  uint64_t offset = 0;  // bytes from the plan base; dense row-major NHWC
};

/// One compiled layer (for reports and per-layer counters).
struct LayerInfo {
  std::string name;  // graph node name(s), '+'-joined when fused
  std::string op;
  uint64_t macs = 0;
  uint64_t bytes_read = 0;  // predicted DRAM traffic
  uint64_t bytes_written = 0;
  std::vector<uint32_t> insn_begin;  // per core: first instruction index of the layer
  std::vector<uint32_t> insn_end;    // per core: one past the last
};

/// A tile task of a `dynamic` plan: instructions [begin, end) of the task
/// pool (cores[0]), the tasks that must finish first (indices below its own),
/// its layer (index into `layers`), the memory port the compiler spread it
/// to and the cost model's predicted cycles. The runtime hands ready tasks
/// to free cores (runtime/dispatch.h).
struct Task {
  uint32_t begin = 0, end = 0;
  std::vector<uint32_t> deps;
  uint32_t layer = 0;
  uint32_t port = 0;
  uint64_t cycles = 0;
};

/// A call of an HLS compute unit (hls/README.md "As compute units"): the
/// executor starts it once every core has run its stream up to start_at[c]
/// and waits for it before any core runs past wait_at[c] (host-sequenced
/// phases). `args` follow the kernel top's signature: the first `ptr_args`
/// are device offsets from the plan base, the rest int32 scalars.
struct UnitCallInfo {
  uint32_t layer = 0;  // index into `layers`
  std::string kernel;  // "loom_hls_conv", ...
  uint32_t unit = 0;
  uint32_t ptr_args = 0;
  std::vector<int64_t> args;
  std::vector<uint32_t> start_at, wait_at;  // per core: stream indices
  uint64_t cycles = 0;                      // the latency model's prediction
};

struct Plan {
  std::string config;  // named hardware configuration
  std::string graph_name;
  std::string compiler;       // "loom <version>"
  std::string graph_source;   // graph file the plan was compiled from (for `loom run --check`)
  uint64_t graph_hash = 0;    // FNV-1a-64 of that file's bytes
  uint64_t memory_bytes = 0;  // device memory the plan needs from its base
  uint64_t constants_offset = 0;
  std::vector<uint8_t> constants;  // written at base + constants_offset
  std::vector<TensorBinding> inputs;
  std::vector<TensorBinding> outputs;
  std::vector<std::vector<spec::Insn>> cores;  // per-core stream, dram addresses relative to base
  std::vector<LayerInfo> layers;
  uint32_t semaphores_used = 0;
  std::vector<UnitCallInfo> unit_calls;  // in start order; empty: cores only
  /// "static", "pipeline" or "dynamic" (compiler::Placement). A dynamic plan
  /// keeps every task's instructions in cores[0] in a dependency order, each
  /// task ending with FENCE (so run as one stream it is a correct one-core
  /// schedule); the other cores' streams hold END only.
  std::string placement = "static";
  std::vector<Task> tasks;  // dynamic plans only
  /// How the plan was compiled: compiler::options_to_json as JSON text
  /// (metadata field "compile_options"; empty: not recorded).
  std::string compile_options;
};

/// One plan on its own as a format-1 file, written atomically (temporary
/// file + rename): on error nothing is left. loom's commands write programs
/// (plan::write_program); this is the segment format, for tests and tools.
Status write_plan(const Plan& p, const std::string& path);
/// Reads a format-1 file and verifies magic, version, lengths and checksum;
/// errors name the file and the field. plan::read_program reads every format.
Expected<Plan> read_plan(const std::string& path);
/// True when the file starts with the plan magic.
bool looks_like_plan(const std::string& path);
/// The header's format version (0 when the file is no plan).
uint32_t plan_format_version(const std::string& path);

/// The container around a plan or a program, its header checked (magic, a
/// known format version, lengths, checksum).
struct Container {
  uint32_t version = 0;
  std::string meta;  // JSON metadata
  std::string payload;
};
/// Header, metadata and payload as bytes, with the checksum.
std::string encode_container(uint32_t version, std::string_view meta, std::string_view payload);
/// Checks and splits `bytes`; errors name `where`.
Expected<Container> decode_container(std::string_view bytes, const std::string& where);
/// A plan as bytes and back (write_plan and read_plan without the file).
std::string encode_plan(const Plan& p);
Expected<Plan> decode_plan(std::string_view bytes, const std::string& where);
/// The plan in a container decode_container checked already.
Expected<Plan> decode_plan(const Container& c, const std::string& where);

}  // namespace loom::plan
