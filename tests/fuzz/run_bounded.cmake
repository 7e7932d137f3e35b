# One bounded fuzz run for CTest (see the fuzz block of CMakeLists.txt):
#   cmake -DNAME=wire|rx -DFUZZER=path -DSEEDGEN=path -DWORK=dir -DRUNS=n
#         -P run_bounded.cmake
# Writes fresh seeds with the codec's encoder, runs the fuzzer for RUNS
# inputs from a fixed libFuzzer seed on an empty working corpus (so every
# run does the same work), and on failure names the crash file and the
# command that replays it. Each run works in its own directory under WORK
# (removed on success), so concurrent runs do not disturb each other.
foreach(var NAME FUZZER SEEDGEN WORK RUNS)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "run_bounded.cmake: -D${var}=... missing")
    endif()
endforeach()

string(RANDOM LENGTH 10 run_id)
set(dir "${WORK}/${NAME}-${run_id}")
file(REMOVE_RECURSE "${dir}")
file(MAKE_DIRECTORY "${dir}/seeds/wire" "${dir}/seeds/rx" "${dir}/seeds/cm"
                    "${dir}/corpus" "${dir}/seeds/${NAME}") # fuzzers without seeds

execute_process(COMMAND "${SEEDGEN}" "${dir}/seeds/wire" "${dir}/seeds/rx"
                        "${dir}/seeds/cm"
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "seed generator failed: ${rc}")
endif()

if(NOT DEFINED ENV{UBSAN_OPTIONS})
    set(ENV{UBSAN_OPTIONS} "print_stacktrace=1")
endif()

set(ENV{RX_FUZZ_REPLAY_DIR} "${dir}")
execute_process(
    COMMAND "${FUZZER}" -seed=1 -runs=${RUNS} -max_len=9000
            -print_final_stats=1 "-artifact_prefix=${dir}/"
            "${dir}/corpus" "${dir}/seeds/${NAME}"
    RESULT_VARIABLE rc)
if(rc EQUAL 0)
    file(REMOVE_RECURSE "${dir}")
else()
    file(GLOB found "${dir}/crash-*" "${dir}/leak-*" "${dir}/timeout-*"
                    "${dir}/oom-*" "${dir}/slow-unit-*" "${dir}/rx-replay-*")
    foreach(f IN LISTS found)
        file(READ "${f}" hex HEX LIMIT 1000) # the first 1000 bytes
        message("${NAME}_fuzz failed on ${f}\n"
                "  input (hex): ${hex}\n"
                "  replay: ${FUZZER} ${f}")
    endforeach()
    message(FATAL_ERROR "${NAME}_fuzz exited with ${rc} (files in ${dir})")
endif()
