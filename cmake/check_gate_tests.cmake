# unit.gate.ctest_script: checks, without a GPU, that `ctest -L gate` in this build tree selects
# exactly the gate's tests in the right order (gate.setup first, gate.performance alone after the
# verify tests, gate.report last), then that the emitter takes the kernel under test and the
# baseline from the gate suite's settings and refuses to emit the gate without the tools' paths.
# verify (the emitter) writes the gate's verify tests and gate.device and lists them; `attngate
# plan` (the planner) writes gate.setup, gate.performance and gate.report from that list.
#   cmake -DCTEST=... -DBUILD_DIR=... -DEMITTER=<attngate_verify> -DPLANNER=<attngate> -DWORK_DIR=...
#         -P check_gate_tests.cmake
cmake_minimum_required(VERSION 3.20)
foreach(v CTEST BUILD_DIR EMITTER PLANNER WORK_DIR)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_gate_tests.cmake needs -D${v}=...")
  endif()
endforeach()

set(failures 0)
macro(fail msg)
  message(SEND_ERROR "${msg}")
  math(EXPR failures "${failures} + 1")
endmacro()

execute_process(COMMAND ${CTEST} --test-dir ${BUILD_DIR} -N -L gate --show-only=json-v1
                OUTPUT_VARIABLE listing RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "ctest -N -L gate failed (${rc}): ${err}")
endif()

# A property of test number i as a CMake list ("" when absent).
function(test_property out i prop)
  set(value "")
  string(JSON n ERROR_VARIABLE e LENGTH "${listing}" tests ${i} properties)
  if(NOT e)
    math(EXPR last "${n} - 1")
    foreach(p RANGE ${last})
      string(JSON name GET "${listing}" tests ${i} properties ${p} name)
      if(name STREQUAL prop)
        string(JSON type TYPE "${listing}" tests ${i} properties ${p} value)
        if(type STREQUAL "ARRAY")
          string(JSON len LENGTH "${listing}" tests ${i} properties ${p} value)
          math(EXPR vlast "${len} - 1")
          foreach(k RANGE ${vlast})
            string(JSON item GET "${listing}" tests ${i} properties ${p} value ${k})
            list(APPEND value "${item}")
          endforeach()
        else()
          string(JSON value GET "${listing}" tests ${i} properties ${p} value)
        endif()
      endif()
    endforeach()
  endif()
  set(${out} "${value}" PARENT_SCOPE)
endfunction()

function(test_command out i)
  set(cmd "")
  string(JSON len LENGTH "${listing}" tests ${i} command)
  math(EXPR last "${len} - 1")
  foreach(k RANGE ${last})
    string(JSON arg GET "${listing}" tests ${i} command ${k})
    list(APPEND cmd "${arg}")
  endforeach()
  set(${out} "${cmd}" PARENT_SCOPE)
endfunction()

string(JSON count LENGTH "${listing}" tests)
if(count EQUAL 0)
  message(FATAL_ERROR "ctest -L gate selects no test in ${BUILD_DIR}")
endif()
if(NOT (count GREATER 4))
  fail("ctest -L gate selects ${count} tests; expected the four gate.* tests and verify tests")
endif()
math(EXPR last "${count} - 1")
set(names "")
set(verify "")
set(batches "")
foreach(i RANGE ${last})
  string(JSON name GET "${listing}" tests ${i} name)
  list(APPEND names "${name}")
  set(index_${name} ${i})
  if(name MATCHES "^verify\\.batch\\.")
    # The batches that check the kernel under test (one process per shard of a suite).
    list(APPEND batches "${name}")
    if(name MATCHES "\\.(others|reference)")
      fail("${name} carries the label gate but checks other kernels than the one under test")
    endif()
  elseif(name MATCHES "^verify\\.")
    list(APPEND verify "${name}")
    if(NOT (name MATCHES "^verify\\.candidate\\."))
      fail("${name} carries the label gate but is not the kernel under test")
    endif()
  elseif(NOT name MATCHES "^gate\\.(setup|device|performance|report)$")
    fail("unexpected test ${name} under the label gate")
  endif()
endforeach()
list(LENGTH verify n_verify)
if(NOT (n_verify GREATER 0))
  fail("no verify.candidate.* test under the label gate")
endif()
# Correctness on every suite the gate checks (gate.yaml settings.correctness_suites): smoke and
# full beside the gate suite.
foreach(suite gate smoke full)
  if(NOT (verify MATCHES "verify\\.candidate\\.${suite}_"))
    fail("the gate checks no scenario of the ${suite} suite")
  endif()
endforeach()
list(LENGTH batches n_batches)
if(NOT (n_batches GREATER 0))
  fail("no verify.batch.* test under the label gate")
endif()
foreach(b IN LISTS batches)
  test_property(fixture ${index_${b}} FIXTURES_SETUP)
  if(NOT (fixture STREQUAL b))
    fail("${b} does not set up the fixture its per-case tests require")
  endif()
