// `loom zoo`: the model zoo (ResNet-50, MobileNetV2, BERT-base encoder layer)
// as quantized ONNX with seeded weights. The networks are built and quantized
// by scripts/zoo.py with ONNX Runtime's quantization tool; this command finds
// a Python with onnx and onnxruntime, runs the script and passes its exit code
// on.
//
// LOOM_PYTHON overrides the interpreter (default python3 on PATH) and
// LOOM_ZOO_SCRIPT the script (default: the source tree's scripts/zoo.py).
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_common.h"
#include "cli/process.h"

namespace loom::cli {

namespace {

struct ZooOpts {
  std::string name, output, slice;
  int seq = 0;    // passed on only when given
  int batch = 0;  // passed on only when given
  int64_t seed = 1;
  bool json = false;
};

int run_zoo(const std::vector<std::string>& script_args) {
  return run_python_script({"zoo", "LOOM_ZOO_SCRIPT", LOOM_ZOO_SCRIPT, "numpy, onnx, onnxruntime.quantization",
                            "numpy, onnx or onnxruntime"},
                           script_args);
}

}  // namespace

void register_zoo(CLI::App& app) {
  auto* cmd = app.add_subcommand("zoo", "Real networks as quantized ONNX with seeded weights (ONNX Runtime QDQ)");
  cmd->require_subcommand(1);
  auto o = std::make_shared<ZooOpts>();

  auto* list = cmd->add_subcommand("list", "List the zoo models with their shapes, MACs and parameter counts");
  list->add_flag("--json", o->json, "Print JSON");
  list->callback([o] {
    std::vector<std::string> args{"list"};
    if (o->json) args.push_back("--json");
    if (int rc = run_zoo(args); rc != 0) throw CLI::RuntimeError(rc);
  });

  auto* build = cmd->add_subcommand(
      "build", "Build one model: DIR/model.onnx, DIR/test_data_set_0/input_0.pb and ONNX Runtime's output_0.pb");
  build
      ->add_option("NAME", o->name,
                   "Model: resnet50, mobilenetv2, bert, or a family: resnext, regnet, efficientnet, mobilenetv3, "
                   "squeezenet, googlenet, densenet, shufflenet, convnext, vit, encoder, lraspp (`loom zoo list`)")
      ->required();
  auto* seq = build->add_option("--seq", o->seq, "BERT sequence length: 32, 64, 128, 256, 384 or 512");
  build->add_option("--slice", o->slice,
                    "Part of the network (resnet50: stem, stage1..stage4; mobilenetv2: stem, block; a family: small)");
  build->add_option("--seed", o->seed, "Seed of weights, calibration data and input")->capture_default_str();
  auto* batch = build->add_option("--batch", o->batch,
                                  "Export with the batch dimension symbolic ('N', as dynamic_axes write it) and test "
                                  "data of this batch (1..64; refused for a graph that fixes its batch)");
  build->add_option("-o,--output", o->output, "Output folder")->required();
  build->callback([o, seq, batch] {
    if (o->seed < 0) throw CLI::RuntimeError(fail("--seed: must be >= 0, not " + std::to_string(o->seed)));
    std::vector<std::string> args{"build", o->name, "-o", o->output, "--seed", std::to_string(o->seed)};
    if (seq->count() > 0) args.insert(args.end(), {"--seq", std::to_string(o->seq)});
    if (!o->slice.empty()) args.insert(args.end(), {"--slice", o->slice});
    if (batch->count() > 0) args.insert(args.end(), {"--batch", std::to_string(o->batch)});
    if (int rc = run_zoo(args); rc != 0) throw CLI::RuntimeError(rc);
  });
}

}  // namespace loom::cli
