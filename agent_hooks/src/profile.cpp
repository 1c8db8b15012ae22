// `attngate profile`'s document: ncu's raw CSV parsed into rows, rows summarized per kernel, and
// the summary an agent reads (profile.hpp).
#include "attngate/hooks/profile.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/printf.h>

namespace attngate::hooks::profile {
namespace {

// ncu metric names, and the prefixes/suffixes of the families asked for by regex.
constexpr const char* kDuration = "gpu__time_duration.sum";
constexpr const char* kDramRead = "dram__bytes_read.sum";
constexpr const char* kDramWrite = "dram__bytes_write.sum";
constexpr const char* kDramPct = "dram__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* kL2Hit = "lts__t_sector_hit_rate.pct";
constexpr const char* kOccupancy = "sm__warps_active.avg.pct_of_peak_sustained_active";
constexpr const char* kIssue = "sm__inst_issued.avg.pct_of_peak_sustained_active";
constexpr const char* kXu = "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active";
constexpr const char* kRegisters = "launch__registers_per_thread";
constexpr const char* kSmemDynamic = "launch__shared_mem_per_block_dynamic";
constexpr const char* kSmemStatic = "launch__shared_mem_per_block_static";
constexpr const char* kDevice = "device__attribute_display_name";
constexpr const char* kTensorPrefix = "sm__pipe_tensor_op_";
constexpr const char* kTensorSuffix = "_cycles_active.avg.pct_of_peak_sustained_active";
constexpr const char* kLocalPrefix = "smsp__sass_inst_executed_op_local_";
constexpr const char* kStallPrefix = "smsp__average_warps_issue_stalled_";
constexpr const char* kStallSuffix = "_per_issue_active.ratio";

bool starts(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends(const std::string& s, const std::string& x) {
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

// RFC 4180 records: quoted fields may hold commas, doubled quotes and newlines.
std::vector<std::vector<std::string>> csv_records(const std::string& text) {
  std::vector<std::vector<std::string>> out(1);
  std::string field;
  bool quoted = false, any = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') field += text[++i];
      else if (c == '"') quoted = false;
      else field += c;
    } else if (c == '"') {
      quoted = any = true;
    } else if (c == ',') {
      out.back().push_back(field);
      field.clear();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      if (any || !field.empty() || !out.back().empty()) out.back().push_back(field);
      field.clear();
      any = false;
      if (!out.back().empty()) out.emplace_back();
    } else {
      field += c;
      any = true;
    }
  }
  if (any || !field.empty()) out.back().push_back(field);
  if (out.back().empty()) out.pop_back();
  return out;
}

// A number as ncu prints it: thousands separators allowed; "n/a" and the like are none.
std::optional<double> to_number(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), ','), s.end());
  if (s.empty()) return std::nullopt;
  try {
    size_t used = 0;
    const double v = std::stod(s, &used);
    if (used != s.size() || !std::isfinite(v)) return std::nullopt;
    return v;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// The duration-weighted mean of a per-launch percentage over the launches that report it.
std::optional<double> weighted(const std::vector<const NcuRow*>& rows, const std::string& metric) {
  double sum = 0, weight = 0;
  for (const NcuRow* r : rows) {
    const auto v = r->number(metric);
    const double d = r->number(kDuration).value_or(1.0);
    if (v) sum += *v * d, weight += d;
  }
  if (weight <= 0) return std::nullopt;
  return sum / weight;
}

std::optional<double> summed(const std::vector<const NcuRow*>& rows, const std::vector<std::string>& metrics) {
  std::optional<double> total;
  for (const NcuRow* r : rows)
    for (const auto& m : metrics)
      if (const auto v = r->number(m)) total = total.value_or(0) + *v;
  return total;
}

std::optional<double> largest(const std::vector<const NcuRow*>& rows, const std::vector<std::string>& metrics) {
  std::optional<double> best;
  for (const NcuRow* r : rows) {
    std::optional<double> row_total;
    for (const auto& m : metrics)
      if (const auto v = r->number(m)) row_total = row_total.value_or(0) + *v;
    if (row_total && (!best || *row_total > *best)) best = row_total;
  }
  return best;
}

// Every metric name of the rows that matches prefix...suffix.
std::vector<std::string> family(const std::vector<const NcuRow*>& rows, const std::string& prefix,
                                const std::string& suffix) {
  std::vector<std::string> out;
  for (const NcuRow* r : rows)
    for (const auto& [name, value] : r->values)
      if (starts(name, prefix) && ends(name, suffix) && std::find(out.begin(), out.end(), name) == out.end())
        out.push_back(name);
  return out;
}

std::vector<Stall> top_stalls(const std::vector<const NcuRow*>& rows) {
  std::vector<Stall> all;
  for (const std::string& m : family(rows, kStallPrefix, kStallSuffix)) {
    const std::string reason = m.substr(std::string(kStallPrefix).size(),
                                        m.size() - std::string(kStallPrefix).size() - std::string(kStallSuffix).size());
    if (reason == "selected" || starts(reason, "not_selected")) continue;  // issuing, not stalled
    if (const auto v = weighted(rows, m)) all.push_back({reason, *v});
  }
  std::sort(all.begin(), all.end(), [](const Stall& a, const Stall& b) { return a.per_issue > b.per_issue; });
  if (all.size() > 5) all.resize(5);
  return all;
}

std::string cell(const std::optional<double>& v, const char* format) {
  if (!v) return "n/a";
  return fmt::sprintf(format, *v);
}

}  // namespace

