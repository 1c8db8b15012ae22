# Writes the kernel inventory of a worker: the mangled names of every __global__ function defined
# in a kernel library's objects, one per line, sorted. The judge fails a call that launches any
# other kernel (FOREIGN_KERNEL), so this list is made here, at build time, from what the compiler
# produced, never by the worker at run time.
#   cmake -DNM=nm -DOBJECTS="a.o|b.o" -DOUT=file -P inventory.cmake   ('|' or ';' between objects)
# nvcc gives every __global__ function a host stub, `__device_stub__` + its mangled name without
# the leading '_'; the stub is internal, so nm shows it length-prefixed (`_ZL<n>__device_stub__...`
# `_Z<n>__device_stub__...`, or inside a local's name), and the length says where the name ends.
set(names)
string(REPLACE "|" ";" OBJECTS "${OBJECTS}")
foreach(obj IN LISTS OBJECTS)
  execute_process(COMMAND ${NM} --defined-only ${obj} OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "inventory: ${NM} ${obj} failed (${rc})")
  endif()
  string(REGEX MATCHALL "[A-Z][0-9]+__device_stub__[A-Za-z0-9_]+" hits "${syms}")
  foreach(hit IN LISTS hits)
    string(REGEX MATCH "^[A-Z]([0-9]+)(__device_stub__.*)$" _ "${hit}")
    set(len ${CMAKE_MATCH_1})
    set(rest ${CMAKE_MATCH_2})
    string(LENGTH "${rest}" have)
    if(have LESS len)
      continue()
    endif()
    string(SUBSTRING "${rest}" 15 -1 rest)  # drop "__device_stub__"
    math(EXPR n "${len} - 15")
    string(SUBSTRING "${rest}" 0 ${n} name)
    list(APPEND names "_${name}")
  endforeach()
  # extern "C" kernels keep their plain name: __device_stub__<name> as a symbol of its own.
  string(REGEX MATCHALL "[ \t]__device_stub__[A-Za-z0-9_]+\n" plain "${syms}")
  foreach(hit IN LISTS plain)
    string(REGEX REPLACE "^[ \t]__device_stub__([A-Za-z0-9_]+)\n$" "\\1" name "${hit}")
    list(APPEND names "${name}")
  endforeach()
endforeach()
list(REMOVE_DUPLICATES names)
list(SORT names)
list(JOIN names "\n" text)
if(NOT names)
  message(FATAL_ERROR "inventory: no __global__ function found in ${OBJECTS}")
endif()
file(WRITE "${OUT}.tmp" "${text}\n")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
