// `attngate profile` without a GPU: ncu's raw CSV (as `ncu --import --csv --page raw --print-units
// base` writes it: a header, a units row, one row per launch, quoted fields with thousands
// separators) parsed, summarized per worker, rendered, and held to the schema.
#include <gtest/gtest.h>

#include <filesystem>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "attngate/hooks/profile.hpp"
#include "attngate/verify/schema_check.hpp"

namespace {

namespace fs = std::filesystem;
using namespace attngate::hooks::profile;
using nlohmann::json;

const char* kCsv =
    "==PROF== Connected to process\n"
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\",\"gpu__time_duration.sum\","
    "\"dram__bytes_read.sum\",\"dram__bytes_write.sum\",\"dram__throughput.avg.pct_of_peak_sustained_elapsed\","
    "\"lts__t_sector_hit_rate.pct\",\"sm__warps_active.avg.pct_of_peak_sustained_active\","
    "\"sm__inst_issued.avg.pct_of_peak_sustained_active\",\"sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active\","
    "\"launch__registers_per_thread\",\"launch__shared_mem_per_block_dynamic\",\"launch__shared_mem_per_block_static\","
    "\"device__attribute_display_name\",\"sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active\","
    "\"sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active\","
    "\"smsp__sass_inst_executed_op_local_ld.sum\",\"smsp__sass_inst_executed_op_local_st.sum\","
    "\"smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio\","
    "\"smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio\","
    "\"smsp__average_warps_issue_stalled_selected_per_issue_active.ratio\","
    "\"smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio\"\n"
    "\"\",\"\",\"\",\"\",\"\",\"\",\"\",\"nsecond\",\"byte\",\"byte\",\"%\",\"%\",\"%\",\"%\",\"%\",\"register/thread\","
    "\"byte/block\",\"byte/block\",\"\",\"%\",\"%\",\"inst\",\"inst\",\"\",\"\",\"\",\"\"\n"
    // candidate: two launches (a main kernel of 3 ms and a 1 ms tail), in its worker
    "\"0\",\"4242\",\"attngate_worker\",\"h200\",\"attn_fwd_main(Params)\",\"1\",\"13\",\"3,000,000\","
    "\"400,000,000\",\"100,000,000\",\"10\",\"80\",\"25\",\"40\",\"5\",\"168\",\"229,376\",\"0\",\"NVIDIA H200\","
    "\"60\",\"0\",\"0\",\"0\",\"2.0\",\"1.0\",\"1.0\",\"0.5\"\n"
    "\"1\",\"4242\",\"attngate_worker_candidate\",\"h200\",\"attn_fwd_tail(Params)\",\"1\",\"13\",\"1,000,000\","
    "\"0\",\"0\",\"2\",\"50\",\"12.5\",\"20\",\"1\",\"32\",\"0\",\"1,024\",\"NVIDIA H200\",\"0\",\"n/a\",\"10\",\"6\","
    "\"6.0\",\"0\",\"1.0\",\"0.5\"\n"
    // initial: one launch in its own worker
    "\"2\",\"4243\",\"attngate_worker_initial\",\"h200\",\"attn_fwd_fa2<128>(Params)\",\"1\",\"13\",\"8,000,000\","
    "\"1,000,000,000\",\"200,000,000\",\"20\",\"70\",\"50\",\"60\",\"3\",\"255\",\"49,152\",\"0\",\"NVIDIA H200\","
    "\"0\",\"45\",\"0\",\"0\",\"1.5\",\"3.0\",\"1.0\",\"0.2\"\n";

TEST(Profile, ParsesTheRawCsvAndSkipsTheUnitsRow) {
  const auto rows = parse_ncu_csv(kCsv);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].process, "attngate_worker");  // shortened, as a comm name is: the pid decides
  EXPECT_EQ(rows[0].pid, 4242);
  EXPECT_EQ(rows[0].kernel, "attn_fwd_main(Params)");
  EXPECT_EQ(rows[0].number("gpu__time_duration.sum"), 3e6);  // thousands separators read
  EXPECT_EQ(rows[1].number("sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"), std::nullopt);
  EXPECT_EQ(rows[2].text("device__attribute_display_name"), "NVIDIA H200");
}