std::vector<std::string> ncu_metrics() {
  return {kDuration, kDramRead, kDramWrite, kDramPct, kL2Hit, kOccupancy, kIssue, kXu, kRegisters, kSmemDynamic,
          kSmemStatic, kDevice,
          // Families whose members differ by architecture (gmma on Hopper, hmma for mma.sync):
          std::string("regex:^") + kTensorPrefix + ".*" + "_cycles_active\\.avg\\.pct_of_peak_sustained_active$",
          std::string("regex:^") + kLocalPrefix + "(ld|st)\\.sum$",
          std::string("regex:^") + kStallPrefix + ".*_per_issue_active\\.ratio$"};
}

std::optional<double> NcuRow::number(const std::string& metric) const {
  const auto t = text(metric);
  return t ? to_number(*t) : std::nullopt;
}

std::optional<std::string> NcuRow::text(const std::string& metric) const {
  for (const auto& [name, value] : values)
    if (name == metric) return value;
  return std::nullopt;
}

std::vector<NcuRow> parse_ncu_csv(const std::string& csv) {
  const auto records = csv_records(csv);
  size_t h = 0;
  while (h < records.size() && std::find(records[h].begin(), records[h].end(), "Kernel Name") == records[h].end()) ++h;
  if (h == records.size()) throw std::runtime_error("not Nsight Compute's raw CSV: no header naming \"Kernel Name\"");
  const auto& header = records[h];
  const auto col = [&](const char* name) {
    return size_t(std::find(header.begin(), header.end(), name) - header.begin());
  };
  const size_t kernel = col("Kernel Name"), process = col("Process Name"), pid = col("Process ID");
  std::vector<NcuRow> rows;
  for (size_t i = h + 1; i < records.size(); ++i) {
    const auto& rec = records[i];
    if (rec.size() != header.size())
      throw std::runtime_error("ncu CSV line " + std::to_string(i + 1) + ": " + std::to_string(rec.size()) +
                               " fields where the header has " + std::to_string(header.size()));
    if (rec[kernel].empty()) continue;  // the units row
    NcuRow r;
    r.kernel = rec[kernel];
    r.process = process < rec.size() ? rec[process] : "";
    r.pid = pid < rec.size() ? int64_t(to_number(rec[pid]).value_or(0)) : 0;
    for (size_t c = 0; c < header.size(); ++c) r.values.emplace_back(header[c], rec[c]);
    rows.push_back(std::move(r));
  }
  return rows;
}

