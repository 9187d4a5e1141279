// Runs a program (plan/program.h) on one device: its steps in order, every
// segment on the same device, host steps through HostSteps. The one executor
// of every input kind: a JSON graph's plan is a program of one segment.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "common/tensor.h"
#include "device/device.h"
#include "plan/program.h"
#include "runtime/executor.h"

namespace loom::runtime {

/// Where a program's values live between steps and how its host steps run:
/// the frontend that made the program implements it (onnxfe for ONNX
/// models), so the runtime links no frontend. Values are named as in the
/// program; the implementation owns them.
class HostSteps {
 public:
  virtual ~HostSteps() = default;
  /// Runs host step `index` (plan::Step::host) on the values so far.
  virtual Status run_host(size_t index) = 0;
  /// The device tensor of value `b.name` for an input of `segment`, in the
  /// binding's layout, type and shape; anything else is an error naming it.
  virtual Expected<Tensor> to_device(int segment, const plan::TensorBinding& b) = 0;
  /// Takes output `b.name` of `segment` (in device layout) into the values.
  virtual Status from_device(int segment, const plan::TensorBinding& b, Tensor t) = 0;
};

/// The values of a program without host steps (a JSON graph's): device
/// tensors by name, the inputs given and the outputs taken.
class DeviceValues final : public HostSteps {
 public:
  explicit DeviceValues(std::map<std::string, Tensor> values) : values_(std::move(values)) {}
  Status run_host(size_t index) override;
  Expected<Tensor> to_device(int segment, const plan::TensorBinding& b) override;
  Status from_device(int segment, const plan::TensorBinding& b, Tensor t) override;
  const std::map<std::string, Tensor>& values() const { return values_; }
  std::map<std::string, Tensor>& values() { return values_; }

 private:
  std::map<std::string, Tensor> values_;
};

/// One device segment's run: the executor's report (per-core counters,
/// cycles, per-layer cycles), its outputs already taken by HostSteps.
struct SegmentRun {
  int segment = 0;
  RunResult result;
};

/// A device output that differs from loom's direct reference (RunOptions::check).
struct Mismatch {
  std::string output;  // "segment K output 'T'"; a program of one segment: "T"
  int64_t elements = 0;
  int64_t max_abs_diff = 0;  // 0 when the type or shape differs (then every element counts)
};

struct ProgramRun {
  std::vector<SegmentRun> segments;  // step order
  bool has_time = false;
  uint64_t cycles = 0;        // device cycles, summed over the segments
  uint64_t instructions = 0;  // summed over the segments and cores
  uint64_t ring_refills = 0;
  int checked_segments = 0;          // with RunOptions::check
  std::vector<Mismatch> mismatches;  // with RunOptions::check: step order, output order
};

/// The one reference check of a device run: `r`'s outputs against
/// ir::run_reference of `graph` on the device inputs `in`, bit for bit.
/// `segment` < 0 names the outputs alone.
Expected<std::vector<Mismatch>> check_against_reference(const ir::Graph& graph, int segment,
                                                        const std::map<std::string, Tensor>& in, const RunResult& r);

/// Runs `p`'s steps in order on `dev` (the program must pass
/// plan::validate). A failing step stops the run with its error. With
/// `opt.check`, each segment is checked (check_against_reference) before
/// its outputs go to `host`.
Expected<ProgramRun> run_program(Device& dev, const plan::Program& p, HostSteps& host, const RunOptions& opt = {});

}  // namespace loom::runtime
