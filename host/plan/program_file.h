// A program (plan/program.h) as one file, the one file format loom writes
// (format 3, docs/plan-format.md): the plan container holding every device
// segment's plan, the host steps as bytes of the frontend's HostCodec, and
// the order they run in. The older formats are still read: one graph's plan
// (format 1) and an ONNX model's program plan (format 2).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "plan/plan.h"
#include "plan/program.h"

namespace loom::plan {

/// Where a program came from and how it was compiled (the file's metadata).
struct ProgramInfo {
  std::string config;        // named hardware configuration; every segment's plan has it
  std::string compiler;      // "loom <version>"
  std::string source;        // the model compiled (graph_source: `loom run --check` finds the reference there)
  uint64_t source_hash = 0;  // FNV-1a-64 of that file's bytes
  /// compiler::options_to_json of the options every segment was compiled
  /// with, as JSON text (as Plan::compile_options); empty: not recorded.
  std::string compile_options;
  /// The shapes bound on the source when it was compiled (an ONNX model's
  /// --input-shape, --dim, --batch) as a JSON object's text, read back by
  /// the frontend; empty: none (metadata "input_shapes").
  std::string input_shapes = {};
};

/// The info a one-plan program has: its plan's own fields.
ProgramInfo info_of(const Plan& p);

/// A program's host steps as a file holds them: bytes at the start of the
/// payload and the codec's own metadata fields (a JSON object, as text).
struct HostBytes {
  std::string bytes;
  std::string meta;
  /// Written by encode: per step of the program, the index a host step has
  /// in `bytes` (what the file's `{"host": i}` says; device steps: unused).
  std::vector<size_t> index;
};

/// The frontend's half of a program file: its HostModel as bytes and back.
/// Everything else in the file (container, segments, steps, notes) belongs
/// to host/plan; a frontend supplies this codec for its host steps, and the
/// caller that reads or writes a program passes it (the plan library links
/// no frontend).
class HostCodec {
 public:
  virtual ~HostCodec() = default;
  /// The codec's name: the HostModel::kind() it encodes, recorded in the
  /// file as `host.codec` ("onnx").
  virtual const char* kind() const = 0;
  /// `p.host` (of this codec's kind) and the index of every host step.
  virtual Expected<HostBytes> encode(const Program& p, const std::string& where) const = 0;
  /// Sets `p.host` and `p.host_ops` from `h`; `p`'s segments and steps are
  /// read already (each host step's `host` the index the file gives it).
  /// Checks what only the frontend knows: the host steps' indices, that
  /// they run and read what the segments give them, the boundary layouts.
  /// Errors are one line naming `where` (the file) and the field.
  virtual Status decode(const HostBytes& h, Program& p, const std::string& where) const = 0;
};

/// `p` with `info` as one file of format kProgramFormatVersion, written atomically (temporary file +
/// rename, with the checksum): on error nothing is left. A program with
/// host steps needs the codec of its HostModel's kind.
Status write_program(const Program& p, const ProgramInfo& info, const std::string& path,
                     const HostCodec* codec = nullptr);
/// The file's bytes (write_program without the file).
Expected<std::string> encode_program(const Program& p, const ProgramInfo& info, const std::string& where,
                                     const HostCodec* codec = nullptr);

struct ProgramFile {
  uint32_t version = 0;  // the format it was read from (1, 2 or 3)
  ProgramInfo info;
  /// Ready to run: segments hold their plans but no graph (the reference of
  /// --check comes from info.source) and no compile record.
  Program program;
};

/// Reads any plan file loom wrote (formats 1, 2 and 3) and checks it:
/// container (magic, version, lengths, checksum), metadata fields, every
/// segment plan, step indices in range, every segment run once, and, through
/// `codec`, the host steps (a file with host steps needs the codec its
/// `host.codec` names; format 2 holds ONNX host steps). Errors are one line
/// naming the file and the field.
Expected<ProgramFile> read_program(const std::string& path, const HostCodec* codec = nullptr);
/// The same checks on a file's bytes; `path` names them in errors.
Expected<ProgramFile> decode_program(std::string_view bytes, const std::string& path, const HostCodec* codec = nullptr);

/// The codec a plan file's host steps need ("onnx"), read from its header
/// and metadata only; "" when it has none or is no readable plan (the full
/// read then says why).
std::string host_codec_of(const std::string& path);

}  // namespace loom::plan
