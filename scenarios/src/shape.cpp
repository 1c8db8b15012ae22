// Ad-hoc shapes from the command line (--shape), turned into a one-suite YAML document and loaded
// by the suites' own loader, so that a shape passes exactly the rules a scenario file does.
#include <cctype>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attngate/scenario.hpp"

namespace attngate {
namespace {

[[noreturn]] void bad(const std::string& spec, const std::string& what) {
  throw ScenarioError("--shape '" + spec + "': " + what +
                      " (expected e.g. b=4,sq=8192,sk=8192,hq=32,hkv=8,d=128,causal,bf16)");
}

// The spec's items, split at commas and spaces.
std::vector<std::string> items_of(const std::string& spec) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : spec + ",") {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

bool all_digits(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

// key=value and bare flags into the scenario fields the loader knows; defaults: sk = sq,
// hkv = hq, noncausal, bf16.
std::map<std::string, std::string> fields_of(const std::string& spec) {
  static const std::map<std::string, std::string> kNumbers = {{"b", "batch"},  {"sq", "seqlen_q"}, {"sk", "seqlen_k"},
                                                              {"hq", "heads_q"}, {"hkv", "heads_kv"}, {"d", "head_dim"}};
  static const std::set<std::string> kDtypes = {"bf16", "fp16"};
  std::map<std::string, std::string> f;
  auto set = [&](const std::string& key, const std::string& value, const std::string& item) {
    if (!f.emplace(key, value).second) bad(spec, "'" + item + "' sets " + key + " twice");
  };
  for (const std::string& item : items_of(spec)) {
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      if (item == "causal" || item == "noncausal") set("causal", item == "causal" ? "true" : "false", item);
      else if (kDtypes.count(item)) set("dtype", item, item);
      else bad(spec, "unknown item '" + item + "'");
      continue;
    }
    const std::string key = item.substr(0, eq), value = item.substr(eq + 1);
    if (key == "id") set("id", value.rfind("adhoc_", 0) == 0 ? value : "adhoc_" + value, item);  // never a suite's id
    else if (key == "dtype") set("dtype", value, item);
    else if (auto it = kNumbers.find(key); it != kNumbers.end()) {
      if (!all_digits(value)) bad(spec, "'" + item + "': " + key + " must be a positive integer");
      set(it->second, value, item);
    } else bad(spec, "unknown key '" + key + "'");
  }
  for (const char* need : {"batch", "seqlen_q", "heads_q", "head_dim"})
    if (!f.count(need)) bad(spec, std::string("no ") + need);
  f.emplace("seqlen_k", f.at("seqlen_q"));
  f.emplace("heads_kv", f.at("heads_q"));
  f.emplace("causal", "false");
  f.emplace("dtype", "bf16");
  return f;
}

std::string default_id(const std::map<std::string, std::string>& f) {
  return "shape_b" + f.at("batch") + "_sq" + f.at("seqlen_q") + "_sk" + f.at("seqlen_k") + "_hq" + f.at("heads_q") +
         "_hkv" + f.at("heads_kv") + "_d" + f.at("head_dim") + (f.at("causal") == "true" ? "_causal" : "") + "_" +
         f.at("dtype");
}

}  // namespace

// One scenario line of the YAML document.
std::string yaml_item(const std::string& spec) {
  std::map<std::string, std::string> f = fields_of(spec);
  f.emplace("id", default_id(f));
  std::string out = "  - {tags: [adhoc]";
  for (const auto& [k, v] : f) out += ", " + k + ": " + (k == "id" || k == "dtype" ? "\"" + v + "\"" : v);
  return out + "}\n";
}

Suite adhoc_suite(const std::vector<std::string>& specs, const std::string& name) {
  if (specs.empty()) throw ScenarioError("--shape: no shape given");
  const std::string head = "suite: " + name + "\ndescription: shapes given on the command line (--shape)\nscenarios:\n";
  std::string all = head;
  for (const std::string& spec : specs) {
    const std::string item = yaml_item(spec);
    try {  // alone first, so that the loader's complaint names its spec
      load_suite_string(head + item, name + ".yaml");
    } catch (const ScenarioError& e) {
      bad(spec, e.what());
    }
    all += item;
  }
  return load_suite_string(all, name + ".yaml");  // the rules across scenarios (unique ids)
}

}  // namespace attngate
