# Writes the forbidden-symbol list of a worker: every global symbol a kernel library's objects define
# that would answer calls the worker (or a library it loads) makes to someone else. Linked into the
# worker, such a definition wins: `extern "C" cudaError_t cudaEventElapsedTime(...)` in candidate.cu
# answers the worker's own timing, `cuptiActivityGetNextRecord` its tracing, `malloc` or
# `operator new` every allocation. The judge fails a worker whose list is not empty
# (FORBIDDEN_SYMBOL); the build only warns, so the gate can name them.
#   cmake -DNM=nm [-DREADELF=readelf] -DOBJECTS="a.o|b.o" -DLIBS="x.so|y.a" [-DHARNESS="w.o|z.a"]
#         -DCACHE_DIR=<folder> -DOUT=<file> [-DQUIET=1] -P symbols.cmake    ('|' or ';' between files)
# OUT gets one line per forbidden (symbol, object): `<symbol>\t<object file name>\t<why>`, sorted;
# an empty file when there is none. A symbol is forbidden when it is a global definition (nm
# --defined-only --extern-only: T D B R V W u i C ...) and
#   1. a library of LIBS (the CUDA runtime, CUPTI, the driver, NVML, libc, libm, libpthread, libdl,
#      libstdc++, libgcc_s ...: their exported, `nm -D`, or global, `nm`, definitions) or a harness
#      file of HARNESS (the worker's own objects and archives) defines it too, unless it is a weak
#      definition (W, V, u) of a C++ entity (`_Z...`, or GCC's `DW.ref.*`) in a COMDAT group, which
#      is what every object that uses an inline function or a template emits (without READELF, nm's
#      weak types alone decide);
#   2. or it is an unmangled name in the CUDA libraries' namespaces (cu*, which holds cuda*, cupti*
#      and the driver's cu*, nvml*, __cuda*), except what nvcc itself generates
#      (__cudaRegisterLinkedBinary_<module id> of a device link; its other globals, __fatbinwrap_*,
#      hostRef*, __nv_*, are outside these namespaces);
#   3. or it is one of the replaceable global allocation functions (operator new / new[] / delete /
#      delete[] in every form the standard lets a program replace). Weak or strong: a replacement
#      cannot be inline, so no COMDAT copy is legitimate, and either binds every allocation of the
#      worker.
# The symbol sets of LIBS and HARNESS are cached in CACHE_DIR, one file per library, refreshed when
# the file's size or time stamp changes.
cmake_minimum_required(VERSION 3.20)
foreach(v NM OBJECTS OUT CACHE_DIR)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR "symbols.cmake needs -D${v}=...")
  endif()
endforeach()
string(REPLACE "|" ";" OBJECTS "${OBJECTS}")
string(REPLACE "|" ";" LIBS "${LIBS}")
string(REPLACE "|" ";" HARNESS "${HARNESS}")
file(MAKE_DIRECTORY "${CACHE_DIR}")

# The first bytes of a file: ELF, an ar archive, or (for libc.so and friends) a linker script.
function(_file_kind path out)
  file(READ "${path}" magic LIMIT 8 HEX)
  if(magic MATCHES "^7f454c46")
    set(${out} elf PARENT_SCOPE)
  elseif(magic MATCHES "^213c617263683e0a")  # "!<arch>\n"
    set(${out} ar PARENT_SCOPE)
  else()
    set(${out} text PARENT_SCOPE)
  endif()
endfunction()