KernelProfile summarize(const std::vector<NcuRow>& all, const std::string& kernel, const std::string& worker,
                        int64_t pid, double flops, double peak_tflops) {
  std::vector<const NcuRow*> rows;
  for (const NcuRow& r : all)
    if (r.pid == pid) rows.push_back(&r);
  if (rows.empty())
    throw std::runtime_error("ncu profiled no launch in " + worker + " (pid " + std::to_string(pid) + ", kernel " +
                             kernel + ")");
  KernelProfile k;
  k.kernel = kernel;
  k.worker = worker;
  for (const NcuRow* r : rows) k.launches.push_back(r->kernel);
  if (const auto ns = summed(rows, {kDuration})) {
    k.duration_us = *ns / 1e3;
    if (*ns > 0) k.tflops = flops / (*ns * 1e-9) / 1e12;
    if (k.tflops && peak_tflops > 0) k.peak_pct = *k.tflops / peak_tflops * 100;
  }
  for (const std::string& m : family(rows, kTensorPrefix, kTensorSuffix))
    if (const auto v = weighted(rows, m); v && (!k.tensor_pipe_pct || *v > *k.tensor_pipe_pct)) k.tensor_pipe_pct = v;
  k.dram_bytes = summed(rows, {kDramRead, kDramWrite});
  if (k.dram_bytes && k.duration_us && *k.duration_us > 0) k.dram_gbps = *k.dram_bytes / (*k.duration_us * 1e-6) / 1e9;
  k.dram_pct = weighted(rows, kDramPct);
  k.l2_hit_pct = weighted(rows, kL2Hit);
  k.occupancy_pct = weighted(rows, kOccupancy);
  k.issue_slots_pct = weighted(rows, kIssue);
  k.xu_pct = weighted(rows, kXu);
  k.registers_per_thread = largest(rows, {kRegisters});
  k.smem_per_block_bytes = largest(rows, {kSmemDynamic, kSmemStatic});
  k.local_memory_ops = summed(rows, family(rows, kLocalPrefix, ".sum"));
  k.top_stalls = top_stalls(rows);
  return k;
}

std::string render_summary(const ProfileDocument& d) {
  std::ostringstream out;
  const auto row = [&](const std::string& label, auto value_of) {
    out << fmt::format("{:<26}", label);
    for (const KernelProfile& k : d.kernels) out << fmt::format(" {:>25}", value_of(k));
    out << "\n";
  };
  out << "attngate profile: " << d.scenario << " (" << d.shape << ") on " << (d.device.empty() ? "?" : d.device)
      << ", Nsight Compute\n";
  row("", [](const KernelProfile& k) { return k.kernel; });
  row("duration (us)", [](const KernelProfile& k) { return cell(k.duration_us, "%.1f"); });
  const std::string peak = d.peak_tflops > 0 ? cell(d.peak_tflops, "%.0f") : "?";
  row("TFLOPS (% of " + peak + ")", [](const KernelProfile& k) {
    return cell(k.tflops, "%.1f") + " (" + cell(k.peak_pct, "%.1f%%") + ")";
  });
  row("tensor pipe busy (%)", [](const KernelProfile& k) { return cell(k.tensor_pipe_pct, "%.1f"); });
  row("DRAM MB / GB/s / % peak", [](const KernelProfile& k) {
    return cell(k.dram_bytes ? std::optional<double>(*k.dram_bytes / 1e6) : std::nullopt, "%.1f") + " / " +
           cell(k.dram_gbps, "%.0f") + " / " + cell(k.dram_pct, "%.1f");
  });
  row("L2 hit rate (%)", [](const KernelProfile& k) { return cell(k.l2_hit_pct, "%.1f"); });
  row("achieved occupancy (%)", [](const KernelProfile& k) { return cell(k.occupancy_pct, "%.1f"); });
  row("issue slots busy (%)", [](const KernelProfile& k) { return cell(k.issue_slots_pct, "%.1f"); });
  row("XU (MUFU) pipe (%)", [](const KernelProfile& k) { return cell(k.xu_pct, "%.1f"); });
  row("registers / thread", [](const KernelProfile& k) { return cell(k.registers_per_thread, "%.0f"); });
  row("shared memory / block KiB", [](const KernelProfile& k) {
    return cell(k.smem_per_block_bytes ? std::optional<double>(*k.smem_per_block_bytes / 1024) : std::nullopt, "%.1f");
  });
  row("local ld+st (spills)", [](const KernelProfile& k) { return cell(k.local_memory_ops, "%.0f"); });
  out << "top warp stalls (warps per issued instruction):\n";
  for (size_t i = 0; i < 5; ++i)
    row("  " + std::to_string(i + 1) + ".", [i](const KernelProfile& k) {
      return i < k.top_stalls.size() ? k.top_stalls[i].reason + " " + cell(k.top_stalls[i].per_issue, "%.2f") : "";
    });
  row("launches in the call", [](const KernelProfile& k) { return std::to_string(k.launches.size()); });
  if (!d.report.empty()) out << "report: " << d.report << " (ncu --import, or the Nsight Compute UI)\n";
  return out.str();
}

