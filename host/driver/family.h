// A model with symbolic dimensions as a family of programs: one program per
// bucket of its dimensions (batch, sequence, resolution), compiled on demand
// and cached in memory and on disk, keyed by (model hash, bound shape,
// options, configuration, loom version). A shape picks its bucket: the
// smallest bucket that holds each symbol's value; along the batch dimension
// (dimension 0 of every graph input and output, onnxfe::Signature) a batch
// is padded up to its bucket, and any other symbol must equal a bucket.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "compiler/compiler.h"
#include "frontend/onnx/shapes.h"
#include "frontend/onnx/value.h"
#include "plan/program.h"
#include "plan/program_file.h"

namespace loom::driver {

/// The most programs one family compiles ahead of time.
inline constexpr size_t kMaxFamilyPrograms = 256;
/// The most runs one batch is split into (ProgramFamily::split).
inline constexpr size_t kMaxFamilyRuns = 4096;

/// Bucket sizes per symbolic dimension, ascending (`--bucket SYMBOL=A,B,...`).
using Buckets = std::map<std::string, std::vector<int64_t>>;
/// "SYMBOL=A,B,..." into `b`: sizes 1..2^28, at most 64 of them, each symbol
/// once. Errors name --bucket and the text.
Status parse_bucket(const std::string& text, Buckets& b);

/// Where a set of input shapes falls in a family.
struct FamilyShape {
  std::map<std::string, int64_t> observed;  // each symbol's value in the inputs
  onnxfe::ShapeBinding binding;             // what the bucket's program is compiled with (dims)
  std::string batch_symbol;                 // the batch dimension's symbol ("": none)
  int64_t batch = 0, padded_batch = 0;      // along it: rows given, rows compiled (equal: no padding)
  /// "N=3 -> 4 (padded), S=64", in symbol order.
  std::string text() const;
};

/// One run of a batch: `shape`'s bucket on rows [first, first + shape.batch)
/// of the inputs' batch (first 0 and the whole batch when it is not split).
struct FamilyRun {
  FamilyShape shape;
  int64_t first = 0;
};

/// A bucket's program, compiled now or read from the disk cache.
struct FamilyMember {
  plan::ProgramFile file;  // the program and what the file records
  bool from_disk = false;  // read from the cache (its segments hold no graphs)
  std::string cache_file;  // "" without a cache folder
};

class ProgramFamily {
 public:
  /// The ONNX model at `path` for `cfg` compiled with `opt`; `cache_dir`
  /// "" keeps programs in memory only. Every bucketed symbol must be a
  /// symbolic dimension of the model's graph inputs.
  static Expected<ProgramFamily> open(const std::string& path, const spec::HwConfig& cfg,
                                      const compiler::CompileOptions& opt, Buckets buckets, std::string cache_dir);

  /// The bucket of inputs with these shapes (graph input name -> shape):
  /// each input's rank and fixed dimensions as the model states them, one
  /// value per symbol, each bucketed symbol within its buckets. Errors are
  /// one line naming the input, the symbol and the buckets.
  Expected<FamilyShape> pick(const std::map<std::string, std::vector<int64_t>>& shapes) const;
  /// The runs that cover inputs with these shapes, in batch order: pick()'s
  /// one when the batch fits a bucket; a batch above the batch dimension's
  /// largest bucket is split into runs of that bucket, the last one padded
  /// up to the smallest bucket that holds the rest. At most kMaxFamilyRuns
  /// runs; errors as pick()'s.
  Expected<std::vector<FamilyRun>> split(const std::map<std::string, std::vector<int64_t>>& shapes) const;

  /// Every bucket of the family, in symbol order: one shape per combination
  /// of the bucketed symbols' sizes (ahead-of-time compile, `loom compile
  /// --bucket`). Every symbolic dimension of the graph inputs needs buckets;
  /// at most kMaxFamilyPrograms combinations. Errors name --bucket.
  Expected<std::vector<FamilyShape>> every_bucket() const;

  /// The program of `s`'s bucket: from memory, the disk cache or a compile.
  Expected<FamilyMember> member(const FamilyShape& s);

  const onnxfe::Signature& signature() const { return sig_; }
  /// The cache key of a bucket: 16 hex digits.
  std::string key(const onnxfe::ShapeBinding& b) const;

 private:
  std::string path_, cache_dir_;
  const spec::HwConfig* cfg_ = nullptr;
  compiler::CompileOptions opt_;
  Buckets buckets_;
  onnxfe::Signature sig_;
  uint64_t model_hash_ = 0;
  std::map<std::string, FamilyMember> memory_;  // by key
};

/// `v` with dimension 0 grown to `rows` (zeros appended): a padded batch.
onnxfe::Value pad_batch(const onnxfe::Value& v, int64_t rows);
/// Entries [first, first + rows) of `v`'s dimension 0.
onnxfe::Value slice_batch(const onnxfe::Value& v, int64_t first, int64_t rows);
/// `parts` (one type, equal dimensions past the first) joined along dimension 0.
Expected<onnxfe::Value> join_batch(const std::vector<onnxfe::Value>& parts);
/// "N=19 split into 8, 8, 3 -> 4 (padded)": the runs of a split batch, else the one run's text().
std::string runs_text(const std::vector<FamilyRun>& runs);

}  // namespace loom::driver
