// Host fallback ops of an ONNX model timed on this CPU, against the serving
// model's stated cost (kHostOpNs + kHostElemNs per output element,
// docs/serving.md). Every tensor is first computed by running the whole
// model on the host (the conformance oracle); then each fallback op of the
// device program runs again from those values, best of `reps` timed runs.
//
// Usage: loom_serve_host_ops MODEL.onnx INPUT.pb [CONFIG [REPS]]
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "frontend/onnx/host_ops.h"
#include "frontend/onnx/model.h"
#include "frontend/onnx/program.h"
#include "frontend/onnx/value.h"
#include "loom/spec_gen.h"
#include "serve/service.h"

using namespace loom;

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.onnx INPUT.pb [CONFIG [REPS]]\n", argv[0]);
    return 2;
  }
  const spec::HwConfig* cfg = spec::find_config(argc > 3 ? argv[3] : "small");
  const int reps = argc > 4 ? std::atoi(argv[4]) : 5;
  if (!cfg || reps < 1) return std::fprintf(stderr, "bad CONFIG or REPS\n"), 2;
  auto fail = [](const Error& e) { return std::fprintf(stderr, "error: %s\n", e.str().c_str()), 1; };
  auto m = onnxfe::load_model(argv[1]);
  if (!m) return fail(m.error());
  auto in = onnxfe::read_value(argv[2]);
  if (!in) return fail(in.error());
  onnxfe::ProgramOptions host_only;
  host_only.use_device = false;
  auto hp = onnxfe::build_program(*m, {}, *cfg, host_only);
  if (!hp) return fail(hp.error());
  const onnxfe::Model& hm = (*onnxfe::host_model(*hp, argv[1]))->model;
  std::map<std::string, onnxfe::Value> env = hm.consts;
  env[hm.inputs.at(0)] = *in;
  for (const auto& st : hp->steps)
    if (Status s = onnxfe::run_host(hm, hm.nodes[st.host], env); !s) return fail(s.error());
  onnxfe::ProgramOptions dev;
  dev.compile.num_cores = 1;
  auto dp = onnxfe::build_program(*m, {}, *cfg, dev);
  if (!dp) return fail(dp.error());
  const onnxfe::Model& dm = (*onnxfe::host_model(*dp, argv[1]))->model;
  for (const auto& [k, v] : dm.consts) env[k] = v;
  double measured = 0, stated = 0;
  int timed = 0, skipped = 0;
  for (const auto& st : dp->steps) {
    if (st.on_device()) continue;
    const auto& n = dm.nodes[st.host];
    bool ok = true;
    for (const auto& i : n.inputs) ok = ok && (i.empty() || env.count(i));
    if (!ok) {
      ++skipped;
      continue;
    }
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
      auto e = env;
      const auto t0 = std::chrono::steady_clock::now();
      Status s = onnxfe::run_host(dm, n, e);
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (!s) return fail(s.error());
      best = std::min(best, us);
      if (r == 0)
        for (const auto& o : n.outputs) env[o] = e[o];
    }
    double elems = 0;
    for (const auto& o : n.outputs)
      if (auto it = env.find(o); it != env.end()) elems += double(it->second.numel());
    const double model_us = (serve::kHostOpNs + serve::kHostElemNs * elems) / 1000.0;
    std::printf("%-48s %10.0f elems  measured %9.1f us  stated %9.1f us\n", (n.name + " (" + n.op + ")").c_str(),
                elems, best, model_us);
    measured += best, stated += model_us, ++timed;
  }
  std::printf("total: %d host ops timed (%d skipped: inputs not computed by the host-only run): measured %.1f us, "
              "stated %.1f us (%.2fx)\n",
              timed, skipped, measured, stated, measured > 0 ? stated / measured : 0.0);
  return 0;
}
