// The re-decision of a `loom tune` round: every choice compiled with the
// refitted cost parameters, the compiler's decisions compared with the
// uncorrected compile's, and the mapping re-chosen by the compiler's own
// prediction (docs/tuning.md, "Re-decision and hot swap").
#include <iomanip>
#include <optional>
#include <sstream>

#include "tune/loop.h"
#include "tune/space.h"

namespace loom::tune {

using json = nlohmann::ordered_json;

namespace {

/// What a decision chose, without the numbers that justify it: the text up
/// to its first ';' (tiling: the tile; fusion: folded or kept separate), cut
/// before " predicts" (the residual weighing's "fused predicts N cycles").
bool compared_pass(const std::string& pass) {
  return pass == "fuse-activation" || pass == "fuse-residual" || pass == "tiling";
}

/// "refitted cost parameters (round N: layer_cycles L, insn_cycles I)", as the reasons cite them;
/// round 0: the uncorrected ones (no refit accepted yet).
std::string refitted_params_text(const compiler::CostParams& cp, int round) {
  if (round == 0) return "uncorrected cost parameters (no refit accepted yet)";
  std::ostringstream cps;
  cps.precision(1);
  cps << std::fixed << "refitted cost parameters (round " << round << ": layer_cycles " << cp.layer_cycles
      << ", insn_cycles ";
  cps.precision(3);
  cps << cp.insn_cycles << ")";
  return cps.str();
}

/// `c` with the refitted parameters of `round` (round 0: the uncorrected plan).
Choice with_params(const Choice& c, const compiler::CostParams& cp, int round) {
  Choice out = c;
  out.params = round ? std::optional<compiler::CostParams>(cp) : std::nullopt;
  out.params_round = round;
  return out;
}

}  // namespace

std::vector<DecisionChange> diff_decisions(const std::vector<compiler::Decision>& a,
                                           const std::vector<compiler::Decision>& b) {
  std::vector<DecisionChange> out;
  const auto find = [](const std::vector<compiler::Decision>& v, const compiler::Decision& d) {
    for (const auto& x : v)
      if (x.pass == d.pass && x.node == d.node) return &x;
    return static_cast<const compiler::Decision*>(nullptr);
  };
  for (const auto& d : a) {
    if (!compared_pass(d.pass)) continue;
    const compiler::Decision* o = find(b, d);
    if (!o)
      out.push_back({d.pass, d.node, d.text, ""});
    else if (d.choice != o->choice)
      out.push_back({d.pass, d.node, d.text, o->text});
  }
  for (const auto& d : b)
    if (compared_pass(d.pass) && !find(a, d)) out.push_back({d.pass, d.node, "", d.text});
  return out;
}

Expected<Redecision> Loop::redecide(const Calibration& before) {
  // Every choice compiled with the cost parameters in force (the last
  // accepted refit's, of round `params_round_`); the compiler's own
  // prediction (plus the plan overhead) ranks them. Where the refitted
  // parameters change a decision of the fusion or tiling passes, the plan
  // compiled with them is the candidate (and the change is listed);
  // otherwise the plan is the uncorrected one.
  Redecision rd;
  rd.next = prev_;
  const int round = params_round_;
  const std::string cps = refitted_params_text(cfit_.params, round);
  for (const auto& [key, spec] : s_.models) {
    auto cands = refitted_candidates(key, spec, round, cps, rd);
    if (!cands) return cands.error();
    if (spec.bucketed())
      LOOM_TRY(redecide_buckets(key, spec, *cands, round, before, cps, rd));
    else
      LOOM_TRY(redecide_gemm(key, spec, *cands, round, before, cps, rd));
  }
  return rd;
}

Expected<Candidates> Loop::refitted_candidates(const std::string& key, const serve::ModelSpec& spec, int round,
                                               const std::string& params_text, Redecision& rd) {
  Candidates cands;  // (mapped choice, choice with the refitted parameters)
  for (const auto& c0 : spaces_[key]) {
    if (round == 0) {  // no refit in force: the compiles are the same
      ++rd.compared;
      cands.push_back({c0, c0});
      continue;
    }
    const Choice c = with_params(c0, cfit_.params, round);
    auto a = lab_.compiled(spec, c0);
    if (!a) return a.error();
    auto b = lab_.compiled(spec, c);
    if (!b) return b.error();
    const auto d = diff_decisions((*a)->decisions(), (*b)->decisions());
    ++rd.compared;
    cands.push_back({d.empty() ? c0 : c, c});
    if (d.empty()) continue;
    ++rd.plans_changed;
    for (const auto& x : d)
      rd.compiler_changed.push_back(
          {{"model", key},
           {"choice", c0.tag()},
           {"pass", x.pass},
           {"node", x.node},
           {"before", x.before},
           {"after", x.after},
           {"why", params_text + ": the " + x.pass + " pass decides with the corrected predictions"}});
  }
  return cands;
}

Status Loop::redecide_buckets(const std::string& key, const serve::ModelSpec& spec, const Candidates& cands, int round,
                              const Calibration& before, const std::string& params_text, Redecision& rd) {
  // The buckets re-chosen for the lengths observed after the swap point,
  // each bucket's plan by the compiler's corrected prediction, then the
  // requests per run for each bucket and batch size.
  // Every choice is predicted with the parameters in force (a candidate's
  // second), whichever plan its mapping runs.
  const ChoiceCost predicted = [&](const Choice& c) { return lab_.predict_compiled(spec, c, cal_.overhead); };
  const ChoiceCost in_force = [&](const Choice& c) { return predicted(with_params(c, cfit_.params, round)); };
  const BucketSearch search{
      observed_batches(*last_, key, {}), lens_of(key), o_.max_buckets, s_.w.max_batch, predicted, in_force};
  auto bp = pick_placed(search, cands, observed_arrivals(*last_, key), s_.fab);
  if (!bp) return bp.error();
  rd.next[key] = bp->map;
  auto bj = bucket_json(spec, *bp);
  if (!bj) return bj.error();
  rd.mapping[key] = *bj;
  for (const auto& [sb, batches] : observed_batches(*last_, key, {})) {
    const auto [seq, b] = sb;
    const Choice old = prev_[key].at(seq, b), now = rd.next[key].at(seq, b);
    if (old == now) continue;
    const int64_t n_old = cdiv(b, std::max(old.requests, 1)), n_new = cdiv(b, std::max(now.requests, 1));
    auto po = lab_.predict_compiled(spec, with_params(old, cfit_.params, round), cal_.overhead);
    auto pb = lab_.predict_compiled(spec, old, before.overhead);
    auto pn = in_force(now);
    if (!po) return po.error();
    if (!pb) return pb.error();
    if (!pn) return pn.error();
    std::ostringstream why;
    why.precision(0);
    why << std::fixed << "buckets " << prev_[key].bucket_list() << " -> " << rd.next[key].bucket_list()
        << " for the lengths observed after the swap (padding " << std::setprecision(1) << 100 * bp->padding
        << " %), a batch of " << b << " in " << n_old << " -> " << n_new << " runs, compiler with the " << params_text
        << std::setprecision(0) << ": " << n_old << " x " << *po << " cycles with " << old.tag() << ", " << n_new
        << " x " << *pn << " with " << now.tag();
    rd.changed.push_back({{"model", key},
                          {"seq", seq},
                          {"batch", b},
                          {"requests", batches * double(b)},
                          {"from", old.tag()},
                          {"to", now.tag()},
                          {"predicted_from_cycles_before_refit", double(n_old) * *pb},
                          {"predicted_from_cycles", double(n_old) * *po},
                          {"predicted_to_cycles", double(n_new) * *pn},
                          {"why", why.str()}});
  }
  return Status::ok();
}

Status Loop::redecide_gemm(const std::string& key, const serve::ModelSpec& spec, const Candidates& cands, int round,
                           const Calibration& before, const std::string& params_text, Redecision& rd) {
  const std::set<int64_t> seqs = observed_seqs(*last_, key);
  auto pl = place_gemm(
      observed_batches(*last_, key, seqs), cands,
      [&](const Choice& c) { return lab_.predict_compiled(spec, c, cal_.overhead); }, observed_arrivals(*last_, key),
      s_.fab);
  if (!pl) return pl.error();
  rd.mapping[key] = {{"placements", pl->to_json()}};
  for (int64_t seq : seqs)
    for (int b = 1; b <= s_.w.max_batch; ++b) {
      double best = 0;
      const std::pair<Choice, Choice>* pick = nullptr;
      for (const auto& cc : cands) {
        if (cc.second.cores != pl->pick) continue;
        auto pc = lab_.predict_compiled(spec, cc.second, cal_.overhead);
        if (!pc) return pc.error();
        const double e = double(cdiv(seq * b, cc.second.rows)) * *pc;
        if (!pick || e < best) best = e, pick = &cc;
      }
      const Choice old = prev_[key].at(seq, b);
      rd.next[key].shape[{seq, b}] = pick->first;
      if (old.same_decision(pick->first)) {
        if (!(old == pick->first))
          rd.recompiled.push_back(
              {{"model", key},
               {"seq", seq},
               {"batch", b},
               {"from", old.tag()},
               {"to", pick->first.tag()},
               {"why", pick->first.params
                           ? "same rows, fusion and double buffering; the " + params_text +
                                 " change this plan's fusion/tiling decisions (compiler_decisions_changed)"
                           : "same rows, fusion and double buffering; with the " + params_text +
                                 " the compiler decides this plan as the uncorrected model does, so the "
                                 "uncorrected plan is used"}});
        continue;
      }
      auto po = lab_.predict_compiled(spec, with_params(old, cfit_.params, round), cal_.overhead);
      auto pb = lab_.predict_compiled(spec, old, before.overhead);
      if (!po) return po.error();
      if (!pb) return pb.error();
      const int64_t n_old = cdiv(seq * b, old.rows), n_new = cdiv(seq * b, pick->first.rows);
      const double old_now = double(n_old) * *po;
      std::ostringstream why;
      why.precision(0);
      why << std::fixed << "compiler with the " << params_text << ": " << n_old << " x " << *po << " = " << old_now
          << " cycles with " << old.tag() << ", " << n_new << " x " << best / double(n_new) << " = " << best
          << " cycles with " << pick->first.tag();
      rd.changed.push_back({{"model", key},
                            {"seq", seq},
                            {"batch", b},
                            {"from", old.tag()},
                            {"to", pick->first.tag()},
                            {"predicted_from_cycles_before_refit", double(n_old) * *pb},
                            {"predicted_from_cycles", old_now},
                            {"predicted_to_cycles", best},
                            {"why", why.str()}});
    }
  return Status::ok();
}

}  // namespace loom::tune
