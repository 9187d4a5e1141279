// The pass declarations (PassInfo) and how compile() holds every pass to its
// own: the options it reads and the statistics it keeps.
#include "compiler/pass.h"

#include <algorithm>
#include <string>

namespace loom::compiler {

const char* pass_option_name(PassOption o) {
  switch (o) {
    case PassOption::Fusion:
      return "fusion";
    case PassOption::Hls:
      return "hls";
    case PassOption::Placement:
      return "placement";
    case PassOption::TasksPerCore:
      return "tasks_per_core";
    case PassOption::RowWindows:
      return "row_windows";
    case PassOption::GroupPacking:
      return "group_packing";
    case PassOption::ImageBands:
      return "image_bands";
    case PassOption::Depthwise:
      return "depthwise";
    case PassOption::BatchFold:
      return "batch_fold";
    case PassOption::CostParams:
      return "cost_params";
  }
  return "?";
}

bool PassInfo::reads(PassOption o) const { return std::find(options.begin(), options.end(), o) != options.end(); }

bool PassInfo::keeps(const std::string& key) const {
  for (const auto& st : statistics) {
    const std::string k = st.key;
    if (k == key) return true;
    // "insn.*": the family of keys "insn.<anything>".
    if (k.size() >= 2 && k.compare(k.size() - 2, 2, ".*") == 0 && key.size() > k.size() - 1 &&
        key.compare(0, k.size() - 1, k, 0, k.size() - 1) == 0)
      return true;
  }
  return false;
}

int64_t& Pass::stat(const std::string& key) {
  if (undeclared_.empty() && !info().keeps(key)) undeclared_ = key;
  for (auto& [k, x] : stats_)
    if (k == key) return x;
  return stats_.emplace_back(key, 0).second;
}

const CompileOptions& CompileState::read(PassOption o) const {
  if (undeclared_.empty() && !(running_ && running_->reads(o))) undeclared_ = pass_option_name(o);
  return opt_;
}

Status CompileState::run_pass(Pass& p) {
  running_ = &p.info();
  undeclared_.clear();
  Status st = p.run(*this);
  running_ = nullptr;
  const std::string where = "pass '" + std::string(p.name()) + "'";
  if (!undeclared_.empty())
    return make_error(where, "internal error: reads option '" + undeclared_ + "', which it does not declare");
  if (!p.undeclared().empty())
    return make_error(where, "internal error: keeps statistic '" + p.undeclared() + "', which it does not declare");
  return st;
}

}  // namespace loom::compiler