endforeach()
# gate.setup runs first: it depends on nothing and every other gate test depends on it (below).
foreach(t gate.setup gate.device gate.performance gate.report)
  if(NOT (DEFINED index_${t}))
    fail("${t} is missing from ctest -L gate")
  endif()
endforeach()
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} check(s) failed")
endif()

# gate.setup: attngate report --prepare, before everything.
test_command(cmd ${index_gate.setup})
if(NOT ("--prepare" IN_LIST cmd))
  fail("gate.setup does not run `attngate report --prepare`: ${cmd}")
endif()
test_property(dep ${index_gate.setup} DEPENDS)
if(NOT (dep STREQUAL ""))
  fail("gate.setup must depend on nothing, has ${dep}")
endif()

# gate.device: fails without an sm_90 device.
test_command(cmd ${index_gate.device})
if(NOT ("--require-device=90" IN_LIST cmd))
  fail("gate.device does not require compute capability 9.0: ${cmd}")
endif()
test_property(dep ${index_gate.device} DEPENDS)
if(NOT ("gate.setup" IN_LIST dep))
  fail("gate.device does not depend on gate.setup")
endif()
test_property(labels ${index_gate.device} LABELS)
if(NOT ("gpu" IN_LIST labels))
  fail("gate.device lacks the label gpu")
endif()

foreach(v IN LISTS verify batches)
  test_property(dep ${index_${v}} DEPENDS)
  if(NOT ("gate.setup" IN_LIST dep))
    fail("${v} does not depend on gate.setup")
  endif()
endforeach()
# A per-case test reads what its batch wrote: it requires the batch's fixture and runs no kernel.
foreach(v IN LISTS verify)
  test_property(fixture ${index_${v}} FIXTURES_REQUIRED)
  if(NOT (fixture MATCHES "^verify\\.batch\\."))
    fail("${v} requires no batch fixture")
  endif()
  test_command(cmd ${index_${v}})
  if(NOT (cmd MATCHES "--show-result="))
    fail("${v} does not read its batch's result: ${cmd}")
  endif()
endforeach()

# gate.performance: alone on the machine, after every verify test.
test_property(serial ${index_gate.performance} RUN_SERIAL)
if(NOT (serial))
  fail("gate.performance is not RUN_SERIAL")
endif()
test_property(dep ${index_gate.performance} DEPENDS)
foreach(d gate.setup ${verify} ${batches})
  if(NOT ("${d}" IN_LIST dep))
    fail("gate.performance does not depend on ${d}")
  endif()
endforeach()
test_property(labels ${index_gate.performance} LABELS)
if(NOT ("bench" IN_LIST labels AND "gpu" IN_LIST labels))
  fail("gate.performance labels: ${labels}")
endif()
test_command(cmd ${index_gate.performance})
if(NOT ("--compare=candidate,initial" IN_LIST cmd))
  fail("gate.performance does not compare candidate with initial: ${cmd}")
endif()
string(FIND "${cmd}" "--compare_out=${BUILD_DIR}/gate/performance.json" at)
if(NOT (at GREATER -1))
  fail("gate.performance does not write ${BUILD_DIR}/gate/performance.json: ${cmd}")
endif()

# gate.report: last, after everything.
test_property(dep ${index_gate.report} DEPENDS)
foreach(d gate.setup gate.device gate.performance ${verify})
  if(NOT ("${d}" IN_LIST dep))
    fail("gate.report does not depend on ${d}")
  endif()
endforeach()
test_command(cmd ${index_gate.report})
if(NOT ("report" IN_LIST cmd AND NOT "--prepare" IN_LIST cmd))
  fail("gate.report does not run `attngate report`: ${cmd}")
endif()

# The emitter on a suite that names its own kernel and baseline.
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/scenarios")
file(WRITE "${WORK_DIR}/scenarios/gate.yaml" [=[
suite: gate
description: a one-shape gate that judges initial against candidate
settings:
  geomean_target: "1.0"
  candidate_kernel: "initial"
  baseline_kernel: "candidate"
  correctness_suites: "smoke"
scenarios:
  - {id: gate_tiny, batch: 1, seqlen_q: 64, seqlen_k: 64, heads_q: 2, heads_kv: 2, head_dim: 64, causal: false, dtype: bf16, tags: [mha]}
]=])
file(WRITE "${WORK_DIR}/scenarios/smoke.yaml" [=[
suite: smoke
description: one smoke shape
scenarios:
  - {id: smoke_tiny, batch: 1, seqlen_q: 33, seqlen_k: 77, heads_q: 2, heads_kv: 1, head_dim: 64, causal: true, dtype: fp16, tags: [gqa]}
]=])
set(emit_args --emit-ctest=${WORK_DIR}/tests.cmake --emit-exe=/x/attngate_verify --scenarios=${WORK_DIR}/scenarios
              --results-dir=/b/verify/results)
execute_process(COMMAND ${EMITTER} ${emit_args} --emit-judge=/x/attngate_verify_judge --emit-workers=/w
                        --emit-worker-libs=initial,candidate,cudnn --emit-gate-batches=${WORK_DIR}/gate_batches.json
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT (rc EQUAL 0))
  fail("the emitter failed on the one-shape gate (${rc}): ${err}")