# "\n<name>\n<name>\n...": the global definitions of one file, from the cache when it is current.
function(_symbol_set path out)
  string(SHA1 key "${path}")
  string(SUBSTRING "${key}" 0 16 key)
  get_filename_component(base "${path}" NAME)
  set(cache "${CACHE_DIR}/${base}-${key}.syms")
  file(SIZE "${path}" size)
  file(TIMESTAMP "${path}" stamp "%s" UTC)
  set(header "attngate.symbols-cache/1 ${size} ${stamp} ${path}\n")
  if(EXISTS "${cache}")
    file(READ "${cache}" cached)
    string(LENGTH "${header}" hl)
    string(SUBSTRING "${cached}" 0 ${hl} head)
    if(head STREQUAL header)
      string(SUBSTRING "${cached}" ${hl} -1 syms)
      set(${out} "${syms}" PARENT_SCOPE)
      return()
    endif()
  endif()
  _file_kind("${path}" kind)
  set(syms "\n")
  if(kind STREQUAL "text")
    # A linker script (GROUP ( /lib/.../libc.so.6 ... )): the union of the files it names.
    file(READ "${path}" script)
    string(REGEX MATCHALL "/[^ \t\r\n()]+" named "${script}")
    foreach(f IN LISTS named)
      if(EXISTS "${f}" AND NOT f STREQUAL path)
        _symbol_set("${f}" part)
        string(APPEND syms "${part}")
      endif()
    endforeach()
  else()
    set(args --defined-only --extern-only)
    if(kind STREQUAL "elf")
      file(READ "${path}" etype OFFSET 16 LIMIT 1 HEX)  # e_type: 03 = ET_DYN (a shared object)
      if(etype STREQUAL "03")
        set(args -D --defined-only)
      endif()
    endif()
    execute_process(COMMAND ${NM} ${args} "${path}" OUTPUT_VARIABLE text ERROR_QUIET RESULT_VARIABLE rc)
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "symbols: ${NM} ${args} ${path} failed (${rc})")
    endif()
    # "<value> <type> <name>[@[@]<version>]" -> "<name>"; archive member headers and blank lines stay
    # (no symbol is called "x.o:" or ""), absolute version nodes (type A) are dropped.
    string(REGEX REPLACE "[0-9a-fA-F]+ A [^\n]*" "" text "${text}")
    string(REGEX REPLACE "[0-9a-fA-F]+ [A-Za-z] ([^\n@ ]+)[^\n]*" "\\1" text "${text}")
    string(APPEND syms "${text}\n")
  endif()
  string(RANDOM LENGTH 12 tag)
  file(WRITE "${cache}.${tag}" "${header}${syms}")
  file(RENAME "${cache}.${tag}" "${cache}")  # atomic: workers' POST_BUILD steps may run side by side
  set(${out} "${syms}" PARENT_SCOPE)
endfunction()

set(sets)  # one variable per library: set_<i>, and its name name_<i>
set(n 0)
foreach(lib IN LISTS LIBS HARNESS)
  if(lib STREQUAL "")
    continue()
  endif()
  if(NOT EXISTS "${lib}")
    message(FATAL_ERROR "symbols: ${lib} does not exist (reconfigure)")
  endif()
  _symbol_set("${lib}" set_${n})
  get_filename_component(name_${n} "${lib}" NAME)
  if(lib IN_LIST HARNESS)
    set(name_${n} "the worker's own ${name_${n}}")
  endif()
  list(APPEND sets ${n})
  math(EXPR n "${n} + 1")
endforeach()