TEST(Profile, SummarizesTheLaunchesOfOneWorker) {
  const auto rows = parse_ncu_csv(kCsv);
  const KernelProfile k = summarize(rows, "candidate", "attngate_worker_candidate", 4242, 2e12, 989.5);
  ASSERT_EQ(k.launches.size(), 2u);
  EXPECT_DOUBLE_EQ(*k.duration_us, 4000.0);                 // 3 ms + 1 ms
  EXPECT_DOUBLE_EQ(*k.tflops, 500.0);                       // 2e12 FLOPs in 4 ms
  EXPECT_NEAR(*k.peak_pct, 50.53, 0.01);
  EXPECT_DOUBLE_EQ(*k.tensor_pipe_pct, 45.0);               // gmma, duration-weighted: 60 * 3/4
  EXPECT_DOUBLE_EQ(*k.dram_bytes, 5e8);
  EXPECT_DOUBLE_EQ(*k.dram_gbps, 125.0);                    // 0.5 GB in 4 ms
  EXPECT_DOUBLE_EQ(*k.l2_hit_pct, 72.5);                    // (80 * 3 + 50) / 4
  EXPECT_DOUBLE_EQ(*k.registers_per_thread, 168.0);         // the largest launch's
  EXPECT_DOUBLE_EQ(*k.smem_per_block_bytes, 229376.0);
  EXPECT_DOUBLE_EQ(*k.local_memory_ops, 16.0);              // spills of the tail
  ASSERT_EQ(k.top_stalls.size(), 3u);                       // "selected" is issuing, not a stall
  EXPECT_EQ(k.top_stalls[0].reason, "long_scoreboard");     // (2 * 3 + 6) / 4 = 3
  EXPECT_DOUBLE_EQ(k.top_stalls[0].per_issue, 3.0);
  EXPECT_EQ(k.top_stalls[1].reason, "math_pipe_throttle");  // 0.75
  const KernelProfile i = summarize(rows, "initial", "attngate_worker_initial", 4243, 2e12, 989.5);
  EXPECT_DOUBLE_EQ(*i.tensor_pipe_pct, 45.0);               // hmma for mma.sync
  EXPECT_EQ(i.top_stalls[0].reason, "math_pipe_throttle");
}

TEST(Profile, AWorkerWithoutRowsAndTextThatIsNotNcusAreErrors) {
  const auto rows = parse_ncu_csv(kCsv);
  EXPECT_THROW(summarize(rows, "cudnn", "attngate_worker_cudnn", 4244, 1, 1), std::runtime_error);
  EXPECT_THROW(parse_ncu_csv("==ERROR== no kernels were profiled\n"), std::runtime_error);
  EXPECT_THROW(parse_ncu_csv("\"ID\",\"Kernel Name\"\n\"0\"\n"), std::runtime_error);  // a short row
}

ProfileDocument document() {
  const auto rows = parse_ncu_csv(kCsv);
  ProfileDocument d;
  d.scenario = "gate_mha_d128_s4096_causal";
  d.shape = "b=4 sq=4096 sk=4096 hq=16 hkv=16 d=128 causal bf16";
  d.flops = 2e12;
  d.device = "NVIDIA H200";
  d.peak_tflops = 989.5;
  d.report = "/b/profile/x/profile.ncu-rep";
  d.kernels = {summarize(rows, "candidate", "attngate_worker_candidate", 4242, d.flops, d.peak_tflops),
               summarize(rows, "initial", "attngate_worker_initial", 4243, d.flops, d.peak_tflops)};
  return d;
}

TEST(Profile, TheSummaryIsShortAndSideBySide) {
  const std::string text = render_summary(document());
  int lines = 0;
  for (char c : text) lines += c == '\n';
  EXPECT_LE(lines, 40) << text;
  if (std::getenv("ATTNGATE_PRINT_PROFILE")) std::cout << text;
  EXPECT_NE(text.find("candidate"), std::string::npos);
  EXPECT_NE(text.find("initial"), std::string::npos);
  EXPECT_NE(text.find("500.0 (50.5%)"), std::string::npos) << text;
  EXPECT_NE(text.find("long_scoreboard 3.00"), std::string::npos) << text;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("duration (us)", 0) == 0) {
      EXPECT_NE(line.find("4000.0"), std::string::npos);
      EXPECT_NE(line.find("8000.0"), std::string::npos);
    }
}

TEST(Profile, TheDocumentRoundTripsAndMatchesItsSchema) {
  const ProfileDocument d = document();
  const json j = d;
  std::ifstream f(fs::path(ATTNGATE_HOOKS_DIR_FOR_TESTS) / "schema" / "profile.schema.json");
  const auto problems = attngate::verify::schema_problems(json::parse(f), j);
  EXPECT_TRUE(problems.empty()) << (problems.empty() ? "" : problems.front());
  const ProfileDocument back = j.get<ProfileDocument>();
  EXPECT_EQ(json(back), j);
  json wrong = j;
  wrong["schema"] = "attngate.profile/0";
  EXPECT_THROW(wrong.get<ProfileDocument>(), std::runtime_error);
}

TEST(Profile, AsksNcuForEveryMetricItReads) {
  const auto m = ncu_metrics();
  for (const char* need : {"gpu__time_duration.sum", "lts__t_sector_hit_rate.pct", "launch__registers_per_thread",
                           "device__attribute_display_name"})
    EXPECT_NE(std::find(m.begin(), m.end(), need), m.end()) << need;
  for (const auto& x : m) EXPECT_EQ(x.find(','), std::string::npos) << x;  // ncu splits --metrics at commas
}

}  // namespace
