// Strict YAML suite loader. Everything a suite file says is checked and anything unexpected is an
// error with file:line:col, because a silently ignored typo (say `casual: true`) would make the gate
// verify or time something other than what its author believes.
#include "attngate/scenario.hpp"
#include <fmt/format.h>


#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <utility>

namespace attngate {
namespace {

namespace fs = std::filesystem;

enum Field : int { kBatch, kSeqlenQ, kSeqlenK, kHeadsQ, kHeadsKv, kHeadDim, kCausal, kDtype, kTags };
constexpr int kNumFields = 9;
constexpr std::array<std::string_view, kNumFields> kFieldNames = {
    "batch", "seqlen_q", "seqlen_k", "heads_q", "heads_kv", "head_dim", "causal", "dtype", "tags"};

// A sweep this large is a typo in an axis, not a suite anyone can run.
constexpr long long kMaxSweepScenarios = 100000;

std::optional<Field> field_by_name(std::string_view name) {
  for (int i = 0; i < kNumFields; ++i) {
    if (kFieldNames[i] == name) return static_cast<Field>(i);
  }
  return std::nullopt;
}

std::string field_list(bool with_tags) {
  std::vector<std::string> names;
  for (int i = 0; i < kNumFields; ++i) {
    if (with_tags || i != kTags) names.emplace_back(kFieldNames[i]);
  }
  return fmt::format("{}", fmt::join(names, ", "));
}

bool is_word_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

bool is_word(std::string_view s) { return !s.empty() && std::all_of(s.begin(), s.end(), is_word_char); }

std::string location(const std::string& file, const YAML::Mark& m) {
  if (m.is_null()) return file;
  return file + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

// Carries the file label and the scenario or sweep being read, so every error can name both.
class Context {
 public:
  explicit Context(std::string file) : file_(std::move(file)) {}

  const std::string& file() const { return file_; }
  std::string where(const YAML::Mark& m) const { return location(file_, m); }

  [[noreturn]] void fail(const YAML::Mark& mark, const std::string& what) const {
    std::string msg = where(mark) + ": ";
    if (!scope_.empty()) msg += scope_ + ": ";
    throw ScenarioError(msg + what);
  }

  class Scope {
   public:
    Scope(Context& ctx, std::string scope) : ctx_(ctx), saved_(std::exchange(ctx.scope_, std::move(scope))) {}
    ~Scope() { ctx_.scope_ = std::move(saved_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Context& ctx_;
    std::string saved_;
  };

 private:
  std::string file_;
  std::string scope_;
};

std::string describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Null: return "an empty value";
    case YAML::NodeType::Sequence: return "a sequence";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Scalar:
      return (n.Tag() == "!" ? "the quoted string '" : "'") + n.Scalar() + "'";
    default: return "nothing";
  }
}

// Plain (unquoted) scalars carry the non-specific tag "?"; an explicit core tag is accepted too.
bool plain_or_tagged(const YAML::Node& n, std::string_view core_tag) {
  return n.IsScalar() && (n.Tag() == "?" || n.Tag() == std::string("tag:yaml.org,2002:") + std::string(core_tag));
}

struct Entry {
  std::string key;
  YAML::Node key_node;
  YAML::Node value;
  // yaml-cpp marks an empty value at the token after it, often the next line; its key is clearer.
  YAML::Mark mark() const { return value.IsNull() ? key_node.Mark() : value.Mark(); }
};

// The entries of a mapping, in order. yaml-cpp keeps duplicate keys (both pairs are iterated), so
// they are rejected here rather than letting one silently win.
std::vector<Entry> mapping_entries(const YAML::Node& node, const YAML::Mark& mark, const Context& ctx,
                                   const std::string& what) {
  if (!node.IsMap()) ctx.fail(mark, what + " must be a mapping, got " + describe(node));
  std::vector<Entry> entries;
  std::map<std::string, YAML::Mark> seen;
  for (const auto& kv : node) {
    // Copies: yaml-cpp's iterator hands out a temporary pair, so references into it would dangle.
    const YAML::Node key = kv.first;
    if (!key.IsScalar()) ctx.fail(key.Mark(), "keys in " + what + " must be plain names, got " + describe(key));
    auto [pos, inserted] = seen.emplace(key.Scalar(), key.Mark());
    if (!inserted) {
      ctx.fail(key.Mark(), "duplicate key '" + key.Scalar() + "' in " + what + " (first at " +
                               ctx.where(pos->second) + ")");
    }
    entries.push_back({key.Scalar(), key, kv.second});
  }
  return entries;
}

std::string parse_string(const YAML::Node& n, const YAML::Mark& mark, const Context& ctx, const std::string& what) {
  if (!n.IsScalar()) ctx.fail(mark, what + " must be a string, got " + describe(n));
  return n.Scalar();
}

long long parse_int(const YAML::Node& n, const YAML::Mark& mark, const Context& ctx, const std::string& what) {
  if (!plain_or_tagged(n, "int")) ctx.fail(mark, what + " must be an integer, got " + describe(n));
  const std::string& s = n.Scalar();
  // Decimal only, and no leading zeros: YAML 1.1 tools read "010" as octal 8.
  const bool negative = !s.empty() && s[0] == '-';
  const std::string_view digits = std::string_view(s).substr(negative ? 1 : 0);
  const bool decimal = !digits.empty() && std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
                       (digits.size() == 1 || digits[0] != '0');
  if (!decimal) ctx.fail(mark, what + " must be an integer, got " + describe(n));
  long long value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size() || value > INT_MAX || value < INT_MIN) {
    ctx.fail(mark, what + " is out of range, got " + describe(n));
  }
  return value;
}

bool parse_bool(const YAML::Node& n, const YAML::Mark& mark, const Context& ctx, const std::string& what) {
  // Only true/false: YAML 1.1's yes/no/on/off/y/n are read differently by different tools.
  if (plain_or_tagged(n, "bool")) {
    const std::string& s = n.Scalar();
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  ctx.fail(mark, what + " must be true or false, got " + describe(n));
}

double parse_positive_double(const YAML::Node& n, const YAML::Mark& mark, const Context& ctx, const std::string& what) {
  if (!plain_or_tagged(n, "float") && !plain_or_tagged(n, "int")) {
    ctx.fail(mark, what + " must be a number, got " + describe(n));
  }
  const std::string& s = n.Scalar();
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  // from_chars also takes "inf"/"nan", and "1e999" overflows: all rejected by isfinite/ec.
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(value)) {
    ctx.fail(mark, what + " must be a finite number, got " + describe(n));
  }
  if (value <= 0) ctx.fail(mark, what + " must be positive, got " + s);
  return value;
}

struct FieldValue {
  long long number = 0;  // the int fields
  bool flag = false;     // causal
  DType dtype = DType::bf16;
  std::vector<std::string> tags;
  YAML::Mark mark;
};

FieldValue parse_field(Field f, const YAML::Node& n, const YAML::Mark& mark, const Context& ctx) {
  const std::string name(kFieldNames[f]);
  FieldValue v;
  v.mark = mark;
  switch (f) {
    case kCausal: v.flag = parse_bool(n, mark, ctx, name); break;
    case kDtype: {
      const std::string s = parse_string(n, mark, ctx, name);
      if (s == "bf16") v.dtype = DType::bf16;
      else if (s == "fp16") v.dtype = DType::fp16;
      else ctx.fail(mark, "unsupported dtype '" + s + "' (supported: bf16, fp16)");
      break;
    }
    case kTags: {
      if (!n.IsSequence()) ctx.fail(mark, "tags must be a sequence of names (may be []), got " + describe(n));
      for (const YAML::Node& t : n) {
        const YAML::Mark tm = t.IsNull() ? mark : t.Mark();
        const std::string tag = parse_string(t, tm, ctx, "a tag");
        if (!is_word(tag)) ctx.fail(tm, "tag '" + tag + "' must match [A-Za-z0-9_]+");
        if (std::find(v.tags.begin(), v.tags.end(), tag) != v.tags.end()) ctx.fail(tm, "duplicate tag '" + tag + "'");
        v.tags.push_back(tag);
      }
      break;
    }
    default: {
      v.number = parse_int(n, mark, ctx, name);
      if (v.number <= 0) ctx.fail(mark, name + " must be positive, got " + std::to_string(v.number));
      if (f == kHeadDim && v.number != 64 && v.number != 128 && v.number != 256) {
        ctx.fail(mark, "unsupported head_dim " + std::to_string(v.number) + " (supported: 64, 128, 256)");
      }
    }
  }
  return v;
}

std::string render(Field f, const FieldValue& v) {
  switch (f) {
    case kCausal: return v.flag ? "1" : "0";
    case kDtype: return dtype_name(v.dtype);
    default: return std::to_string(v.number);
  }
}

using Draft = std::array<std::optional<FieldValue>, kNumFields>;

// Turns a complete draft into a scenario and checks the rules that span fields. The caller has
// set the scope to the scenario's id.
Scenario build_scenario(const Draft& d, std::string id, const std::string& suite, const YAML::Mark& origin,
                        const Context& ctx) {
  std::vector<std::string> missing;
  for (int i = 0; i < kNumFields; ++i) {
    if (!d[i]) missing.emplace_back(kFieldNames[i]);
  }
  if (!missing.empty()) {
    ctx.fail(origin, std::string(missing.size() == 1 ? "missing field " : "missing fields ") + fmt::format("{}", fmt::join(missing, ", ")));
  }
  Scenario s;
  s.id = std::move(id);
  s.suite = suite;
  s.batch = static_cast<int>(d[kBatch]->number);
  s.seqlen_q = static_cast<int>(d[kSeqlenQ]->number);
  s.seqlen_k = static_cast<int>(d[kSeqlenK]->number);
  s.heads_q = static_cast<int>(d[kHeadsQ]->number);
  s.heads_kv = static_cast<int>(d[kHeadsKv]->number);
  s.head_dim = static_cast<int>(d[kHeadDim]->number);
  s.causal = d[kCausal]->flag;
  s.dtype = d[kDtype]->dtype;
  s.tags = d[kTags]->tags;
  s.origin = ctx.where(origin);
  if (s.heads_q % s.heads_kv != 0) {
    ctx.fail(d[kHeadsKv]->mark, "heads_q (" + std::to_string(s.heads_q) + ") is not a multiple of heads_kv (" +
                                    std::to_string(s.heads_kv) + ")");
  }
  return s;
}

std::string parse_id(const YAML::Node& n, const YAML::Mark& mark, const Context& ctx) {
  const std::string id = parse_string(n, mark, ctx, "id");
  if (!is_word(id)) {
    ctx.fail(mark, "id '" + id + "' must match [A-Za-z0-9_]+ (ids become test names; '-' breaks gtest filters)");
  }
  return id;
}

// The raw scalar under `key`, if any, so errors found while checking a mapping's keys (duplicates,
// unknown keys) can already name the scenario or sweep it defines.
std::string peek_scalar(const YAML::Node& node, const std::string& key) {
  if (!node.IsMap()) return "";
  for (const auto& kv : node) {
    const YAML::Node k = kv.first;
    const YAML::Node v = kv.second;
    if (k.IsScalar() && k.Scalar() == key && v.IsScalar()) return v.Scalar();
  }
  return "";
}

Scenario parse_explicit(const YAML::Node& node, const YAML::Mark& mark, Context& ctx, const std::string& suite) {
  const std::string hint = peek_scalar(node, "id");
  Context::Scope hint_scope(ctx, is_word(hint) ? "scenario '" + hint + "'" : "");
  const auto entries = mapping_entries(node, mark, ctx, "a scenario");
  auto id_entry = std::find_if(entries.begin(), entries.end(), [](const Entry& e) { return e.key == "id"; });
  if (id_entry == entries.end()) ctx.fail(mark, "scenario has no id");
  const std::string id = parse_id(id_entry->value, id_entry->mark(), ctx);
  Context::Scope scope(ctx, "scenario '" + id + "'");
  Draft draft;
  for (const Entry& e : entries) {
    if (e.key == "id") continue;
    const auto f = field_by_name(e.key);
    if (!f) ctx.fail(e.key_node.Mark(), "unknown key '" + e.key + "' (expected id, " + field_list(true) + ")");
    draft[*f] = parse_field(*f, e.value, e.mark(), ctx);
  }
  return build_scenario(draft, id, suite, mark, ctx);
}

struct Piece {
  std::string literal;
  std::optional<Field> field;
};

std::vector<Piece> parse_pattern(const std::string& pattern, const YAML::Mark& mark, const Context& ctx) {
  if (pattern.empty()) ctx.fail(mark, "id pattern is empty");
  std::vector<Piece> pieces;
  for (std::size_t i = 0; i < pattern.size();) {
    if (pattern[i] == '{') {
      const std::size_t close = pattern.find('}', i);
      if (close == std::string::npos) ctx.fail(mark, "id pattern has an unclosed '{'");
      const std::string name = pattern.substr(i + 1, close - i - 1);
      const auto f = field_by_name(name);
      if (!f || *f == kTags) {
        ctx.fail(mark, "id pattern has unknown placeholder {" + name + "} (placeholders: " + field_list(false) + ")");
      }
      pieces.push_back({"", f});
      i = close + 1;
    } else if (pattern[i] == '}') {
      ctx.fail(mark, "id pattern has a '}' without '{'");
    } else {
      if (!is_word_char(pattern[i])) {
        ctx.fail(mark, std::string("id pattern has the character '") + pattern[i] +
                           "' outside [A-Za-z0-9_] (ids become test names; '-' breaks gtest filters)");
      }
      if (pieces.empty() || pieces.back().field) pieces.push_back({"", std::nullopt});
      pieces.back().literal += pattern[i];
      ++i;
    }
  }
  return pieces;
}

struct Axis {
  std::vector<Field> fields;
  std::vector<std::vector<FieldValue>> values;  // values[k] belongs to fields[k]; all equally long
};

void expand_sweep(const YAML::Node& node, const YAML::Mark& mark, Context& ctx, const std::string& suite,
                  std::vector<Scenario>& out) {
  const std::string hint = peek_scalar(node, "id");
  Context::Scope hint_scope(ctx, hint.empty() ? "" : "sweep '" + hint + "'");
  const auto entries = mapping_entries(node, mark, ctx, "a sweep");
  const Entry* id_entry = nullptr;
  const Entry* base_entry = nullptr;
  const Entry* axes_entry = nullptr;
  for (const Entry& e : entries) {
    if (e.key == "id") id_entry = &e;
    else if (e.key == "base") base_entry = &e;
    else if (e.key == "axes") axes_entry = &e;
    else ctx.fail(e.key_node.Mark(), "unknown key '" + e.key + "' in a sweep (expected id, base, axes)");
  }
  if (!id_entry) ctx.fail(mark, "sweep has no id pattern");
  const std::string pattern = parse_string(id_entry->value, id_entry->mark(), ctx, "id");
  Context::Scope sweep_scope(ctx, "sweep '" + pattern + "'");
  const auto pieces = parse_pattern(pattern, id_entry->mark(), ctx);
  if (!axes_entry) ctx.fail(mark, "sweep has no axes (a single scenario belongs under scenarios:)");

  Draft base;
  if (base_entry) {
    for (const Entry& e : mapping_entries(base_entry->value, base_entry->mark(), ctx, "base")) {
      if (e.key == "id") ctx.fail(e.key_node.Mark(), "base cannot set id: the sweep's id pattern names its scenarios");
      const auto f = field_by_name(e.key);
      if (!f) ctx.fail(e.key_node.Mark(), "unknown field '" + e.key + "' in base (expected " + field_list(true) + ")");
      base[*f] = parse_field(*f, e.value, e.mark(), ctx);
    }
  }

  const YAML::Node& axes_node = axes_entry->value;
  if (!axes_node.IsSequence() || axes_node.size() == 0) {
    ctx.fail(axes_entry->mark(), "axes must be a non-empty sequence of mappings, got " + describe(axes_node));
  }
  std::vector<Axis> axes;
  std::array<std::optional<YAML::Mark>, kNumFields> axis_field_mark;
  for (const YAML::Node& axis_node : axes_node) {
    const YAML::Mark axis_mark = axis_node.IsNull() ? axes_entry->mark() : axis_node.Mark();
    const auto axis_entries = mapping_entries(axis_node, axis_mark, ctx, "an axes entry");
    if (axis_entries.empty()) ctx.fail(axis_mark, "an axes entry must name at least one field");
    Axis axis;
    for (const Entry& e : axis_entries) {
      const auto f = field_by_name(e.key);
      if (!f) ctx.fail(e.key_node.Mark(), "unknown field '" + e.key + "' in axes (expected " + field_list(true) + ")");
      if (base[*f]) ctx.fail(e.key_node.Mark(), "field '" + e.key + "' is set in both base and axes");
      if (axis_field_mark[*f]) {
        ctx.fail(e.key_node.Mark(), "field '" + e.key + "' appears in two axes entries (first at " +
                                        ctx.where(*axis_field_mark[*f]) + ")");
      }
      axis_field_mark[*f] = e.key_node.Mark();
      if (!e.value.IsSequence() || e.value.size() == 0) {
        ctx.fail(e.mark(), "axis '" + e.key + "' must be a non-empty list of values, got " + describe(e.value));
      }
      std::vector<FieldValue> values;
      for (const YAML::Node& v : e.value) values.push_back(parse_field(*f, v, v.IsNull() ? e.mark() : v.Mark(), ctx));
      if (!axis.values.empty() && values.size() != axis.values.front().size()) {
        ctx.fail(e.mark(), "zipped lists differ in length: '" + std::string(kFieldNames[axis.fields.front()]) +
                               "' has " + std::to_string(axis.values.front().size()) + " values, '" + e.key +
                               "' has " + std::to_string(values.size()));
      }
      axis.fields.push_back(*f);
      axis.values.push_back(std::move(values));
    }
    axes.push_back(std::move(axis));
  }

  std::vector<std::string> missing;
  for (int i = 0; i < kNumFields; ++i) {
    if (!base[i] && !axis_field_mark[i]) missing.emplace_back(kFieldNames[i]);
  }
  if (!missing.empty()) {
    ctx.fail(mark, std::string(missing.size() == 1 ? "field " : "fields ") + fmt::format("{}", fmt::join(missing, ", ")) +
                       " given neither in base nor in axes");
  }

  long long total = 1;
  for (const Axis& a : axes) {
    total *= static_cast<long long>(a.values.front().size());
    if (total > kMaxSweepScenarios) {
      ctx.fail(mark, "sweep expands to more than " + std::to_string(kMaxSweepScenarios) + " scenarios");
    }
  }

  // Odometer over the axes entries; the first entry varies slowest, like nested loops in file order.
  std::map<std::string, std::string> made;  // id -> summary, to explain pattern collisions
  std::vector<std::size_t> index(axes.size(), 0);
  for (long long n = 0; n < total; ++n) {
    Draft draft = base;
    for (std::size_t a = 0; a < axes.size(); ++a) {
      for (std::size_t k = 0; k < axes[a].fields.size(); ++k) draft[axes[a].fields[k]] = axes[a].values[k][index[a]];
    }
    std::string id;
    for (const Piece& p : pieces) id += p.field ? render(*p.field, *draft[*p.field]) : p.literal;
    Scenario s = [&] {
      Context::Scope scope(ctx, "scenario '" + id + "'");
      return build_scenario(draft, id, suite, mark, ctx);
    }();
    auto [pos, inserted] = made.emplace(id, scenario_summary(s));
    if (!inserted) {
      ctx.fail(mark, "id pattern produces the duplicate id '" + id + "' for [" + pos->second + "] and [" +
                         scenario_summary(s) + "]; add a placeholder for a field that differs");
    }
    out.push_back(std::move(s));
    for (std::size_t a = axes.size(); a-- > 0;) {
      if (++index[a] < axes[a].values.front().size()) break;
      index[a] = 0;
    }
  }
}

DtypeTolerance parse_dtype_tolerance(const Entry& entry, DtypeTolerance t, const Context& ctx) {
  for (const Entry& e : mapping_entries(entry.value, entry.mark(), ctx, "tolerance." + entry.key)) {
    const std::string what = "tolerance " + entry.key + "." + e.key;
    if (e.key == "o_atol") t.o_atol = parse_positive_double(e.value, e.mark(), ctx, what);
    else if (e.key == "initial_o_max_abs") t.initial_o_max_abs = parse_positive_double(e.value, e.mark(), ctx, what);
    else if (e.key == "lse_atol") t.lse_atol = parse_positive_double(e.value, e.mark(), ctx, what);
    else if (e.key == "initial_lse_max_abs") t.initial_lse_max_abs = parse_positive_double(e.value, e.mark(), ctx, what);
    else {
      ctx.fail(e.key_node.Mark(), "unknown key '" + e.key + "' in tolerance." + entry.key +
                                      " (expected o_atol, initial_o_max_abs, lse_atol, initial_lse_max_abs)");
    }
  }
  return t;
}

Tolerance parse_tolerance(const Entry& entry, const Context& ctx) {
  Tolerance t;
  for (const Entry& e : mapping_entries(entry.value, entry.mark(), ctx, "tolerance")) {
    if (e.key == "ratio_to_initial") t.ratio_to_initial = parse_positive_double(e.value, e.mark(), ctx, "tolerance ratio_to_initial");
    else if (e.key == "bf16") t.bf16 = parse_dtype_tolerance(e, t.bf16, ctx);
    else if (e.key == "fp16") t.fp16 = parse_dtype_tolerance(e, t.fp16, ctx);
    else ctx.fail(e.key_node.Mark(), "unknown key '" + e.key + "' in tolerance (expected ratio_to_initial, bf16, fp16)");
  }
  return t;
}

std::map<std::string, std::string> parse_settings(const Entry& entry, const Context& ctx) {
  std::map<std::string, std::string> settings;
  for (const Entry& e : mapping_entries(entry.value, entry.mark(), ctx, "settings")) {
    if (e.key.empty()) ctx.fail(e.key_node.Mark(), "settings keys must not be empty");
    if (!e.value.IsScalar()) ctx.fail(e.mark(), "setting '" + e.key + "' must be a scalar, got " + describe(e.value));
    settings.emplace(e.key, e.value.Scalar());
  }
  return settings;
}

// Records where each document's root node starts. Used instead of YAML::LoadAll, which in yaml-cpp
// 0.7 never returns when a document starts with a token the parser does not consume (a stray ','
// at the top level: ", a\n-b\n", found by scenarios/fuzz): every turn yields another empty
// document at the same place, allocating without end.
class DocumentMarks : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> roots;
  void OnDocumentStart(const YAML::Mark&) override { pending_ = true; }
  void OnDocumentEnd() override { pending_ = false; }
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { root(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { root(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { root(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    root(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    root(m);
  }
  void OnMapEnd() override {}

 private:
  void root(const YAML::Mark& m) {
    if (pending_) roots.push_back(m);
    pending_ = false;
  }
  bool pending_ = false;
};

Suite parse_suite(const std::string& text, const std::string& label) {
  Context ctx(label);
  const YAML::Mark top_mark;  // 1:1, for errors about the file as a whole
  YAML::Node root;
  try {
    // At most two documents are parsed: one is a suite, a second is an error.
    std::istringstream in(text);
    YAML::Parser parser(in);
    DocumentMarks marks;
    for (int doc = 0; doc < 2 && parser.HandleNextDocument(marks); ++doc) {
    }
    if (marks.roots.empty()) ctx.fail(top_mark, "the file holds no YAML document (expected a suite mapping)");
    if (marks.roots.size() > 1) {
      const YAML::Mark& a = marks.roots[0];
      const YAML::Mark& b = marks.roots[1];
      if (a.pos == b.pos) ctx.fail(b, "YAML syntax error: unexpected token (a ',' outside [] or {}?)");
      ctx.fail(b, "the file holds more than one YAML document; a suite is one mapping");
    }
    root = YAML::Load(text);  // the one document
  } catch (const YAML::Exception& e) {
    ctx.fail(e.mark, "YAML syntax error: " + e.msg);
  }
  const YAML::Mark root_mark = root.Mark().is_null() ? top_mark : root.Mark();
  const auto entries = mapping_entries(root, root_mark, ctx, "the top level");

  const Entry* by_key[6] = {};
  static constexpr std::array<std::string_view, 6> kTopKeys = {"suite", "description", "tolerance", "settings",
                                                               "scenarios", "sweeps"};
  for (const Entry& e : entries) {
    auto it = std::find(kTopKeys.begin(), kTopKeys.end(), e.key);
    if (it == kTopKeys.end()) {
      ctx.fail(e.key_node.Mark(), "unknown top-level key '" + e.key +
                                      "' (expected suite, description, tolerance, settings, scenarios, sweeps)");
    }
    by_key[it - kTopKeys.begin()] = &e;
  }
  const Entry* suite_e = by_key[0];
  const Entry* desc_e = by_key[1];
  const Entry* tol_e = by_key[2];
  const Entry* settings_e = by_key[3];
  const Entry* scen_e = by_key[4];
  const Entry* sweeps_e = by_key[5];

  Suite suite;
  suite.file = label;
  if (!suite_e) ctx.fail(root_mark, "missing top-level key 'suite'");
  suite.name = parse_string(suite_e->value, suite_e->mark(), ctx, "suite");
  const std::string stem = fs::path(label).stem().string();
  if (suite.name != stem) {
    ctx.fail(suite_e->mark(), "suite name '" + suite.name + "' must equal the file stem '" + stem + "'");
  }
  if (!desc_e) ctx.fail(root_mark, "missing top-level key 'description'");
  suite.description = parse_string(desc_e->value, desc_e->mark(), ctx, "description");
  if (tol_e) suite.tolerance = parse_tolerance(*tol_e, ctx);
  if (settings_e) suite.settings = parse_settings(*settings_e, ctx);

  // Explicit scenarios and sweeps are taken in the order their keys appear in the file.
  for (const Entry* e : {scen_e, sweeps_e}) {
    if (e && !e->value.IsSequence()) ctx.fail(e->mark(), e->key + " must be a sequence, got " + describe(e->value));
  }
  for (const Entry& e : entries) {
    if (&e == scen_e) {
      for (const YAML::Node& n : e.value) {
        suite.scenarios.push_back(parse_explicit(n, n.IsNull() ? e.mark() : n.Mark(), ctx, suite.name));
      }
    } else if (&e == sweeps_e) {
      for (const YAML::Node& n : e.value) {
        expand_sweep(n, n.IsNull() ? e.mark() : n.Mark(), ctx, suite.name, suite.scenarios);
      }
    }
  }
  if (suite.scenarios.empty()) {
    ctx.fail(root_mark, "the suite defines no scenarios (give scenarios: and/or sweeps: with at least one entry)");
  }

  std::map<std::string, std::string> origin_of;
  for (const Scenario& s : suite.scenarios) {
    auto [pos, inserted] = origin_of.emplace(s.id, s.origin);
    if (!inserted) {
      throw ScenarioError(s.origin + ": scenario '" + s.id + "': duplicate id (first defined at " + pos->second + ")");
    }
  }
  return suite;
}

}  // namespace

double Scenario::seqlen_k_effective() const {
  if (!causal) return seqlen_k;
  if (seqlen_q <= 0 || seqlen_k <= 0) return 0.0;
  // Row i sees max(0, i + Sk - Sq + 1) keys (never more than Sk). Summed over the rows:
  //   Sq <= Sk: Sk-Sq+1 .. Sk          -> Sq * (2*Sk - Sq + 1) / 2
  //   Sq >  Sk: 0 .. 0 (Sq-Sk rows), 1 .. Sk -> Sk * (Sk + 1) / 2
  const int64_t sq = seqlen_q;
  const int64_t sk = seqlen_k;
  const int64_t visible = sq <= sk ? sq * (2 * sk - sq + 1) / 2 : sk * (sk + 1) / 2;
  return static_cast<double>(visible) / static_cast<double>(sq);
}

double Scenario::flops() const {
  return 4.0 * batch * heads_q * static_cast<double>(seqlen_q) * seqlen_k_effective() * head_dim;
}

bool Scenario::has_tag(std::string_view tag) const {
  return std::find(tags.begin(), tags.end(), tag) != tags.end();
}

std::string scenario_summary(const Scenario& s) {
  std::ostringstream out;
  out << "b=" << s.batch << " sq=" << s.seqlen_q << " sk=" << s.seqlen_k << " hq=" << s.heads_q
      << " hkv=" << s.heads_kv << " d=" << s.head_dim << (s.causal ? " causal " : " noncausal ")
      << dtype_name(s.dtype);
  return out.str();
}

Suite load_suite_string(const std::string& yaml, const std::string& file_label) {
  return parse_suite(yaml, file_label);
}

Suite load_suite_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw ScenarioError(file.string() + ": cannot open the suite file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw ScenarioError(file.string() + ": cannot read the suite file");
  return parse_suite(text.str(), file.string());
}

std::vector<Suite> load_suite_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw ScenarioError(dir.string() + ": not a directory of suite files");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".yaml") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) throw ScenarioError(dir.string() + ": no *.yaml suite files");

  std::vector<Suite> suites;
  std::map<std::string, std::string> origin_of;
  for (const fs::path& f : files) {
    Suite suite = load_suite_file(f);
    for (const Scenario& s : suite.scenarios) {
      auto [pos, inserted] = origin_of.emplace(s.id, s.origin);
      if (!inserted) {
        throw ScenarioError(s.origin + ": scenario '" + s.id + "': duplicate id (first defined at " + pos->second + ")");
      }
    }
    suites.push_back(std::move(suite));
  }
  return suites;
}

}  // namespace attngate