# The members of the object's COMDAT groups, by section index, and each symbol's section index.
function(_comdat_symbols obj out)
  set(${out} "" PARENT_SCOPE)
  if(NOT READELF)
    return()
  endif()
  execute_process(COMMAND ${READELF} -gW "${obj}" OUTPUT_VARIABLE groups ERROR_QUIET)
  execute_process(COMMAND ${READELF} -sW "${obj}" OUTPUT_VARIABLE table ERROR_QUIET)
  string(REPLACE "\n" ";" lines "${groups}")
  set(in_comdat FALSE)
  set(members)
  foreach(line IN LISTS lines)
    if(line MATCHES "^COMDAT group section")
      set(in_comdat TRUE)
    elseif(line MATCHES "group section")
      set(in_comdat FALSE)
    elseif(in_comdat AND line MATCHES "^ +\\[ *([0-9]+)\\] +[^ ]")
      list(APPEND members ${CMAKE_MATCH_1})
    endif()
  endforeach()
  string(REGEX MATCHALL "[0-9]+: [0-9a-f]+ +[0-9a-fx]+ [A-Z_]+ +(WEAK|UNIQUE) +[A-Z]+ +[0-9]+ [^\n]+" weak "${table}")
  set(names)
  foreach(row IN LISTS weak)
    string(REGEX MATCH " ([0-9]+) ([^ ]+)$" _ "${row}")
    if(CMAKE_MATCH_1 IN_LIST members)
      list(APPEND names "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# The replaceable global allocation functions ([new.delete]), mangled for a 64-bit size_t (m) and
# for a 32-bit one (j).
set(alloc_re "^_Z(nw|na)[mj](St11align_val_t)?(RKSt9nothrow_t)?$|^_Z(dl|da)Pv[mj]?(St11align_val_t)?(RKSt9nothrow_t)?$")
# nvcc's own C-linkage globals inside the CUDA namespaces (see the header).
set(nvcc_re "^__cudaRegisterLinkedBinary_[A-Za-z0-9_]+$")

set(found)
foreach(obj IN LISTS OBJECTS)
  if(obj STREQUAL "")
    continue()
  endif()
  execute_process(COMMAND ${NM} --defined-only --extern-only "${obj}" OUTPUT_VARIABLE syms RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "symbols: ${NM} ${obj} failed (${rc})")
  endif()
  get_filename_component(obj_name "${obj}" NAME)
  string(REGEX MATCHALL "[0-9a-fA-F]+ [A-Za-z] [^\n]+" rows "${syms}")
  set(comdat_done FALSE)
  set(comdat)
  foreach(row IN LISTS rows)
    if(NOT row MATCHES "([A-Za-z]) ([^ ]+)$")
      continue()
    endif()
    set(type "${CMAKE_MATCH_1}")
    set(sym "${CMAKE_MATCH_2}")
    set(why)
    # 1. defined by a library the worker links or loads, or by the worker itself
    set(by)
    foreach(i IN LISTS sets)
      string(FIND "${set_${i}}" "\n${sym}\n" at)
      if(at GREATER -1)
        list(APPEND by "${name_${i}}")
      endif()
    endforeach()
    if(by AND type MATCHES "^[WVu]$" AND sym MATCHES "^(_Z|DW\\.ref\\.)")
      if(NOT READELF)
        set(by)  # nm's weak type alone decides
      else()
        if(NOT comdat_done)
          _comdat_symbols("${obj}" comdat)
          set(comdat_done TRUE)
        endif()
        if(sym IN_LIST comdat)
          set(by)  # an inline function's or a template's COMDAT copy
        endif()
      endif()
    endif()
    if(by)
      list(REMOVE_DUPLICATES by)
      list(JOIN by ", " by)
      list(APPEND why "also defined by ${by}")
    endif()
    # 2. a C-linkage name in the CUDA libraries' namespaces
    if(sym MATCHES "^(cu|nvml|__cuda)" AND NOT sym MATCHES "${nvcc_re}")
      if(sym MATCHES "^cupti")
        set(space "cupti*, CUPTI")
      elseif(sym MATCHES "^cuda")
        set(space "cuda*, the CUDA runtime")
      elseif(sym MATCHES "^nvml")
        set(space "nvml*, NVML")
      elseif(sym MATCHES "^__cuda")
        set(space "__cuda*, the CUDA runtime's registration")
      else()
        set(space "cu*, the CUDA driver and libraries")
      endif()
      list(APPEND why "C-linkage name in a CUDA library's namespace (${space})")
    endif()
    # 3. a replacement of the global allocation functions
    if(sym MATCHES "${alloc_re}")
      if(sym MATCHES "^_Z(nw|na)")
        set(what "operator new")
      else()
        set(what "operator delete")
      endif()
      if(sym MATCHES "^_Z(na|da)")
        string(APPEND what "[]")
      endif()
      list(APPEND why "replaces the global ${what} (${sym}), which every allocation of the worker calls")
    endif()
    if(why)
      list(JOIN why "<SEMICOLON> " why)  # a ';' would split the list entry
      list(APPEND found "${sym}\t${obj_name}\t${why}")
    endif()
  endforeach()
endforeach()

list(REMOVE_DUPLICATES found)
list(SORT found)
set(text "")
set(names)
foreach(line IN LISTS found)
  string(REPLACE "<SEMICOLON>" ";" line "${line}")
  string(APPEND text "${line}\n")
  string(REGEX MATCH "^[^\t]+" s "${line}")
  list(APPEND names "${s}")
endforeach()
file(WRITE "${OUT}.tmp" "${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
if(names AND NOT QUIET)
  list(REMOVE_DUPLICATES names)
  list(JOIN names ", " names)
  get_filename_component(out_name "${OUT}" NAME)
  message(WARNING "attngate: the kernel library defines forbidden symbols (the gate fails it, FORBIDDEN_SYMBOL): "
                  "${names}; ${out_name} says why")
endif()