// Optional fields are written as null, so the schema can require every key.
namespace {
template <typename T>
void put(nlohmann::json& j, const char* key, const std::optional<T>& v) {
  j[key] = v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}
template <typename T>
void take(const nlohmann::json& j, const char* key, std::optional<T>& v) {
  const auto it = j.find(key);
  v = it == j.end() || it->is_null() ? std::nullopt : std::optional<T>(it->template get<T>());
}
}  // namespace

#define ATTNGATE_PROFILE_FIELDS(X)                                                                         \
  X(duration_us) X(tflops) X(peak_pct) X(tensor_pipe_pct) X(dram_bytes) X(dram_gbps) X(dram_pct) X(l2_hit_pct) \
  X(occupancy_pct) X(issue_slots_pct) X(xu_pct) X(registers_per_thread) X(smem_per_block_bytes) X(local_memory_ops)

void to_json(nlohmann::json& j, const KernelProfile& k) {
  j = {{"kernel", k.kernel}, {"worker", k.worker}, {"launches", k.launches}, {"top_stalls", k.top_stalls}};
#define X(f) put(j, #f, k.f);
  ATTNGATE_PROFILE_FIELDS(X)
#undef X
}

void from_json(const nlohmann::json& j, KernelProfile& k) {
  j.at("kernel").get_to(k.kernel);
  j.at("worker").get_to(k.worker);
  j.at("launches").get_to(k.launches);
  j.at("top_stalls").get_to(k.top_stalls);
#define X(f) take(j, #f, k.f);
  ATTNGATE_PROFILE_FIELDS(X)
#undef X
}

void to_json(nlohmann::json& j, const ProfileDocument& d) {
  j = {{"schema", d.schema},   {"scenario", d.scenario},       {"shape", d.shape},   {"flops", d.flops},
       {"device", d.device},   {"peak_tflops", d.peak_tflops}, {"report", d.report}, {"kernels", d.kernels}};
}

void from_json(const nlohmann::json& j, ProfileDocument& d) {
  j.at("schema").get_to(d.schema);
  if (d.schema != "attngate.profile/1") throw std::runtime_error("not an attngate.profile/1 document: " + d.schema);
  j.at("scenario").get_to(d.scenario);
  j.at("shape").get_to(d.shape);
  j.at("flops").get_to(d.flops);
  j.at("device").get_to(d.device);
  j.at("peak_tflops").get_to(d.peak_tflops);
  j.at("report").get_to(d.report);
  j.at("kernels").get_to(d.kernels);
}

}  // namespace attngate::hooks::profile
