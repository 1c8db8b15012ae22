# CPU test of attngate_adversarial's own logic (unit.adversarial.driver): child processes, timeouts,
# crash detection and reason matching, against fake_verify.sh / fake_bench.sh.
#   cmake -DDRIVER=... -DDATA=<this folder> -DWORK=<scratch> -P check_driver.cmake
set(_common --catalogue=${DATA}/catalogue.yaml --scenarios=${DATA} --verify=${DATA}/fake_verify.sh
            --bench=${DATA}/fake_bench.sh --no-device-check)

function(expect name mode want_rc)
  string(TIMESTAMP t0 "%s")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env FAKE_MODE=${mode}
                          ${DRIVER} --cheat=${name} ${_common} --work-dir=${WORK}/${name}-${mode}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  string(TIMESTAMP t1 "%s")
  math(EXPR dt "${t1} - ${t0}")
  if(NOT rc EQUAL want_rc)
    message(FATAL_ERROR "${name} with FAKE_MODE=${mode}: exit ${rc}, expected ${want_rc}:\n${out}")
  endif()
  message(STATUS "${name} with FAKE_MODE=${mode}: exit ${rc} as expected (${dt} s)")
  set(last_output "${out}" PARENT_SCOPE)
  set(last_seconds ${dt} PARENT_SCOPE)
endfunction()

expect(fake_fail fail 0)          # caught where expected, adv_c passes
expect(fake_fail pass 1)          # not caught: the adversarial test must fail
expect(fake_fail error 1)         # an error is not the expected reason
expect(fake_fail_any fail 0)      # adv_a caught, adv_c not: enough for fail_any
expect(fake_fail_any pass 1)
expect(fake_pass pass 0)          # honest kernel: verify passes, bench times it
expect(fake_pass fail 1)
expect(fake_crash error 0)        # status error with the illegal-address detail
expect(fake_crash segv 0)         # killed by a signal, no result: a crash
expect(fake_crash pass 1)
expect(fake_hang hang 0)          # still running after 2 s: killed, expected
if(last_seconds GREATER 30)
  message(FATAL_ERROR "the hanging child was not killed at its 2 s timeout (took ${last_seconds} s)")
endif()
expect(fake_hang pass 1)
expect(fake_bench_fail bench_fail 0)
expect(fake_bench_fail pass 1)    # timed without error: not caught
expect(fake_bench_flag bench_flag 0)  # timed, counter > 0
expect(fake_bench_flag pass 1)        # counter 0: not flagged
expect(fake_pass bench_flag 1)        # an honest kernel with foreign-stream kernels fails
