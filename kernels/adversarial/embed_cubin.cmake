# cmake -DNVCC=... -DARCH=90a -DINCLUDE=<kernels/api/include> -DINITIAL_INCLUDE=<kernels/initial/include>
#       -DSOURCE=cubin_payload.cu -DBIN2C=...
#       -DOUT=attngate_cheat_payload.h -P embed_cubin.cmake
# Compiles SOURCE to a cubin on its own and writes it as the byte array attngate_cheat_payload.
get_filename_component(dir ${OUT} DIRECTORY)
set(cubin ${dir}/attngate_cheat_payload.cubin)
execute_process(COMMAND ${NVCC} -cubin -arch=sm_${ARCH} -std=c++17 --use_fast_math -I${INCLUDE} -I${INITIAL_INCLUDE} -o ${cubin} ${SOURCE}
                RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "embed_cubin: nvcc -cubin ${SOURCE} failed (${rc})")
endif()
execute_process(COMMAND ${BIN2C} --const --static --type longlong --name attngate_cheat_payload ${cubin}
                OUTPUT_FILE ${OUT}.tmp RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "embed_cubin: ${BIN2C} ${cubin} failed (${rc})")
endif()
file(RENAME ${OUT}.tmp ${OUT})