endif()
execute_process(COMMAND ${PLANNER} plan --batches=${WORK_DIR}/gate_batches.json --out=${WORK_DIR}/gate.cmake
                        --attngate=/x/attngate --bench=/x/attngate_bench_judge --workers=/w --gate-build-dir=/b
                        --source-dir=/src
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT (rc EQUAL 0))
  fail("attngate plan failed on the one-shape gate (${rc}): ${err}")
endif()
file(READ "${WORK_DIR}/tests.cmake" script)
file(READ "${WORK_DIR}/gate.cmake" plan)
string(APPEND script "${plan}")
# The planner waits for every gate verify test the emitter listed.
foreach(t verify.batch.gate verify.batch.smoke verify.initial.gate_tiny verify.initial.smoke_tiny)
  string(FIND "${plan}" "${t}" at)
  if(NOT (at GREATER -1))
    fail("gate.performance and gate.report do not wait for ${t}: ${plan}")
  endif()
endforeach()
foreach(want "[==[--compare=initial,candidate]==]" "[==[--kernel=initial]==]" "[==[--baseline=candidate]==]"
             # The gate's kernel is checked on the gate suite and every correctness suite, the
             # baseline's own checks run apart (not under the label gate).
             "set_tests_properties([==[verify.initial.gate_tiny]==] PROPERTIES LABELS [==[gpu;verify;gate]==]"
             "set_tests_properties([==[verify.initial.smoke_tiny]==] PROPERTIES LABELS [==[gpu;verify;smoke;gate]==]"
             "set_tests_properties([==[verify.candidate.gate_tiny]==] PROPERTIES LABELS [==[gpu;verify]==]"
             "set_tests_properties([==[verify.batch.gate]==] PROPERTIES LABELS [==[gpu;verify;batch;gate]==] FIXTURES_SETUP [==[verify.batch.gate]==]"
             "set_tests_properties([==[verify.batch.smoke]==] PROPERTIES LABELS [==[gpu;verify;batch;smoke;gate]==]"
             "set_tests_properties([==[verify.batch.gate.others]==] PROPERTIES LABELS [==[gpu;verify;batch]==]"
             "[==[--compare_out=/b/gate/performance.json]==]" "[==[--started-after=/b/gate/started]==]"
             # Each test the report depends on writes its start record; the report reads them.
             "[==[--start-record=/b/verify/results/started/verify.batch.gate.json]==]"
             "[==[--start-record=/b/verify/results/started/gate.performance.json]==]"
             "[==[--start-records=/b/verify/results/started]==]"
             # The kernels run in workers, the gate's tests in the judge builds (agent_hooks/SECURITY.md).
             "add_test([==[verify.batch.gate]==] [==[/x/attngate_verify_judge]==] [==[--worker=/w/attngate_worker_initial]==] [==[--batch]==]"
             # (and the cuDNN control's worker between them, in a build that has it)
             "add_test([==[verify.batch.gate.others]==] [==[/x/attngate_verify_judge]==] [==[--worker=/w/attngate_worker_candidate]==] "
             "add_test([==[verify.initial.gate_tiny]==] [==[/x/attngate_verify_judge]==] [==[--show-result=/b/verify/results/verify.initial.gate_tiny.json]==]"
             # The baseline's worker first (here the suite makes `candidate` the baseline): the bench
             # measures the round trip to it before any other worker exists.
             "add_test([==[gate.performance]==] [==[/x/attngate_bench_judge]==] [==[--worker=/w/attngate_worker_candidate]==] [==[--worker=/w/attngate_worker_initial]==]"
             "add_test([==[gate.device]==] [==[/x/attngate_verify_judge]==]")
  string(FIND "${script}" "${want}" at)
  if(NOT (at GREATER -1))
    fail("the emitted script lacks ${want}")
  endif()
endforeach()
execute_process(COMMAND ${EMITTER} ${emit_args} RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT (NOT rc EQUAL 0))
  fail("the emitter wrote a gate without the paths of the judge binary, the workers and the batch list")
endif()
string(FIND "${err}" "--emit-judge" at)
if(NOT (at GREATER -1))
  fail("the emitter's error does not name --emit-judge: ${err}")
endif()
file(WRITE "${WORK_DIR}/bad_batches.json" "{\"schema\": \"attngate.gate_batches/1\", \"kernel\": \"candidate\"}")
execute_process(COMMAND ${PLANNER} plan --batches=${WORK_DIR}/bad_batches.json --out=${WORK_DIR}/bad.cmake
                        --attngate=/x/attngate --bench=/x/b --workers=/w --gate-build-dir=/b --source-dir=/src
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(rc EQUAL 0 OR NOT err MATCHES "names the gate's kernel but no verify tests")
  fail("attngate plan accepted a gate without verify tests (${rc}): ${err}")
endif()

if(failures GREATER 0)
  message(FATAL_ERROR "${failures} check(s) failed")
endif()
message("gate tests: gate.setup, gate.device, ${n_verify} verify tests, gate.performance (RUN_SERIAL), gate.report; emitter OK")
