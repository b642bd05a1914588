cmake_minimum_required(VERSION 3.21)
# The layering holds at link time: for each layer's objects, every cb_ or
# cb__ symbol they leave undefined is defined by the layer itself or by a
# layer it USES (CMakeLists.txt, cb_add_layer), as nm reads the objects.
#
#   cmake -DCONFIG=<layers.cmake> -P check_links.cmake
#
# CONFIG (written by tests/CMakeLists.txt with file(GENERATE)) sets NM,
# CB_LAYER_USES ("layer:used,used" each) and CB_OBJECTS_<layer> (the
# layer's object files).
include(${CONFIG})

# name -> defining layer, as variables def_<name>
foreach(entry IN LISTS CB_LAYER_USES)
  string(REPLACE ":" ";" entry "${entry}")
  list(GET entry 0 layer)
  execute_process(COMMAND ${NM} -g --defined-only ${CB_OBJECTS_${layer}}
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on the objects of layer ${layer}")
  endif()
  string(REGEX MATCHALL "[0-9a-fA-F]+ [A-Za-z] cb_[A-Za-z0-9_]*" syms "${out}")
  foreach(s IN LISTS syms)
    string(REGEX REPLACE "^.* " "" s "${s}")
    set(def_${s} ${layer})
  endforeach()
endforeach()

set(bad 0)
set(checked 0)
foreach(entry IN LISTS CB_LAYER_USES)
  string(REPLACE ":" ";" entry "${entry}")
  list(GET entry 0 layer)
  set(allowed ${layer})
  list(LENGTH entry n)
  if(n GREATER 1)
    list(GET entry 1 uses)
    string(REPLACE "," ";" uses "${uses}")
    list(APPEND allowed ${uses})
  endif()
  execute_process(COMMAND ${NM} -A -u ${CB_OBJECTS_${layer}}
                  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "nm failed on the objects of layer ${layer}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  foreach(line IN LISTS lines)
    if(NOT line MATCHES "^(.*):[ \t]+U (cb_[A-Za-z0-9_]*)$")
      continue()
    endif()
    get_filename_component(obj "${CMAKE_MATCH_1}" NAME)
    set(sym ${CMAKE_MATCH_2})
    math(EXPR checked "${checked} + 1")
    set(at "${def_${sym}}")
    if(at STREQUAL "")
      message(SEND_ERROR "layer ${layer} (${obj}) calls ${sym}, which no layer defines")
      set(bad 1)
    elseif(NOT at IN_LIST allowed)
      message(SEND_ERROR "layer ${layer} (${obj}) calls ${sym} of layer ${at}, "
                         "which it does not use (it uses: ${allowed})")
      set(bad 1)
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "the layering does not hold at link time")
endif()
message(STATUS "layering holds: ${checked} calls across objects checked")
