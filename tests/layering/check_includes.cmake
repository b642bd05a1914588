cmake_minimum_required(VERSION 3.21)
# The layering holds for #include: each probe includes, with one layer's
# include directories, a header that layer may not use and must fail to
# compile because that header is not found (any other failure does not count
# as the layering holding); the control probes include what the layer may
# use and must compile. All probes run in this one test, with the compiler
# directly (-fsyntax-only), so that they cost one process each, not a build.
#
#   cmake -DCONFIG=<probes.cmake> -DWORK=<dir> -P check_includes.cmake
#
# CONFIG sets CC, CB_PROBE_FLAGS, CB_PROBES ("layer:header:pass|fail" each),
# CB_PROBE_COMMON_INCLUDES and CB_PROBE_INCLUDES_<layer>.
include(${CONFIG})
file(MAKE_DIRECTORY ${WORK})
set(bad 0)
set(n 0)
foreach(p IN LISTS CB_PROBES)
  string(REPLACE ":" ";" p "${p}")
  list(GET p 0 layer)
  list(GET p 1 header)
  list(GET p 2 expect)
  string(MAKE_C_IDENTIFIER "${layer}_${header}" id)
  set(src ${WORK}/${id}.c)
  file(WRITE ${src} "#include \"${header}\"\nint cb_probe_${id}(void);\nint cb_probe_${id}(void) { return 0; }\n")
  set(incs)
  foreach(d IN LISTS CB_PROBE_INCLUDES_${layer} CB_PROBE_COMMON_INCLUDES)
    if(NOT d STREQUAL "")
      list(APPEND incs -I${d})
    endif()
  endforeach()
  execute_process(COMMAND ${CC} ${CB_PROBE_FLAGS} -fsyntax-only ${incs} ${src}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  math(EXPR n "${n} + 1")
  if(expect STREQUAL "pass")
    if(NOT rc EQUAL 0)
      message(SEND_ERROR "${layer} may include ${header}, but the probe does not compile:\n${out}")
      set(bad 1)
    endif()
  else()
    string(REGEX REPLACE "[.+]" "\\\\\\0" header_re "${header}")
    if(rc EQUAL 0)
      message(SEND_ERROR "${layer} must not see ${header}, but the probe compiles")
      set(bad 1)
    elseif(NOT out MATCHES "fatal error: ${header_re}: No such file or directory")
      message(SEND_ERROR "the probe of ${header} in ${layer} fails for another reason:\n${out}")
      set(bad 1)
    endif()
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "the layering does not hold for #include")
endif()
message(STATUS "layering holds: ${n} include probes as expected")
